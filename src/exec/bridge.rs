//! The proxy bridge: the private directory of its socket, swept of what
//! earlier runs left, and the outer side that serves it; and the
//! descriptors a run must not inherit.

use super::*;

/// Mark every descriptor from 3 up close-on-exec, so the sandbox inherits
/// stdin, stdout and stderr only: a descriptor the caller left open (a
/// file under a denied root, a directory outside the write roots) would
/// otherwise cross every mount.
#[allow(unsafe_code)]
pub fn cloexec_inherited() -> io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: `close_range` with `CLOSE_RANGE_CLOEXEC` closes nothing: it
        // only sets the close-on-exec flag of descriptors 3 and up, so no
        // descriptor owned anywhere in this process changes meaning.
        let r = unsafe {
            libc::syscall(
                libc::SYS_close_range,
                3u32,
                u32::MAX,
                libc::CLOSE_RANGE_CLOEXEC,
            )
        };
        if r == 0 {
            return Ok(());
        }
    }
    // Kernels before 5.11, and macOS: each descriptor listed.
    let dir = if Path::new("/proc/self/fd").is_dir() {
        "/proc/self/fd"
    } else {
        "/dev/fd"
    };
    let fds: Vec<i32> = std::fs::read_dir(dir)?
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .filter(|&fd| fd > 2)
        .collect();
    for fd in fds {
        // SAFETY: `F_SETFD` only sets the close-on-exec flag; the listing's
        // own descriptor, closed by now, fails with `EBADF`, which is fine.
        unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    }
    Ok(())
}

/// Where the bridges' directories are made: started by root,
/// `/run/sealc/bridge` (root's alone, checked); otherwise the caller's
/// `$XDG_RUNTIME_DIR` when it is the caller's alone, else `/tmp` (never
/// `$TMPDIR`, which a harness may point into a write root). Each bridge
/// has a directory of a random name there ([`private_dir`]).
pub(super) fn bridge_parent() -> io::Result<crate::hostfs::Dir> {
    let me = rustix::process::geteuid();
    if me.is_root() {
        // Passed through by the agent's user (bubblewrap, as that user,
        // binds the bridge from its path); listed by no one but root.
        return crate::hostfs::run_dir("bridge", 0o711);
    }
    let own = std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|d| d.is_absolute())
        .and_then(|d| crate::hostfs::Dir::open(&d).ok())
        .filter(|d| {
            d.stat()
                .is_ok_and(|st| st.st_uid == me.as_raw() && st.st_mode & 0o077 == 0)
        });
    match own {
        Some(d) => Ok(d),
        None => crate::hostfs::Dir::open(Path::new("/tmp")),
    }
}

