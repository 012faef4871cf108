//! The host, behind a trait: [`RealHost`] reads this machine; [`FakeHost`] is
//! an in-memory host for tests, goldens and benchmarks (it reads nothing).

use std::collections::{BTreeMap, BTreeSet};

use super::{Identity, NodeKind};

pub use super::walk::{Bounds, Met, Unwalked};

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
    /// The bytes of a file of at most `max` bytes (`None` for a larger
    /// one, which is not read): for a file in a write root, which the agent
    /// may have made any size.
    fn read_at_most(&self, path: &str, max: u64) -> Option<Vec<u8>> {
        self.read(path).filter(|b| b.len() as u64 <= max)
    }
    /// The `sha256:` digest of a program that is a fact (a launcher, what
    /// starts the sandbox): a regular file, no final link followed.
    /// `in_write_root` says whether a realpath lies in a write root of the
    /// seal ([`super::digests`] keeps no digest there).
    fn program_digest(&self, path: &str, in_write_root: &dyn Fn(&str) -> bool) -> Option<String> {
        let _ = in_write_root;
        self.read(path).map(|b| crate::digest::sha256(&b))
    }
    /// The device, inode and kind of a path, not following a final symlink
    /// (None if absent).
    fn identity(&self, path: &str) -> Option<Identity>;
    /// The current directory (None if it cannot be read or is not UTF-8):
    /// a relative `--var` path is resolved against it.
    fn cwd(&self) -> Option<String>;
    /// The platform this host runs, when sealc knows it (Linux or macOS):
    /// compile warns when a seal for it could not be started here.
    fn platform(&self) -> Option<crate::spec::Platform>;
    /// Walk the tree at `root` (an absolute path without symlinks: a
    /// realpath), depth first, and give `met` every object in it that is
    /// not a directory (the root itself when it is not one), until `met`
    /// answers `false`. No symlink is followed, no other mount entered
    /// (neither looked at nor given), and a path in `skip` is neither given
    /// nor entered. `Err` when the walk could not see the whole tree: more
    /// entries or a deeper tree than `bounds` allows, or an object that
    /// cannot be read (the root included).
    fn walk(
        &self,
        root: &str,
        skip: &BTreeSet<String>,
        bounds: Bounds,
        met: &mut dyn FnMut(&Met<'_>) -> bool,
    ) -> Result<(), Unwalked>;
}

