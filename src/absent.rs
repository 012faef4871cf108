//! Write roots that did not exist when compiled: `sealc exec` makes them
//! before the sandbox starts, on either platform, at the path the record
//! gives (`facts.absent_writes`), so the command finds and uses them. The
//! seal already mounts and allows them there.
//!
//! Each directory is made one component at a time from `/`, and each
//! component, made or found, is opened without following a link: a symlink
//! put on the way is refused, never followed.
//!
//! Protected paths (`filesystem.protect`) too: the stand-ins of those absent
//! when compiled are made here ([`make_stand_ins`]) and removed after the
//! run, and those that exist are checked to have no writable second name
//! ([`check_protected`]).

use std::os::fd::OwnedFd;

use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

use crate::diag::quote;
use crate::failure::Failure;
use crate::ir::Ir;

/// Make every write root of `ir` that was absent when compiled (and is
/// still absent: one made by an earlier run is simply there). Returns the
/// directories it made, so a caller that then refuses to start can take
/// them away again ([`MadeRoots::remove`]).
pub fn make_write_roots(ir: &Ir) -> Result<MadeRoots, Failure> {
    let mut made = MadeRoots::default();
    for root in ir.roots.iter().filter(|r| r.made) {
        let Some(at) = root.real.as_deref() else {
            continue;
        };
        if let Err(e) = make_dir(at, &mut made.made) {
            made.remove();
            return Err(e.within(format!(
                "cannot make the write root {} at {}",
                quote(&root.path),
                quote(at)
            )));
        }
    }
    Ok(made)
}

/// The directories [`make_write_roots`] made for one run, each held by its
/// parent's descriptor, its name and its identity (device, inode).
#[derive(Debug, Default)]
pub struct MadeRoots {
    made: Vec<Made>,
}

impl MadeRoots {
    /// Remove them, deepest first: each only if it is still the directory
    /// made, by the descriptor of the directory it was made in (no path is
    /// walked again, so a link put above it since leads nowhere), and only
    /// if it is empty.
    pub fn remove(self) {
        for m in self.made.iter().rev() {
            if rustix::fs::statat(
                &m.parent,
                m.name.as_str(),
                rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
            )
            .is_ok_and(|st| (st.st_dev, st.st_ino) == m.id)
            {
                let _ = rustix::fs::unlinkat(
                    &m.parent,
                    m.name.as_str(),
                    rustix::fs::AtFlags::REMOVEDIR,
                );
            }
        }
    }
}

/// A directory opened only to walk on from it (`O_PATH` where there is one).
#[cfg(target_os = "linux")]
const WALK: OFlags = OFlags::PATH;
#[cfg(not(target_os = "linux"))]
const WALK: OFlags = OFlags::RDONLY;

/// Make `path`, one component at a time from `/`, none through a link. A
/// component there already that another user made in a sticky folder any
/// user may write (`/tmp`) is refused, as the kernel's
/// `fs.protected_symlinks` refuses their links there: made before the
/// first run by someone else, it would be their directory the agent works
/// in (started by root, writing as its owner: as them).
fn make_dir(path: &str, made: &mut Vec<Made>) -> Result<(), Failure> {
    let dir_flags = WALK | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let me = rustix::process::geteuid().as_raw();
    let mut fd: OwnedFd = rustix::fs::open("/", dir_flags, Mode::empty())?;
    let mut at = String::new();
    for c in path.split('/').filter(|c| !c.is_empty()) {
        at.push('/');
        at.push_str(c);
        match rustix::fs::mkdirat(&fd, c, Mode::from_raw_mode(0o755)) {
            Ok(()) => {
                let st = rustix::fs::statat(&fd, c, rustix::fs::AtFlags::SYMLINK_NOFOLLOW)?;
                made.push(Made {
                    path: at.clone(),
                    parent: fd.try_clone()?,
                    name: c.to_string(),
                    id: (st.st_dev, st.st_ino),
                });
            }
            Err(Errno::EXIST) => {
                let parent = rustix::fs::fstat(&fd)?;
                let st = rustix::fs::statat(&fd, c, rustix::fs::AtFlags::SYMLINK_NOFOLLOW)?;
                let shared = parent.st_mode & 0o1002 == 0o1002;
                if shared && st.st_uid != me && st.st_uid != 0 && st.st_uid != parent.st_uid {
                    return Err(Failure::new(format!(
                        "{} is there already, made by another user (uid {}) in a folder any user may write, since the seal was compiled",
                        quote(&at),
                        st.st_uid
                    )));
                }
            }
            Err(err) => return Err(err.into()),
        }
        fd = rustix::fs::openat(&fd, c, dir_flags, Mode::empty())?;
    }
    Ok(())
}

