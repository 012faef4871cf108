//! The host, behind a trait: [`RealHost`] reads this machine; [`FakeHost`] is
//! an in-memory host for tests, goldens and benchmarks (it reads nothing).

use std::collections::{BTreeMap, BTreeSet};

use super::{Identity, NodeKind};

/// What a path is, without following a final symlink.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
    Symlink,
    Other,
}

/// Every host read sealc makes.
pub trait Host {
    /// An env var: `None` unset, `Some(Err(()))` not UTF-8.
    fn env(&self, name: &str) -> Option<Result<String, ()>>;
    /// The realpath of an existing path (None if absent or not UTF-8).
    fn canonicalize(&self, path: &str) -> Option<String>;
    /// What the path is, not following a final symlink (None if absent).
    fn lstat(&self, path: &str) -> Option<Kind>;
    /// The text of a symlink.
    fn read_link(&self, path: &str) -> Option<String>;
    /// The bytes of a file.
    fn read(&self, path: &str) -> Option<Vec<u8>>;
    /// The device, inode and kind of a path, not following a final symlink
    /// (None if absent).
    fn identity(&self, path: &str) -> Option<Identity>;
    /// The current directory (None if it cannot be read or is not UTF-8):
    /// a relative `--var` path is resolved against it.
    fn cwd(&self) -> Option<String>;
    /// The platform this host runs, when sealc knows it (Linux or macOS):
    /// compile warns when a seal for it could not be started here.
    fn platform(&self) -> Option<crate::spec::Platform>;
}

/// This machine.
#[derive(Clone, Copy, Debug, Default)]
pub struct RealHost;

impl Host for RealHost {
    fn env(&self, name: &str) -> Option<Result<String, ()>> {
        std::env::var_os(name).map(|v| v.into_string().map_err(|_| ()))
    }

    fn canonicalize(&self, path: &str) -> Option<String> {
        std::fs::canonicalize(path)
            .ok()
            .and_then(|p| p.into_os_string().into_string().ok())
    }

    fn lstat(&self, path: &str) -> Option<Kind> {
        let m = std::fs::symlink_metadata(path).ok()?;
        let t = m.file_type();
        Some(if t.is_symlink() {
            Kind::Symlink
        } else if t.is_file() {
            Kind::File
        } else if t.is_dir() {
            Kind::Dir
        } else {
            Kind::Other
        })
    }

    fn read_link(&self, path: &str) -> Option<String> {
        std::fs::read_link(path)
            .ok()
            .and_then(|p| p.into_os_string().into_string().ok())
    }

    fn read(&self, path: &str) -> Option<Vec<u8>> {
        std::fs::read(path).ok()
    }

    fn identity(&self, path: &str) -> Option<Identity> {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::symlink_metadata(path).ok()?;
        let t = m.file_type();
        let kind = if t.is_symlink() {
            NodeKind::Symlink
        } else if t.is_file() {
            NodeKind::File
        } else if t.is_dir() {
            NodeKind::Dir
        } else {
            NodeKind::Other
        };
        Some(Identity {
            dev: m.dev(),
            ino: m.ino(),
            kind,
        })
    }

    fn cwd(&self) -> Option<String> {
        std::env::current_dir()
            .ok()
            .and_then(|p| p.into_os_string().into_string().ok())
    }

    fn platform(&self) -> Option<crate::spec::Platform> {
        if cfg!(target_os = "linux") {
            Some(crate::spec::Platform::Linux)
        } else if cfg!(target_os = "macos") {
            Some(crate::spec::Platform::Macos)
        } else {
            None
        }
    }
}

/// An in-memory host: env vars, directories, files and symlinks given by the
/// test. Paths are absolute strings. Every path is on device 1, and its inode
/// is derived from the path (so it is the same on every run) unless the test
/// gives another with [`FakeHost::inode`], which is how a test moves one.
#[derive(Clone, Debug, Default)]
pub struct FakeHost {
    pub env: BTreeMap<String, String>,
    pub dirs: BTreeSet<String>,
    pub files: BTreeMap<String, Vec<u8>>,
    pub links: BTreeMap<String, String>,
    pub inodes: BTreeMap<String, u64>,
    /// The current directory; none unless the test gives one.
    pub cwd: Option<String>,
    /// The platform it plays; none unless the test gives one.
    pub platform: Option<crate::spec::Platform>,
}

impl FakeHost {
    pub fn new() -> Self {
        FakeHost::default()
    }
    pub fn env(mut self, k: &str, v: &str) -> Self {
        self.env.insert(k.into(), v.into());
        self
    }
    pub fn dir(mut self, p: &str) -> Self {
        self.dirs.insert(p.into());
        self
    }
    pub fn file(mut self, p: &str, bytes: &[u8]) -> Self {
        self.files.insert(p.into(), bytes.to_vec());
        self
    }
    pub fn link(mut self, p: &str, target: &str) -> Self {
        self.links.insert(p.into(), target.into());
        self
    }
    pub fn cwd(mut self, p: &str) -> Self {
        self.cwd = Some(p.into());
        self
    }
    /// Play a Linux or macOS host.
    pub fn running(mut self, p: crate::spec::Platform) -> Self {
        self.platform = Some(p);
        self
    }
    /// Give a path another inode, as if it had been replaced.
    pub fn inode(mut self, p: &str, ino: u64) -> Self {
        self.inodes.insert(p.into(), ino);
        self
    }

