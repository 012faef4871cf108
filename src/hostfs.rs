//! Host files sealc writes: one module, used by every writer (compile's
//! outputs, `init`, `man --dir`, the run report, the proxy bridge's
//! directory, the uid locks).
//!
//! Every directory on the host is treated as hostile: an agent may control
//! one (a write root), and a local user may race root's sealc in one they
//! can write (`/tmp`, a shared reports folder). So:
//!
//! - a directory is reached from `/` one component at a time, each opened
//!   with `O_NOFOLLOW` ([`Dir::open`], [`Dir::create_all`]): the path the
//!   caller gave is resolved once (its links followed, as a user expects),
//!   and a link put on the way after that is refused, never followed;
//! - a file is written under a temp name nobody can predict (128 random
//!   bits), created with `O_CREAT|O_EXCL|O_NOFOLLOW`, synced, then renamed
//!   over its name relative to the directory's descriptor ([`Dir::write`]):
//!   a link planted at the final name is replaced, never written through,
//!   and a planted temp name cannot exist;
//! - a directory sealc makes for itself has a random name too
//!   ([`Dir::make_unique`]).
//!
//! What a directory's permissions let others do afterwards (replace a
//! report in a world-writable, non-sticky folder) is said, not silently
//! accepted: [`Dir::warnings`].

use std::ffi::{OsStr, OsString};
use std::io::{self, Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

/// The most bytes sealc reads of a spec (a spec may lie in a write root,
/// where the agent could make it a sparse file of any size).
pub const MAX_SPEC: u64 = 64 << 20;
/// The most bytes sealc reads of a record or an artifact.
pub const MAX_RECORD: u64 = 256 << 20;

/// A directory opened for reading from or writing into, and the path it
/// was reached by.
#[derive(Debug)]
pub struct Dir {
    fd: OwnedFd,
    path: PathBuf,
    warnings: Vec<String>,
}

/// A directory opened only to walk on from it (`O_PATH` where there is one).
#[cfg(target_os = "linux")]
const WALK: OFlags = OFlags::PATH;
#[cfg(not(target_os = "linux"))]
const WALK: OFlags = OFlags::RDONLY;

fn walk_flags() -> OFlags {
    WALK | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
}

fn dir_flags() -> OFlags {
    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
}

fn errno(e: Errno) -> io::Error {
    io::Error::from_raw_os_error(e.raw_os_error())
}

/// `path` with what a link on the way means: a component that is a link now
/// (swapped in after the path was resolved) fails with `ELOOP`/`ENOTDIR`;
/// say it in words.
fn walk_error(path: &Path, e: Errno) -> io::Error {
    match e {
        Errno::LOOP | Errno::NOTDIR => io::Error::other(format!(
            "{} is no longer the directory it was (a link or a file was put on the way)",
            crate::diag::quote(&path.display().to_string())
        )),
        e => io::Error::new(
            errno(e).kind(),
            format!(
                "cannot open {}: {}",
                crate::diag::quote(&path.display().to_string()),
                errno(e)
            ),
        ),
    }
}

/// `path` made absolute with its links resolved, the way the kernel does
/// with `fs.protected_symlinks` on, whatever this host's setting: a link in
/// a sticky directory that any user may write (`/tmp`) is followed only when
/// it is the caller's or the directory owner's, so a link another user
/// planted there is refused, never followed. Returns the part that exists,
/// resolved, and the components below it that do not exist yet.
pub fn resolve(path: &Path) -> io::Result<(PathBuf, Vec<OsString>)> {
    use std::os::unix::fs::MetadataExt;
    // A bare file name's directory is the current one.
    let path = if path.as_os_str().is_empty() {
        Path::new(".")
    } else {
        path
    };
    let abs = std::path::absolute(path)?;
    let me = rustix::process::geteuid().as_raw();
    let comps = |p: &Path| -> Vec<OsString> {
        p.components()
            .filter_map(|c| match c {
                std::path::Component::Normal(n) => Some(n.to_os_string()),
                std::path::Component::ParentDir => Some(OsString::from("..")),
                _ => None,
            })
            .collect()
    };
    // What is still to be resolved, the next component last.
    let mut todo: Vec<OsString> = comps(&abs);
    todo.reverse();
    let mut real = PathBuf::from("/");
    let mut links = 0;
    while let Some(c) = todo.pop() {
        if c == ".." {
            real.pop();
            continue;
        }
        let next = real.join(&c);
        let m = match std::fs::symlink_metadata(&next) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let mut rest = vec![c];
                rest.extend(todo.into_iter().rev());
                return Ok((real, rest));
            }
            Err(e) => return Err(e),
        };
        if !m.file_type().is_symlink() {
            real = next;
            continue;
        }
        links += 1;
        if links > 40 {
            return Err(io::Error::from_raw_os_error(libc::ELOOP));
        }
        let dir = std::fs::metadata(&real)?;
        if dir.mode() & 0o1002 == 0o1002 && m.uid() != me && m.uid() != dir.uid() {
            return Err(io::Error::other(format!(
                "{} is a link another user (uid {}) put in the sticky directory {}: sealc does not follow it",
                crate::diag::quote(&next.display().to_string()),
                m.uid(),
                crate::diag::quote(&real.display().to_string())
            )));
        }
        let target = std::fs::read_link(&next)?;
        if target.is_absolute() {
            real = PathBuf::from("/");
        }
        let mut more = comps(&target);
        more.reverse();
        todo.extend(more);
    }
    Ok((real, Vec::new()))
}

