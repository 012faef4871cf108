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

mod walk;
mod write;
pub use self::walk::{empty_dir, remove_tree, walk, Bounds, Entry, Walked};
use self::write::check_name;
pub use self::write::{random_hex, run_dir, Staged, Target};

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
            // A block no bigger than the file (and one byte more, to see
            // its end): a small output does not zero 64 KiB to compare.
            let mut block = vec![0u8; (expected.len() + 1).min(64 << 10)];
            let mut seen = 0;
            let same = loop {
                let n = match rustix::io::read(&fd, &mut block) {
                    Ok(n) => n,
                    Err(Errno::INTR) => continue,
                    Err(e) => return Err(errno(e)),
                };
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

/// The lowercase hex SHA-256 of the regular file behind `fd` (anything
/// else refused), read as a stream: a file of any size, never whole.
pub fn sha256_of_regular(fd: OwnedFd) -> io::Result<String> {
    let st = rustix::fs::fstat(&fd).map_err(errno)?;
    if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
        return Err(io::Error::other("not a regular file"));
    }
    crate::digest::sha256_hex_of(std::fs::File::from(fd))
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

#[cfg(test)]
mod tests;
