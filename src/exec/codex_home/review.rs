//! What a run left in its Codex home, listed and copied out for review.

use super::*;

pub(super) fn kind_name(t: FileType) -> &'static str {
    match t {
        FileType::RegularFile => "file",
        FileType::Directory => "dir",
        FileType::Symlink => "symlink",
        _ => "other",
    }
}

/// What the listing of a home found.
pub(super) struct Listing {
    pub(super) entries: Vec<HomeEntry>,
    /// Entries met past [`MAX_LISTED`] or [`MAX_LISTED_BYTES`], counted.
    pub(super) omitted: usize,
    /// The walk stopped at its bounds.
    pub(super) truncated: bool,
}

/// Every entry of the home, sorted by path, at most [`MAX_LISTED`] entries
/// and [`MAX_LISTED_BYTES`] of paths (the rest counted); each file hashed
/// once however many links it has, [`MAX_HASHED`] bytes in all.
pub(super) fn list(dir: &OwnedFd) -> std::io::Result<Listing> {
    let mut out = Vec::new();
    let mut omitted = 0;
    let mut path_bytes = 0usize;
    let mut hashed = 0u64;
    let mut digests: std::collections::BTreeMap<(u64, u64), Option<String>> = Default::default();
    let walked = crate::hostfs::walk(
        dir,
        BOUNDS,
        &mut |e| {
            if out.len() >= MAX_LISTED || path_bytes + e.path.len() > MAX_LISTED_BYTES {
                omitted += 1;
                return Ok(true);
            }
            path_bytes += e.path.len();
            let kind = e.kind();
            let size = e.stat.st_size.max(0) as u64;
            let sha256 = if kind == FileType::RegularFile && size <= MAX_FILE {
                let id = (e.stat.st_dev, e.stat.st_ino);
                match digests.get(&id) {
                    Some(d) => d.clone(),
                    None if hashed + size <= MAX_HASHED => {
                        hashed += size;
                        let d = digest_at(e.dir, e.name);
                        digests.insert(id, d.clone());
                        d
                    }
                    None => None,
                }
            } else {
                None
            };
            let target = (kind == FileType::Symlink)
                .then(|| rustix::fs::readlinkat(e.dir, e.name, Vec::new()).ok())
                .flatten()
                .map(|t| String::from_utf8_lossy(t.to_bytes()).into_owned());
            out.push(HomeEntry {
                kind: kind_name(kind),
                path: e.path.to_string(),
                sha256,
                size,
                target,
            });
            Ok(true)
        },
        &mut |_| Ok(()),
    )?;
    Ok(Listing {
        entries: out,
        omitted,
        truncated: walked.truncated,
    })
}

/// `sha256:...` of the regular file `name` in `dir` (no link followed).
pub(super) fn digest_at(dir: &OwnedFd, name: &std::ffi::CStr) -> Option<String> {
    use sha2::Digest;
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let fd = rustix::fs::openat(dir, name, flags, Mode::empty()).ok()?;
    let mut f = std::fs::File::from(fd).take(MAX_FILE);
    let mut h = sha2::Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => h.update(&buf[..n]),
            Err(_) => return None,
        }
    }
    Some(format!("sha256:{}", crate::digest::hex(&h.finalize())))
}