/// Others may change what is in a directory with this mode: written by
/// any user, and not sticky (in a sticky one only an entry's owner may
/// rename or remove it).
fn open_to_all(mode: u32) -> bool {
    mode & 0o002 != 0 && mode & 0o1000 == 0
}

impl Dir {
    /// Open the existing directory `path`: its links resolved once
    /// ([`resolve`]), then each component from `/` opened without following
    /// a link.
    pub fn open(path: &Path) -> io::Result<Dir> {
        let (real, rest) = resolve(path)?;
        if !rest.is_empty() {
            return Err(io::Error::from(io::ErrorKind::NotFound));
        }
        Dir::walk(&real, false, 0)
    }

    /// [`Dir::open`], making each missing directory (`mode`) on the way,
    /// one component at a time, none through a link.
    pub fn create_all(path: &Path, mode: u32) -> io::Result<Dir> {
        // The part that exists is resolved as a user expects; the rest is
        // made below it.
        let (real, rest) = resolve(path)?;
        if rest.iter().any(|c| c == ".." || c == ".") {
            return Err(io::Error::other(format!(
                "{} names `..` below a directory that does not exist",
                crate::diag::quote(&path.display().to_string())
            )));
        }
        let full = rest.iter().fold(real, |p, c| p.join(c));
        Dir::walk(&full, true, mode)
    }

    fn walk(real: &Path, create: bool, mode: u32) -> io::Result<Dir> {
        let mut fd = rustix::fs::open("/", walk_flags(), Mode::empty()).map_err(errno)?;
        let mut warnings = Vec::new();
        let mut at = PathBuf::from("/");
        let comps: Vec<&OsStr> = real
            .components()
            .filter_map(|c| match c {
                std::path::Component::Normal(n) => Some(n),
                _ => None,
            })
            .collect();
        let me = rustix::process::geteuid().as_raw();
        let note = |fd: &OwnedFd, at: &Path, warnings: &mut Vec<String>| {
            if let Ok(st) = rustix::fs::fstat(fd) {
                let shown = crate::diag::quote(&at.display().to_string());
                if open_to_all(st.st_mode) {
                    warnings.push(format!(
                        "{shown} can be written by any user and is not sticky: they can rename or replace what sealc writes below it"
                    ));
                } else if st.st_uid != 0 && st.st_uid != me {
                    warnings.push(format!(
                        "{shown} belongs to another user (uid {}), who can rename or replace what sealc writes below it",
                        st.st_uid
                    ));
                }
            }
        };
        note(&fd, &at, &mut warnings);
        for (i, c) in comps.iter().enumerate() {
            at.push(c);
            let last = i + 1 == comps.len();
            let flags = if last { dir_flags() } else { walk_flags() };
            let next = match rustix::fs::openat(&fd, *c, flags, Mode::empty()) {
                Err(Errno::NOENT) if create => {
                    match rustix::fs::mkdirat(&fd, *c, Mode::from_raw_mode(mode)) {
                        Ok(()) | Err(Errno::EXIST) => {}
                        Err(e) => return Err(walk_error(&at, e)),
                    }
                    rustix::fs::openat(&fd, *c, flags, Mode::empty())
                }
                r => r,
            };
            fd = next.map_err(|e| walk_error(&at, e))?;
            note(&fd, &at, &mut warnings);
        }
        if comps.is_empty() {
            fd = rustix::fs::open("/", dir_flags(), Mode::empty()).map_err(errno)?;
        }
        Ok(Dir {
            fd,
            path: real.to_path_buf(),
            warnings,
        })
    }

    /// The path this directory was reached by.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What others may do below it (a world-writable directory on the way
    /// without the sticky bit).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// What `fstat` says of it.
    pub fn stat(&self) -> io::Result<rustix::fs::Stat> {
        rustix::fs::fstat(&self.fd).map_err(errno)
    }

    /// Its device and inode.
    pub fn id(&self) -> io::Result<(u64, u64)> {
        let st = rustix::fs::fstat(&self.fd).map_err(errno)?;
        Ok((st.st_dev, st.st_ino))
    }

