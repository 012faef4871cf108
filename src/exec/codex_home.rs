//! The seal's `CODEX_HOME`, owned by `sealc exec` (a Codex seal only).
//!
//! Codex reads its global instructions (`AGENTS.md`), skills, rules and
//! credentials from its home, and the home lies in a write root: what one
//! run's agent leaves there would steer the next run's Codex. So the home is
//! made fresh for every run and never reused:
//!
//! - before the run ([`prepare`]) it must not exist (what an earlier run
//!   left is refused, or discarded with `--force`); it is made (0700), with
//!   the verified `config.toml` and, when the spec names one (`[codex]
//!   credentials`), a copy of that file as `auth.json` (read from outside
//!   every write root, no link followed; copied, never linked);
//! - after the run ([`Home::check_config`], [`Home::finish`]) the config is
//!   checked by identity (inode, ctime, mtime, size: a change that was put
//!   back is still a change) and by content, the copied credentials are
//!   compared (and never written back), everything there is listed (path,
//!   kind, size, digest), copied for review beside the run report
//!   (`--report FILE` → `FILE.codex-home/`, without the credentials) or
//!   discarded, and the home is removed.
//!
//! Every component below the write root is opened without following a link
//! (a link there is refused), every file is made with `O_EXCL|O_NOFOLLOW`,
//! and every walk is bounded. Started by root, what sealc makes there is
//! the write root's owner's, as if that owner had made it (the agent writes
//! the root as its owner: see [`super::idmap`]).

mod review;
use self::review::{copy_for_review, list};
use crate::failure::Failure;

use std::ffi::OsStr;
use std::io::{Read, Write};
use std::os::fd::OwnedFd;

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use serde::Serialize;

use crate::diag::quote;
use crate::hostfs::{Bounds, Dir};
use crate::ir::{is_within, Ir, RootKind};

/// The config's file name in `CODEX_HOME`.
pub const CONFIG: &str = "config.toml";
/// The credentials' file name in `CODEX_HOME` (Codex's `auth.json`).
pub const CREDENTIALS: &str = "auth.json";
/// The most bytes of a credentials file sealc copies.
pub const MAX_CREDENTIALS: u64 = 1 << 20;
/// The most bytes of the config sealc reads back.
pub const MAX_CONFIG: u64 = 1 << 20;
/// How far the listing and the review copy of a home go (past it they say
/// they stopped); removing a home goes to any depth, up to
/// [`MAX_REMOVED`] entries.
pub const BOUNDS: Bounds = Bounds {
    entries: 100_000,
    depth: 64,
};
/// The most entries removing a home (or discarding one with `--force`)
/// takes; past it the home is left, and said.
pub const MAX_REMOVED: usize = 1_000_000;
/// The most bytes the listing hashes in all (each file once, however many
/// links it has): past it a file is listed without its digest.
pub const MAX_HASHED: u64 = 256 << 20;
/// The most bytes of paths the listing holds (the rest are counted).
pub const MAX_LISTED_BYTES: usize = 4 << 20;
/// The most entries the report lists one by one (the rest are counted).
pub const MAX_LISTED: usize = 10_000;
/// Files up to this size are hashed and copied for review; larger ones are
/// listed with their size only.
pub const MAX_FILE: u64 = 64 << 20;
/// The most bytes copied for review in all (each file once).
pub const MAX_COPY: u64 = 256 << 20;

/// Why the home was not made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refused {
    /// The home is there already: what an earlier run left (or something
    /// else put in its place), and `--force` was not given.
    Left(String),
    /// The directory could not be reached or written, or the credentials
    /// could not be read.
    Io(String),
}

fn io(what: &str, e: impl std::fmt::Display) -> Refused {
    Refused::Io(format!("{what}: {e}"))
}

