//! Who the agent runs as. Started by root, `sealc exec` never hands the
//! sandbox kernel uid 0 (which legacy checks such as `/proc/sys` writes and
//! setuid-root files trust whatever the capabilities): it starts bubblewrap
//! as an unprivileged user (`--user`; by default a uid of the run's own,
//! [`allocate`], or `nobody` where the roots are chowned). The write roots
//! stay writable for the agent through idmapped mounts ([`super::idmap`]);
//! where a root cannot be idmapped they are handed to that user by chown for
//! the run ([`hand_over`]) and back after it ([`hand_back`]).

mod holds;
mod owners;
pub use self::holds::{hold, Holds};
use self::owners::MAX_PROBLEMS;
pub use self::owners::{hand_back, owners, prepare, sweep_set_id, Owner, Unprepared};
use crate::failure::Failure;

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

/// The first uid of the range a uid of the run's own is allocated from
/// (above systemd's container range, which ends at `0x6FFFFFFF`, below
/// 2^31), and how many there are.
pub const DYNAMIC_BASE: u32 = 0x7FF0_0000;
pub const DYNAMIC_COUNT: u32 = 1024;
/// Where the locks of the allocated uids are.
const DYNAMIC_DIR: &str = "/run/sealc/uid";

/// A uid (and gid of the same number) of this run's own, held while this
/// lives: no other sealc run gets it meanwhile, and no user or other
/// process has it.
#[derive(Debug)]
pub struct Dynamic {
    pub ids: Ids,
    _lock: OwnedFd,
}

/// Allocate a uid of the run's own (started by root, write roots idmapped,
/// no `--user` given): the first of the range whose lock file under
/// `/run/sealc/uid` this process can lock, and which `passwd` and `group`
/// (the texts of `/etc/passwd` and `/etc/group`) do not name (users of
/// other name services are not looked up). With idmapped roots it never owns a file
/// on disk (only the proxy bridge's directory in the temp directory, while
/// the run lasts); a host process of the agent's user would own the
/// sandbox's user namespace, and there is none.
/// Is `uid` one `allocate` gives out (a uid of one run's own, owning
/// nothing on the host but what that run was handed)?
pub fn of_a_run(uid: u32) -> bool {
    (DYNAMIC_BASE..DYNAMIC_BASE + DYNAMIC_COUNT).contains(&uid)
}

pub fn allocate(passwd: &str, group: &str) -> Result<Dynamic, Failure> {
    let fail = |what: &str, e: &dyn std::fmt::Display| {
        Failure::new(format!(
            "cannot allocate a uid of the run's own ({what}: {e})"
        ))
    };
    // Made one component at a time, no link followed; only root may have
    // made it, or changed it since (checked).
    let dir = crate::hostfs::run_dir("uid", 0o700).map_err(|e| fail(DYNAMIC_DIR, &e))?;
    let dir = dir.fd();
    let named: std::collections::BTreeSet<u32> = passwd
        .lines()
        .chain(group.lines())
        .filter_map(|l| l.split(':').nth(2)?.parse().ok())
        .collect();
    for uid in DYNAMIC_BASE..DYNAMIC_BASE + DYNAMIC_COUNT {
        if named.contains(&uid) {
            continue;
        }
        let lock = rustix::fs::openat(
            dir,
            format!("{uid}.lock"),
            OFlags::RDWR | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )
        .map_err(|e| fail(&format!("{DYNAMIC_DIR}/{uid}.lock"), &e))?;
        match rustix::fs::flock(&lock, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {
                return Ok(Dynamic {
                    ids: Ids { uid, gid: uid },
                    _lock: lock,
                })
            }
            Err(rustix::io::Errno::WOULDBLOCK) => continue,
            Err(e) => return Err(fail("flock", &e)),
        }
    }
    Err(fail("range", &format!("all {DYNAMIC_COUNT} are in use")))
}