/// Remove the bridge directories (and their sockets) that a `sealc exec`
/// killed by `SIGKILL` left in `parent`: those whose process is gone, and
/// only this user's own (in a shared `/tmp`, another user's directory of
/// that name is theirs), each through its descriptor, no link followed.
pub(super) fn sweep_stale_bridges(parent: &crate::hostfs::Dir) {
    use std::os::unix::fs::MetadataExt;
    if !Path::new("/proc/self").exists() {
        return; // no way to tell a live process
    }
    let Ok(entries) = std::fs::read_dir(parent.path()) else {
        return;
    };
    let me = rustix::process::geteuid();
    for e in entries.flatten() {
        let name = e.file_name();
        // A bridge's directory, or the private directory of its MCP
        // servers' reports (`mcp::serve`).
        let Some(pid) = name
            .to_str()
            .and_then(|n| {
                n.strip_prefix("sealc-bridge-")
                    .or_else(|| n.strip_prefix("sealc-mcp-"))
            })
            .and_then(|rest| rest.split('-').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == std::process::id() || Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        let Ok(dir) = parent.subdir(&name, None) else {
            continue; // a link, a file: not a bridge of sealc's
        };
        // Root's parent is root's alone: everything in it is sealc's (its
        // bridges belong to the agent's user while they last).
        let mine = me.is_root()
            || std::fs::symlink_metadata(e.path()).is_ok_and(|m| m.uid() == me.as_raw());
        if mine {
            let _ = dir.remove(BRIDGE_SOCKET.as_ref(), false);
            // A killed run's MCP servers' sockets (`mcp-NAME.sock`), or
            // their reports (`NAME-K.json`, and a report's staging file).
            if let Ok(names) = std::fs::read_dir(e.path()) {
                for n in names.flatten().map(|n| n.file_name()) {
                    let _ = dir.remove(&n, false);
                }
            }
            let _ = parent.remove(&name, true);
        }
    }
}

/// Make the private (0700) directory of a bridge, of a name no one can
/// guess: `sealc-bridge-PID-RANDOM` in [`bridge_parent`], after sweeping
/// the stale ones there. The directory and its parent are returned.
pub fn private_dir() -> io::Result<Bridge> {
    let parent = bridge_parent()?;
    sweep_stale_bridges(&parent);
    let (dir, name) =
        parent.make_unique(&format!("sealc-bridge-{}-", std::process::id()), 0o700)?;
    Ok(Bridge { parent, dir, name })
}

/// A bridge's directory on the host, while the run lasts.
#[derive(Debug)]
pub struct Bridge {
    parent: crate::hostfs::Dir,
    pub dir: crate::hostfs::Dir,
    name: String,
}

impl Bridge {
    /// The directory the bridge's directory is in (the MCP servers' reports
    /// get a private directory of their own there).
    pub fn parent(&self) -> io::Result<crate::hostfs::Dir> {
        crate::hostfs::Dir::open(self.parent.path())
    }

    /// Remove the socket and the directory.
    pub fn remove(&self) {
        let _ = self.dir.remove(BRIDGE_SOCKET.as_ref(), false);
        let _ = self.parent.remove(self.name.as_ref(), true);
    }
}

/// The outer half of the bridge: the unix socket in the private directory,
/// each connection forwarded to the host's proxy, or served by sealc's own
/// (`own`, `allowlist` mode: it runs until the returned handle is stopped
/// or dropped). Otherwise runs until sealc exits.
pub fn serve_outer(
    b: &BridgePlan,
    dir: &crate::hostfs::Dir,
    user: Option<Ids>,
    own: Option<&crate::proxy::Own>,
) -> io::Result<Option<crate::proxy::Running>> {
    use std::os::fd::AsRawFd;
    let ids = user.map(|ids| {
        (
            Some(rustix::fs::Uid::from_raw(ids.uid)),
            Some(rustix::fs::Gid::from_raw(ids.gid)),
        )
    });
    if let Some((uid, gid)) = ids {
        // The sandbox's user connects through the read-only bind.
        rustix::fs::chownat(dir.fd(), "", uid, gid, rustix::fs::AtFlags::EMPTY_PATH)?;
    }
    let Some(upstream) = b.upstream.clone() else {
        return Ok(None); // only MCP servers' sockets (`mcp::serve`)
    };
    // Bound through the directory's descriptor: the socket is made in the
    // directory checked, whatever its path means now.
    let socket = format!("/proc/self/fd/{}/{BRIDGE_SOCKET}", dir.fd().as_raw_fd());
    let listener = UnixListener::bind(&socket)?;
    if let Some((uid, gid)) = ids {
        rustix::fs::chownat(
            dir.fd(),
            BRIDGE_SOCKET,
            uid,
            gid,
            rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
        )?;
    }
    if let Some(own) = own {
        return own.serve_unix(listener).map(Some);
    }
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let upstream = upstream.clone();
            std::thread::spawn(move || {
                if let Ok(up) = TcpStream::connect(&upstream) {
                    inside::pump(up, conn);
                }
            });
        }
    });
    Ok(None)
}