/// Where the seal's `CODEX_HOME` is on this host: its write root's recorded
/// realpath and the components below it (never empty: the home lies
/// strictly below its write root).
pub fn location(ir: &Ir) -> Option<(String, Vec<String>)> {
    let home = ir.codex.home.as_ref()?;
    let root = ir
        .roots
        .iter()
        .filter(|r| r.kind == RootKind::Write && is_within(home, &r.path))
        .max_by_key(|r| r.path.len())?;
    let real = root.real.clone()?;
    let below: Vec<String> = home[root.path.len()..]
        .split('/')
        .filter(|c| !c.is_empty())
        .map(str::to_string)
        .collect();
    (!below.is_empty()).then_some((real, below))
}

/// What a file sealc made looked like: any write, chmod, link or rename
/// since changes one of these (ctime moves whatever else is put back).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    size: i64,
    nlink: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Stamp {
    // `st_nlink` is a `u16` on macOS.
    #[allow(clippy::unnecessary_cast)]
    fn of(st: &rustix::fs::Stat) -> Stamp {
        Stamp {
            dev: st.st_dev,
            ino: st.st_ino,
            size: st.st_size,
            nlink: st.st_nlink as u64,
            mtime: (st.st_mtime, st.st_mtime_nsec as i64),
            ctime: (st.st_ctime, st.st_ctime_nsec as i64),
        }
    }

    /// How `now` differs from this, in words (`None`: not at all).
    fn changed(&self, now: &Stamp) -> Option<String> {
        if (now.dev, now.ino) != (self.dev, self.ino) {
            return Some("it was replaced (another file is at its name)".into());
        }
        if now.nlink != self.nlink {
            return Some(format!(
                "its link count went from {} to {} (a hard link was made or removed)",
                self.nlink, now.nlink
            ));
        }
        if now.ctime != self.ctime || now.mtime != self.mtime || now.size != self.size {
            return Some(
                "it was changed during the run (its ctime moved, even if its bytes were put back)"
                    .into(),
            );
        }
        None
    }
}

/// The fresh home of one run.
#[derive(Debug)]
pub struct Home {
    /// `CODEX_HOME` as the seal names it.
    pub path: String,
    /// The directory above it, and its name there.
    parent: OwnedFd,
    name: String,
    /// The home, as made.
    dir: OwnedFd,
    id: (u64, u64),
    config: Stamp,
    /// The copied credentials, as written, and their bytes' digest.
    credentials: Option<(Stamp, String)>,
    /// Entries an earlier run left, discarded before this one (`--force`).
    pub discarded: usize,
}

/// One entry of the home after the run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HomeEntry {
    /// `file`, `dir`, `symlink` or `other`.
    pub kind: &'static str,
    /// Below `CODEX_HOME`, `/`-joined.
    pub path: String,
    /// `sha256:...` of a regular file up to [`MAX_FILE`] bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    pub size: u64,
    /// A symlink's target text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

/// What the run left in its Codex home, for the run report.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Left {
    /// The copied credentials after the run: `unchanged`, `changed` (Codex
    /// refreshed a token, or the agent wrote it: never written back) or
    /// `removed`; absent when none were copied.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub credentials: Option<&'static str>,
    /// Entries an earlier run had left, discarded before this run (`--force`).
    #[serde(skip_serializing_if = "is_zero")]
    pub discarded_before: usize,
    /// Every entry, sorted by path (the credentials' copy included).
    pub entries: Vec<HomeEntry>,
    /// Entries past [`MAX_LISTED`], counted only.
    #[serde(skip_serializing_if = "is_zero")]
    pub entries_omitted: usize,
    /// Where the home was copied for review (beside the run report), or
    /// `null`: discarded.
    pub kept: Option<String>,
    /// `CODEX_HOME`.
    pub path: String,
    /// What could not be done (the home replaced during the run, a copy or
    /// removal that stopped).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Started by root: the write root's owner (its directory's), whose what
/// sealc makes in it becomes. `None` otherwise.
fn root_owner(dir: &OwnedFd) -> Option<(u32, u32)> {
    if !rustix::process::geteuid().is_root() {
        return None;
    }
    rustix::fs::fstat(dir).ok().map(|st| (st.st_uid, st.st_gid))
}

