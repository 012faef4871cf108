//! Walking and removing a tree through descriptors: no link followed, no
//! other mount entered, bounded in entries and depth.

use super::*;

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
pub(super) fn mnt_at(dir: &OwnedFd, name: &std::ffi::CStr) -> Option<u64> {
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
pub(super) fn same_mount(
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
pub(super) fn walk_dir(
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
    remove_tree_owned(parent, name, entries, None)
}

/// Empty the directory `dir` (held open) of everything in it, as
/// [`remove_tree`] removes a tree, and only where its owner could do it
/// alone: every directory met must be the owner's (root's sealc removes
/// nothing a directory of another user would have protected, whatever was
/// moved in), none another mount. A directory of the owner's that its
/// owner cannot write is given write access first (about to go anyway).
/// At most `entries` entries; returns how many went.
pub fn empty_dir(dir: &OwnedFd, entries: usize) -> io::Result<usize> {
    let st = rustix::fs::fstat(dir).map_err(errno)?;
    let owner = st.st_uid;
    let top = (st.st_dev, mnt_at(dir, c"."));
    let listed = rustix::fs::openat(dir, ".", dir_flags(), Mode::empty()).map_err(errno)?;
    let mut gone = 0usize;
    for e in rustix::fs::Dir::read_from(&listed).map_err(errno)? {
        let e = e.map_err(errno)?;
        let n = e.file_name();
        if n.to_bytes() == b"." || n.to_bytes() == b".." {
            continue;
        }
        let st = match rustix::fs::statat(dir, n, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => st,
            Err(Errno::NOENT) => continue,
            Err(e) => return Err(errno(e)),
        };
        if FileType::from_raw_mode(st.st_mode) == FileType::Directory {
            if !same_mount(dir, n, &st, top) {
                return Err(io::Error::other(format!(
                    "{} is another mount, which sealc does not touch",
                    crate::diag::quote(&n.to_string_lossy())
                )));
            }
            let left = entries.saturating_sub(gone);
            gone += remove_tree_owned(dir, OsStr::from_bytes(n.to_bytes()), left, Some(owner))?;
        } else {
            gone += 1;
            if gone > entries {
                return Err(io::Error::other(format!("more than {entries} entries")));
            }
            rustix::fs::unlinkat(dir, n, AtFlags::empty()).map_err(errno)?;
        }
    }
    Ok(gone)
}

/// [`remove_tree`]; with `owner`, every directory in the tree must be
/// that user's ([`empty_dir`]).
fn remove_tree_owned(
    parent: &OwnedFd,
    name: &OsStr,
    entries: usize,
    owner: Option<u32>,
) -> io::Result<usize> {
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
    // The owner's alone, and writable by them (checked again on the open
    // descriptor, so nothing swapped in between is entered).
    let owned = |fd: &OwnedFd| -> io::Result<()> {
        let Some(o) = owner else { return Ok(()) };
        let st = rustix::fs::fstat(fd).map_err(errno)?;
        if st.st_uid != o {
            return Err(io::Error::other(format!(
                "a directory in it belongs to uid {}, not to its owner (uid {o}), so sealc removes nothing there",
                st.st_uid
            )));
        }
        if st.st_mode & 0o700 != 0o700 {
            rustix::fs::fchmod(fd, Mode::from_raw_mode((st.st_mode | 0o700) & 0o7777))
                .map_err(errno)?;
        }
        Ok(())
    };
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
    owned(&cur)?;
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
                owned(&child)?;
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
