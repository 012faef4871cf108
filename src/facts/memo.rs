//! One compile's view of the host: [`Memo`] answers each realpath and
//! `lstat` question once. Many roots share their ancestors (ten thousand
//! denied project directories under one absent folder ask for that folder's
//! realpath ten thousand times); the answers are also one consistent
//! snapshot, where asking again could see a host process change the tree
//! between two roots.

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};

use super::host::{Bounds, Host, Kind, Met, Unwalked};
use super::Identity;

/// A [`Host`] that asks the host under it at most once per path for a
/// realpath or a kind; every other read goes straight through.
pub struct Memo<'a> {
    host: &'a dyn Host,
    canonical: RefCell<HashMap<String, Option<String>>>,
    kinds: RefCell<HashMap<String, Option<Kind>>>,
    /// The realpaths of the seal's write roots (where they are or will be
    /// made), once known: no program digest is kept in them.
    write_reals: RefCell<Vec<String>>,
}

impl<'a> Memo<'a> {
    pub fn new(host: &'a dyn Host) -> Self {
        Memo {
            host,
            canonical: RefCell::default(),
            kinds: RefCell::default(),
            write_reals: RefCell::default(),
        }
    }

    /// The write roots' realpaths, for [`Host::program_digest`].
    pub fn set_write_roots(&self, reals: Vec<String>) {
        *self.write_reals.borrow_mut() = reals;
    }
}

/// The directory a path is in (`None` for `/` and for a relative path).
fn directory(path: &str) -> Option<&str> {
    match path.rfind('/')? {
        0 if path.len() > 1 => Some("/"),
        0 => None,
        i => Some(&path[..i]),
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
        // Below a directory already known to have no realpath (absent, or
        // not UTF-8), nothing has one either: no need to ask. A path with
        // `..` or `.` in it is asked as it is.
        let plain = !path.split('/').any(|c| c == ".." || c == ".");
        if let Some(dir) = directory(path).filter(|_| plain) {
            if let Some(None) = self.canonical.borrow().get(dir) {
                return None;
            }
        }
        let answer = self.host.canonicalize(path);
        self.canonical
            .borrow_mut()
            .insert(path.to_string(), answer.clone());
        // An absent path: learn whether its directory is absent too, so
        // that its siblings are answered without asking (one level only: a
        // hostile path may have thousands of components).
        if answer.is_none() && plain {
            if let Some(dir) = directory(path) {
                if !self.canonical.borrow().contains_key(dir) {
                    let found = self.host.canonicalize(dir);
                    self.canonical.borrow_mut().insert(dir.to_string(), found);
                }
            }
        }
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
        assert_eq!(directory("/"), None);
        assert_eq!(directory("/a"), Some("/"));
        assert_eq!(directory("/a/b"), Some("/a"));
        assert_eq!(directory("a"), None);
    }
}