/// Read `NAME`, `UID` or `UID:GID` against the text of `/etc/passwd`.
pub fn parse_user(spec: &str, passwd: &str) -> Result<Ids, Failure> {
    let num = |s: &str| s.parse::<u32>().ok();
    let ids = if let Some((u, g)) = spec.split_once(':') {
        match (num(u), num(g)) {
            (Some(uid), Some(gid)) => Ids { uid, gid },
            _ => return Err(Failure::new(format!("`--user {spec}` is not UID:GID"))),
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
                _ => {
                    return Err(Failure::new(format!(
                        "`/etc/passwd` has no usable ids for `{spec}`"
                    )))
                }
            },
            None if spec == DEFAULT_USER => NOBODY,
            None => return Err(Failure::new(format!("no user `{spec}` in `/etc/passwd`"))),
        }
    };
    if (DYNAMIC_BASE..DYNAMIC_BASE + DYNAMIC_COUNT).contains(&ids.uid) {
        return Err(Failure::new(format!(
            "`--user {spec}` is in sealc's range of run uids ({DYNAMIC_BASE}..{}), which it gives out itself",
            DYNAMIC_BASE + DYNAMIC_COUNT
        )));
    }
    if ids.uid == 0 || ids.gid == 0 {
        return Err(Failure::new(format!(
            "`--user {spec}` is root, and the agent never runs as root"
        )));
    }
    Ok(ids)
}

/// Hand the tree under each write root to `ids`: every directory and every
/// file with a single link, never following a symlink, never leaving the
/// root's filesystem. A file linked elsewhere keeps its owner (it may be
/// another path's file). Works on descriptors opened without following
/// links, so nothing swapped in meanwhile is changed instead.
pub fn hand_over(roots: &[String], ids: Ids, limit: u64) -> Result<(), Failure> {
    for root in roots {
        let dir = match open_nofollow(
            root,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        ) {
            Ok(d) => d,
            Err(rustix::io::Errno::NOTDIR) => {
                let f = open_nofollow(root, OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC)
                    .map_err(|e| Failure::os(format!("cannot open write root `{root}`"), e))?;
                chown_single(&f, ids)
                    .map_err(|e| Failure::os(format!("cannot hand over `{root}`"), e))?;
                continue;
            }
            Err(rustix::io::Errno::NOENT) => continue,
            Err(e) => return Err(Failure::os(format!("cannot open write root `{root}`"), e)),
        };
        let dev = rustix::fs::fstat(&dir)
            .map_err(|e| Failure::os(format!("cannot inspect `{root}`"), e))?
            .st_dev;
        walk(dir, dev, ids, limit).map_err(|e| match e {
            rustix::io::Errno::TOOBIG => Failure::new(format!(
                "cannot hand over `{root}`: it holds more than {limit} entries, more than sealc walks (`--walk-limit`)"
            )),
            e => Failure::os(format!("cannot hand over `{root}`"), e),
        })?;
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
pub fn reachable(path: &str, ids: Ids) -> Result<(), Failure> {
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
            return Err(Failure::new(format!(
                "the agent's user ({}:{}) cannot reach `{path}`: `{}` is not searchable by it",
                ids.uid,
                ids.gid,
                parent.display()
            )));
        }
        at = parent;
    }
    Ok(())
}

/// Can `ids` search the directory `dir` (list a name in it), and walk down
/// to it? By the mode bits of `dir` and every directory above it. `Ok` for
/// a directory that is absent or not absolute: nothing to warn of there.
pub fn searchable(dir: &str, ids: Ids) -> Result<(), Failure> {
    if !dir.starts_with('/') {
        return Ok(());
    }
    // A name in it: `reachable` checks every directory above that.
    reachable(&format!("{}/x", dir.trim_end_matches('/')), ids)
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

/// How many entries the walks of one start (or one hand-back) visit in
/// all the write roots before they stop, unless `--walk-limit` says
/// otherwise: a walk costs about 2 µs of an entry (`benches/walk.sh`), so
/// the bound keeps a tree an earlier run left (millions of empty files)
/// from holding up every later start; past it the run does not start (or
/// the hand-back says where it stopped).
pub const MAX_ENTRIES: u64 = crate::facts::links::WALK_ENTRIES;

/// The setuid and setgid bits.
const SET_ID: u32 = 0o6000;

/// What a walk over a write root's tree does.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    /// Hand every object to `to`; the walk stops at the first failure.
    Over,
    /// Hand back: only what `agent` (the agent's uid) owns changes hands, a
    /// setuid or setgid bit cleared first.
    Back { agent: u32 },
    /// Clear the setuid and setgid bits and file capabilities of every
    /// regular file.
    Sweep,
    /// Before an idmapped run: clear every regular file's setuid and setgid
    /// bits and file capabilities (the agent may rewrite any of the owner's
    /// files, and a write through a shared mapping keeps them), noting
    /// each, and count the links of files with several; the walk stops at
    /// the first failure.
    Prepare,
}