/// Copy the home into a new directory `name` of `dest` (staged under a
/// random name, then renamed into place): directories (0700) and regular
/// files up to [`MAX_FILE`] (0600), each file once however many links it
/// has, [`MAX_COPY`] bytes in all, within [`BOUNDS`]; symlinks and other
/// objects are not copied (the listing names them). An earlier run's copy
/// of that name (a directory of the caller's) is replaced; anything else
/// there is someone else's and is left alone: the copy then keeps the
/// random name it was staged under. Returns the name it has, and what was
/// left out.
pub(super) fn copy_for_review(
    home: &OwnedFd,
    dest: &Dir,
    name: &OsStr,
) -> std::io::Result<(std::ffi::OsString, Vec<String>)> {
    let (top, tmp) = dest.make_unique(".sealc-codex-home-", 0o700)?;
    let mut problems = Vec::new();
    let copied = copy_tree(home, top.fd(), &mut problems);
    drop(top);
    if let Err(e) = copied {
        let _ = crate::hostfs::remove_tree(dest.fd(), tmp.as_ref(), MAX_REMOVED);
        return Err(e);
    }
    let me = rustix::process::geteuid().as_raw();
    let earlier = rustix::fs::statat(dest.fd(), name, AtFlags::SYMLINK_NOFOLLOW);
    let ours = match &earlier {
        Err(rustix::io::Errno::NOENT) => true,
        Ok(st) => {
            FileType::from_raw_mode(st.st_mode) == FileType::Directory
                && st.st_uid == me
                && crate::hostfs::remove_tree(dest.fd(), name, MAX_REMOVED).is_ok()
        }
        Err(_) => false,
    };
    if !ours {
        problems.push(format!(
            "{} is there and is not an earlier copy of sealc's: the copy is {} instead",
            quote(&dest.path().join(name).display().to_string()),
            quote(&dest.path().join(&tmp).display().to_string())
        ));
        return Ok((tmp.into(), problems));
    }
    rustix::fs::renameat(dest.fd(), tmp.as_str(), dest.fd(), name)?;
    Ok((name.to_os_string(), problems))
}

pub(super) fn copy_tree(
    from: &OwnedFd,
    to: &OwnedFd,
    problems: &mut Vec<String>,
) -> std::io::Result<()> {
    // The destination directory of each depth, as the walk goes down.
    let mut dirs: Vec<OwnedFd> = vec![rustix::fs::openat(to, ".", DIR_FLAGS, Mode::empty())?];
    let mut total = 0u64;
    let mut seen = std::collections::BTreeSet::new();
    let walked = crate::hostfs::walk(
        from,
        BOUNDS,
        &mut |e| {
            dirs.truncate(e.depth + 1);
            let Some(here) = dirs.last() else {
                return Ok(false);
            };
            match e.kind() {
                FileType::Directory => {
                    rustix::fs::mkdirat(here, e.name, Mode::from_raw_mode(0o700))?;
                    let d = rustix::fs::openat(here, e.name, DIR_FLAGS, Mode::empty())?;
                    dirs.push(d);
                    Ok(true)
                }
                FileType::RegularFile => {
                    let size = e.stat.st_size.max(0) as u64;
                    if !seen.insert((e.stat.st_dev, e.stat.st_ino)) {
                        return Ok(false); // another link of a file copied already
                    }
                    if size > MAX_FILE || total + size > MAX_COPY {
                        if problems.len() < 20 {
                            problems.push(format!(
                                "{:?} ({size} bytes) was not kept: past the copy's bound",
                                e.path
                            ));
                        }
                        return Ok(false);
                    }
                    let flags =
                        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
                    let src = rustix::fs::openat(e.dir, e.name, flags, Mode::empty())?;
                    let out = OFlags::WRONLY
                        | OFlags::CREATE
                        | OFlags::EXCL
                        | OFlags::NOFOLLOW
                        | OFlags::CLOEXEC;
                    let dst = rustix::fs::openat(here, e.name, out, Mode::from_raw_mode(0o600))?;
                    let n = std::io::copy(
                        &mut std::fs::File::from(src).take(MAX_FILE),
                        &mut std::fs::File::from(dst),
                    )?;
                    total += n;
                    Ok(false)
                }
                _ => Ok(false),
            }
        },
        &mut |_| Ok(()),
    )?;
    if walked.truncated {
        problems.push(format!(
            "the copy stopped at its bounds ({} entries, {} levels)",
            BOUNDS.entries, BOUNDS.depth
        ));
    }
    Ok(())
}
