//! The seal's `CODEX_HOME`: `sealc exec` installs the verified Codex config
//! there before the command starts, and reads it back when the command has
//! ended, for the drift check (`verify::check_codex_config`).
//!
//! The directory lies in a write root, which the previous run's agent
//! controlled: every component below the write root is opened without
//! following a link (a link there is refused, never followed), the config is
//! written to a temp file beside it and renamed into place, and an existing
//! `config.toml` that is not a regular file is never read or written through.
//! Started by root, what it makes (the directories down to `CODEX_HOME`, the
//! config) is given to the owner of the directory it is made in, as if that
//! owner had made it: the agent writes the root as its owner.

use std::io::{Read, Write};
use std::os::fd::OwnedFd;

use rustix::fs::{FileType, Mode, OFlags};

use crate::diag::quote;
use crate::ir::{is_within, Ir, RootKind};

/// The config's file name in `CODEX_HOME`.
pub const CONFIG: &str = "config.toml";

/// What installing found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Installed {
    /// There was no config; the verified one is in place now.
    New,
    /// The same bytes were there already.
    Same,
    /// A different config was there and `--force` replaced it.
    Replaced,
}

/// Why the config was not installed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refused {
    /// A different config (or something that is not a regular file) is
    /// there, and `--force` was not given.
    Drift(String),
    /// The directory could not be reached or written.
    Io(String),
}

/// Where the seal's `CODEX_HOME` is on this host: its write root's recorded
/// realpath and the components below it.
pub fn location(ir: &Ir) -> Option<(String, Vec<String>)> {
    let home = ir.codex.home.as_ref()?;
    let root = ir
        .roots
        .iter()
        .filter(|r| r.kind == RootKind::Write && is_within(home, &r.path))
        .max_by_key(|r| r.path.len())?;
    let real = root.real.clone()?;
    let below = home[root.path.len()..]
        .split('/')
        .filter(|c| !c.is_empty())
        .map(str::to_string)
        .collect();
    Some((real, below))
}

fn io(what: &str, e: impl std::fmt::Display) -> Refused {
    Refused::Io(format!("{what}: {e}"))
}

/// Started by root: the owner of the write root (its directory's), whose
/// what sealc makes in it becomes, as if that owner had made it (the agent
/// writes the root as its owner: see [`super::idmap`]). `None` otherwise.
fn root_owner(dir: &OwnedFd, root: &str) -> Result<Option<(u32, u32)>, Refused> {
    if !rustix::process::geteuid().is_root() {
        return Ok(None);
    }
    let st = rustix::fs::fstat(dir)
        .map_err(|e| io(&format!("cannot inspect the write root {}", quote(root)), e))?;
    Ok(Some((st.st_uid, st.st_gid)))
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

/// Open (and with `create`, make) the directory `below` the write root
/// `root`, one component at a time, following no link.
fn open_home(root: &str, below: &[String], create: bool) -> Result<OwnedFd, Refused> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mut dir = super::user::open_nofollow(root, flags)
        .map_err(|e| io(&format!("cannot open the write root {}", quote(root)), e))?;
    let owner = root_owner(&dir, root)?;
    let mut at = root.to_string();
    for c in below {
        at = format!("{at}/{c}");
        let next = match rustix::fs::openat(&dir, c.as_str(), flags, Mode::empty()) {
            Err(rustix::io::Errno::NOENT) if create => {
                rustix::fs::mkdirat(&dir, c.as_str(), Mode::from_raw_mode(0o755))
                    .map_err(|e| io(&format!("cannot make {}", quote(&at)), e))?;
                rustix::fs::openat(&dir, c.as_str(), flags, Mode::empty()).and_then(|d| {
                    give(&d, owner)?;
                    Ok(d)
                })
            }
            r => r,
        };
        dir = next.map_err(|e| match e {
            rustix::io::Errno::LOOP | rustix::io::Errno::NOTDIR => Refused::Drift(format!(
                "{} is not a directory (a link or a file was put in its place)",
                quote(&at)
            )),
            e => io(&format!("cannot open {}", quote(&at)), e),
        })?;
    }
    Ok(dir)
}

/// The config in the directory: `Ok(None)` when there is none, `Err` when
/// what is there is not a regular file (a link is not followed).
fn read_config(dir: &OwnedFd, home: &str) -> Result<Option<Vec<u8>>, Refused> {
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let fd = match rustix::fs::openat(dir, CONFIG, flags, Mode::empty()) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::NOENT) => return Ok(None),
        Err(rustix::io::Errno::LOOP) => {
            return Err(Refused::Drift(format!(
                "{home}/{CONFIG} is a symlink, not the config"
            )))
        }
        Err(e) => return Err(io(&format!("cannot open {home}/{CONFIG}"), e)),
    };
    let st = rustix::fs::fstat(&fd).map_err(|e| io("cannot stat the config", e))?;
    if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
        return Err(Refused::Drift(format!(
            "{home}/{CONFIG} is not a regular file"
        )));
    }
    let mut bytes = Vec::new();
    std::fs::File::from(fd)
        .read_to_end(&mut bytes)
        .map_err(|e| io(&format!("cannot read {home}/{CONFIG}"), e))?;
    Ok(Some(bytes))
}

