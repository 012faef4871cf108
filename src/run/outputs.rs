//! `exec.outputs`: the files a run produces. Each is looked at just before
//! the command starts (its identity, if there; after the write roots are
//! handed over, which may move change times) and hashed once the sandbox
//! has ended (before they are handed back), every component of its path
//! opened without following a link. Only a file this run wrote is this
//! run's output: one whose identity (device, inode, change time) is what
//! it was before the command started was left by an earlier run, and is
//! said so, never attested. The change time is the kernel's: the agent can
//! move it forward (any change does) but never back.

use std::collections::BTreeMap;
use std::os::fd::OwnedFd;
use std::path::{Component, Path};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};

use crate::exec::report::OutputState;
use crate::ir::Output;

/// Who a file is: device, inode, change time. Any write, rename onto it,
/// chmod or link count change moves the change time.
type Identity = (u64, u64, i64, u64);

/// Each output and its identity before the command started (`None`: not
/// there, or not reachable without a link).
#[derive(Debug)]
pub(super) struct Before(Vec<(Output, Option<Identity>)>);

/// Look at each output before the command starts.
pub(super) fn before(ir: &crate::ir::Ir) -> Before {
    Before(
        ir.exec
            .outputs
            .iter()
            .map(|o| {
                let id = parent_of(Path::new(&o.real)).ok().and_then(|(dir, name)| {
                    let st = rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW).ok()?;
                    Some(identity(&st))
                });
                (o.clone(), id)
            })
            .collect(),
    )
}

/// After the run: each output by its path as the spec names it (after
/// substitution), and what this run left there.
pub(super) fn after(before: &Before) -> BTreeMap<String, OutputState> {
    before
        .0
        .iter()
        .map(|(o, was)| (o.path.clone(), state(Path::new(&o.real), *was)))
        .collect()
}

fn state(path: &Path, was: Option<Identity>) -> OutputState {
    let refused = |e: std::io::Error| OutputState::Refused {
        message: e.to_string(),
    };
    let (dir, name) = match parent_of(path) {
        Ok(d) => d,
        // A directory on its way is not there (a link there is refused).
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return OutputState::Absent,
        Err(e) => return refused(e),
    };
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY;
    let fd = match rustix::fs::openat(&dir, name, flags | OFlags::CLOEXEC, Mode::empty()) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::NOENT) => return OutputState::Absent,
        Err(rustix::io::Errno::LOOP) => {
            return refused(std::io::Error::other("a link in its place"))
        }
        Err(e) => return refused(e.into()),
    };
    let st = match rustix::fs::fstat(&fd) {
        Ok(st) => st,
        Err(e) => return refused(e.into()),
    };
    if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
        return refused(std::io::Error::other("not a regular file"));
    }
    if was == Some(identity(&st)) {
        return OutputState::Unchanged;
    }
    // The size is what was hashed, counted as it is read.
    let mut read = Counted(std::fs::File::from(fd), 0);
    match crate::digest::sha256_hex_of(&mut read) {
        Ok(hex) => OutputState::Written {
            sha256: format!("sha256:{hex}"),
            bytes: read.1,
        },
        Err(e) => refused(e),
    }
}

/// A reader that counts the bytes it gave.
struct Counted<R>(R, u64);

impl<R: std::io::Read> std::io::Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.0.read(buf)?;
        self.1 += n as u64;
        Ok(n)
    }
}

// `st_ctime_nsec` is a `u64` on some targets and an `i64` on others.
#[allow(clippy::unnecessary_cast)]
fn identity(st: &rustix::fs::Stat) -> Identity {
    (st.st_dev, st.st_ino, st.st_ctime, st.st_ctime_nsec as u64)
}

/// The directory that holds `path`, opened from `/` one component at a
/// time with no link followed (the agent may have written any directory
/// on its way, and a link it left would have the run vouch for another
/// file), and the file's name in it. A relative path is taken from the
/// working directory.
pub(super) fn parent_of(path: &Path) -> std::io::Result<(OwnedFd, &std::ffi::OsStr)> {
    // `O_PATH`: walking needs search permission on each directory only
    // (as `open` by name does), never the right to list it.
    let dir_flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let start = if path.is_absolute() { "/" } else { "." };
    let mut dir = rustix::fs::open(start, dir_flags, Mode::empty())?;
    let parts: Vec<_> = path.components().collect();
    let Some((last, dirs)) = parts.split_last() else {
        return Err(std::io::Error::other("names no file"));
    };
    for c in dirs {
        match c {
            Component::RootDir | Component::CurDir => {}
            Component::Normal(n) => {
                dir = rustix::fs::openat(&dir, *n, dir_flags, Mode::empty()).map_err(|e| {
                    let e = std::io::Error::from(e);
                    std::io::Error::new(
                        e.kind(),
                        format!(
                            "{}: a link or no directory on its way ({e})",
                            n.to_string_lossy()
                        ),
                    )
                })?;
            }
            _ => return Err(std::io::Error::other("`..` on its way")),
        }
    }
    match last {
        Component::Normal(name) => Ok((dir, name)),
        _ => Err(std::io::Error::other("names no file")),
    }
}