/// One walk over a write root's tree. Except handing over, a failure is
/// noted and the walk goes on.
struct Walk {
    to: Ids,
    op: Op,
    dev: u64,
    /// The root's mount (`STATX_MNT_ID`), where the kernel tells it.
    mnt: Option<u64>,
    /// Other write roots (device, inode), each walked on its own.
    skip: std::collections::BTreeSet<(u64, u64)>,
    problems: Vec<String>,
    /// Problems past [`MAX_PROBLEMS`], counted only.
    dropped: usize,
    /// Preparing: what was cleared, and the files with several links (links
    /// in all, links seen, a path of one).
    cleared: Vec<String>,
    links: std::collections::BTreeMap<(u64, u64), (u64, u64, String)>,
    /// Entries visited, by this walk and the walks of the other roots
    /// before it (bounded by `limit`).
    seen: u64,
    limit: u64,
    /// Bytes of the paths kept in `links` (bounded by [`LINK_PATH_BYTES`]).
    links_bytes: usize,
}

/// The most bytes of paths of linked files a walk keeps to name one.
const LINK_PATH_BYTES: usize = 4 << 20;

impl Walk {
    fn new(to: Ids, op: Op, dev: u64) -> Walk {
        Walk {
            to,
            op,
            dev,
            mnt: None,
            skip: Default::default(),
            problems: Vec::new(),
            dropped: 0,
            cleared: Vec::new(),
            links: Default::default(),
            seen: 0,
            limit: MAX_ENTRIES,
            links_bytes: 0,
        }
    }

    /// A failure at `path`: the hand-over stops at the first, the hand-back
    /// notes it and goes on.
    fn fail(&mut self, path: &str, e: rustix::io::Errno) -> rustix::io::Result<()> {
        // Past the bound every walk stops.
        if matches!(self.op, Op::Over | Op::Prepare) || e == rustix::io::Errno::TOOBIG {
            return Err(e);
        }
        // Only the first few are kept (each names a path the agent chose, up
        // to a page long): the rest are counted, so no tree left by the
        // agent can make root's sealc hold its paths in memory.
        if self.problems.len() >= MAX_PROBLEMS {
            self.dropped += 1;
            return Ok(());
        }
        // Names are the agent's: shown escaped, never as terminal controls.
        let msg = if e == rustix::io::Errno::LOOP {
            format!("{path:?} is deeper than {MAX_DEPTH} directories and was left as it is")
        } else {
            format!("{path:?}: {e}")
        };
        self.problems.push(msg);
        Ok(())
    }

    /// Does this object change hands?
    fn takes(&self, st: &rustix::fs::Stat) -> bool {
        match self.op {
            Op::Over => st.st_uid != self.to.uid || st.st_gid != self.to.gid,
            Op::Back { agent } => st.st_uid == agent && st.st_uid != self.to.uid,
            Op::Sweep | Op::Prepare => false,
        }
    }

    /// Change the owner of `fd` (its `st`): a regular file only when it has
    /// a single link. Handing back, a setuid or setgid bit goes first, so
    /// the owner never gets a set-id file the agent made.
    fn take(&mut self, fd: &OwnedFd, st: &rustix::fs::Stat, path: &str) -> rustix::io::Result<()> {
        let kind = FileType::from_raw_mode(st.st_mode);
        match self.op {
            Op::Sweep => {
                if kind == FileType::RegularFile {
                    if st.st_mode & SET_ID != 0 {
                        clear_set_id(fd, st.st_mode)?;
                    }
                    if st.st_mode & 0o111 != 0 {
                        clear_caps(fd)?;
                    }
                }
                return Ok(());
            }
            Op::Prepare => {
                if kind != FileType::RegularFile {
                    return Ok(());
                }
                // Names are the tree's: shown escaped.
                if st.st_mode & SET_ID != 0 {
                    clear_set_id(fd, st.st_mode)?;
                    self.cleared
                        .push(format!("the setuid or setgid bit of {path:?}"));
                }
                if st.st_mode & 0o111 != 0 && clear_caps(fd)? {
                    self.cleared
                        .push(format!("the file capabilities of {path:?}"));
                }
                return Ok(());
            }
            Op::Over | Op::Back { .. } => {}
        }
        if !self.takes(st) || (kind == FileType::RegularFile && st.st_nlink != 1) {
            return Ok(());
        }
        let back = matches!(self.op, Op::Back { .. });
        if back && kind == FileType::RegularFile && st.st_mode & SET_ID != 0 {
            clear_set_id(fd, st.st_mode)?;
        }
        chown(fd, self.to)?;
        if back && kind == FileType::RegularFile {
            // The kernel clears them on a chown as well; make sure.
            let after = rustix::fs::fstat(fd)?;
            if after.st_mode & SET_ID != 0 {
                clear_set_id(fd, after.st_mode)?;
            }
        }
        Ok(())
    }

