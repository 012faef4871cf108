//! Runs started by root that share write roots take turns where one of
//! them hands a root over by `chown`. Two runs *overlap* where a write root
//! of one is, holds or lies in a write root of the other (by device and
//! inode, down each root's path, so a nested root or another name for the
//! same directory counts). Overlapping idmapped runs change no owner and
//! run side by side; a run that chowns its roots runs alone among those it
//! overlaps: no other run reads the agent's user as a root's owner, or
//! loses a root (or a part of one) to a hand-back while it runs.
//!
//! Each run that holds roots has an entry in `/run/sealc/roots`, a
//! directory only root can write: a file of a name no one can guess,
//! listing its roots and their paths' identities and whether it chowns,
//! locked (`flock`) by the run for as long as it lives. A run checks the
//! entries and adds its own under a brief lock of the whole registry
//! (`.registry`); an entry whose lock is free is a run that has ended
//! (killed too) and is removed. A run that meets an overlapping entry it
//! may not run beside waits for that entry's lock, then looks again.

use std::io::{Read, Write};
use std::os::fd::{AsFd, OwnedFd};

use rustix::fs::{FlockOperation, Mode, OFlags};

use super::open_nofollow;
use crate::failure::Failure;

const DIR: &str = "/run/sealc/roots";
const REGISTRY: &str = ".registry";
const PREFIX: &str = "run-";

/// A run's entry, held until dropped (after the hand-back).
#[derive(Debug)]
pub struct Holds {
    dir: crate::hostfs::Dir,
    name: String,
    _lock: OwnedFd,
    pub exclusive: bool,
}

impl Drop for Holds {
    fn drop(&mut self) {
        // Unlinked first, then unlocked (the descriptor closes after this):
        // a run waiting on the lock finds the entry gone when it looks again.
        let _ = self.dir.remove(self.name.as_ref(), false);
    }
}

/// One write root: its own identity, and those of every directory on its
/// path (itself included).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Root {
    id: (u64, u64),
    chain: Vec<(u64, u64)>,
}

impl Root {
    fn overlaps(&self, other: &Root) -> bool {
        self.chain.contains(&other.id) || other.chain.contains(&self.id)
    }
}

/// An entry's text: `chowned` or `idmapped`, then one line per root:
/// `DEV:INO` of the root, then those of its path.
fn render(exclusive: bool, roots: &[Root]) -> String {
    let mut s = String::from(if exclusive { "chowned\n" } else { "idmapped\n" });
    for r in roots {
        let ids: Vec<String> = std::iter::once(r.id)
            .chain(r.chain.iter().copied())
            .map(|(d, i)| format!("{d:x}:{i:x}"))
            .collect();
        s.push_str(&ids.join(" "));
        s.push('\n');
    }
    s
}

fn parse(text: &str) -> Option<(bool, Vec<Root>)> {
    let mut lines = text.lines();
    let exclusive = match lines.next()? {
        "chowned" => true,
        "idmapped" => false,
        _ => return None,
    };
    let id = |w: &str| -> Option<(u64, u64)> {
        let (d, i) = w.split_once(':')?;
        Some((
            u64::from_str_radix(d, 16).ok()?,
            u64::from_str_radix(i, 16).ok()?,
        ))
    };
    let roots = lines
        .map(|l| {
            let mut ids = l.split(' ').map(id);
            let first = ids.next()??;
            Some(Root {
                id: first,
                chain: ids.collect::<Option<Vec<_>>>()?,
            })
        })
        .collect::<Option<Vec<_>>>()?;
    Some((exclusive, roots))
}

/// The identities of `root` (a realpath) and of each directory on its path,
/// each opened without following a link; `None` when the root is absent.
fn identify(root: &str) -> Result<Option<Root>, Failure> {
    let stat = |p: &str| -> rustix::io::Result<(u64, u64)> {
        let fd = open_nofollow(p, OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC)?;
        let st = rustix::fs::fstat(&fd)?;
        Ok((st.st_dev, st.st_ino))
    };
    let id = match stat(root) {
        Ok(id) => id,
        Err(rustix::io::Errno::NOENT) => return Ok(None),
        Err(e) => return Err(Failure::os(format!("cannot open write root `{root}`"), e)),
    };
    let mut chain = vec![id];
    let mut path = std::path::Path::new(root);
    while let Some(parent) = path.parent() {
        let p = parent.to_string_lossy();
        chain.push(stat(&p).map_err(|e| Failure::os(format!("cannot open `{p}`"), e))?);
        path = parent;
    }
    Ok(Some(Root { id, chain }))
}