/// Install `bytes` as the seal's `CODEX_HOME/config.toml`, atomically. A
/// different file there is drift unless `force`.
pub fn install(ir: &Ir, bytes: &[u8], force: bool) -> Result<Installed, Refused> {
    let Some((root, below)) = location(ir) else {
        return Err(Refused::Io(
            "the seal's CODEX_HOME has no write root on this host".into(),
        ));
    };
    let home = ir.codex.home.clone().unwrap_or_default();
    let dir = open_home(&root, &below, true)?;
    let existing = match read_config(&dir, &home) {
        Ok(e) => e,
        Err(Refused::Drift(_)) if force => Some(Vec::new()),
        Err(e) => return Err(e),
    };
    let outcome = match existing {
        Some(e) if e == bytes => return Ok(Installed::Same),
        Some(_) if !force => {
            return Err(Refused::Drift(format!(
                "{home}/{CONFIG} differs from the verified config"
            )))
        }
        Some(_) => Installed::Replaced,
        None => Installed::New,
    };
    let tmp = format!(".{CONFIG}.sealc-{}", std::process::id());
    let _ = rustix::fs::unlinkat(&dir, tmp.as_str(), rustix::fs::AtFlags::empty());
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = rustix::fs::openat(&dir, tmp.as_str(), flags, Mode::from_raw_mode(0o644))
        .map_err(|e| io(&format!("cannot write in {}", quote(&home)), e))?;
    // Started by root, the config is its directory's owner's.
    let owner = match rustix::process::geteuid().is_root() {
        true => rustix::fs::fstat(&dir)
            .ok()
            .map(|st| (st.st_uid, st.st_gid)),
        false => None,
    };
    let mut f = std::fs::File::from(fd);
    let written = give(&f, owner)
        .map_err(std::io::Error::from)
        .and_then(|()| f.write_all(bytes))
        .and_then(|()| f.sync_all());
    let renamed = written.map_err(|e| e.to_string()).and_then(|()| {
        rustix::fs::renameat(&dir, tmp.as_str(), &dir, CONFIG).map_err(|e| e.to_string())
    });
    if let Err(e) = renamed {
        let _ = rustix::fs::unlinkat(&dir, tmp.as_str(), rustix::fs::AtFlags::empty());
        return Err(io(&format!("cannot install {home}/{CONFIG}"), e));
    }
    Ok(outcome)
}

/// The config in the seal's `CODEX_HOME` after a run, read without following
/// a link; `Err` says why it could not be had.
pub fn read_back(ir: &Ir) -> Result<Vec<u8>, String> {
    let (root, below) = location(ir).ok_or("the seal has no CODEX_HOME in a write root")?;
    let home = ir.codex.home.clone().unwrap_or_default();
    let dir = open_home(&root, &below, false).map_err(|e| match e {
        Refused::Drift(m) | Refused::Io(m) => m,
    })?;
    match read_config(&dir, &home) {
        Ok(Some(b)) => Ok(b),
        Ok(None) => Err(format!("{home}/{CONFIG} was removed")),
        Err(Refused::Drift(m) | Refused::Io(m)) => Err(m),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ir_at(root: &std::path::Path) -> Ir {
        let r = root.display().to_string();
        let spec = format!(
            "version = 1\nname = \"c\"\n[filesystem]\nwrite = [\"{r}/w\"]\n[env]\nset = {{ CODEX_HOME = \"{r}/w/home/.codex\" }}\n[codex]\nworkspace = \"{r}/w\"\n"
        );
        crate::compile("c.toml", &spec, &Vec::new(), &crate::facts::RealHost)
            .unwrap()
            .ir
    }

    #[test]
    fn installs_atomically_and_refuses_a_different_file_or_a_link() {
        let t = tempfile::tempdir().unwrap();
        let base = t.path().canonicalize().unwrap();
        std::fs::create_dir(base.join("w")).unwrap();
        let ir = ir_at(&base);
        let cfg = base.join("w/home/.codex/config.toml");
        assert_eq!(install(&ir, b"a = 1\n", false), Ok(Installed::New));
        assert_eq!(std::fs::read(&cfg).unwrap(), b"a = 1\n");
        assert_eq!(install(&ir, b"a = 1\n", false), Ok(Installed::Same));
        assert!(matches!(
            install(&ir, b"a = 2\n", false),
            Err(Refused::Drift(_))
        ));
        assert_eq!(std::fs::read(&cfg).unwrap(), b"a = 1\n", "nothing written");
        assert_eq!(install(&ir, b"a = 2\n", true), Ok(Installed::Replaced));
        assert_eq!(read_back(&ir).unwrap(), b"a = 2\n");
        // No temp file is left behind.
        let names: Vec<_> = std::fs::read_dir(cfg.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, [std::ffi::OsString::from("config.toml")]);
        // A link in place of the config is never followed.
        let outside = base.join("outside.toml");
        std::fs::write(&outside, b"secret").unwrap();
        std::fs::remove_file(&cfg).unwrap();
        std::os::unix::fs::symlink(&outside, &cfg).unwrap();
        assert!(matches!(
            install(&ir, b"a = 1\n", false),
            Err(Refused::Drift(_))
        ));
        assert!(read_back(&ir).is_err());
        assert_eq!(install(&ir, b"a = 1\n", true), Ok(Installed::Replaced));
        assert_eq!(std::fs::read(&outside).unwrap(), b"secret");
        // A link in place of a directory on the way is refused, with or without --force.
        std::fs::remove_dir_all(base.join("w/home")).unwrap();
        std::fs::create_dir(base.join("elsewhere")).unwrap();
        std::os::unix::fs::symlink(base.join("elsewhere"), base.join("w/home")).unwrap();
        assert!(matches!(
            install(&ir, b"a = 1\n", true),
            Err(Refused::Drift(_))
        ));
        assert!(std::fs::read_dir(base.join("elsewhere"))
            .unwrap()
            .next()
            .is_none());
    }
}
