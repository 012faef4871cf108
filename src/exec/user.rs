//! Who the agent runs as. Started by root, `sealc exec` never hands the
//! sandbox kernel uid 0 (which legacy checks such as `/proc/sys` writes and
//! setuid-root files trust whatever the capabilities): it starts bubblewrap
//! as an unprivileged user (`--user`, default `nobody`) and first hands the
//! write roots to that user, so they stay writable for the agent.

use std::os::fd::{AsFd, OwnedFd};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};

/// A uid and gid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ids {
    pub uid: u32,
    pub gid: u32,
}

/// The default user of a root caller.
pub const DEFAULT_USER: &str = "nobody";
/// `nobody`'s ids where `/etc/passwd` does not name it.
const NOBODY: Ids = Ids {
    uid: 65534,
    gid: 65534,
};

/// Read `NAME`, `UID` or `UID:GID` against the text of `/etc/passwd`.
pub fn parse_user(spec: &str, passwd: &str) -> Result<Ids, String> {
    let num = |s: &str| s.parse::<u32>().ok();
    let ids = if let Some((u, g)) = spec.split_once(':') {
        match (num(u), num(g)) {
            (Some(uid), Some(gid)) => Ids { uid, gid },
            _ => return Err(format!("`--user {spec}` is not UID:GID")),
        }
    } else if let Some(uid) = num(spec) {
        let gid = passwd
            .lines()
            .map(|l| l.split(':').collect::<Vec<_>>())
            .find(|f| f.len() > 3 && num(f[2]) == Some(uid))
            .and_then(|f| num(f[3]))
            .unwrap_or(uid);
        Ids { uid, gid }
    } else {
        match passwd
            .lines()
            .map(|l| l.split(':').collect::<Vec<_>>())
            .find(|f| f.len() > 3 && f[0] == spec)
        {
            Some(f) => match (num(f[2]), num(f[3])) {
                (Some(uid), Some(gid)) => Ids { uid, gid },
                _ => return Err(format!("`/etc/passwd` has no usable ids for `{spec}`")),
            },
            None if spec == DEFAULT_USER => NOBODY,
            None => return Err(format!("no user `{spec}` in `/etc/passwd`")),
        }
    };
    if ids.uid == 0 || ids.gid == 0 {
        return Err(format!(
            "`--user {spec}` is root, and the agent never runs as root"
        ));
    }
    Ok(ids)
}

/// Hand the tree under each write root to `ids`: every directory and every
/// file with a single link, never following a symlink, never leaving the
/// root's filesystem. A file linked elsewhere keeps its owner (it may be
/// another path's file). Works on descriptors opened without following
/// links, so nothing swapped in meanwhile is changed instead.
pub fn hand_over(roots: &[String], ids: Ids) -> Result<(), String> {
    for root in roots {
        let dir = match open_nofollow(
            root,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        ) {
            Ok(d) => d,
            Err(rustix::io::Errno::NOTDIR) => {
                let f = open_nofollow(root, OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC)
                    .map_err(|e| format!("cannot open write root `{root}`: {e}"))?;
                chown_single(&f, ids).map_err(|e| format!("cannot hand over `{root}`: {e}"))?;
                continue;
            }
            Err(rustix::io::Errno::NOENT) => continue,
            Err(e) => return Err(format!("cannot open write root `{root}`: {e}")),
        };
        let dev = rustix::fs::fstat(&dir)
            .map_err(|e| format!("cannot inspect `{root}`: {e}"))?
            .st_dev;
        walk(dir, dev, ids).map_err(|e| format!("cannot hand over `{root}`: {e}"))?;
    }
    Ok(())
}

/// Open an absolute `path` without following a link anywhere on the way:
/// each directory above it is opened with `O_PATH|O_NOFOLLOW` from `/`, and
/// the last component with `flags` (which should hold `O_NOFOLLOW`). A host
/// process that swaps any component for a symlink meanwhile gets `ELOOP` or
/// `ENOTDIR`, never another object.
pub fn open_nofollow(path: &str, flags: OFlags) -> rustix::io::Result<OwnedFd> {
    let dir_flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mut fd = rustix::fs::open("/", dir_flags, Mode::empty())?;
    let p = std::path::Path::new(path);
    let comps: Vec<_> = p.components().skip(1).collect();
    let Some((last, above)) = comps.split_last() else {
        return rustix::fs::open("/", flags, Mode::empty());
    };
    for c in above {
        fd = rustix::fs::openat(&fd, c.as_os_str(), dir_flags, Mode::empty())?;
    }
    rustix::fs::openat(&fd, last.as_os_str(), flags, Mode::empty())
}