/// Hold `roots` (those that exist): beside other idmapped runs, or alone
/// among the runs they overlap when `exclusive` (chowned). `waiting` is
/// told of the first root another run holds, before this one waits.
pub fn hold(
    roots: &[String],
    exclusive: bool,
    waiting: &mut dyn FnMut(&str),
) -> Result<Holds, Failure> {
    let fail = |what: String, e: rustix::io::Errno| Failure::os(what, e);
    let mut mine = Vec::new();
    let mut named = Vec::new();
    for r in roots {
        if let Some(id) = identify(r)? {
            named.push((id.clone(), r.clone()));
            mine.push(id);
        }
    }
    let dir = crate::hostfs::run_dir("roots", 0o700)
        .map_err(|e| Failure::os(format!("cannot make `{DIR}`"), e))?;
    let open = |name: &str, flags: OFlags| {
        rustix::fs::openat(
            dir.fd(),
            name,
            flags | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )
    };
    let lock = |fd: &OwnedFd, op: FlockOperation| loop {
        match rustix::fs::flock(fd, op) {
            Err(rustix::io::Errno::INTR) => continue,
            r => return r,
        }
    };
    let mut told = false;
    loop {
        let registry = open(REGISTRY, OFlags::RDWR | OFlags::CREATE)
            .map_err(|e| fail(format!("cannot open `{DIR}/{REGISTRY}`"), e))?;
        lock(&registry, FlockOperation::LockExclusive)
            .map_err(|e| fail(format!("cannot lock `{DIR}/{REGISTRY}`"), e))?;
        // The first live entry this run may not run beside.
        let mut blocker = None;
        let names = entries(&dir)?;
        for name in names {
            let Ok(fd) = open(&name, OFlags::RDONLY) else {
                continue;
            };
            if lock(&fd, FlockOperation::NonBlockingLockShared).is_ok() {
                // Its run has ended: its roots were handed back, or are
                // the agent's (the next hand-over warns of that).
                let _ = dir.remove(name.as_ref(), false);
                continue;
            }
            let mut text = String::new();
            let _ = std::fs::File::from(
                fd.try_clone()
                    .map_err(|e| Failure::os(format!("cannot read `{DIR}/{name}`"), e))?,
            )
            .take(1 << 20)
            .read_to_string(&mut text);
            let Some((theirs_chowned, theirs)) = parse(&text) else {
                continue;
            };
            let hit = named.iter().find(|(r, _)| {
                (exclusive || theirs_chowned) && theirs.iter().any(|t| t.overlaps(r))
            });
            if let Some((_, path)) = hit {
                blocker = Some((fd, path.clone()));
                break;
            }
        }
        match blocker {
            None => {
                let name = format!(
                    "{PREFIX}{}-{:016x}",
                    std::process::id(),
                    u64::from_le_bytes(rand_bytes())
                );
                let fd = open(&name, OFlags::RDWR | OFlags::CREATE | OFlags::EXCL)
                    .map_err(|e| fail(format!("cannot make `{DIR}/{name}`"), e))?;
                lock(&fd, FlockOperation::LockExclusive)
                    .map_err(|e| fail(format!("cannot lock `{DIR}/{name}`"), e))?;
                let mut f = std::fs::File::from(
                    fd.try_clone()
                        .map_err(|e| Failure::os(format!("cannot write `{DIR}/{name}`"), e))?,
                );
                f.write_all(render(exclusive, &mine).as_bytes())
                    .map_err(|e| Failure::os(format!("cannot write `{DIR}/{name}`"), e))?;
                drop(registry);
                return Ok(Holds {
                    dir,
                    name,
                    _lock: fd,
                    exclusive,
                });
            }
            Some((fd, path)) => {
                drop(registry);
                if !told {
                    waiting(&path);
                    told = true;
                }
                // Until that run ends (its lock goes with its last
                // descriptor), then look again.
                lock(&fd, FlockOperation::LockShared)
                    .map_err(|e| fail(format!("cannot wait on `{DIR}`"), e))?;
            }
        }
    }
}

/// The names of the entries in the registry's directory.
fn entries(dir: &crate::hostfs::Dir) -> Result<Vec<String>, Failure> {
    let fd = rustix::fs::openat(
        dir.fd(),
        ".",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| Failure::os(format!("cannot list `{DIR}`"), e))?;
    let mut out = Vec::new();
    let d = rustix::fs::Dir::read_from(fd.as_fd())
        .map_err(|e| Failure::os(format!("cannot list `{DIR}`"), e))?;
    for e in d {
        let e = e.map_err(|e| Failure::os(format!("cannot list `{DIR}`"), e))?;
        let name = e.file_name().to_string_lossy();
        if name.starts_with(PREFIX) {
            out.push(name.into_owned());
        }
    }
    Ok(out)
}

/// Eight bytes from the kernel's random source: an entry's name.
fn rand_bytes() -> [u8; 8] {
    let mut b = [0u8; 8];
    let _ = rustix::rand::getrandom(&mut b, rustix::rand::GetRandomFlags::empty());
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_and_equal_roots_overlap_and_siblings_do_not() {
        // / (1), /a (2), /a/b (3), /a/c (4)
        let root = |id: u64, up: &[u64]| Root {
            id: (0, id),
            chain: std::iter::once(id)
                .chain(up.iter().copied())
                .map(|i| (0, i))
                .collect(),
        };
        let (a, b, c) = (root(2, &[1]), root(3, &[2, 1]), root(4, &[2, 1]));
        assert!(a.overlaps(&b) && b.overlaps(&a));
        assert!(a.overlaps(&a));
        assert!(!b.overlaps(&c));
        let text = render(true, &[b.clone(), c.clone()]);
        assert_eq!(parse(&text), Some((true, vec![b, c])));
        assert_eq!(parse("bogus\n"), None);
    }
}
