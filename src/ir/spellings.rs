//! The spellings of one path (as written, its realpath, the macOS aliases of
//! both): a handful of strings, kept sorted and unique in one small vector.
//!
//! A `BTreeSet<String>` gave each root a B-tree node of eleven slots for its
//! two or three strings: 10,000 roots took 2.8 MB and 10,000 allocations in
//! nodes alone, a tenth of a big compile's memory. The order and the
//! uniqueness are the set's; only the storage differs.

/// Sorted, unique spellings of one path.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Spellings(Vec<String>);

impl Spellings {
    /// One spelling.
    pub fn one(path: String) -> Self {
        let mut v = Vec::with_capacity(4);
        v.push(path);
        Spellings(v)
    }

    /// Adds `path` in its sorted place; false if it was there already.
    pub fn insert(&mut self, path: String) -> bool {
        match self.0.binary_search(&path) {
            Ok(_) => false,
            Err(at) => {
                self.0.insert(at, path);
                true
            }
        }
    }

    pub fn contains(&self, path: &str) -> bool {
        self.0.binary_search_by(|p| p.as_str().cmp(path)).is_ok()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// In sorted order, as a `BTreeSet` iterates.
    pub fn iter(&self) -> std::slice::Iter<'_, String> {
        self.0.iter()
    }
}

impl<'a> IntoIterator for &'a Spellings {
    type Item = &'a String;
    type IntoIter = std::slice::Iter<'a, String>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl<const N: usize> From<[String; N]> for Spellings {
    fn from(paths: [String; N]) -> Self {
        let mut s = Spellings(Vec::with_capacity(N.max(4)));
        for p in paths {
            s.insert(p);
        }
        s
    }
}

impl FromIterator<String> for Spellings {
    fn from_iter<I: IntoIterator<Item = String>>(iter: I) -> Self {
        let mut v: Vec<String> = iter.into_iter().collect();
        v.sort();
        v.dedup();
        Spellings(v)
    }
}

impl Extend<String> for Spellings {
    fn extend<I: IntoIterator<Item = String>>(&mut self, iter: I) {
        for p in iter {
            self.insert(p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    proptest! {
        /// The same strings in the same order as a `BTreeSet` of them,
        /// whatever order they were added in.
        #[test]
        fn orders_and_dedups_as_a_set(paths in proptest::collection::vec("[ab/]{0,4}", 0..12)) {
            let set: BTreeSet<String> = paths.iter().cloned().collect();
            let mut s = Spellings::default();
            for p in &paths {
                s.insert(p.clone());
            }
            prop_assert!(s.iter().eq(set.iter()));
            prop_assert!(paths.iter().cloned().collect::<Spellings>().iter().eq(set.iter()));
            for p in &paths {
                prop_assert!(s.contains(p));
            }
            prop_assert!(!s.contains("/never"));
        }
    }
}