    /// A walk with `op` over `o`'s root (opened as `fd`), the other write
    /// roots of `all` nested in it left to their own walks.
    fn of_root(o: &Owner, all: &[Owner], op: Op, fd: &OwnedFd) -> Walk {
        let mut w = Walk::new(o.ids, op, o.dev);
        w.mnt = mnt_id(fd);
        w.skip = all
            .iter()
            .filter(|x| x.root != o.root)
            .map(|x| (x.dev, x.ino))
            .collect();
        w
    }

    /// Walk the root `fd` (its `st`, named `root`): its tree when it is a
    /// directory, else the file itself.
    fn root(&mut self, fd: &OwnedFd, st: &rustix::fs::Stat, root: &str) -> rustix::io::Result<()> {
        if FileType::from_raw_mode(st.st_mode) != FileType::Directory {
            return self.take(fd, st, root);
        }
        let dir = rustix::fs::openat(
            fd,
            ".",
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        self.dir(&dir, root, 0)
    }

    /// Is the object on another mount than the root? Another device on the
    /// same mount (a btrfs subvolume, a file of an overlay) is not: it is
    /// walked too. (A bind mount of the same filesystem is not told apart.)
    fn elsewhere(&self, fd: &OwnedFd, st: &rustix::fs::Stat) -> bool {
        if st.st_dev == self.dev {
            return false;
        }
        match (self.mnt, mnt_id(fd)) {
            (Some(a), Some(b)) => a != b,
            _ => true,
        }
    }

    /// Depth first, one open directory per level (a wide tree left by an
    /// earlier run costs no descriptors).
    fn dir(&mut self, dir: &OwnedFd, path: &str, depth: usize) -> rustix::io::Result<()> {
        if depth > MAX_DEPTH {
            return self.fail(path, rustix::io::Errno::LOOP);
        }
        let st = rustix::fs::fstat(dir)?;
        if self.elsewhere(dir, &st) {
            return Ok(()); // another filesystem mounted inside: not ours to change
        }
        if let Err(e) = self.take(dir, &st, path) {
            self.fail(path, e)?;
        }
        let entries = match rustix::fs::Dir::read_from(dir) {
            Ok(d) => d,
            Err(e) => return self.fail(path, e),
        };
        for entry in entries {
            let entry = match entry {
                Ok(e) => e,
                Err(e) => return self.fail(path, e),
            };
            let name = entry.file_name();
            if name.to_bytes() == b"." || name.to_bytes() == b".." {
                continue;
            }
            self.seen += 1;
            if self.seen > self.limit {
                return Err(rustix::io::Errno::TOOBIG);
            }
            let at = format!("{path}/{}", String::from_utf8_lossy(name.to_bytes()));
            if let Err(e) = self.entry(dir, name, &at, depth) {
                self.fail(&at, e)?;
            }
        }
        Ok(())
    }

    /// Does this walk change the regular file whose `st` this is? Read
    /// from `st` alone, so the many files a walk leaves as they are cost a
    /// `statx` each, not an open. File capabilities act only when a file
    /// is executed: they are looked for on files with an execute bit.
    fn acts_on(&self, st: &rustix::fs::Stat) -> bool {
        let set_id = st.st_mode & SET_ID != 0;
        let exec = st.st_mode & 0o111 != 0;
        match self.op {
            Op::Sweep | Op::Prepare => set_id || exec,
            Op::Over | Op::Back { .. } => self.takes(st) && st.st_nlink == 1,
        }
    }

    fn entry(
        &mut self,
        dir: &OwnedFd,
        name: &std::ffi::CStr,
        path: &str,
        depth: usize,
    ) -> rustix::io::Result<()> {
        let st = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)?;
        let kind = FileType::from_raw_mode(st.st_mode);
        if !matches!(kind, FileType::Directory | FileType::RegularFile) {
            return Ok(()); // symlinks, sockets, fifos: left as they are
        }
        if st.st_dev != self.dev {
            // Another device: a btrfs subvolume of the root's mount is
            // walked, another filesystem mounted inside is not ours.
            let fd = open_path(dir, name)?;
            if self.elsewhere(&fd, &st) {
                return Ok(());
            }
        }
        if kind == FileType::Directory {
            if self.skip.contains(&(st.st_dev, st.st_ino)) {
                return Ok(());
            }
            let child = rustix::fs::openat(
                dir,
                name,
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            )?;
            return self.dir(&child, path, depth + 1);
        }
        if self.op == Op::Prepare && st.st_nlink > 1 {
            // A path is kept while the paths kept stay under a bound: a
            // tree an earlier run left may hold a great many linked files
            // of very long paths.
            let kept = &mut self.links_bytes;
            let e = self.links.entry((st.st_dev, st.st_ino)).or_insert_with(|| {
                let p = if *kept + path.len() <= LINK_PATH_BYTES {
                    *kept += path.len();
                    path.to_string()
                } else {
                    String::new()
                };
                (st.st_nlink, 0, p)
            });
            e.1 += 1;
        }
        if !self.acts_on(&st) {
            return Ok(());
        }
        let fd = open_path(dir, name)?;
        let now = rustix::fs::fstat(&fd)?;
        if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino) {
            return Err(rustix::io::Errno::AGAIN); // replaced meanwhile: said
        }
        self.take(&fd, &now, path)
    }
}

