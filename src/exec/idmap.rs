//! Idmapped write roots (Linux, started by root). The agent runs as an
//! unprivileged user, yet must write its write roots, which belong to
//! someone else. Rather than change who owns them on disk, sealc gives the
//! sandbox a view of each root in which its owner's files are the agent's
//! (an idmapped mount, Linux 5.12 and later, on a filesystem that allows it):
//! the agent writes the owner's files, what it makes is the owner's on disk,
//! the files of any other user stay that user's and out of its reach, and
//! nothing on disk changes hands, so nothing has to be handed back, whatever
//! becomes of sealc.
//!
//! For each owner, a user namespace maps that one uid and gid to the agent's
//! ([`trees`]); each root is cloned as a detached mount tree
//! (`open_tree(OPEN_TREE_CLONE)`, its own mount only, no path followed: from the descriptor of
//! [`super::user::open_nofollow`]) and idmapped through it, `nosuid` and
//! `nodev`. In the child, before bubblewrap starts ([`Prepared::apply`]),
//! the tree is attached over the root in a mount namespace of its own, whose
//! mounts never propagate to the host, and the descriptor bubblewrap binds
//! the root from becomes the tree's. A root with a filesystem mounted inside
//! it is refused (the walks that clear set-id bits, [`super::user::prepare`]
//! and [`super::user::sweep_set_id`], stay on one filesystem). Where any
//! step fails (an old kernel, a filesystem without idmapping such as
//! `ramfs`), nothing has been changed and the caller falls back to handing
//! the roots over by `chown`.

use crate::failure::Failure;
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use rustix::fs::OFlags;

use super::user::{open_nofollow, Ids, Owner};
use crate::diag::visible;

/// `MOUNT_ATTR_*` and `struct mount_attr` (`linux/mount.h`), which the libc
/// crate does not carry for every target.
const MOUNT_ATTR_NOSUID: u64 = 0x0000_0002;
const MOUNT_ATTR_NODEV: u64 = 0x0000_0004;
const MOUNT_ATTR_IDMAP: u64 = 0x0010_0000;
const OPEN_TREE_CLONE: libc::c_uint = 1;
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x0000_0004;
const MOVE_MOUNT_T_EMPTY_PATH: libc::c_uint = 0x0000_0040;

#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// `struct open_how` (`linux/openat2.h`).
#[repr(C)]
struct OpenHow {
    flags: u64,
    mode: u64,
    resolve: u64,
}

/// One write root's idmapped tree, detached until [`Prepared::apply`].
#[derive(Debug)]
pub struct Tree {
    /// The root's path on the host, as the seal binds it.
    pub root: String,
    fd: OwnedFd,
    dev: u64,
    ino: u64,
}

/// Idmapped trees of the write roots in `owners` that the agent does not
/// own already: in each, the owner's uid and gid are the agent's. `Err`
/// (with why) when any of them cannot be made; nothing has changed then.
pub fn trees(owners: &[Owner], agent: Ids) -> Result<Vec<Tree>, Failure> {
    let table = std::fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| Failure::os("cannot read the mount table", e))?;
    for o in owners.iter().filter(|o| o.ids != agent) {
        // Its files would be the agent's to write too, beyond the walks
        // that clear set-id bits (they stay on one filesystem).
        if let Some(why) = mounted_inside(&table, &o.root) {
            return Err(Failure::new(why));
        }
    }
    let mut spaces: std::collections::BTreeMap<(u32, u32), OwnedFd> = Default::default();
    let mut out = Vec::new();
    for o in owners {
        if o.ids == agent {
            continue; // the agent's already: bound as it is
        }
        let ns = match spaces.get(&(o.ids.uid, o.ids.gid)) {
            Some(ns) => ns,
            None => {
                let ns = userns(o.ids, agent)?;
                spaces.entry((o.ids.uid, o.ids.gid)).or_insert(ns)
            }
        };
        out.push(tree(o, ns)?);
    }
    Ok(out)
}

/// Why `root` cannot be idmapped when a mount point is inside it. The
/// mount point's name may be the agent's (a directory it made, where the
/// host mounted something later), and the mount table escapes only space,
/// tab, newline and backslash: shown escaped, never as terminal controls.
fn mounted_inside(table: &str, root: &str) -> Option<String> {
    let m = mount_inside(table, root)?;
    Some(format!(
        "`{}` is mounted inside write root `{}`",
        visible(&m),
        visible(root)
    ))
}