/// The stand-ins of one run: protected paths absent when compiled, each
/// made as an empty directory before the sandbox starts (the seal binds or
/// denies it read-only, so the agent cannot make the path first, nor
/// anything in it), and removed after the run if it is still the empty
/// directory made, so a checkout is not left with them.
#[derive(Debug, Default)]
pub struct StandIns {
    made: Vec<Made>,
    /// Stand-ins that were there already (made by a host process since
    /// compiling): used, never removed.
    pub found: Vec<String>,
}

#[derive(Debug)]
struct Made {
    path: String,
    parent: OwnedFd,
    name: String,
    id: (u64, u64),
}

/// A directory to make names in: opened from `/` one component at a time,
/// no link followed.
/// Only search permission is needed on the way (`O_PATH` where there is
/// one): an unprivileged caller may pass through a directory it cannot
/// list (a `mktemp -d` made searchable with `chmod o+x`).
fn open_dir(path: &str) -> Result<OwnedFd, Errno> {
    let flags = WALK | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mut fd: OwnedFd = rustix::fs::open("/", flags, Mode::empty())?;
    for c in path.split('/').filter(|c| !c.is_empty()) {
        fd = rustix::fs::openat(&fd, c, flags, Mode::empty())?;
    }
    Ok(fd)
}

/// Make the stand-ins of `ir` (see [`StandIns`]): started by root, each
/// is the owner's of the write root it lies in. A name there already is
/// used when it is a directory and refused otherwise; on a refusal what
/// was made is removed again.
pub fn make_stand_ins(ir: &Ir) -> Result<StandIns, Failure> {
    let mut out = StandIns::default();
    for (at, within) in ir.stand_ins() {
        if let Err(e) = make_stand_in(at, within, &mut out) {
            out.remove();
            return Err(e);
        }
    }
    Ok(out)
}

fn make_stand_in(at: &str, within: &str, out: &mut StandIns) -> Result<(), Failure> {
    let fail =
        |what: &str, e: Errno| Failure::os(format!("cannot {what} the stand-in {}", quote(at)), e);
    let (dir, name) = match at.rsplit_once('/') {
        Some(("", n)) => ("/", n),
        Some((d, n)) => (d, n),
        None => {
            return Err(Failure::new(format!(
                "the stand-in {} is not absolute",
                quote(at)
            )))
        }
    };
    let parent = open_dir(dir).map_err(|e| fail("reach the directory of", e))?;
    // Started by root: what sealc makes is the write root's owner's.
    let owner = if rustix::process::geteuid().is_root() {
        let root = open_dir(within).map_err(|e| fail("reach the write root of", e))?;
        let st = rustix::fs::fstat(&root).map_err(|e| fail("inspect the write root of", e))?;
        Some((st.st_uid, st.st_gid))
    } else {
        None
    };
    match rustix::fs::mkdirat(&parent, name, Mode::from_raw_mode(0o755)) {
        Ok(()) => {}
        Err(Errno::EXIST) => {
            let st = rustix::fs::statat(&parent, name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW)
                .map_err(|e| fail("inspect", e))?;
            if rustix::fs::FileType::from_raw_mode(st.st_mode) != rustix::fs::FileType::Directory {
                return Err(Failure::new(format!(
                    "the stand-in {} is there already, and is not a directory",
                    quote(at)
                )));
            }
            out.found.push(at.to_string());
            return Ok(());
        }
        Err(e) => return Err(fail("make", e)),
    }
    let made = (|| {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = rustix::fs::openat(&parent, name, flags, Mode::empty())?;
        if let Some((uid, gid)) = owner {
            rustix::fs::fchown(
                &fd,
                Some(rustix::fs::Uid::from_raw(uid)),
                Some(rustix::fs::Gid::from_raw(gid)),
            )?;
        }
        rustix::fs::fchmod(&fd, Mode::from_raw_mode(0o755))?;
        rustix::fs::fstat(&fd)
    })();
    match made {
        Ok(st) => {
            out.made.push(Made {
                path: at.to_string(),
                parent,
                name: name.to_string(),
                id: (st.st_dev, st.st_ino),
            });
            Ok(())
        }
        Err(e) => {
            let _ = rustix::fs::unlinkat(&parent, name, rustix::fs::AtFlags::REMOVEDIR);
            Err(fail("make", e))
        }
    }
}

