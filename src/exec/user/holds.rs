//! Runs started by root that share a write root take turns where one of
//! them hands it over by `chown`: each run holds a lock per write root from
//! reading its owner to handing it back. Idmapped runs change no owner and
//! share theirs (`flock` shared); a run that hands the roots over by
//! `chown` holds them alone (exclusive), so no other run reads the agent's
//! user as the owner, or loses the root to a hand-back while it runs.
//!
//! The locks are files in a directory only root can write
//! (`/run/sealc/roots`), named by the root's device and inode (no name a
//! caller or an agent can make first), never in the write root itself,
//! where the agent could hold a lock of its own. They stay once made (one
//! small file per write root ever used); a lock ends with the descriptor,
//! also when sealc is killed.

use std::os::fd::OwnedFd;

use rustix::fs::{FlockOperation, Mode, OFlags};

use super::open_nofollow;
use crate::failure::Failure;

const DIR: &str = "/run/sealc/roots";

/// The locks a run holds on its write roots.
#[derive(Debug)]
pub struct Holds {
    held: Vec<OwnedFd>,
    pub exclusive: bool,
}

/// Lock each of `roots` (those that exist), shared or `exclusive`, in the
/// order of their device and inode (so that two runs never wait on each
/// other). `waiting` is told of a root another run holds, before this one
/// waits for it.
pub fn hold(
    roots: &[String],
    exclusive: bool,
    waiting: &mut dyn FnMut(&str),
) -> Result<Holds, Failure> {
    let fail = |what: String, e: rustix::io::Errno| Failure::os(what, e);
    let mut keyed = Vec::new();
    for root in roots {
        let fd = match open_nofollow(root, OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC) {
            Ok(fd) => fd,
            Err(rustix::io::Errno::NOENT) => continue,
            Err(e) => return Err(fail(format!("cannot open write root `{root}`"), e)),
        };
        let st = rustix::fs::fstat(&fd).map_err(|e| fail(format!("cannot inspect `{root}`"), e))?;
        keyed.push(((st.st_dev, st.st_ino), root));
    }
    keyed.sort();
    keyed.dedup_by_key(|(k, _)| *k);
    let dir = crate::hostfs::run_dir("roots", 0o700)
        .map_err(|e| Failure::os(format!("cannot make `{DIR}`"), e))?;
    let (now, wait) = if exclusive {
        (
            FlockOperation::NonBlockingLockExclusive,
            FlockOperation::LockExclusive,
        )
    } else {
        (
            FlockOperation::NonBlockingLockShared,
            FlockOperation::LockShared,
        )
    };
    let mut held = Vec::new();
    for ((dev, ino), root) in keyed {
        let name = format!("{dev:x}-{ino:x}.lock");
        let lock = rustix::fs::openat(
            dir.fd(),
            name.as_str(),
            OFlags::RDWR | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )
        .map_err(|e| fail(format!("cannot open `{DIR}/{name}`"), e))?;
        match rustix::fs::flock(&lock, now) {
            Ok(()) => {}
            Err(rustix::io::Errno::WOULDBLOCK) => {
                waiting(root);
                loop {
                    match rustix::fs::flock(&lock, wait) {
                        Ok(()) => break,
                        Err(rustix::io::Errno::INTR) => continue,
                        Err(e) => return Err(fail(format!("cannot lock `{DIR}/{name}`"), e)),
                    }
                }
            }
            Err(e) => return Err(fail(format!("cannot lock `{DIR}/{name}`"), e)),
        }
        held.push(lock);
    }
    Ok(Holds { held, exclusive })
}

impl Holds {
    /// How many write roots are held.
    pub fn len(&self) -> usize {
        self.held.len()
    }

    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }
}