/// A mount point strictly inside `root`, from the text of a
/// `/proc/self/mountinfo` (whose paths escape space, tab, newline and
/// backslash as octal).
fn mount_inside(table: &str, root: &str) -> Option<String> {
    let escaped: String = root
        .chars()
        .map(|c| match c {
            ' ' => "\\040".to_string(),
            '\t' => "\\011".to_string(),
            '\n' => "\\012".to_string(),
            '\\' => "\\134".to_string(),
            c => c.to_string(),
        })
        .collect();
    let below = format!("{}/", escaped.trim_end_matches('/'));
    table
        .lines()
        .filter_map(|l| l.split(' ').nth(4))
        .find(|m| m.starts_with(&below))
        .map(str::to_string)
}

/// The idmapped clone of `o`'s root, checked to be the object recorded.
fn tree(o: &Owner, ns: &OwnedFd) -> Result<Tree, Failure> {
    let root = &o.root;
    let at = open_nofollow(root, OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC)
        .map_err(|e| Failure::os(format!("cannot open write root `{root}`"), e))?;
    let empty = c"";
    // SAFETY: `open_tree` reads the NUL-terminated empty path and returns a
    // new descriptor (or -1), which is owned from here on.
    #[allow(unsafe_code)]
    let fd = unsafe {
        libc::syscall(
            libc::SYS_open_tree,
            at.as_raw_fd(),
            empty.as_ptr(),
            // Not `AT_RECURSIVE`: a mount made inside the root after the
            // check above is not in the clone.
            OPEN_TREE_CLONE | libc::O_CLOEXEC as libc::c_uint | libc::AT_EMPTY_PATH as libc::c_uint,
        )
    };
    if fd < 0 {
        return Err(Failure::os(
            format!("cannot clone `{root}`"),
            io::Error::last_os_error(),
        ));
    }
    // SAFETY: `fd` was just returned by the kernel and nothing else owns it.
    #[allow(unsafe_code)]
    let fd = unsafe { OwnedFd::from_raw_fd(fd as RawFd) };
    let st =
        rustix::fs::fstat(&fd).map_err(|e| Failure::os(format!("cannot inspect `{root}`"), e))?;
    let (dev, ino) = o.id();
    if (st.st_dev, st.st_ino) != (dev, ino) {
        return Err(Failure::new(format!(
            "write root `{root}` is no longer the object inspected (something was put in its place)"
        )));
    }
    let attr = MountAttr {
        attr_set: MOUNT_ATTR_IDMAP | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
        attr_clr: 0,
        propagation: 0,
        userns_fd: ns.as_raw_fd() as u64,
    };
    // SAFETY: `mount_setattr` reads `attr`, which lives across the call,
    // with its size, and the NUL-terminated empty path.
    #[allow(unsafe_code)]
    let r = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            fd.as_raw_fd(),
            empty.as_ptr(),
            libc::AT_EMPTY_PATH as libc::c_uint,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if r < 0 {
        return Err(Failure::os(
            format!("cannot idmap `{root}`"),
            io::Error::last_os_error(),
        ));
    }
    Ok(Tree {
        root: root.clone(),
        fd,
        dev,
        ino,
    })
}