    /// The (device, inode) of this directory and of each above it, up to
    /// `/` (by `..`, so also where a bind mount made another path lead).
    pub fn ancestry(&self) -> io::Result<Vec<(u64, u64)>> {
        let mut out = Vec::new();
        let mut fd =
            rustix::fs::openat(&self.fd, ".", walk_flags(), Mode::empty()).map_err(errno)?;
        for _ in 0..4096 {
            let st = rustix::fs::fstat(&fd).map_err(errno)?;
            let id = (st.st_dev, st.st_ino);
            if out.last() == Some(&id) {
                return Ok(out); // `/`: its `..` is itself
            }
            out.push(id);
            fd = rustix::fs::openat(&fd, "..", walk_flags(), Mode::empty()).map_err(errno)?;
        }
        Ok(out)
    }

    /// The directory `name` in this one, opened without following a link;
    /// made (`mode`) when absent and `create`.
    pub fn subdir(&self, name: &OsStr, create: Option<u32>) -> io::Result<Dir> {
        check_name(name)?;
        let path = self.path.join(name);
        let fd = match rustix::fs::openat(&self.fd, name, dir_flags(), Mode::empty()) {
            Err(Errno::NOENT) if create.is_some() => {
                let mode = create.unwrap_or(0o755);
                match rustix::fs::mkdirat(&self.fd, name, Mode::from_raw_mode(mode)) {
                    Ok(()) | Err(Errno::EXIST) => {}
                    Err(e) => return Err(walk_error(&path, e)),
                }
                rustix::fs::openat(&self.fd, name, dir_flags(), Mode::empty())
            }
            r => r,
        }
        .map_err(|e| walk_error(&path, e))?;
        Ok(Dir {
            fd,
            path,
            warnings: Vec::new(),
        })
    }

    /// A new directory of its own in this one, named `prefix` and 32 random
    /// hex digits, `mode`; its name is returned with it.
    pub fn make_unique(&self, prefix: &str, mode: u32) -> io::Result<(Dir, String)> {
        for _ in 0..16 {
            let name = format!("{prefix}{}", random_hex()?);
            match rustix::fs::mkdirat(&self.fd, name.as_str(), Mode::from_raw_mode(mode)) {
                Ok(()) => {}
                Err(Errno::EXIST) => continue,
                Err(e) => return Err(errno(e)),
            }
            let dir = self.subdir(OsStr::new(&name), None)?;
            // The mode asked for, whatever the umask took away.
            rustix::fs::fchmod(&dir.fd, Mode::from_raw_mode(mode)).map_err(errno)?;
            return Ok((dir, name));
        }
        Err(io::Error::other("cannot make a directory of a new name"))
    }

    /// Write `bytes` as `name`, atomically: a new file of a random name
    /// beside it (never following a link, never an existing file), `mode`,
    /// synced, renamed over `name`. On failure nothing is left.
    pub fn write(&self, name: &OsStr, bytes: &[u8], mode: u32) -> io::Result<()> {
        self.stage(name, bytes, mode)?.commit()
    }