/// Give what sealc just made to the write root's owner (see [`root_owner`]).
fn give(fd: impl std::os::fd::AsFd, owner: Option<(u32, u32)>) -> rustix::io::Result<()> {
    let Some((uid, gid)) = owner else {
        return Ok(());
    };
    rustix::fs::fchown(
        fd,
        Some(rustix::fs::Uid::from_raw(uid)),
        Some(rustix::fs::Gid::from_raw(gid)),
    )
}

const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

/// The directory above the home: the write root, then each component below
/// it but the last, opened one at a time without following a link (made,
/// the owner's, when absent).
fn open_parent(root: &str, below: &[String]) -> Result<(OwnedFd, Option<(u32, u32)>), Refused> {
    let mut dir = super::user::open_nofollow(root, DIR_FLAGS)
        .map_err(|e| io(&format!("cannot open the write root {}", quote(root)), e))?;
    let owner = root_owner(&dir);
    let mut at = root.to_string();
    for c in &below[..below.len().saturating_sub(1)] {
        at = format!("{at}/{c}");
        let next = match rustix::fs::openat(&dir, c.as_str(), DIR_FLAGS, Mode::empty()) {
            Err(rustix::io::Errno::NOENT) => {
                rustix::fs::mkdirat(&dir, c.as_str(), Mode::from_raw_mode(0o755))
                    .map_err(|e| io(&format!("cannot make {}", quote(&at)), e))?;
                rustix::fs::openat(&dir, c.as_str(), DIR_FLAGS, Mode::empty()).and_then(|d| {
                    give(&d, owner)?;
                    Ok(d)
                })
            }
            r => r,
        };
        dir = next.map_err(|e| match e {
            rustix::io::Errno::LOOP | rustix::io::Errno::NOTDIR => Refused::Left(format!(
                "{} is not a directory (a link or a file was put in its place)",
                quote(&at)
            )),
            e => io(&format!("cannot open {}", quote(&at)), e),
        })?;
    }
    Ok((dir, owner))
}

/// A new file `name` in `dir` holding `bytes` (`O_EXCL|O_NOFOLLOW`: the
/// directory was just made, so nothing can be there), the owner's. Not
/// synced: the home lasts one run, and is removed after it.
fn create(
    dir: &OwnedFd,
    name: &str,
    bytes: &[u8],
    mode: u32,
    owner: Option<(u32, u32)>,
) -> std::io::Result<Stamp> {
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = rustix::fs::openat(dir, name, flags, Mode::from_raw_mode(mode))?;
    let mut f = std::fs::File::from(fd);
    give(&f, owner)?;
    rustix::fs::fchmod(&f, Mode::from_raw_mode(mode))?;
    f.write_all(bytes)?;
    Ok(Stamp::of(&rustix::fs::fstat(&f)?))
}

/// The credentials file the spec names (`[codex] credentials`), read now:
/// its directory reached without following a link swapped in after the
/// path was resolved, the file itself not a link, regular, at most
/// [`MAX_CREDENTIALS`] bytes, and outside every write root (by path and by
/// identity), where the agent could have put anything in its place.
pub fn read_credentials(ir: &Ir) -> Result<Option<Credentials>, Refused> {
    let Some(src) = ir.codex.credentials.as_deref() else {
        return Ok(None);
    };
    let path = std::path::Path::new(src);
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(Refused::Io(format!("{} names no file", quote(src))));
    };
    let shown = quote(src);
    let dir =
        Dir::open(parent).map_err(|e| io(&format!("cannot read the credentials {shown}"), e))?;
    if let Some(w) = super::write_root_reaching(ir, &dir, Some(name)) {
        return Err(Refused::Io(format!(
            "the credentials {shown} lie inside the write root {}, where the agent could have put anything in their place",
            quote(w)
        )));
    }
    let owner = rustix::fs::statat(dir.fd(), name, AtFlags::SYMLINK_NOFOLLOW)
        .map(|st| st.st_uid)
        .unwrap_or(u32::MAX);
    match dir.read(name, MAX_CREDENTIALS) {
        Ok(Some(bytes)) => Ok(Some(Credentials {
            path: src.to_string(),
            bytes,
            owner,
        })),
        Ok(None) => Err(Refused::Io(format!(
            "the credentials {shown} (`[codex] credentials`) are not there"
        ))),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => Err(Refused::Io(format!(
            "the credentials {shown} are a symlink: name the file it leads to"
        ))),
        Err(e) => Err(io(&format!("cannot read the credentials {shown}"), e)),
    }
}