/// A user namespace in which `owner`'s uid and gid are `agent`'s, and
/// nothing else is mapped. Made by a child that unshares it and waits while
/// the maps are written and the namespace opened, then ends.
fn userns(owner: Ids, agent: Ids) -> Result<OwnedFd, Failure> {
    let why = |what: &str, e: io::Error| {
        Failure::new(format!("cannot make a user namespace ({what}: {e})"))
    };
    let (ready_r, ready_w) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)
        .map_err(|e| why("pipe", e.into()))?;
    let (hold_r, hold_w) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)
        .map_err(|e| why("pipe", e.into()))?;
    // SAFETY: the child calls only async-signal-safe functions (`unshare`,
    // `write`, `read`, `_exit`) on values made before the fork, and never
    // returns: it is safe in a process with threads.
    #[allow(unsafe_code)]
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(why("fork", io::Error::last_os_error()));
    }
    if pid == 0 {
        // SAFETY: as above; the buffers live on this stack.
        #[allow(unsafe_code)]
        unsafe {
            // The parent's ends: held here, they would keep the pipe open.
            libc::close(hold_w.as_raw_fd());
            libc::close(ready_r.as_raw_fd());
            let ok: u8 = if libc::unshare(libc::CLONE_NEWUSER) == 0 {
                1
            } else {
                0
            };
            libc::write(ready_w.as_raw_fd(), (&ok as *const u8).cast(), 1);
            let mut b = 0u8;
            libc::read(hold_r.as_raw_fd(), (&mut b as *mut u8).cast(), 1);
            libc::_exit(0);
        }
    }
    drop(ready_w);
    drop(hold_r);
    let made = (|| {
        let mut ok = [0u8; 1];
        match rustix::io::read(&ready_r, &mut ok) {
            Ok(1) if ok[0] == 1 => {}
            Ok(_) => return Err(why("unshare", io::Error::other("refused"))),
            Err(e) => return Err(why("unshare", e.into())),
        }
        let proc = format!("/proc/{pid}");
        std::fs::write(
            format!("{proc}/uid_map"),
            format!("{} {} 1\n", owner.uid, agent.uid),
        )
        .map_err(|e| why("uid_map", e))?;
        std::fs::write(
            format!("{proc}/gid_map"),
            format!("{} {} 1\n", owner.gid, agent.gid),
        )
        .map_err(|e| why("gid_map", e))?;
        std::fs::File::open(format!("{proc}/ns/user"))
            .map(OwnedFd::from)
            .map_err(|e| why("open", e))
    })();
    // The child ends once the pipe it holds on closes (or is killed).
    drop(hold_w);
    let mut status = 0;
    // SAFETY: signals and waits for the child forked above, into a local.
    #[allow(unsafe_code)]
    unsafe {
        libc::kill(pid, libc::SIGKILL);
        libc::waitpid(pid, &mut status, 0);
    }
    made
}

/// What the child needs to attach the trees, made before the fork so that
/// [`Prepared::apply`] allocates nothing.
pub struct Prepared {
    /// Parents first: a tree nested in another is attached over it.
    steps: Vec<Step>,
    /// Protected roots and pins inside an idmapped root: bound from the
    /// tree, so what the agent may write in a pin is the owner's as in
    /// the rest of the root.
    inner: Vec<Inner>,
    user: Ids,
}

/// A protected root or a pin (see [`crate::ir::Pin`]) that bubblewrap
/// binds from a descriptor: inside an idmapped write root, it is opened
/// again once the tree is attached (no link followed), checked to be the
/// object the descriptor was, and put at that descriptor.
pub struct Inner {
    path: CString,
    within: String,
    slot: RawFd,
    dev: u64,
    ino: u64,
}

impl Inner {
    /// `path` in the write root `within`, bound from descriptor `slot`,
    /// which is the object `(dev, ino)`.
    pub fn new(path: &str, within: &str, slot: RawFd, (dev, ino): (u64, u64)) -> io::Result<Inner> {
        Ok(Inner {
            path: CString::new(path.as_bytes()).map_err(io::Error::other)?,
            within: within.to_string(),
            slot,
            dev,
            ino,
        })
    }
}

struct Step {
    path: CString,
    tree: RawFd,
    dev: u64,
    ino: u64,
    /// The descriptors bubblewrap binds this root from.
    slots: Vec<RawFd>,
}

impl Prepared {
    /// For `trees` (which must outlive the spawn), with `slots` the
    /// descriptor each root path is bound from, and `user` the agent's.
    pub fn new(
        trees: &[Tree],
        slots: &[(String, RawFd)],
        inner: Vec<Inner>,
        user: Ids,
    ) -> io::Result<Prepared> {
        let mut steps = trees
            .iter()
            .map(|t| {
                Ok(Step {
                    path: CString::new(t.root.as_bytes()).map_err(io::Error::other)?,
                    tree: t.fd.as_raw_fd(),
                    dev: t.dev,
                    ino: t.ino,
                    slots: slots
                        .iter()
                        .filter(|(p, _)| *p == t.root)
                        .map(|(_, n)| *n)
                        .collect(),
                })
            })
            .collect::<io::Result<Vec<_>>>()?;
        steps.sort_by(|a, b| a.path.cmp(&b.path));
        // Only what lies in a root that is idmapped: any other is bound as
        // it was opened.
        let inner = inner
            .into_iter()
            .filter(|i| trees.iter().any(|t| t.root == i.within))
            .collect();
        Ok(Prepared { steps, inner, user })
    }

