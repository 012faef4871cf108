//! Writing a host file safely: staged under a random name beside its
//! target in a directory held open, then renamed into place; the run's own
//! directories made root-only.

use super::*;

/// A file written under its temp name, to be renamed into place.
pub struct Staged<'a> {
    pub(super) dir: &'a OwnedFd,
    pub(super) tmp: OsString,
    pub(super) name: OsString,
    pub(super) file: std::fs::File,
    pub(super) done: bool,
}

impl Staged<'_> {
    /// Its bytes and size on the disk.
    pub fn sync(&self) -> io::Result<()> {
        self.file.sync_all()
    }

    /// A second descriptor of the file, to write to it while it is staged.
    pub fn try_clone_file(&self) -> io::Result<std::fs::File> {
        self.file.try_clone()
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
pub(super) fn check_name(name: &OsStr) -> io::Result<()> {
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
pub(super) fn fill_random(buf: &mut [u8]) -> io::Result<()> {
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
pub(super) fn fill_random(buf: &mut [u8]) -> io::Result<()> {
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

    /// Do both name one file: the same name in the same directory (by
    /// device and inode)?
    pub fn same_file(&self, other: &Target) -> bool {
        self.name == other.name
            && matches!((self.dir.id(), other.dir.id()), (Ok(a), Ok(b)) if a == b)
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

pub(super) fn root_only(dir: &Dir) -> io::Result<()> {
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