/// The credentials file read for a run.
#[derive(Debug)]
pub struct Credentials {
    pub path: String,
    pub bytes: Vec<u8>,
    /// Its owner's uid.
    pub owner: u32,
}

/// Make the seal's `CODEX_HOME` for this run: absent before (what an
/// earlier run left is refused, or with `discard` emptied and removed),
/// then made (0700) with the verified `config` and, given, the credentials
/// as `auth.json` (0600). `held`: the directories (device, inode) this run
/// already holds locked (the `exec.reset` roots), whose lock stands for
/// this one.
pub fn prepare(
    ir: &Ir,
    config: &[u8],
    credentials: Option<&Credentials>,
    discard: bool,
    held: &[(u64, u64)],
) -> Result<Home, Refused> {
    let Some((root, below)) = location(ir) else {
        return Err(Refused::Io(
            "the seal's CODEX_HOME lies strictly below no write root on this host".into(),
        ));
    };
    let path = ir.codex.home.clone().unwrap_or_default();
    let shown = quote(&path);
    let (parent, owner) = open_parent(&root, &below)?;
    // One run at a time per home: held until the home is finished (a run
    // whose agent moved its home away would otherwise write into the next
    // run's). Two seals whose homes share a directory take turns too. A
    // reset root that holds the home is locked by this run already (a
    // second lock, on another open of it, would wait for the first).
    let locked_here =
        rustix::fs::fstat(&parent).is_ok_and(|st| held.contains(&(st.st_dev, st.st_ino)));
    let lock = match locked_here {
        true => Ok(()),
        false => rustix::fs::flock(
            &parent,
            rustix::fs::FlockOperation::NonBlockingLockExclusive,
        ),
    };
    match lock {
        Ok(()) => {}
        Err(rustix::io::Errno::WOULDBLOCK) => {
            return Err(Refused::Left(format!(
                "another run is using the seal's CODEX_HOME {shown} (its directory is locked)"
            )))
        }
        Err(e) => return Err(io(&format!("cannot lock the directory of {shown}"), e)),
    }
    // Started by root, the home is the write root's owner's (the agent
    // writes as that owner): the credentials copied in are theirs to read.
    if let (Some((uid, _)), Some(c)) = (owner, credentials) {
        if c.owner != uid {
            return Err(Refused::Io(format!(
                "the Codex home {shown} lies in a write root owned by uid {uid}, who could read the credentials copied there, and the credentials {} are uid {}'s: name credentials of the write root's owner, or put the home in a write root of the credentials' owner",
                quote(&c.path),
                c.owner
            )));
        }
    }
    let name = below.last().cloned().unwrap_or_default();
    let mut discarded = 0;
    match rustix::fs::statat(&parent, name.as_str(), AtFlags::SYMLINK_NOFOLLOW) {
        Err(rustix::io::Errno::NOENT) => {}
        Err(e) => return Err(io(&format!("cannot inspect {shown}"), e)),
        Ok(st) if !discard => {
            let what = match FileType::from_raw_mode(st.st_mode) {
                FileType::Directory => {
                    let n = rustix::fs::openat(&parent, name.as_str(), DIR_FLAGS, Mode::empty())
                        .ok()
                        .and_then(|d| {
                            crate::hostfs::walk(&d, BOUNDS, &mut |_| Ok(true), &mut |_| Ok(())).ok()
                        });
                    match n {
                        Some(w) if w.truncated => {
                            format!("a directory of more than {} entries", w.entries)
                        }
                        Some(w) => format!("a directory of {} entries", w.entries),
                        None => "a directory".to_string(),
                    }
                }
                FileType::Symlink => "a symlink".into(),
                _ => "a file".into(),
            };
            return Err(Refused::Left(format!(
                "the seal's CODEX_HOME {shown} is there already ({what}): an earlier run left it (or something was put in its place), and a home is never reused"
            )));
        }
        Ok(_) => {
            discarded = crate::hostfs::remove_tree(&parent, name.as_ref(), MAX_REMOVED)
                .map_err(|e| io(&format!("cannot discard {shown}"), e))?;
        }
    }
    rustix::fs::mkdirat(&parent, name.as_str(), Mode::from_raw_mode(0o700))
        .map_err(|e| io(&format!("cannot make {shown}"), e))?;
    let dir = rustix::fs::openat(&parent, name.as_str(), DIR_FLAGS, Mode::empty())
        .map_err(|e| io(&format!("cannot open {shown}"), e))?;
    let made = give(&dir, owner)
        .and_then(|()| rustix::fs::fchmod(&dir, Mode::from_raw_mode(0o700)))
        .and_then(|()| rustix::fs::fstat(&dir));
    let st = match made {
        Ok(st) => st,
        Err(e) => {
            let _ = rustix::fs::unlinkat(&parent, name.as_str(), AtFlags::REMOVEDIR);
            return Err(io(&format!("cannot make {shown}"), e));
        }
    };
    let mut home = Home {
        path,
        parent,
        name,
        id: (st.st_dev, st.st_ino),
        dir,
        config: Stamp::of(&st),
        credentials: None,
        discarded,
    };
    let written = create(&home.dir, CONFIG, config, 0o644, owner).and_then(|stamp| {
        home.config = stamp;
        if let Some(c) = credentials {
            let stamp = create(&home.dir, CREDENTIALS, &c.bytes, 0o600, owner)?;
            home.credentials = Some((stamp, crate::digest::sha256(&c.bytes)));
        }
        Ok(())
    });
    if let Err(e) = written {
        let shown = quote(&home.path);
        home.remove();
        return Err(io(&format!("cannot write in {shown}"), e));
    }
    Ok(home)
}