    /// In the child, before bubblewrap: a mount namespace of its own whose
    /// mounts reach no other, each tree attached over its root (opened
    /// again there without following any link, and checked to be the same
    /// object) and put at the descriptors bubblewrap binds from; then the
    /// agent's user, with no supplementary groups.
    ///
    /// # Safety
    ///
    /// Between `fork` and `exec` only: it changes the calling process's
    /// namespaces, descriptors and ids, and calls only async-signal-safe
    /// functions, allocating nothing.
    #[allow(unsafe_code)]
    pub unsafe fn apply(&self) -> io::Result<()> {
        let fail = || Err(io::Error::last_os_error());
        // SAFETY (each call below): plain system calls on descriptors and
        // NUL-terminated paths made before the fork, and locals.
        unsafe {
            if libc::unshare(libc::CLONE_NEWNS) != 0 {
                return fail();
            }
            if libc::mount(
                std::ptr::null(),
                c"/".as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            ) != 0
            {
                return fail();
            }
            for s in &self.steps {
                let how = OpenHow {
                    flags: (libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC) as u64,
                    mode: 0,
                    resolve: libc::RESOLVE_NO_SYMLINKS,
                };
                let target = libc::syscall(
                    libc::SYS_openat2,
                    libc::AT_FDCWD,
                    s.path.as_ptr(),
                    &how as *const OpenHow,
                    std::mem::size_of::<OpenHow>(),
                );
                if target < 0 {
                    return fail();
                }
                let target = target as RawFd;
                let mut st: libc::stat = std::mem::zeroed();
                if libc::fstat(target, &mut st) != 0 {
                    return fail();
                }
                if st.st_dev != s.dev || st.st_ino != s.ino {
                    return Err(io::Error::from_raw_os_error(libc::ESTALE));
                }
                let empty = c"".as_ptr();
                if libc::syscall(
                    libc::SYS_move_mount,
                    s.tree,
                    empty,
                    target,
                    empty,
                    MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH,
                ) != 0
                {
                    return fail();
                }
                libc::close(target);
                for &slot in &s.slots {
                    if libc::dup2(s.tree, slot) < 0 {
                        return fail();
                    }
                }
            }
            for i in &self.inner {
                let how = OpenHow {
                    flags: (libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC) as u64,
                    mode: 0,
                    resolve: libc::RESOLVE_NO_SYMLINKS,
                };
                let at = libc::syscall(
                    libc::SYS_openat2,
                    libc::AT_FDCWD,
                    i.path.as_ptr(),
                    &how as *const OpenHow,
                    std::mem::size_of::<OpenHow>(),
                );
                if at < 0 {
                    return fail();
                }
                let at = at as RawFd;
                let mut st: libc::stat = std::mem::zeroed();
                if libc::fstat(at, &mut st) != 0 {
                    return fail();
                }
                if st.st_dev != i.dev || st.st_ino != i.ino {
                    return Err(io::Error::from_raw_os_error(libc::ESTALE));
                }
                if libc::dup2(at, i.slot) < 0 {
                    return fail();
                }
                libc::close(at);
            }
            if libc::setgroups(0, std::ptr::null()) != 0
                || libc::setgid(self.user.gid) != 0
                || libc::setuid(self.user.uid) != 0
            {
                return fail();
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::{mount_inside, mounted_inside};

    #[test]
    fn mounts_strictly_inside_a_root_are_found_escaped() {
        let table = "22 1 8:1 / / rw - ext4 /dev/sda1 rw\n\
                     30 22 0:5 / /w/a\\040b/m rw - tmpfs t rw\n\
                     31 22 0:6 / /w/ab rw - tmpfs t rw\n";
        assert_eq!(
            mount_inside(table, "/w/a b").as_deref(),
            Some("/w/a\\040b/m")
        );
        assert_eq!(mount_inside(table, "/w/a"), None);
        assert_eq!(mount_inside(table, "/w/ab"), None);
        assert_eq!(mount_inside(table, "/w").as_deref(), Some("/w/a\\040b/m"));
    }

    #[test]
    fn a_mount_point_named_by_the_agent_is_said_escaped() {
        let table = "22 1 8:1 / / rw - ext4 /dev/sda1 rw\n\
                     30 22 0:5 / /w/\u{1b}]52;c;eA==\u{7}\u{9b}2J rw - tmpfs t rw\n";
        let why = mounted_inside(table, "/w").unwrap();
        assert!(!why.chars().any(char::is_control), "{why:?}");
        assert!(why.contains(r"\u{1b}]52;c;eA==\u{7}\u{9b}2J"), "{why}");
        assert_eq!(mounted_inside(table, "/v"), None);
    }
}
