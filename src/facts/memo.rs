//! One compile's view of the host: [`Memo`] answers each realpath and
//! `lstat` question once. Many roots share their ancestors (ten thousand
//! denied project directories under one absent folder ask for that folder's
//! realpath ten thousand times); the answers are also one consistent
//! snapshot, where asking again could see a host process change the tree
//! between two roots.
//!
//! A path's realpath is made from its directory's (remembered) and one
//! `lstat` of the path itself; only a symlink is resolved by the host. The
//! host's realpath `readlink`s every ancestor of every path it is asked, so
//! the probe spec's roots, which share their ancestors, cost 87 calls that
//! way and one `lstat` per distinct path this way.

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};

use super::host::{Bounds, Host, Kind, Met, Unwalked};
use super::Identity;

/// The memo's tables: every root is looked up several times, by paths that
/// share long prefixes. foldhash hashes them several times faster than
/// std's SipHash (a tenth of the facts of 10,000 roots went to hashing),
/// with a seed from the kernel's random source, so a spec cannot be written
/// to collide in it.
type Table<V> = HashMap<String, V, foldhash::fast::SeedableRandomState>;

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
    canonical: RefCell<Table<Option<String>>>,
    kinds: RefCell<Table<Option<Kind>>>,
    /// The realpaths of the seal's write roots (where they are or will be
    /// made), once known: no program digest is kept in them.
    write_reals: RefCell<Vec<String>>,
}

impl<'a> Memo<'a> {
    pub fn new(host: &'a dyn Host) -> Self {
        Memo {
            host,
            canonical: RefCell::new(Table::with_hasher(hasher())),
            kinds: RefCell::new(Table::with_hasher(hasher())),
            write_reals: RefCell::default(),
        }
    }

    /// The write roots' realpaths, for [`Host::program_digest`].
    pub fn set_write_roots(&self, reals: Vec<String>) {
        *self.write_reals.borrow_mut() = reals;
    }
}

/// The most components a path may have to be resolved a component at a
/// time (each prefix is remembered, so a deeper path would cost memory
/// quadratic in its length); a deeper one is asked of the host whole.
const MAX_STEPS: usize = 64;

/// A path [`Memo`] resolves from its directory's realpath: absolute, no
/// empty, `.` or `..` component, at most [`MAX_STEPS`] components, and not
/// `/`. Its directory and last component.
fn stepwise(path: &str) -> Option<(&str, &str)> {
    let rest = path.strip_prefix('/')?;
    let mut steps = 0;
    for c in rest.split('/') {
        steps += 1;
        if c.is_empty() || c == "." || c == ".." || steps > MAX_STEPS {
            return None;
        }
    }
    let cut = path.rfind('/')?;
    let dir = if cut == 0 { "/" } else { &path[..cut] };
    Some((dir, &path[cut + 1..]))
}

impl Memo<'_> {
    /// The realpath of `name` in `dir`, from `dir`'s realpath and one
    /// `lstat`: what the host's realpath answers, without its `readlink` of
    /// every ancestor, asked again for every path below them. A symlink is
    /// resolved by the host.
    fn resolve_in(&self, dir: &str, name: &str) -> Option<String> {
        let real_dir = self.canonicalize(dir)?;
        let mut candidate = real_dir;
        if candidate != "/" {
            candidate.push('/');
        }
        candidate.push_str(name);
        match self.lstat(&candidate)? {
            Kind::Symlink => self.host.canonicalize(&candidate),
            Kind::File | Kind::Dir | Kind::Other => Some(candidate),
        }
    }
}

impl Host for Memo<'_> {
    fn env(&self, name: &str) -> Option<Result<String, ()>> {
        self.host.env(name)
    }

    fn canonicalize(&self, path: &str) -> Option<String> {
        if let Some(known) = self.canonical.borrow().get(path) {
            return known.clone();
        }
        let answer = match stepwise(path) {
            Some((dir, name)) => self.resolve_in(dir, name),
            None => self.host.canonicalize(path),
        };
        self.canonical
            .borrow_mut()
            .insert(path.to_string(), answer.clone());
        answer
    }

    fn lstat(&self, path: &str) -> Option<Kind> {
        if let Some(known) = self.kinds.borrow().get(path) {
            return *known;
        }
        let answer = self.host.lstat(path);
        self.kinds.borrow_mut().insert(path.to_string(), answer);
        answer
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
    use crate::facts::host::FakeHost;
    use proptest::strategy::Strategy as _;

    #[test]
    fn asks_once_and_agrees() {
        let fake = FakeHost::new().dir("/a/b").link("/l", "/a");
        let memo = Memo::new(&fake);
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
        assert_eq!(stepwise("/"), None);
        assert_eq!(stepwise("/a"), Some(("/", "a")));
        assert_eq!(stepwise("/a/b"), Some(("/a", "b")));
        assert_eq!(stepwise("a"), None);
        assert_eq!(stepwise("/a//b"), None);
        assert_eq!(stepwise("/a/b/"), None);
        assert_eq!(stepwise("/a/./b"), None);
        assert_eq!(
            stepwise(&"/x".repeat(MAX_STEPS)),
            Some((&*"/x".repeat(MAX_STEPS - 1), "x"))
        );
        assert_eq!(stepwise(&"/x".repeat(MAX_STEPS + 1)), None);
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
            let memo = Memo::new(&host);
            for names in &asked {
                let p = if names.is_empty() { root.clone() } else { format!("{root}/{}", names.join("/")) };
                proptest::prop_assert_eq!(memo.canonicalize(&p), host.canonicalize(&p), "{}", p);
            }
        }
    }
}