impl Home {
    /// The home at its name now, if it is still the directory made (the
    /// agent may have renamed it away and made another).
    fn current(&self) -> Result<(), Failure> {
        match rustix::fs::statat(&self.parent, self.name.as_str(), AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) if (st.st_dev, st.st_ino) == self.id => Ok(()),
            Ok(_) => Err(Failure::new(format!(
                "{} was replaced during the run (another object is at its name)",
                quote(&self.path)
            ))),
            Err(rustix::io::Errno::NOENT) => Err(Failure::new(format!(
                "{} was removed during the run",
                quote(&self.path)
            ))),
            Err(e) => Err(Failure::os(
                format!("cannot inspect {}", quote(&self.path)),
                e,
            )),
        }
    }

    /// The config after the run: `Ok((bytes, false))` when it is the file
    /// sealc made, untouched; `Ok((bytes, true))` when it was changed, its
    /// bytes to be judged by `verify::check_codex_config` (Codex itself may
    /// record its workspace's trust, by writing a new file); `Err(why)` when
    /// it is drift whatever its bytes: removed, a link, or changed and put
    /// back to the verified bytes.
    pub fn config_after(&self, generated: &[u8]) -> Result<(Vec<u8>, bool), Failure> {
        self.current()?;
        let file = format!("{}/{CONFIG}", self.path);
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let fd = match rustix::fs::openat(&self.dir, CONFIG, flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(rustix::io::Errno::NOENT) => {
                return Err(Failure::new(format!("{} was removed", quote(&file))))
            }
            Err(rustix::io::Errno::LOOP) => {
                return Err(Failure::new(format!(
                    "{} is a symlink, not the config",
                    quote(&file)
                )))
            }
            Err(e) => return Err(Failure::os(format!("cannot open {}", quote(&file)), e)),
        };
        let st = rustix::fs::fstat(&fd).map_err(|e| Failure::os("cannot inspect the config", e))?;
        let changed = self.config.changed(&Stamp::of(&st));
        let bytes = crate::hostfs::read_bounded(fd, MAX_CONFIG)
            .map_err(|e| Failure::os(format!("cannot read {}", quote(&file)), e))?;
        let settings = |b: &[u8]| {
            std::str::from_utf8(b)
                .ok()
                .and_then(|t| toml::from_str::<toml::Table>(t).ok())
        };
        match changed {
            None => Ok((bytes, false)),
            // The verified bytes, or the verified settings in other bytes,
            // but not the file made: changed and put back (or replaced by
            // a copy), which a check of bytes or settings misses. The one
            // change Codex makes itself adds a setting (its workspace's
            // trust), judged by the caller.
            Some(why) if bytes == generated => {
                Err(Failure::new(format!("{}: {why}", quote(&file))))
            }
            Some(why) if settings(&bytes).is_some() && settings(&bytes) == settings(generated) => {
                Err(Failure::new(format!(
                    "{}: {why}, and rewritten with the same settings",
                    quote(&file)
                )))
            }
            Some(_) => Ok((bytes, true)),
        }
    }

    /// After the run, once nothing of the sandbox is left: list what is in
    /// the home, copy it for review into `keep` (a directory name in the
    /// report's directory) or discard it, and remove the home.
    pub fn finish(self, keep: Option<(&Dir, &OsStr)>) -> Left {
        let mut left = Left {
            path: self.path.clone(),
            discarded_before: self.discarded,
            ..Left::default()
        };
        if let Err(why) = self.current() {
            left.problems.push(why.to_string());
        }
        // The credentials' copy, compared (never written back), then
        // removed first, whatever happens to the rest.
        if let Some((stamp, digest)) = &self.credentials {
            let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
            left.credentials = Some(
                match rustix::fs::openat(&self.dir, CREDENTIALS, flags, Mode::empty()) {
                    Err(rustix::io::Errno::NOENT) => "removed",
                    // A link or a fifo put in its place, or unreadable:
                    // not the copy made.
                    Err(_) => "changed",
                    Ok(fd) => {
                        let same_file = rustix::fs::fstat(&fd)
                            .is_ok_and(|st| stamp.changed(&Stamp::of(&st)).is_none());
                        let same_bytes = crate::hostfs::read_bounded(fd, MAX_CREDENTIALS)
                            .is_ok_and(|b| crate::digest::sha256(&b) == *digest);
                        if same_file && same_bytes {
                            "unchanged"
                        } else {
                            "changed"
                        }
                    }
                },
            );
            if let Err(e) = crate::hostfs::remove_tree(&self.dir, CREDENTIALS.as_ref(), MAX_REMOVED)
            {
                left.problems.push(format!(
                    "cannot remove the credentials' copy in {}: {e}",
                    quote(&self.path)
                ));
            }
        }
        match list(&self.dir) {
            Ok(l) => {
                left.entries = l.entries;
                left.entries_omitted = l.omitted;
                if l.truncated {
                    left.problems.push(format!(
                        "{} holds more than the listing takes ({} entries, {} levels): what lies past it is not listed",
                        quote(&self.path),
                        BOUNDS.entries,
                        BOUNDS.depth
                    ));
                }
            }
            Err(e) => left
                .problems
                .push(format!("cannot list {}: {e}", quote(&self.path))),
        }
        if let Some((dir, name)) = keep {
            match copy_for_review(&self.dir, dir, name) {
                Ok((kept, problems)) => {
                    left.kept = Some(dir.path().join(kept).display().to_string());
                    left.problems.extend(problems);
                }
                Err(e) => left
                    .problems
                    .push(format!("cannot keep {} for review: {e}", quote(&self.path))),
            }
        }
        if let Err(e) = self.remove_checked() {
            left.problems.push(e.to_string());
        }
        left
    }

    /// Remove the home (everything in it, at any depth, then it), if it is
    /// still the one made.
    fn remove_checked(&self) -> Result<(), Failure> {
        self.current()?;
        crate::hostfs::remove_tree(&self.parent, self.name.as_ref(), MAX_REMOVED)
            .map(|_| ())
            .map_err(|e| Failure::os(format!("cannot remove {}", quote(&self.path)), e))
    }

    /// Remove the home, as far as it goes (nothing ran in it yet).
    pub fn remove(self) {
        let _ = self.remove_checked();
    }
}

#[cfg(test)]
mod tests;
