//! [`RealHost`](super::RealHost)'s [`Host::walk`](super::Host::walk): a tree
//! walked through descriptors. The root is opened one component at a time
//! from `/`, none followed if it is a symlink; below it every entry is looked
//! at relative to its directory's descriptor without following a link
//! (`statx`/`fstatat` with `AT_SYMLINK_NOFOLLOW`, never an automount), and a
//! directory is entered only when the object opened (`O_NOFOLLOW`) is the
//! one looked at. One directory is open per level; another mount (by its
//! mount id where the kernel tells it, else by device) is neither looked
//! into nor given.

use std::collections::BTreeSet;
use std::ffi::CStr;

use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

/// A non-directory object a [`Host::walk`](super::Host::walk) met: its path (lossy UTF-8 for
/// display), identity and link count (`st_nlink`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Met<'a> {
    pub path: std::borrow::Cow<'a, str>,
    pub dev: u64,
    pub ino: u64,
    pub nlink: u64,
}

/// How far one [`Host::walk`](super::Host::walk) may go: the entries it may look at (the root
/// included) and how many directories deep below the root it may enter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bounds {
    pub entries: u64,
    pub depth: usize,
}

/// Why a [`Host::walk`](super::Host::walk) stopped before the end of its tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unwalked {
    /// More entries than [`Bounds::entries`].
    Entries(u64),
    /// A directory deeper than [`Bounds::depth`] (its path).
    Depth(usize, String),
    /// An object that could not be opened, listed or looked at.
    Read { path: String, error: String },
}

/// A directory opened only to walk on from it (`O_PATH` where there is one).
#[cfg(target_os = "linux")]
const WALK: OFlags = OFlags::PATH;
#[cfg(not(target_os = "linux"))]
const WALK: OFlags = OFlags::RDONLY.union(OFlags::NONBLOCK);

/// What a walk needs of an object.
struct St {
    dev: u64,
    ino: u64,
    nlink: u64,
    kind: FileType,
    /// The mount it is on (`STATX_MNT_ID`), where the kernel tells it.
    mnt: Option<u64>,
}

/// `name` in `dir`, not following a final link (the object behind `dir`
/// itself when `name` is empty).
#[cfg(target_os = "linux")]
fn stat_at(dir: BorrowedFd<'_>, name: &CStr) -> Result<St, Errno> {
    use rustix::fs::StatxFlags;
    let mut flags = AtFlags::SYMLINK_NOFOLLOW | AtFlags::NO_AUTOMOUNT;
    if name.is_empty() {
        flags |= AtFlags::EMPTY_PATH;
    }
    match rustix::fs::statx(
        dir,
        name,
        flags,
        StatxFlags::BASIC_STATS | StatxFlags::MNT_ID,
    ) {
        Ok(sx) => Ok(St {
            dev: rustix::fs::makedev(sx.stx_dev_major, sx.stx_dev_minor),
            ino: sx.stx_ino,
            nlink: u64::from(sx.stx_nlink),
            kind: FileType::from_raw_mode(u32::from(sx.stx_mode)),
            mnt: (sx.stx_mask & StatxFlags::MNT_ID.bits() != 0).then_some(sx.stx_mnt_id),
        }),
        // A kernel before 4.11, or a filter that refuses `statx`.
        Err(Errno::NOSYS) => plain(rustix::fs::statat(dir, name, flags)?),
        Err(e) => Err(e),
    }
}

#[cfg(not(target_os = "linux"))]
fn stat_at(dir: BorrowedFd<'_>, name: &CStr) -> Result<St, Errno> {
    if name.is_empty() {
        return plain(rustix::fs::fstat(dir)?);
    }
    plain(rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)?)
}

/// A `stat` without a mount id (the field types differ by platform).
#[allow(clippy::unnecessary_cast, clippy::useless_conversion)]
fn plain(st: rustix::fs::Stat) -> Result<St, Errno> {
    Ok(St {
        dev: st.st_dev as u64,
        ino: st.st_ino as u64,
        nlink: st.st_nlink as u64,
        kind: FileType::from_raw_mode(st.st_mode as u32),
        mnt: None,
    })
}

fn text(e: Errno) -> String {
    std::io::Error::from(e).to_string()
}