    /// The first half of [`Dir::write`]: the temp file, written and synced.
    /// [`Staged::commit`] renames it into place; dropping it removes it.
    pub fn stage(&self, name: &OsStr, bytes: &[u8], mode: u32) -> io::Result<Staged<'_>> {
        let staged = self.stage_unsynced(name, bytes, mode)?;
        staged.sync()?;
        Ok(staged)
    }

    /// [`Dir::stage`] without the sync, for a file that is never trusted
    /// without its digest: a crash may leave it torn, and what reads it
    /// refuses it. Nothing else changes: a random name, no link followed, a
    /// rename into place.
    pub fn stage_unsynced(&self, name: &OsStr, bytes: &[u8], mode: u32) -> io::Result<Staged<'_>> {
        check_name(name)?;
        let flags =
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let (tmp, fd) = loop {
            let mut tmp = OsString::from(".");
            tmp.push(name);
            tmp.push(format!(".sealc-{}.tmp", random_hex()?));
            match rustix::fs::openat(&self.fd, tmp.as_os_str(), flags, Mode::from_raw_mode(0o600)) {
                Ok(fd) => break (tmp, fd),
                Err(Errno::EXIST) => continue,
                Err(e) => return Err(errno(e)),
            }
        };
        let mut staged = Staged {
            dir: &self.fd,
            tmp,
            name: name.to_os_string(),
            file: std::fs::File::from(fd),
            done: false,
        };
        rustix::fs::fchmod(&staged.file, Mode::from_raw_mode(mode)).map_err(errno)?;
        staged.file.write_all(bytes)?;
        Ok(staged)
    }

    /// Remove the file (or, `dir`, the empty directory) `name`, without
    /// following a link; absent is fine.
    pub fn remove(&self, name: &OsStr, dir: bool) -> io::Result<()> {
        check_name(name)?;
        let flags = if dir {
            AtFlags::REMOVEDIR
        } else {
            AtFlags::empty()
        };
        match rustix::fs::unlinkat(&self.fd, name, flags) {
            Ok(()) | Err(Errno::NOENT) => Ok(()),
            Err(e) => Err(errno(e)),
        }
    }

    /// What is at `name`, not following a link (`None`: nothing).
    pub fn kind(&self, name: &OsStr) -> io::Result<Option<FileType>> {
        check_name(name)?;
        match rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(Some(FileType::from_raw_mode(st.st_mode))),
            Err(Errno::NOENT) => Ok(None),
            Err(e) => Err(errno(e)),
        }
    }

    /// The regular file `name` (no link followed), at most `max` bytes of
    /// it: `Ok(None)` when there is none, an error when it is something
    /// else or longer (a sparse file is never read whole).
    pub fn read(&self, name: &OsStr, max: u64) -> io::Result<Option<Vec<u8>>> {
        check_name(name)?;
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let fd = match rustix::fs::openat(&self.fd, name, flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return Ok(None),
            Err(e) => return Err(errno(e)),
        };
        read_bounded(fd, max).map(Some)
    }

    /// `name`, whose bytes the caller found to be what it would write, is
    /// already what writing them with `mode` would leave: a regular file
    /// (no link followed) of this user's, mode `mode`, with no other hard
    /// link, `len` bytes long. Only then may a write be skipped: a file of
    /// another user's, or with another name elsewhere, would stay theirs to
    /// change (and only its owner or root could have changed its bytes
    /// since).
    pub fn holds_own(&self, name: &OsStr, len: usize, mode: u32) -> bool {
        if check_name(name).is_err() {
            return false;
        }
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let Ok(fd) = rustix::fs::openat(&self.fd, name, flags, Mode::empty()) else {
            return false;
        };
        let Ok(st) = rustix::fs::fstat(&fd) else {
            return false;
        };
        FileType::from_raw_mode(st.st_mode) == FileType::RegularFile
            && st.st_uid == rustix::process::geteuid().as_raw()
            && st.st_nlink == 1
            && st.st_mode & 0o7777 == mode
            && st.st_size as u64 == len as u64
    }

    /// The directory holding `rel` (a `/`-joined relative path) and its
    /// last name, each directory on the way opened without following a
    /// link (`Ok(None)`: a directory on the way is not there).
    fn below(&self, rel: &str) -> io::Result<Option<(Option<Dir>, OsString)>> {
        let mut parts: Vec<&str> = rel.split('/').filter(|c| !c.is_empty()).collect();
        let Some(last) = parts.pop() else {
            return Err(io::Error::other(format!(
                "{} names no file",
                crate::diag::quote(rel)
            )));
        };
        let mut at: Option<Dir> = None;
        for c in parts {
            let next = match &at {
                None => self.subdir(c.as_ref(), None),
                Some(d) => d.subdir(c.as_ref(), None),
            };
            match next {
                Ok(d) => at = Some(d),
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(e),
            }
        }
        Ok(Some((at, OsString::from(last))))
    }

    /// [`Dir::read`] of `rel` below this directory, no link followed on the
    /// way either.
    pub fn read_below(&self, rel: &str, max: u64) -> io::Result<Option<Vec<u8>>> {
        match self.below(rel)? {
            None => Ok(None),
            Some((None, name)) => self.read(&name, max),
            Some((Some(d), name)) => d.read(&name, max),
        }
    }

    /// Whether the file `rel` below this directory (no link followed on the
    /// way either) holds exactly `expected`: `Ok(None)` when it is not
    /// there, `Ok(Some(None))` when it holds `expected`, else its bytes (at
    /// most `max`). The comparison reads a block at a time: a big output
    /// that is unchanged is never held in memory twice.
    pub fn compare_below(
        &self,
        rel: &str,
        expected: &[u8],
        max: u64,
    ) -> io::Result<Option<Option<Vec<u8>>>> {
        let (dir, name) = match self.below(rel)? {
            None => return Ok(None),
            Some((d, name)) => (d, name),
        };
        let at = dir.as_ref().unwrap_or(self);
        check_name(&name)?;
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let fd = match rustix::fs::openat(&at.fd, &name, flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return Ok(None),
            Err(e) => return Err(errno(e)),
        };
        let st = rustix::fs::fstat(&fd).map_err(errno)?;
        if FileType::from_raw_mode(st.st_mode) == FileType::RegularFile
            && st.st_size as u64 == expected.len() as u64
        {
            let mut block = vec![0u8; 64 << 10];
            let mut file = std::fs::File::from(fd.try_clone()?);
            let mut seen = 0;
            let same = loop {
                let n = file.read(&mut block)?;
                if n == 0 {
                    break seen == expected.len();
                }
                if expected.get(seen..seen + n) != Some(&block[..n]) {
                    break false;
                }
                seen += n;
            };
            if same {
                return Ok(Some(None));
            }
            rustix::fs::seek(&fd, rustix::fs::SeekFrom::Start(0)).map_err(errno)?;
        }
        read_bounded(fd, max).map(|b| Some(Some(b)))
    }

    /// [`Dir::remove`] of the file `rel` below this directory.
    pub fn remove_below(&self, rel: &str) -> io::Result<()> {
        match self.below(rel)? {
            None => Ok(()),
            Some((None, name)) => self.remove(&name, false),
            Some((Some(d), name)) => d.remove(&name, false),
        }
    }

    /// The descriptor, to hand on (bind it, `fchown` it).
    pub fn fd(&self) -> &OwnedFd {
        &self.fd
    }
}

