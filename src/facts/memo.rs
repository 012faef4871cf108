//! One compile's view of the host: [`Memo`] answers each realpath and
//! `lstat` question once. Many roots share their ancestors (ten thousand
//! denied project directories under one absent folder ask for that folder's
//! realpath ten thousand times); the answers are also one consistent
//! snapshot, where asking again could see a host process change the tree
//! between two roots.
//!
//! A path's realpath is made from its directory's (remembered) and one
//! `lstat` of the path itself. The host's realpath `readlink`s every
//! ancestor of every path it is asked, so the probe spec's roots, which
//! share their ancestors, cost 87 calls that way and one `lstat` per
//! distinct path this way. Where the host's answer could differ, the host
//! answers: a symlink (its realpath of the path, whole, counts every link
//! on the way), an ancestor that is there but has no realpath here (one
//! that is not UTF-8, a file), and any path that is not plain or short.

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};

use super::host::{Bounds, Host, Kind, Met, Unwalked};
use super::Identity;

/// The memo's tables: every root is looked up several times, by paths that
/// share long prefixes. foldhash hashes them several times faster than
/// std's SipHash (a tenth of the facts of 10,000 roots went to hashing).
/// Its seed comes from the kernel's random source, so whoever writes a
/// spec does not know it; foldhash claims only minimal resistance to
/// inputs made to collide, which a one-shot compile that never shows its
/// hashes leaves little to aim at.
/// Keys and realpaths are kept in the compile's arena (a few blocks, each
/// twice the last, not an allocation a path; 10,000 roots asked 30,000 of
/// them).
type Table<'a, V> = HashMap<&'a str, V, foldhash::fast::SeedableRandomState>;

/// Where a [`Memo`] keeps the paths it remembers, for as long as it lives.
pub type Arena = bumpalo::Bump;

fn hasher() -> foldhash::fast::SeedableRandomState {
    static SEED: std::sync::OnceLock<foldhash::SharedSeed> = std::sync::OnceLock::new();
    let shared = SEED.get_or_init(|| {
        let mut bytes = [0u8; 8];
        // Without the kernel's random source, foldhash's own (addresses,
        // the time): the tables stay correct, only less hard to predict.
        let seeded = rustix::rand::getrandom(&mut bytes, rustix::rand::GetRandomFlags::NONBLOCK)
            .is_ok_and(|n| n == bytes.len());
        let random = if seeded {
            u64::from_ne_bytes(bytes)
        } else {
            use std::hash::BuildHasher as _;
            foldhash::fast::RandomState::default().hash_one(0u8)
        };
        foldhash::SharedSeed::from_u64(random)
    });
    foldhash::fast::SeedableRandomState::with_seed(0, shared)
}

/// A [`Host`] that asks the host under it at most once per path for a
/// realpath or a kind; every other read goes straight through.
pub struct Memo<'a> {
    host: &'a dyn Host,
    arena: &'a Arena,
    canonical: RefCell<Table<'a, Option<&'a str>>>,
    kinds: RefCell<Table<'a, Option<Kind>>>,
    /// The realpaths of the seal's write roots (where they are or will be
    /// made), once known: no program digest is kept in them.
    write_reals: RefCell<Vec<String>>,
}

impl<'a> Memo<'a> {
    pub fn new(host: &'a dyn Host, arena: &'a Arena) -> Self {
        Memo {
            host,
            arena,
            // Room for a spec of a few dozen roots and their ancestors
            // without growing (a bigger one grows as it goes).
            canonical: RefCell::new(Table::with_capacity_and_hasher(128, hasher())),
            kinds: RefCell::new(Table::with_capacity_and_hasher(128, hasher())),
            write_reals: RefCell::default(),
        }
    }

    /// The write roots' realpaths, for [`Host::program_digest`].
    pub fn set_write_roots(&self, reals: Vec<String>) {
        *self.write_reals.borrow_mut() = reals;
    }
}

/// The most components, and bytes, a path may have to be resolved a
/// component at a time (each prefix is hashed); a longer one is asked of
/// the host whole (a path over `PATH_MAX` has no realpath anyway).
const MAX_STEPS: usize = 64;
const MAX_STEPWISE_LEN: usize = 4096;