/// Can `ids` walk down to `path`? Every directory above it must be
/// searchable by that user (by the mode bits: owner, group, other). Said
/// before anything starts, since bubblewrap, running as that user, could not
/// mount there and the agent could not reach it.
pub fn reachable(path: &str, ids: Ids) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let mut at = std::path::Path::new(path);
    while let Some(parent) = at.parent() {
        let Ok(m) = std::fs::metadata(parent) else {
            return Ok(()); // absent: the host check reports it
        };
        let bit = if m.uid() == ids.uid {
            0o100
        } else if m.gid() == ids.gid {
            0o010
        } else {
            0o001
        };
        if m.mode() & bit == 0 {
            return Err(format!(
                "the agent's user ({}:{}) cannot reach `{path}`: `{}` is not searchable by it",
                ids.uid,
                ids.gid,
                parent.display()
            ));
        }
        at = parent;
    }
    Ok(())
}

fn chown(fd: impl AsFd, ids: Ids) -> rustix::io::Result<()> {
    rustix::fs::chownat(
        fd,
        "",
        Some(rustix::fs::Uid::from_raw(ids.uid)),
        Some(rustix::fs::Gid::from_raw(ids.gid)),
        AtFlags::EMPTY_PATH | AtFlags::SYMLINK_NOFOLLOW,
    )
}

fn chown_single(fd: &OwnedFd, ids: Ids) -> rustix::io::Result<()> {
    let st = rustix::fs::fstat(fd)?;
    let mine = st.st_uid == ids.uid && st.st_gid == ids.gid;
    if FileType::from_raw_mode(st.st_mode) == FileType::RegularFile && st.st_nlink == 1 && !mine {
        chown(fd, ids)?;
    }
    Ok(())
}

/// How deep a write root's tree may go before the hand-over gives up.
const MAX_DEPTH: usize = 512;

fn walk(top: OwnedFd, dev: u64, ids: Ids) -> rustix::io::Result<()> {
    walk_dir(&top, dev, ids, 0)
}

/// Depth first, one open directory per level (a wide tree left by an earlier
/// run costs no descriptors).
fn walk_dir(dir: &OwnedFd, dev: u64, ids: Ids, depth: usize) -> rustix::io::Result<()> {
    if depth > MAX_DEPTH {
        return Err(rustix::io::Errno::LOOP);
    }
    let st = rustix::fs::fstat(dir)?;
    if st.st_uid != ids.uid || st.st_gid != ids.gid {
        chown(dir, ids)?;
    }
    for entry in rustix::fs::Dir::read_from(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        if name.to_bytes() == b"." || name.to_bytes() == b".." {
            continue;
        }
        let fd = rustix::fs::openat(
            dir,
            name,
            OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        let st = rustix::fs::fstat(&fd)?;
        if st.st_dev != dev {
            continue; // another filesystem mounted inside: not ours to change
        }
        match FileType::from_raw_mode(st.st_mode) {
            FileType::Directory => {
                drop(fd);
                let child = rustix::fs::openat(
                    dir,
                    name,
                    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                    Mode::empty(),
                )?;
                walk_dir(&child, dev, ids, depth + 1)?;
            }
            FileType::RegularFile => chown_single(&fd, ids)?,
            _ => {} // symlinks, sockets, fifos: left as they are
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const PASSWD: &str =
        "root:x:0:0::/root:/bin/sh\nnobody:x:65534:65534::/:/x\nagent:x:999:995::/:/x\n";

    #[test]
    fn users_by_name_uid_or_both_never_root() {
        assert_eq!(
            parse_user("agent", PASSWD).unwrap(),
            Ids { uid: 999, gid: 995 }
        );
        assert_eq!(
            parse_user("999", PASSWD).unwrap(),
            Ids { uid: 999, gid: 995 }
        );
        assert_eq!(parse_user("5:6", PASSWD).unwrap(), Ids { uid: 5, gid: 6 });
        assert_eq!(parse_user("nobody", "").unwrap(), NOBODY);
        assert!(parse_user("root", PASSWD).unwrap_err().contains("root"));
        assert!(parse_user("0:5", PASSWD).is_err());
        assert!(parse_user("ghost", PASSWD).unwrap_err().contains("`ghost`"));
    }
}