impl StandIns {
    /// The stand-ins made, by path.
    pub fn made(&self) -> Vec<&str> {
        self.made.iter().map(|m| m.path.as_str()).collect()
    }

    /// Remove each stand-in made that is still the empty directory made
    /// (by device and inode, no link followed); returns what was left,
    /// and why.
    pub fn remove(self) -> Vec<String> {
        let mut left = Vec::new();
        for m in self.made.iter().rev() {
            let shown = quote(&m.path);
            match rustix::fs::statat(
                &m.parent,
                m.name.as_str(),
                rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
            ) {
                Ok(st) if (st.st_dev, st.st_ino) == m.id => {
                    match rustix::fs::unlinkat(&m.parent, m.name.as_str(), rustix::fs::AtFlags::REMOVEDIR) {
                        Ok(()) => {}
                        Err(Errno::NOTEMPTY) => left.push(format!(
                            "the stand-in {shown} was left: something was put in it (not from inside the sandbox, where it is read-only)"
                        )),
                        Err(e) => left.push(format!("cannot remove the stand-in {shown}: {e}")),
                    }
                }
                Ok(_) => left.push(format!(
                    "the stand-in {shown} was left: another object is at its name now"
                )),
                Err(Errno::NOENT) => {}
                Err(e) => left.push(format!("cannot inspect the stand-in {shown}: {e}")),
            }
        }
        left
    }
}

/// How far [`check_protected`] walks a protected directory.
const CHECK_BOUNDS: crate::hostfs::Bounds = crate::hostfs::Bounds {
    entries: 100_000,
    depth: 64,
};