/// A path [`Memo`] resolves a component at a time: absolute, not `/`, no
/// empty, `.` or `..` component, at most [`MAX_STEPS`] components and
/// [`MAX_STEPWISE_LEN`] bytes. The byte offsets where its components end,
/// held on the stack (every path asked is split so).
fn stepwise(path: &str) -> Option<Ends> {
    let rest = path.strip_prefix('/')?;
    if path.len() > MAX_STEPWISE_LEN {
        return None;
    }
    let mut ends = Ends {
        at: [0; MAX_STEPS],
        len: 0,
    };
    let mut at = 1;
    for c in crate::paths::split_slash(rest) {
        if c.is_empty() || c == "." || c == ".." || ends.len == MAX_STEPS {
            return None;
        }
        at += c.len();
        ends.at[ends.len] = at;
        ends.len += 1;
        at += 1;
    }
    Some(ends)
}

/// The ends of a [`stepwise`] path's components.
struct Ends {
    at: [usize; MAX_STEPS],
    len: usize,
}

impl Ends {
    fn as_slice(&self) -> &[usize] {
        &self.at[..self.len]
    }
}

impl<'a> Memo<'a> {
    /// `name` in the directory whose realpath is `real_dir`, in the arena.
    fn joined(&self, real_dir: &str, name: &str) -> &'a str {
        let sep = if real_dir == "/" { "" } else { "/" };
        let mut p = bumpalo::collections::String::with_capacity_in(
            real_dir.len() + sep.len() + name.len(),
            self.arena,
        );
        p.push_str(real_dir);
        p.push_str(sep);
        p.push_str(name);
        p.into_bump_str()
    }

    /// `s`, kept in the arena.
    fn keep(&self, s: &str) -> &'a str {
        self.arena.alloc_str(s)
    }

    /// The realpath of `path` (a [`stepwise`] one ending at `ends`) made a
    /// component at a time: each prefix's realpath is its directory's and
    /// one `lstat` of its own, without the host realpath's `readlink` of
    /// every ancestor, asked again for every path below them. Only the
    /// prefixes that exist are remembered, and the first that does not.
    fn resolve(&self, path: &str, ends: &[usize]) -> Option<&'a str> {
        let (&last, above) = ends.split_last()?;
        // Most paths asked share their directory with one asked before;
        // otherwise the walk starts at the top.
        let mut from = 0;
        let mut real: &'a str = "/";
        if let Some(&end) = above.last() {
            let known = self.canonical.borrow().get(&path[..end]).copied();
            match known {
                Some(Some(r)) => (from, real) = (above.len(), r),
                Some(None) => return self.below_unresolved(&path[..end], path),
                None => {}
            }
        }
        for &end in &above[from..] {
            let prefix = &path[..end];
            if let Some(known) = self.canonical.borrow().get(prefix).copied() {
                match known {
                    Some(r) => {
                        real = r;
                        continue;
                    }
                    None => return self.below_unresolved(prefix, path),
                }
            }
            let name = &path[path[..end].rfind('/').map_or(0, |i| i + 1)..end];
            let step = self.step(real, name, prefix);
            self.canonical.borrow_mut().insert(self.keep(prefix), step);
            match step {
                Some(r) => real = r,
                None => return self.below_unresolved(prefix, path),
            }
        }
        let name = &path[path[..last].rfind('/').map_or(0, |i| i + 1)..last];
        self.step(real, name, path)
    }

    /// One component: `name` in the directory whose realpath is
    /// `real_dir`, `asked` as written. A symlink is resolved by the host's
    /// realpath of `asked`, whole, so that it counts every link on the way
    /// (40 at most) as the host does.
    fn step(&self, real_dir: &str, name: &str, asked: &str) -> Option<&'a str> {
        let candidate = self.joined(real_dir, name);
        match self.kind_of(candidate)? {
            Kind::Symlink => self.host.canonicalize(asked).map(|r| self.keep(&r)),
            Kind::File | Kind::Dir | Kind::Other => Some(candidate),
        }
    }

    /// [`Host::lstat`] of a path already in the arena.
    fn kind_of(&self, path: &'a str) -> Option<Kind> {
        if let Some(known) = self.kinds.borrow().get(path) {
            return *known;
        }
        let answer = self.host.lstat(path);
        self.kinds.borrow_mut().insert(path, answer);
        answer
    }

    /// `path`, below `prefix`, which has no realpath: none either when
    /// `prefix` is not there at all; otherwise (a realpath that is not
    /// UTF-8, a file, a link loop) the host answers for the whole path.
    fn below_unresolved(&self, prefix: &str, path: &str) -> Option<&'a str> {
        match self.lstat(prefix) {
            None => None,
            Some(_) => self.host.canonicalize(path).map(|r| self.keep(&r)),
        }
    }
}

