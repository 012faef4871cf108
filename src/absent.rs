//! Write roots that did not exist when compiled: `sealc exec` makes them
//! before the sandbox starts, on either platform, at the path the record
//! gives (`facts.absent_writes`), so the command finds and uses them. The
//! seal already mounts and allows them there.
//!
//! Each directory is made one component at a time from `/`, and each
//! component, made or found, is opened without following a link: a symlink
//! put on the way is refused, never followed.

use std::os::fd::OwnedFd;

use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

use crate::diag::quote;
use crate::ir::Ir;

/// Make every write root of `ir` that was absent when compiled (and is
/// still absent: one made by an earlier run is simply there). Returns the
/// directories it made, deepest last, so a caller that then refuses to
/// start can take them away again ([`unmake`]).
pub fn make_write_roots(ir: &Ir) -> Result<Vec<String>, String> {
    let mut made = Vec::new();
    for root in ir.roots.iter().filter(|r| r.made) {
        let Some(at) = root.real.as_deref() else {
            continue;
        };
        if let Err(e) = make_dir(at, &mut made) {
            unmake(&made);
            return Err(format!(
                "cannot make the write root {} at {}: {e}",
                quote(&root.path),
                quote(at)
            ));
        }
    }
    Ok(made)
}

/// Remove directories [`make_write_roots`] made (empty ones only), deepest
/// first.
pub fn unmake(made: &[String]) {
    for d in made.iter().rev() {
        let _ = std::fs::remove_dir(d);
    }
}

/// A directory opened only to walk on from it (`O_PATH` where there is one).
#[cfg(target_os = "linux")]
const WALK: OFlags = OFlags::PATH;
#[cfg(not(target_os = "linux"))]
const WALK: OFlags = OFlags::RDONLY;

fn make_dir(path: &str, made: &mut Vec<String>) -> Result<(), Errno> {
    let dir_flags = WALK | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mut fd: OwnedFd = rustix::fs::open("/", dir_flags, Mode::empty())?;
    let mut at = String::new();
    for c in path.split('/').filter(|c| !c.is_empty()) {
        at.push('/');
        at.push_str(c);
        match rustix::fs::mkdirat(&fd, c, Mode::from_raw_mode(0o755)) {
            Ok(()) => made.push(at.clone()),
            Err(Errno::EXIST) => {}
            Err(e) => return Err(e),
        }
        fd = rustix::fs::openat(&fd, c, dir_flags, Mode::empty())?;
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
        unmake(&made);
        assert!(!real.join("a").exists());
        // A symlink on the way is not followed.
        std::fs::create_dir(real.join("elsewhere")).unwrap();
        std::os::unix::fs::symlink(real.join("elsewhere"), real.join("l")).unwrap();
        let through = real.join("l/ws").display().to_string();
        assert!(make_dir(&through, &mut Vec::new()).is_err());
        assert!(!real.join("elsewhere/ws").exists());
    }
}