/// `name` in `dir` as an `O_PATH` descriptor, no link followed.
fn open_path(dir: &OwnedFd, name: &std::ffi::CStr) -> rustix::io::Result<OwnedFd> {
    rustix::fs::openat(
        dir,
        name,
        OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

/// Clear the setuid and setgid bits of the file behind an `O_PATH`
/// descriptor (through its `/proc/self/fd` entry, which names that object
/// and no path).
fn clear_set_id(fd: &OwnedFd, mode: u32) -> rustix::io::Result<()> {
    use std::os::fd::AsRawFd;
    rustix::fs::chmod(
        format!("/proc/self/fd/{}", fd.as_raw_fd()),
        Mode::from_raw_mode(mode & 0o1777),
    )
}

/// Remove the file capabilities (`security.capability`) of the file behind
/// an `O_PATH` descriptor, if it has any (through its `/proc/self/fd` entry).
/// Whether it had.
fn clear_caps(fd: &OwnedFd) -> rustix::io::Result<bool> {
    use std::os::fd::AsRawFd;
    let at = format!("/proc/self/fd/{}", fd.as_raw_fd());
    match rustix::fs::removexattr(&at, "security.capability") {
        Ok(()) => Ok(true),
        Err(rustix::io::Errno::NODATA | rustix::io::Errno::NOTSUP) => Ok(false),
        Err(e) => Err(e),
    }
}

/// The mount of the object behind `fd` (`STATX_MNT_ID`, Linux 5.8).
fn mnt_id(fd: &OwnedFd) -> Option<u64> {
    let sx = rustix::fs::statx(
        fd,
        "",
        AtFlags::EMPTY_PATH | AtFlags::SYMLINK_NOFOLLOW,
        rustix::fs::StatxFlags::MNT_ID,
    )
    .ok()?;
    (sx.stx_mask & rustix::fs::StatxFlags::MNT_ID.bits() != 0).then_some(sx.stx_mnt_id)
}

fn walk(top: OwnedFd, dev: u64, ids: Ids, limit: u64) -> rustix::io::Result<()> {
    let mut w = Walk::new(ids, Op::Over, dev);
    w.limit = limit;
    w.mnt = mnt_id(&top);
    w.dir(&top, "", 0)
}

#[cfg(test)]
mod tests;