/// The most bytes of a file [`RealHost`] reads (the programs whose digests
/// are facts: the launcher chain, what starts the sandbox).
pub const MAX_PROGRAM: u64 = 1 << 30;

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
        // A program sealc digests (a launcher, bubblewrap): never more than
        // any program is, whatever a sparse file claims.
        self.read_at_most(path, MAX_PROGRAM)
    }

    fn read_at_most(&self, path: &str, max: u64) -> Option<Vec<u8>> {
        crate::hostfs::read_path(std::path::Path::new(path), max).ok()
    }

    fn program_digest(&self, path: &str, in_write_root: &dyn Fn(&str) -> bool) -> Option<String> {
        super::digests::program_digest(path, MAX_PROGRAM, in_write_root)
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

    fn walk(
        &self,
        root: &str,
        skip: &BTreeSet<String>,
        bounds: Bounds,
        met: &mut dyn FnMut(&Met<'_>) -> bool,
    ) -> Result<(), Unwalked> {
        super::walk::walk(root, skip, bounds, met)
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
/// test. Paths are absolute strings. Every path is on device 1 (or, below a
/// [`FakeHost::mount`], that mount's own), and its inode is derived from the
/// path (so it is the same on every run) unless the test gives another with
/// [`FakeHost::inode`], which is how a test moves one. Files that share a
/// device and inode are hard links of one file ([`FakeHost::hard_link`]):
/// a file's link count is how many of them there are, plus the links the
/// test put outside the tree ([`FakeHost::links_elsewhere`]).
#[derive(Clone, Debug, Default)]
pub struct FakeHost {
    pub env: BTreeMap<String, String>,
    pub dirs: BTreeSet<String>,
    pub files: BTreeMap<String, Vec<u8>>,
    pub links: BTreeMap<String, String>,
    pub inodes: BTreeMap<String, u64>,
    /// Links of a file's inode that no path of this host shows, by one of
    /// the file's paths.
    pub elsewhere: BTreeMap<String, u64>,
    /// Mount points: each path at or below one is on a device of its own.
    pub mounts: BTreeSet<String>,
    /// Directories a walk cannot list.
    pub unreadable: BTreeSet<String>,
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
    /// `ln existing new`: a file at `new` that is the file at `existing`
    /// (same device, inode and bytes). `existing` must be a file.
    pub fn hard_link(mut self, existing: &str, new: &str) -> Self {
        let bytes = self.files.get(existing).cloned().unwrap_or_default();
        let ino = self.ino_of(existing);
        self.files.insert(new.into(), bytes);
        self.inodes.insert(new.into(), ino);
        self
    }
    /// `n` more links of the file at `p`, in places this host does not show.
    pub fn links_elsewhere(mut self, p: &str, n: u64) -> Self {
        *self.elsewhere.entry(p.into()).or_default() += n;
        self
    }
    /// Make `p` a mount point: it and everything below it are on a device
    /// of their own.
    pub fn mount(mut self, p: &str) -> Self {
        self.mounts.insert(p.into());
        self
    }
    /// A directory that a walk cannot list (`EACCES`).
    pub fn unreadable(mut self, p: &str) -> Self {
        self.unreadable.insert(p.into());
        self
    }

    fn ino_of(&self, p: &str) -> u64 {
        self.inodes
            .get(p)
            .copied()
            .unwrap_or_else(|| FakeHost::derived_inode(p))
    }

    /// The device of a path: 1, or 2 + the rank of the deepest mount point
    /// it lies at or below.
    fn dev_of(&self, p: &str) -> u64 {
        self.mounts
            .iter()
            .enumerate()
            .filter(|(_, m)| crate::paths::is_within(p, m))
            .max_by_key(|(_, m)| m.len())
            .map_or(1, |(i, _)| 2 + i as u64)
    }

    /// Every path at or below `root` this host shows (directories implied
    /// by a deeper path included), sorted.
    fn tree(&self, root: &str) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        let keys = self
            .dirs
            .iter()
            .chain(self.files.keys())
            .chain(self.links.keys());
        for k in keys.filter(|k| crate::paths::is_within(k, root)) {
            let mut cur = k.as_str();
            while out.insert(cur.to_string()) && cur != root {
                cur = match cur.rfind('/') {
                    Some(0) | None => "/",
                    Some(i) => &cur[..i],
                };
                if !crate::paths::is_within(cur, root) {
                    break;
                }
            }
        }
        out
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
        // Something lies below `p`: among the keys after `p` that start
        // with it (in each sorted map), one goes on with `/`.
        use std::ops::Bound::{Excluded, Unbounded};
        let from = (Excluded(p), Unbounded);
        let below = |keys: &mut dyn Iterator<Item = &String>| {
            keys.take_while(|k| k.starts_with(p))
                .any(|k| k.as_bytes().get(p.len()) == Some(&b'/'))
        };
        below(&mut self.dirs.range::<str, _>(from))
            || below(&mut self.files.range::<str, _>(from).map(|(k, _)| k))
            || below(&mut self.links.range::<str, _>(from).map(|(k, _)| k))
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
        Some(Identity {
            dev: self.dev_of(path),
            ino: self.ino_of(path),
            kind,
        })
    }

    fn cwd(&self) -> Option<String> {
        self.cwd.clone()
    }

    fn platform(&self) -> Option<crate::spec::Platform> {
        self.platform
    }

    fn walk(
        &self,
        root: &str,
        skip: &BTreeSet<String>,
        bounds: Bounds,
        met: &mut dyn FnMut(&Met<'_>) -> bool,
    ) -> Result<(), Unwalked> {
        if self.lstat(root).is_none() {
            return Err(Unwalked::Read {
                path: root.to_string(),
                error: "No such file or directory (os error 2)".into(),
            });
        }
        // Link counts: the files of each (device, inode), and the links
        // elsewhere of any of them.
        let mut nlinks: BTreeMap<(u64, u64), u64> = BTreeMap::new();
        for f in self.files.keys() {
            *nlinks.entry((self.dev_of(f), self.ino_of(f))).or_default() += 1;
        }
        for (f, n) in &self.elsewhere {
            *nlinks.entry((self.dev_of(f), self.ino_of(f))).or_default() += n;
        }
        let dev = self.dev_of(root);
        let mut seen: u64 = 0;
        let depth_of = |p: &str| {
            let rel = if root == "/" { p } else { &p[root.len()..] };
            rel.matches('/').count()
        };
        // Sorted paths: everything below a skipped or foreign directory
        // follows it, until the next path outside it.
        let mut cut: Option<String> = None;
        for p in self.tree(root) {
            if cut
                .as_deref()
                .is_some_and(|c| crate::paths::is_within(&p, c))
            {
                continue;
            }
            cut = None;
            if p != root && (skip.contains(&p) || self.dev_of(&p) != dev) {
                cut = Some(p);
                continue;
            }
            seen += 1;
            if seen > bounds.entries {
                return Err(Unwalked::Entries(bounds.entries));
            }
            let kind = self.lstat(&p);
            if kind == Some(Kind::Dir) {
                let depth = if p == root { 0 } else { depth_of(&p) };
                if depth > bounds.depth {
                    return Err(Unwalked::Depth(bounds.depth, p));
                }
                if self.unreadable.contains(&p) {
                    return Err(Unwalked::Read {
                        path: p,
                        error: "Permission denied (os error 13)".into(),
                    });
                }
                continue;
            }
            let (dev, ino) = (self.dev_of(&p), self.ino_of(&p));
            let nlink = match kind {
                Some(Kind::File) => nlinks.get(&(dev, ino)).copied().unwrap_or(1),
                _ => 1,
            };
            let m = Met {
                path: std::borrow::Cow::Borrowed(p.as_str()),
                dev,
                ino,
                nlink,
            };
            if !met(&m) {
                return Ok(());
            }
        }
        Ok(())
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
    fn fake_parents_exist_past_siblings_that_sort_before_the_slash() {
        // `-`, `.` and ` ` sort before `/`: `/a-b` and `/a.c` lie between
        // `/a` and `/a/...` in each map.
        let h = FakeHost::new()
            .dir("/a-b")
            .file("/a.c", b"x")
            .link("/a b", "x")
            .file("/a/deep/f", b"y");
        assert_eq!(h.lstat("/a"), Some(Kind::Dir));
        assert_eq!(h.lstat("/a/deep"), Some(Kind::Dir));
        let only_siblings = FakeHost::new()
            .dir("/a-b")
            .file("/a.c", b"x")
            .link("/a b", "x");
        assert_eq!(only_siblings.lstat("/a"), None);
        assert_eq!(only_siblings.lstat("/a-"), None);
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