/// Read the regular file behind `fd`, refusing one longer than `max` bytes.
pub fn read_bounded(fd: OwnedFd, max: u64) -> io::Result<Vec<u8>> {
    read_at_most(fd, max, false)
}

/// Read what is behind `fd`, at most `max` bytes: a regular file whose size
/// says more is refused before a byte is read (a sparse file is never read
/// whole); with `streams`, a pipe or another stream is read up to the bound.
fn read_at_most(fd: OwnedFd, max: u64, streams: bool) -> io::Result<Vec<u8>> {
    let st = rustix::fs::fstat(&fd).map_err(errno)?;
    match FileType::from_raw_mode(st.st_mode) {
        FileType::RegularFile => {}
        FileType::Directory => return Err(io::Error::other("a directory, not a file")),
        _ if streams => {}
        _ => return Err(io::Error::other("not a regular file")),
    }
    if st.st_size as u64 > max {
        return Err(io::Error::other(format!(
            "{} bytes, more than the {max} sealc reads",
            st.st_size
        )));
    }
    // Room for what the file holds now (at most 64 MiB ahead of reading);
    // the size may grow meanwhile: never more than `max` (+1 to tell).
    let mut bytes =
        Vec::with_capacity((st.st_size.max(0) as u64).min(max).min(64 << 20) as usize + 1);
    std::fs::File::from(fd)
        .take(max + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(io::Error::other(format!(
            "more than the {max} bytes sealc reads"
        )));
    }
    Ok(bytes)
}

/// Open `path` (links followed as given: a file the caller names, which
/// may be a pipe such as `/dev/stdin`) and read at most `max` bytes of it.
pub fn read_path(path: &Path, max: u64) -> io::Result<Vec<u8>> {
    let fd =
        rustix::fs::open(path, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty()).map_err(errno)?;
    read_at_most(fd, max, true)
}

/// [`read_path`] as UTF-8 text.
pub fn read_text(path: &Path, max: u64) -> io::Result<String> {
    String::from_utf8(read_path(path, max)?).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            "stream did not contain valid UTF-8",
        )
    })
}

/// One entry a [`walk`] meets.
pub struct Entry<'a> {
    /// The directory it is in.
    pub dir: &'a OwnedFd,
    pub name: &'a std::ffi::CStr,
    /// Its path below the top, `/`-joined (names that are not UTF-8 shown
    /// lossily).
    pub path: &'a str,
    /// What `fstatat` (no link followed) says of it.
    pub stat: &'a rustix::fs::Stat,
    /// 0 for an entry of the top directory.
    pub depth: usize,
}

impl Entry<'_> {
    pub fn kind(&self) -> FileType {
        FileType::from_raw_mode(self.stat.st_mode)
    }
}

/// How far a [`walk`] goes.
#[derive(Clone, Copy, Debug)]
pub struct Bounds {
    pub entries: usize,
    pub depth: usize,
}

/// What a [`walk`] met.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Walked {
    /// Entries met.
    pub entries: usize,
    /// It stopped at `Bounds::entries`, or left a directory deeper than
    /// `Bounds::depth` unvisited: what it met is not all there is.
    pub truncated: bool,
}

/// The mount of `name` in `dir` (`STATX_MNT_ID`), where the kernel says.
fn mnt_at(dir: &OwnedFd, name: &std::ffi::CStr) -> Option<u64> {
    let sx = rustix::fs::statx(
        dir,
        name,
        AtFlags::SYMLINK_NOFOLLOW,
        rustix::fs::StatxFlags::MNT_ID,
    )
    .ok()?;
    (sx.stx_mask & rustix::fs::StatxFlags::MNT_ID.bits() != 0).then_some(sx.stx_mnt_id)
}