impl Host for Memo<'_> {
    fn env(&self, name: &str) -> Option<Result<String, ()>> {
        self.host.env(name)
    }

    fn canonicalize(&self, path: &str) -> Option<String> {
        if let Some(known) = self.canonical.borrow().get(path) {
            return known.map(str::to_string);
        }
        let answer = match stepwise(path) {
            Some(ends) => self.resolve(path, ends.as_slice()),
            None => self.host.canonicalize(path).map(|r| self.keep(&r)),
        };
        self.canonical.borrow_mut().insert(self.keep(path), answer);
        answer.map(str::to_string)
    }

    fn lstat(&self, path: &str) -> Option<Kind> {
        if let Some(known) = self.kinds.borrow().get(path) {
            return *known;
        }
        self.kind_of(self.keep(path))
    }

    fn read_link(&self, path: &str) -> Option<String> {
        self.host.read_link(path)
    }

    fn read(&self, path: &str) -> Option<Vec<u8>> {
        self.host.read(path)
    }

    fn program_digest(&self, path: &str, in_write_root: &dyn Fn(&str) -> bool) -> Option<String> {
        let reals = self.write_reals.borrow();
        let inside =
            |p: &str| in_write_root(p) || reals.iter().any(|w| crate::paths::is_within(p, w));
        self.host.program_digest(path, &inside)
    }

    fn read_at_most(&self, path: &str, max: u64) -> Option<Vec<u8>> {
        self.host.read_at_most(path, max)
    }

    fn identity(&self, path: &str) -> Option<Identity> {
        self.host.identity(path)
    }

    fn cwd(&self) -> Option<String> {
        self.host.cwd()
    }

    fn platform(&self) -> Option<crate::spec::Platform> {
        self.host.platform()
    }

    fn walk(
        &self,
        root: &str,
        skip: &BTreeSet<String>,
        bounds: Bounds,
        met: &mut dyn FnMut(&Met<'_>) -> bool,
    ) -> Result<(), Unwalked> {
        self.host.walk(root, skip, bounds, met)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`stepwise`]'s ends, as a list.
    fn ends(path: &str) -> Option<Vec<usize>> {
        stepwise(path).map(|e| e.as_slice().to_vec())
    }
    use crate::facts::host::FakeHost;
    use proptest::strategy::Strategy as _;

    #[test]
    fn asks_once_and_agrees() {
        let fake = FakeHost::new().dir("/a/b").link("/l", "/a");
        let arena = Arena::new();
        let memo = Memo::new(&fake, &arena);
        let deep = format!("/nope{}", "/x".repeat(50_000));
        for p in [
            "/l/b",
            "/a",
            "/nope/x/y",
            "/nope",
            "/nope/x/z",
            "/l/../a/b",
            "/",
            &deep,
        ] {
            assert_eq!(memo.canonicalize(p), fake.canonicalize(p), "{p}");
            assert_eq!(memo.canonicalize(p), fake.canonicalize(p), "{p} again");
            assert_eq!(memo.lstat(p), fake.lstat(p), "{p}");
        }
        assert_eq!(ends("/"), None);
        assert_eq!(ends("/a"), Some(vec![2]));
        assert_eq!(ends("/a/bc"), Some(vec![2, 5]));
        assert_eq!(ends("a"), None);
        assert_eq!(ends("/a//b"), None);
        assert_eq!(ends("/a/b/"), None);
        assert_eq!(ends("/a/./b"), None);
        assert_eq!(ends("/a/../b"), None);
        assert_eq!(
            ends(&"/x".repeat(MAX_STEPS)).map(|e| e.len()),
            Some(MAX_STEPS)
        );
        assert_eq!(ends(&format!("/{}", "x".repeat(MAX_STEPWISE_LEN))), None);
        assert_eq!(ends(&"/x".repeat(MAX_STEPS + 1)), None);
    }

    /// What a tree entry is: a directory, a file, or a symlink to one of
    /// these targets (relative, absolute below the tree, dangling, looping).
    #[derive(Clone, Debug)]
    enum Entry {
        Dir,
        File,
        Link(&'static str),
    }

    const TARGETS: [&str; 9] = [
        "a", "../b", "b/../a", ".", "..", "c/a", "@/a", "@/b/c", "nope",
    ];

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
        /// On a real tree of directories, files and symlinks, the memo's
        /// realpath agrees with the host's (glibc's `realpath`) for every
        /// path asked, in any order, each memo answering many of them.
        #[test]
        fn the_stepwise_realpath_agrees_with_the_host(
            entries in proptest::collection::vec((
                proptest::collection::vec(proptest::sample::select(vec!["a", "b", "c"]), 1..4),
                proptest::prop_oneof![
                    proptest::strategy::Just(Entry::Dir),
                    proptest::strategy::Just(Entry::File),
                    proptest::sample::select(TARGETS.to_vec()).prop_map(Entry::Link),
                ],
            ), 0..12),
            asked in proptest::collection::vec(
                proptest::collection::vec(proptest::sample::select(vec!["a", "b", "c", ".", ".."]), 0..5),
                1..40,
            ),
        ) {
            let tmp = tempfile::tempdir().expect("a temp dir");
            let root = crate::facts::host::RealHost
                .canonicalize(tmp.path().to_str().expect("a UTF-8 temp dir"))
                .expect("the temp dir has a realpath");
            for (names, entry) in &entries {
                let path = std::path::Path::new(&root).join(names.join("/"));
                if let Some(parent) = path.parent() {
                    let _ = std::fs::create_dir_all(parent);
                }
                let _ = match entry {
                    Entry::Dir => std::fs::create_dir(&path),
                    Entry::File => std::fs::write(&path, b"x"),
                    Entry::Link(t) => std::os::unix::fs::symlink(t.replace('@', &root), &path),
                };
            }
            let host = crate::facts::host::RealHost;
            let arena = Arena::new();
            let memo = Memo::new(&host, &arena);
            for names in &asked {
                let p = if names.is_empty() { root.clone() } else { format!("{root}/{}", names.join("/")) };
                proptest::prop_assert_eq!(memo.canonicalize(&p), host.canonicalize(&p), "{}", p);
            }
        }
    }

    /// The cases a component-at-a-time realpath could get wrong, each
    /// against the host's (glibc's): links counted over the whole path (40
    /// at most), a realpath that is not UTF-8 on the way, a file used as a
    /// directory, `/`, and a path that is too deep to step through.
    #[test]
    fn the_stepwise_realpath_agrees_with_the_host_on_hard_cases() {
        use std::os::unix::ffi::OsStrExt;
        use std::os::unix::fs::symlink;
        let tmp = tempfile::tempdir().expect("a temp dir");
        let host = crate::facts::host::RealHost;
        let t = host
            .canonicalize(tmp.path().to_str().expect("a UTF-8 temp dir"))
            .expect("the temp dir has a realpath");
        let at = |p: &str| std::path::PathBuf::from(format!("{t}/{p}"));
        // A link to its own directory: each use is one hop.
        symlink(".", at("l")).unwrap();
        // A chain of 39 links: using it is 39 hops.
        std::fs::create_dir(at("d")).unwrap();
        symlink("d", at("c0")).unwrap();
        for i in 1..39 {
            symlink(format!("c{}", i - 1), at(&format!("c{i}"))).unwrap();
        }
        // A directory whose name is not UTF-8, with a link out of it.
        let odd = std::ffi::OsStr::from_bytes(b"caf\xe9");
        let odd_dir = std::path::Path::new(&t).join(odd);
        std::fs::create_dir(&odd_dir).unwrap();
        std::fs::create_dir(at("out")).unwrap();
        symlink(format!("{t}/out"), odd_dir.join("x")).unwrap();
        symlink(&odd_dir, at("toodd")).unwrap();
        std::fs::write(at("file"), b"x").unwrap();
        let mut asked = vec![
            format!("{t}{}", "/l".repeat(40)),
            format!("{t}{}", "/l".repeat(41)),
            format!("{t}{}/d", "/l".repeat(39)),
            format!("{t}/c38"),
            format!("{t}/c38/../c38"),
            format!("{t}/c38/c38"),
            format!("{t}/l/c38"),
            format!("{t}/l/l/c38"),
            format!("{t}/toodd"),
            format!("{t}/toodd/x"),
            format!("{t}/toodd/x/y"),
            format!("{t}/file"),
            format!("{t}/file/x"),
            format!("{t}/absent/x"),
            "/".to_string(),
            format!("{t}{}", "/l".repeat(MAX_STEPS + 2)),
        ];
        asked.extend((0..3).map(|i| format!("{t}{}/d", "/c38".repeat(i))));
        // Each asked alone, then all through one memo in turn.
        for p in &asked {
            assert_eq!(
                Memo::new(&host, &Arena::new()).canonicalize(p),
                host.canonicalize(p),
                "{p} alone"
            );
        }
        let arena = Arena::new();
        let memo = Memo::new(&host, &arena);
        for p in &asked {
            assert_eq!(memo.canonicalize(p), host.canonicalize(p), "{p}");
        }
    }
}