    /// The inode of a path that the test did not give one: FNV-1a of the
    /// path, cut to 48 bits (exact in any JSON reader).
    fn derived_inode(p: &str) -> u64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in p.bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        h & 0xffff_ffff_ffff
    }

    fn exists_plain(&self, p: &str) -> bool {
        if p == "/" || self.dirs.contains(p) || self.files.contains_key(p) {
            return true;
        }
        // Something lies below `p`: the first key after `p/` in each sorted map.
        use std::ops::Bound::{Included, Unbounded};
        let prefix = format!("{p}/");
        let below = |k: Option<&String>| k.is_some_and(|k| k.starts_with(&prefix));
        let from = (Included(prefix.as_str()), Unbounded);
        below(self.dirs.range::<str, _>(from).next())
            || below(self.files.range::<str, _>(from).next().map(|(k, _)| k))
            || below(self.links.range::<str, _>(from).next().map(|(k, _)| k))
    }
}

impl Host for FakeHost {
    fn env(&self, name: &str) -> Option<Result<String, ()>> {
        self.env.get(name).cloned().map(Ok)
    }

    fn canonicalize(&self, path: &str) -> Option<String> {
        // `out` is the resolved prefix ("" stands for "/"); `pending` the
        // rest still to walk, replaced whenever a symlink is followed.
        let mut out = String::with_capacity(path.len());
        let mut pending = path.to_string();
        let mut hops = 0;
        'walk: loop {
            let mut comps = pending.split('/').filter(|c| !c.is_empty()).peekable();
            while let Some(c) = comps.next() {
                match c {
                    "." => continue,
                    ".." => {
                        let cut = out.rfind('/').unwrap_or(0);
                        out.truncate(cut);
                        continue;
                    }
                    _ => {}
                }
                let len = out.len();
                out.push('/');
                out.push_str(c);
                if let Some(t) = self.links.get(out.as_str()) {
                    hops += 1;
                    if hops > 40 {
                        return None;
                    }
                    out.truncate(len);
                    if t.starts_with('/') {
                        out.clear();
                    }
                    let rest: Vec<&str> = comps.collect();
                    pending = format!("{t}/{}", rest.join("/"));
                    continue 'walk;
                }
                if !self.exists_plain(&out) {
                    return None;
                }
            }
            break;
        }
        Some(if out.is_empty() { "/".to_string() } else { out })
    }

    fn lstat(&self, path: &str) -> Option<Kind> {
        if self.links.contains_key(path) {
            Some(Kind::Symlink)
        } else if self.files.contains_key(path) {
            Some(Kind::File)
        } else if self.exists_plain(path) {
            Some(Kind::Dir)
        } else {
            None
        }
    }

    fn read_link(&self, path: &str) -> Option<String> {
        self.links.get(path).cloned()
    }

    fn read(&self, path: &str) -> Option<Vec<u8>> {
        self.files.get(path).cloned()
    }

    fn identity(&self, path: &str) -> Option<Identity> {
        let kind = match self.lstat(path)? {
            Kind::File => NodeKind::File,
            Kind::Dir => NodeKind::Dir,
            Kind::Symlink => NodeKind::Symlink,
            Kind::Other => NodeKind::Other,
        };
        let ino = self
            .inodes
            .get(path)
            .copied()
            .unwrap_or_else(|| FakeHost::derived_inode(path));
        Some(Identity { dev: 1, ino, kind })
    }

    fn cwd(&self) -> Option<String> {
        self.cwd.clone()
    }

    fn platform(&self) -> Option<crate::spec::Platform> {
        self.platform
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fake_canonicalize_follows_links() {
        let h = FakeHost::new()
            .dir("/private/tmp/x")
            .link("/tmp", "private/tmp")
            .link("/a", "/tmp/x");
        assert_eq!(h.canonicalize("/tmp/x").as_deref(), Some("/private/tmp/x"));
        assert_eq!(h.canonicalize("/a").as_deref(), Some("/private/tmp/x"));
        assert_eq!(h.canonicalize("/nope"), None);
    }

    #[test]
    fn fake_identities_are_stable_until_a_test_moves_one() {
        let h = FakeHost::new().dir("/w/a").file("/w/a/s", b"x");
        let a = h.identity("/w/a").unwrap();
        assert_eq!(a, h.identity("/w/a").unwrap());
        assert_eq!(a.kind, NodeKind::Dir);
        assert_ne!(a.ino, h.identity("/w/a/s").unwrap().ino);
        assert_eq!(h.identity("/w/b"), None);
        let moved = h.inode("/w/a", 7);
        assert_eq!(moved.identity("/w/a").unwrap().ino, 7);
    }
}