/// Is the directory `name` of `dir` (its `st`) on the walk's own mount?
/// Another device, or another mount of the same one (a bind mount), is not.
fn same_mount(
    dir: &OwnedFd,
    name: &std::ffi::CStr,
    st: &rustix::fs::Stat,
    top: (u64, Option<u64>),
) -> bool {
    st.st_dev == top.0 && (top.1.is_none() || mnt_at(dir, name) == top.1)
}

/// Walk the tree below the directory `top`, depth first, in name order: no
/// link followed, nothing on another mount entered (a filesystem or a bind
/// mount inside), one open directory per level. `pre` sees each entry and
/// says whether to go into it (a directory); `post` sees each directory
/// gone into once its contents are done. Past `bounds` the walk stops (too
/// many entries) or leaves a directory unvisited (too deep), and says so
/// (`truncated`): no tree, however an agent made it, makes it unbounded.
pub fn walk(
    top: &OwnedFd,
    bounds: Bounds,
    pre: &mut dyn FnMut(&Entry<'_>) -> io::Result<bool>,
    post: &mut dyn FnMut(&Entry<'_>) -> io::Result<()>,
) -> io::Result<Walked> {
    let dev = rustix::fs::fstat(top).map_err(errno)?.st_dev;
    let mnt = mnt_at(top, c"");
    let mnt = mnt.or_else(|| {
        rustix::fs::statx(top, "", AtFlags::EMPTY_PATH, rustix::fs::StatxFlags::MNT_ID)
            .ok()
            .filter(|sx| sx.stx_mask & rustix::fs::StatxFlags::MNT_ID.bits() != 0)
            .map(|sx| sx.stx_mnt_id)
    });
    let mut walked = Walked::default();
    walk_dir(top, "", 0, (dev, mnt), bounds, &mut walked, pre, post)?;
    Ok(walked)
}

#[allow(clippy::too_many_arguments)]
fn walk_dir(
    dir: &OwnedFd,
    at: &str,
    depth: usize,
    top: (u64, Option<u64>),
    bounds: Bounds,
    walked: &mut Walked,
    pre: &mut dyn FnMut(&Entry<'_>) -> io::Result<bool>,
    post: &mut dyn FnMut(&Entry<'_>) -> io::Result<()>,
) -> io::Result<()> {
    // The names first, so nothing is removed from under the listing.
    let listed = rustix::fs::openat(dir, ".", dir_flags(), Mode::empty()).map_err(errno)?;
    let mut names = Vec::new();
    for e in rustix::fs::Dir::read_from(&listed).map_err(errno)? {
        let e = e.map_err(errno)?;
        let n = e.file_name();
        if n.to_bytes() != b"." && n.to_bytes() != b".." {
            names.push(n.to_owned());
        }
    }
    names.sort();
    for name in &names {
        if walked.entries >= bounds.entries {
            walked.truncated = true;
            return Ok(());
        }
        walked.entries += 1;
        let stat = match rustix::fs::statat(dir, name.as_c_str(), AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => st,
            Err(Errno::NOENT) => continue,
            Err(e) => return Err(errno(e)),
        };
        let shown = String::from_utf8_lossy(name.to_bytes());
        let path = if at.is_empty() {
            shown.into_owned()
        } else {
            format!("{at}/{shown}")
        };
        let entry = Entry {
            dir,
            name: name.as_c_str(),
            path: &path,
            stat: &stat,
            depth,
        };
        let into = pre(&entry)?;
        if !(into && entry.kind() == FileType::Directory && same_mount(dir, name, &stat, top)) {
            continue;
        }
        if depth + 1 >= bounds.depth {
            walked.truncated = true;
            continue;
        }
        let child =
            rustix::fs::openat(dir, name.as_c_str(), dir_flags(), Mode::empty()).map_err(errno)?;
        let st = rustix::fs::fstat(&child).map_err(errno)?;
        if (st.st_dev, st.st_ino) != (stat.st_dev, stat.st_ino) {
            continue; // replaced between the look and the open
        }
        walk_dir(&child, &path, depth + 1, top, bounds, walked, pre, post)?;
        post(&entry)?;
    }
    Ok(())
}

/// Remove the directory `name` of `parent` and everything below it, at any
/// depth: no link followed, another mount inside refused (nothing of it
/// touched), two directories open at a time (a child is left again through
/// its `..`, checked to be the directory it was entered from), each
/// directory listed once, at most `entries` entries. A file at `name` is
/// removed. Returns how many entries went.
pub fn remove_tree(parent: &OwnedFd, name: &OsStr, entries: usize) -> io::Result<usize> {
    check_name(name)?;
    let st = match rustix::fs::statat(parent, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => st,
        Err(Errno::NOENT) => return Ok(0),
        Err(e) => return Err(errno(e)),
    };
    if FileType::from_raw_mode(st.st_mode) != FileType::Directory {
        rustix::fs::unlinkat(parent, name, AtFlags::empty()).map_err(errno)?;
        return Ok(1);
    }
    let c_name = std::ffi::CString::new(name.as_bytes()).map_err(io::Error::other)?;
    let mnt = mnt_at(parent, &c_name);
    let top = (st.st_dev, mnt);
    let id = |fd: &OwnedFd| -> io::Result<(u64, u64)> {
        let st = rustix::fs::fstat(fd).map_err(errno)?;
        Ok((st.st_dev, st.st_ino))
    };
    /// One directory on the way down: its name in its parent, its parent's
    /// identity, and its subdirectories still to go (`None`: not listed).
    struct Level {
        name: std::ffi::CString,
        parent: (u64, u64),
        pending: Option<Vec<std::ffi::CString>>,
    }
    let mut cur = rustix::fs::openat(parent, name, dir_flags(), Mode::empty()).map_err(errno)?;
    let mut levels = vec![Level {
        name: c_name,
        parent: id(parent)?,
        pending: None,
    }];
    let mut gone = 0usize;
    let count = |gone: &mut usize| -> io::Result<()> {
        *gone += 1;
        if *gone > entries {
            return Err(io::Error::other(format!("more than {entries} entries")));
        }
        Ok(())
    };
    loop {
        let Some(level) = levels.last_mut() else {
            return Ok(gone);
        };
        if level.pending.is_none() {
            let mut subdirs = Vec::new();
            let listed =
                rustix::fs::openat(&cur, ".", dir_flags(), Mode::empty()).map_err(errno)?;
            for e in rustix::fs::Dir::read_from(&listed).map_err(errno)? {
                let e = e.map_err(errno)?;
                let n = e.file_name();
                if n.to_bytes() == b"." || n.to_bytes() == b".." {
                    continue;
                }
                let st = match rustix::fs::statat(&cur, n, AtFlags::SYMLINK_NOFOLLOW) {
                    Ok(st) => st,
                    Err(Errno::NOENT) => continue,
                    Err(e) => return Err(errno(e)),
                };
                if FileType::from_raw_mode(st.st_mode) == FileType::Directory {
                    if !same_mount(&cur, n, &st, top) {
                        return Err(io::Error::other(
                            "another filesystem is mounted inside, which sealc does not touch",
                        ));
                    }
                    subdirs.push(n.to_owned());
                } else {
                    count(&mut gone)?;
                    rustix::fs::unlinkat(&cur, n, AtFlags::empty()).map_err(errno)?;
                }
            }
            level.pending = Some(subdirs);
        }
        let next = level.pending.as_mut().and_then(Vec::pop);
        match next {
            Some(n) => {
                let child = rustix::fs::openat(&cur, n.as_c_str(), dir_flags(), Mode::empty())
                    .map_err(errno)?;
                let parent_id = id(&cur)?;
                levels.push(Level {
                    name: n,
                    parent: parent_id,
                    pending: None,
                });
                cur = child;
            }
            None => {
                let Some(done) = levels.pop() else {
                    return Ok(gone);
                };
                count(&mut gone)?;
                if levels.is_empty() {
                    rustix::fs::unlinkat(parent, done.name.as_c_str(), AtFlags::REMOVEDIR)
                        .map_err(errno)?;
                    return Ok(gone);
                }
                let up =
                    rustix::fs::openat(&cur, "..", dir_flags(), Mode::empty()).map_err(errno)?;
                if id(&up)? != done.parent {
                    return Err(io::Error::other(
                        "a directory was moved while it was being removed",
                    ));
                }
                rustix::fs::unlinkat(&up, done.name.as_c_str(), AtFlags::REMOVEDIR)
                    .map_err(errno)?;
                cur = up;
            }
        }
    }
}

/// A file written under its temp name, to be renamed into place.
pub struct Staged<'a> {
    dir: &'a OwnedFd,
    tmp: OsString,
    name: OsString,
    file: std::fs::File,
    done: bool,
}

impl Staged<'_> {
    /// Its bytes and size on the disk.
    pub fn sync(&self) -> io::Result<()> {
        self.file.sync_all()
    }

    /// Rename it over its name, in the directory it was staged in.
    pub fn commit(mut self) -> io::Result<()> {
        let r = rustix::fs::renameat(self.dir, &self.tmp, self.dir, &self.name).map_err(errno);
        self.done = r.is_ok();
        r
    }
}

impl Drop for Staged<'_> {
    fn drop(&mut self) {
        if !self.done {
            let _ = rustix::fs::unlinkat(self.dir, &self.tmp, AtFlags::empty());
        }
    }
}

/// A name in a directory: one component, not `.` or `..`.
fn check_name(name: &OsStr) -> io::Result<()> {
    let b = name.as_bytes();
    if b.is_empty() || b == b"." || b == b".." || b.contains(&b'/') || b.contains(&0) {
        return Err(io::Error::other(format!(
            "{} is not a file name",
            crate::diag::quote(&name.to_string_lossy())
        )));
    }
    Ok(())
}

/// 128 random bits as 32 hex digits: a name no one can guess.
pub fn random_hex() -> io::Result<String> {
    let mut buf = [0u8; 16];
    fill_random(&mut buf)?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(target_os = "linux")]
fn fill_random(buf: &mut [u8]) -> io::Result<()> {
    let mut at = 0;
    while at < buf.len() {
        match rustix::rand::getrandom(&mut buf[at..], rustix::rand::GetRandomFlags::empty()) {
            Ok(n) => at += n,
            Err(Errno::INTR) => {}
            Err(e) => return Err(errno(e)),
        }
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn fill_random(buf: &mut [u8]) -> io::Result<()> {
    std::fs::File::open("/dev/urandom")?.read_exact(buf)
}

/// Where a file named by the caller (`--report FILE`, `init`'s spec) goes:
/// its directory, opened as [`Dir::open`] does, and its name there.
#[derive(Debug)]
pub struct Target {
    pub dir: Dir,
    pub name: OsString,
}

impl Target {
    /// The directory of `path` must exist; `path` itself must not be a
    /// directory.
    pub fn open(path: &Path) -> io::Result<Target> {
        let name = path
            .file_name()
            .ok_or_else(|| {
                io::Error::other(format!(
                    "{} names no file",
                    crate::diag::quote(&path.display().to_string())
                ))
            })?
            .to_os_string();
        let parent = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let dir = Dir::open(parent).map_err(|e| {
            if e.kind() == io::ErrorKind::NotFound {
                io::Error::other(format!(
                    "{} is not a directory",
                    crate::diag::quote(&parent.display().to_string())
                ))
            } else {
                e
            }
        })?;
        check_name(&name)?;
        let shown = crate::diag::quote(&path.display().to_string());
        match rustix::fs::statat(&dir.fd, name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) if FileType::from_raw_mode(st.st_mode) == FileType::Directory => {
                return Err(io::Error::other(format!("{shown} is a directory")));
            }
            // In a sticky directory only its owner, the entry's owner and
            // root may rename over an entry: one of another user's there is
            // theirs, and sealc would be told so only after the run.
            Ok(st) => {
                let me = rustix::process::geteuid().as_raw();
                let d = dir.stat()?;
                if d.st_mode & 0o1000 != 0 && me != 0 && st.st_uid != me && d.st_uid != me {
                    return Err(io::Error::other(format!(
                        "{shown} belongs to another user (uid {}) in a sticky directory, so sealc could not replace it",
                        st.st_uid
                    )));
                }
            }
            Err(Errno::NOENT) => {}
            Err(e) => return Err(errno(e)),
        }
        Ok(Target { dir, name })
    }

    /// [`Dir::write`] of the target.
    pub fn write(&self, bytes: &[u8], mode: u32) -> io::Result<()> {
        self.dir.write(&self.name, bytes, mode)
    }

    /// The target's path.
    pub fn path(&self) -> PathBuf {
        self.dir.path().join(&self.name)
    }
}

/// A directory of sealc's own under `/run/sealc` (the uid locks, root's
/// proxy bridges), made as needed: each component opened without following
/// a link, and each, `/run/sealc` included, owned by root and writable by
/// no one else (checked, so a directory someone else made there first is
/// refused).
/// Its mode is `mode` (0700 for what only root reads; 0711 where the
/// agent's user must pass through to a directory of a name it is given).
pub fn run_dir(name: &str, mode: u32) -> io::Result<Dir> {
    let top = Dir::create_all(Path::new("/run/sealc"), 0o755)?;
    root_only(&top)?;
    // Passed through to what is below it (an earlier sealc made it 0700).
    rustix::fs::fchmod(&top.fd, Mode::from_raw_mode(0o755)).map_err(errno)?;
    let dir = top.subdir(OsStr::new(name), Some(mode))?;
    root_only(&dir)?;
    rustix::fs::fchmod(&dir.fd, Mode::from_raw_mode(mode)).map_err(errno)?;
    Ok(dir)
}

fn root_only(dir: &Dir) -> io::Result<()> {
    let st = rustix::fs::fstat(&dir.fd).map_err(errno)?;
    if st.st_uid != 0 || st.st_mode & 0o022 != 0 {
        return Err(io::Error::other(format!(
            "{} is not root's alone (owner {}, mode {:o})",
            crate::diag::quote(&dir.path.display().to_string()),
            st.st_uid,
            st.st_mode & 0o7777
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