/// Before a run: each protected object that exists, and everything in a
/// protected directory, has no second name the agent can write through. A
/// regular file with another hard link is refused (a run before it was
/// protected may have made one in a write root: writing that name changes
/// the protected file, on both platforms), and so is a symlink that leads
/// into a write root outside every protected object (the operator's tools
/// follow it to what the agent writes: a `.git/hooks/pre-commit` linked to
/// a script of the checkout). Nothing is followed; a tree past the bounds
/// is refused too.
pub fn check_protected(ir: &Ir) -> Result<(), Failure> {
    use crate::ir::{is_within, RootKind, Standing};
    use rustix::fs::FileType;
    let protected = ir.protected();
    let objects: Vec<&str> = protected.iter().filter_map(|r| r.real.as_deref()).collect();
    let writes: Vec<&str> = ir
        .roots_of(RootKind::Write)
        .filter_map(|r| r.real.as_deref())
        .collect();
    let writable = |p: &str| {
        writes.iter().any(|w| is_within(p, w)) && !objects.iter().any(|o| is_within(p, o))
    };
    for r in &protected {
        let Some(at) = r.real.as_deref() else {
            continue;
        };
        // A stand-in is made empty; the Codex config is made by exec.
        if !matches!(
            r.protect.as_ref().map(|p| p.standing),
            Some(Standing::Here | Standing::InPlace)
        ) {
            continue;
        }
        let linked = |p: &str| {
            Failure::new(format!(
                "the protected {} has another hard link, a name the agent could write it through (made before it was protected?)",
                quote(p)
            ))
        };
        // Where a symlink at `p` (text `text`) leads, when that is a
        // place the agent may write.
        let leads_out = |p: &str, text: &str| {
            let dir = p
                .rsplit_once('/')
                .map_or("/", |(d, _)| if d.is_empty() { "/" } else { d });
            let to = if text.starts_with('/') {
                crate::facts::normalize(text)
            } else {
                crate::facts::normalize(&format!("{dir}/{text}"))
            };
            let real = std::fs::canonicalize(&to)
                .ok()
                .and_then(|r| r.into_os_string().into_string().ok())
                .unwrap_or(to);
            writable(&real).then(|| {
                Failure::new(format!(
                    "{} in the protected {} is a symlink to {}, which the agent may write: your tools would run or read what it puts there",
                    quote(p),
                    quote(at),
                    quote(&real)
                ))
            })
        };
        let (dir, name) = match at.rsplit_once('/') {
            Some(("", n)) => ("/", n),
            Some((d, n)) => (d, n),
            None => continue,
        };
        let parent =
            open_dir(dir).map_err(|e| Failure::os(format!("cannot reach {}", quote(at)), e))?;
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let fd = match rustix::fs::openat(&parent, name, flags, Mode::empty()) {
            Ok(fd) => fd,
            // A special file that cannot be opened: there is nothing in it.
            Err(Errno::NXIO | Errno::OPNOTSUPP) => continue,
            Err(e) => {
                return Err(Failure::os(
                    format!("cannot open the protected {}", quote(at)),
                    e,
                ))
            }
        };
        let st = rustix::fs::fstat(&fd)
            .map_err(|e| Failure::os(format!("cannot inspect {}", quote(at)), e))?;
        match FileType::from_raw_mode(st.st_mode) {
            FileType::RegularFile if st.st_nlink > 1 => return Err(linked(at)),
            FileType::Directory => {
                let mut found = None;
                crate::hostfs::walk(
                    &fd,
                    CHECK_BOUNDS,
                    &mut |e| {
                        let p = format!("{at}/{}", e.path);
                        match e.kind() {
                            FileType::RegularFile if e.stat.st_nlink > 1 => {
                                found = Some(linked(&p));
                            }
                            FileType::Symlink => {
                                let text = rustix::fs::readlinkat(e.dir, e.name, Vec::new())
                                    .map(|t| String::from_utf8_lossy(t.to_bytes()).into_owned())
                                    .unwrap_or_default();
                                if let Some(why) = leads_out(&p, &text) {
                                    found = Some(why);
                                }
                            }
                            _ => {}
                        }
                        Ok(found.is_none())
                    },
                    &mut |_| Ok(()),
                )
                .map_err(|e| Failure::os(format!("cannot check the protected {}", quote(at)), e))?;
                if let Some(why) = found {
                    return Err(why);
                }
            }
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn makes_each_missing_directory_and_refuses_a_link_on_the_way() {
        let t = tempfile::tempdir().unwrap();
        let real = t.path().canonicalize().unwrap();
        let at = real.join("a/b/ws").display().to_string();
        let mut made = Vec::new();
        make_dir(&at, &mut made).unwrap();
        assert!(std::path::Path::new(&at).is_dir());
        assert_eq!(made.len(), 3, "{made:?}");
        // There already: nothing more to make.
        let mut again = Vec::new();
        make_dir(&at, &mut again).unwrap();
        assert!(again.is_empty());
        MadeRoots { made }.remove();
        assert!(!real.join("a").exists());
        // A symlink on the way is not followed.
        std::fs::create_dir(real.join("elsewhere")).unwrap();
        std::os::unix::fs::symlink(real.join("elsewhere"), real.join("l")).unwrap();
        let through = real.join("l/ws").display().to_string();
        assert!(make_dir(&through, &mut Vec::new()).is_err());
        assert!(!real.join("elsewhere/ws").exists());
    }

    #[test]
    fn a_protected_file_with_another_name_or_a_link_into_a_write_root_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let real = t.path().canonicalize().unwrap();
        let w = real.join("w");
        std::fs::create_dir_all(w.join(".git/hooks")).unwrap();
        std::fs::write(w.join(".git/config"), "[core]\n").unwrap();
        std::fs::write(w.join(".git/hooks/pre-commit"), "#!/bin/sh\n").unwrap();
        std::fs::write(w.join("tool.sh"), "#!/bin/sh\n").unwrap();
        let ir = |w: &std::path::Path| {
            let spec = format!(
                "version = 1\nname = \"c\"\n[target]\nplatform = \"linux\"\n[filesystem]\nwrite = [\"{}\"]\nprotect = [\".git/hooks\", \".git/config\"]\n",
                w.display()
            );
            crate::compile("c.toml", &spec, &Vec::new(), &crate::facts::RealHost)
                .unwrap()
                .ir
        };
        assert_eq!(check_protected(&ir(&w)).map_err(|e| e.to_string()), Ok(()));
        // A second name of the config, in the write root.
        std::fs::hard_link(w.join(".git/config"), w.join("notes.txt")).unwrap();
        let e = check_protected(&ir(&w)).unwrap_err().to_string();
        assert!(e.contains("another hard link"), "{e}");
        std::fs::remove_file(w.join("notes.txt")).unwrap();
        // A hook that is a link to a script the agent writes.
        std::fs::remove_file(w.join(".git/hooks/pre-commit")).unwrap();
        std::os::unix::fs::symlink("../../tool.sh", w.join(".git/hooks/pre-commit")).unwrap();
        let e = check_protected(&ir(&w)).unwrap_err().to_string();
        assert!(
            e.contains("is a symlink to") && e.contains("tool.sh"),
            "{e}"
        );
        // To a place outside the write roots: fine.
        std::fs::remove_file(w.join(".git/hooks/pre-commit")).unwrap();
        std::os::unix::fs::symlink("/bin/true", w.join(".git/hooks/pre-commit")).unwrap();
        assert_eq!(check_protected(&ir(&w)).map_err(|e| e.to_string()), Ok(()));
    }

    #[test]
    fn a_stand_in_is_made_used_refused_and_removed_only_when_still_empty_and_the_same() {
        let t = tempfile::tempdir().unwrap();
        let real = t.path().canonicalize().unwrap();
        let w = real.display().to_string();
        let at = |n: &str| format!("{w}/{n}");
        let mut s = StandIns::default();
        make_stand_in(&at("a"), &w, &mut s).unwrap();
        make_stand_in(&at("b"), &w, &mut s).unwrap();
        make_stand_in(&at("c"), &w, &mut s).unwrap();
        assert_eq!(s.made(), [at("a"), at("b"), at("c")]);
        assert!(real.join("a").is_dir());
        // One there already (a directory) is used, not removed after.
        std::fs::create_dir(real.join("d")).unwrap();
        make_stand_in(&at("d"), &w, &mut s).unwrap();
        assert_eq!(s.found, [at("d")]);
        // Something put in one, another replaced: both left.
        std::fs::write(real.join("b/x"), "x").unwrap();
        std::fs::remove_dir(real.join("c")).unwrap();
        std::fs::write(real.join("c"), "c").unwrap();
        let left = s.remove();
        assert_eq!(left.len(), 2, "{left:?}");
        assert!(!real.join("a").exists());
        assert!(real.join("b/x").exists() && real.join("c").exists() && real.join("d").exists());
        // A file at the name is refused; a link on the way is not followed.
        std::fs::write(real.join("f"), "f").unwrap();
        let mut s = StandIns::default();
        assert!(make_stand_in(&at("f"), &w, &mut s).is_err());
        std::os::unix::fs::symlink(real.join("d"), real.join("l")).unwrap();
        assert!(make_stand_in(&at("l/x"), &w, &mut s).is_err());
        assert!(!real.join("d/x").exists());
    }
}