/// Open `root` (an absolute path without symlinks) without following a
/// link anywhere on the way, the last component included.
fn open_root(root: &str) -> Result<OwnedFd, Errno> {
    let dir_flags = WALK | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mut fd = rustix::fs::open("/", dir_flags, Mode::empty())?;
    let comps: Vec<&str> = root.split('/').filter(|c| !c.is_empty()).collect();
    let Some((last, above)) = comps.split_last() else {
        return Ok(fd);
    };
    for c in above {
        fd = rustix::fs::openat(&fd, *c, dir_flags, Mode::empty())?;
    }
    rustix::fs::openat(
        &fd,
        *last,
        WALK | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

pub(super) fn walk(
    root: &str,
    skip: &BTreeSet<String>,
    bounds: Bounds,
    met: &mut dyn FnMut(&Met<'_>) -> bool,
) -> Result<(), Unwalked> {
    let at_root = |e: Errno| Unwalked::Read {
        path: root.to_string(),
        error: text(e),
    };
    let fd = open_root(root).map_err(at_root)?;
    let st = stat_at(fd.as_fd(), c"").map_err(at_root)?;
    if bounds.entries == 0 {
        return Err(Unwalked::Entries(0));
    }
    if st.kind != FileType::Directory {
        met(&Met {
            path: root.into(),
            dev: st.dev,
            ino: st.ino,
            nlink: st.nlink,
        });
        return Ok(());
    }
    let dir = rustix::fs::openat(
        &fd,
        ".",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(at_root)?;
    drop(fd);
    let mut w = Walker {
        skip,
        bounds,
        seen: 1,
        dev: st.dev,
        mnt: st.mnt,
        path: root.as_bytes().to_vec(),
        met,
        stopped: false,
    };
    w.dir(dir, 0)
}

struct Walker<'a, 'b> {
    skip: &'a BTreeSet<String>,
    bounds: Bounds,
    /// Entries looked at so far, the root included.
    seen: u64,
    /// The root's device and mount.
    dev: u64,
    mnt: Option<u64>,
    /// The path of what is being looked at, as bytes (a name need not be
    /// UTF-8; it is shown lossily, and compared with `skip` exactly).
    path: Vec<u8>,
    met: &'b mut dyn FnMut(&Met<'_>) -> bool,
    /// `met` asked to stop.
    stopped: bool,
}

impl Walker<'_, '_> {
    fn here(&self) -> String {
        String::from_utf8_lossy(&self.path).into_owned()
    }

    fn failed(&self, e: Errno) -> Unwalked {
        Unwalked::Read {
            path: self.here(),
            error: text(e),
        }
    }

    /// Another mount than the root's.
    fn elsewhere(&self, st: &St) -> bool {
        st.dev != self.dev || matches!((self.mnt, st.mnt), (Some(a), Some(b)) if a != b)
    }

    /// The directory `fd` (at `self.path`, `depth` levels below the root):
    /// each entry in turn, depth first.
    fn dir(&mut self, fd: OwnedFd, depth: usize) -> Result<(), Unwalked> {
        let mut entries = rustix::fs::Dir::new(fd).map_err(|e| self.failed(e))?;
        while let Some(entry) = entries.read() {
            let entry = entry.map_err(|e| self.failed(e))?;
            let name = entry.file_name();
            if name.to_bytes() == b"." || name.to_bytes() == b".." {
                continue;
            }
            self.seen += 1;
            if self.seen > self.bounds.entries {
                return Err(Unwalked::Entries(self.bounds.entries));
            }
            let len = self.path.len();
            if self.path.last() != Some(&b'/') {
                self.path.push(b'/');
            }
            self.path.extend_from_slice(name.to_bytes());
            let dirfd = entries.fd().map_err(|e| self.failed(e))?;
            let done = self.entry(dirfd, name, depth);
            self.path.truncate(len);
            done?;
            if self.stopped {
                return Ok(());
            }
        }
        Ok(())
    }

    /// The entry `name` of the directory `dir` (at `self.path`).
    fn entry(&mut self, dir: BorrowedFd<'_>, name: &CStr, depth: usize) -> Result<(), Unwalked> {
        if !self.skip.is_empty()
            && std::str::from_utf8(&self.path).is_ok_and(|p| self.skip.contains(p))
        {
            return Ok(());
        }
        let st = match stat_at(dir, name) {
            Ok(st) => st,
            Err(Errno::NOENT) => return Ok(()), // gone meanwhile: no link any more
            Err(e) => return Err(self.failed(e)),
        };
        if self.elsewhere(&st) {
            return Ok(());
        }
        if st.kind != FileType::Directory {
            let m = Met {
                path: String::from_utf8_lossy(&self.path),
                dev: st.dev,
                ino: st.ino,
                nlink: st.nlink,
            };
            if !(self.met)(&m) {
                self.stopped = true;
            }
            return Ok(());
        }
        if depth + 1 > self.bounds.depth {
            return Err(Unwalked::Depth(self.bounds.depth, self.here()));
        }
        let child = match rustix::fs::openat(
            dir,
            name,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return Ok(()),
            Err(e) => return Err(self.failed(e)),
        };
        // The directory opened is the one looked at, not one put in its
        // place meanwhile.
        let now = stat_at(child.as_fd(), c"").map_err(|e| self.failed(e))?;
        if (now.dev, now.ino) != (st.dev, st.ino) {
            return Err(Unwalked::Read {
                path: self.here(),
                error: "it was replaced while it was walked".into(),
            });
        }
        self.dir(child, depth + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WIDE: Bounds = Bounds {
        entries: 1000,
        depth: 10,
    };

    fn all(
        root: &str,
        skip: &BTreeSet<String>,
        bounds: Bounds,
    ) -> Result<Vec<(String, u64)>, Unwalked> {
        let mut out = Vec::new();
        walk(root, skip, bounds, &mut |m| {
            out.push((m.path.to_string(), m.nlink));
            true
        })?;
        out.sort();
        Ok(out)
    }

    #[test]
    fn walks_without_following_links_and_skips_what_it_is_told() {
        let t = tempfile::tempdir().unwrap();
        let r = t.path().canonicalize().unwrap();
        let root = r.display().to_string();
        std::fs::create_dir_all(r.join("a/b")).unwrap();
        std::fs::create_dir_all(r.join("hidden")).unwrap();
        std::fs::create_dir_all(r.join("outside")).unwrap();
        std::fs::write(r.join("a/b/f"), "x").unwrap();
        std::fs::write(r.join("hidden/s"), "x").unwrap();
        std::fs::write(r.join("outside/o"), "x").unwrap();
        std::fs::hard_link(r.join("a/b/f"), r.join("a/g")).unwrap();
        std::os::unix::fs::symlink(r.join("outside"), r.join("a/l")).unwrap();
        let skip: BTreeSet<String> = [format!("{root}/hidden"), format!("{root}/outside")].into();
        let got = all(&root, &skip, WIDE).unwrap();
        let want = vec![
            (format!("{root}/a/b/f"), 2),
            (format!("{root}/a/g"), 2),
            (format!("{root}/a/l"), 1),
        ];
        assert_eq!(got, want);
        // A file as the root: itself.
        let f = format!("{root}/a/g");
        assert_eq!(all(&f, &BTreeSet::new(), WIDE).unwrap(), [(f.clone(), 2)]);
        // A symlink on the way to the root is not followed.
        let through = format!("{root}/a/l/o");
        assert!(matches!(
            all(&through, &BTreeSet::new(), WIDE),
            Err(Unwalked::Read { .. })
        ));
    }

    #[test]
    fn stops_at_its_bounds() {
        let t = tempfile::tempdir().unwrap();
        let r = t.path().canonicalize().unwrap();
        let root = r.display().to_string();
        std::fs::create_dir_all(r.join("1/2/3")).unwrap();
        for i in 0..5 {
            std::fs::write(r.join(format!("f{i}")), "").unwrap();
        }
        let none = BTreeSet::new();
        // 1 root + 5 files + 3 directories.
        assert!(all(
            &root,
            &none,
            Bounds {
                entries: 9,
                depth: 3
            }
        )
        .is_ok());
        assert_eq!(
            all(
                &root,
                &none,
                Bounds {
                    entries: 8,
                    depth: 3
                }
            ),
            Err(Unwalked::Entries(8))
        );
        assert_eq!(
            all(
                &root,
                &none,
                Bounds {
                    entries: 9,
                    depth: 2
                }
            ),
            Err(Unwalked::Depth(2, format!("{root}/1/2/3")))
        );
    }
}
