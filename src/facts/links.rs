//! Hidden by identity, not only by path: which objects of a list of hidden
//! roots have a hard link outside them.
//!
//! A seal hides a root by its path (a mount on Linux, a path rule on
//! macOS); the file behind it is the same object under every other name it
//! has. So for the roots that must stay hidden (today: each denied or
//! metadata-only root inside a write root, where the agent can prepare a
//! link), [`exposed`] walks each ([`Host::walk`]) for objects that are not
//! directories and have more links than the hidden roots hold, then walks
//! the visible roots (the write roots, and the roots that show again inside
//! a hidden one) to name where the others are. A link neither walk finds is
//! counted as being elsewhere. Both walks are bounded ([`BOUNDS`]).

use std::collections::{BTreeMap, BTreeSet};

use super::host::{Bounds, Host, Unwalked};
use crate::paths::is_within;

/// The most entries one walk looks at (the root included): 1,000,000. A
/// walk costs about 2.9 µs of CPU per entry (a debug build on a shared
/// 2-core VM, ext4, cached: a tree of 100,000 files), so about 3 s at the
/// bound. A hidden root with more cannot be checked, and is refused.
pub const WALK_ENTRIES: u64 = 1_000_000;

/// The deepest directory a walk enters, below its root (as the walks of
/// `sealc exec`'s write roots).
pub const WALK_DEPTH: usize = 512;

/// The bounds of every walk of the check.
pub const BOUNDS: Bounds = Bounds {
    entries: WALK_ENTRIES,
    depth: WALK_DEPTH,
};

/// The most visible links kept per object (the rest are counted).
const KEPT: usize = 20;
/// The most bytes of paths the check keeps in all (a tree an agent left can
/// hold many linked files of very long paths): past it a path is not kept,
/// only counted, and the message says so.
const KEPT_BYTES: usize = 4 << 20;
/// What stands for a path past [`KEPT_BYTES`].
const NOT_KEPT: &str = "(a path past the check's bound)";

/// One hidden object with a link outside the hidden roots.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Exposed {
    /// The hidden root whose walk found it first.
    pub root: String,
    /// Its first path in the hidden roots.
    pub path: String,
    /// Its other links in the visible roots (the first [`KEPT`]), sorted.
    pub visible: Vec<String>,
    /// Links in the visible roots past those kept.
    pub more_visible: u64,
    /// Links that neither walk found: outside every root walked (or in a
    /// part of a visible root a walk could not finish).
    pub elsewhere: u64,
}

/// What [`exposed`] found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Links {
    /// By hidden root, then path.
    pub exposed: Vec<Exposed>,
    /// Hidden roots whose walk could not finish: they cannot be checked.
    pub unchecked: Vec<(String, Unwalked)>,
    /// Visible roots whose walk could not finish: links there may be
    /// counted as elsewhere.
    pub partial: Vec<(String, Unwalked)>,
}

/// An object with several links, met in a hidden root.
struct Node {
    nlink: u64,
    /// The index of its hidden root.
    root: usize,
    /// Its first path, while [`KEPT_BYTES`] last.
    path: Option<String>,
    /// Its paths met in the hidden roots.
    hidden: u64,
    visible: BTreeSet<String>,
    more_visible: u64,
}

/// Which objects that are not directories in the `hidden` roots have a
/// link outside them, and where the visible ones are. Every root is an
/// absolute path without symlinks (a realpath). Each listed root is walked
/// once: a listed root inside another (hidden or visible) is left out of
/// the outer one's walk and walked on its own, so a visible root inside a
/// hidden one counts as visible. A root listed as both is hidden. The
/// visible roots are walked only when a hidden object has links that the
/// hidden roots do not hold.
pub fn exposed(hidden: &[String], visible: &[String], host: &dyn Host, bounds: Bounds) -> Links {
    let hidden: BTreeSet<&String> = hidden.iter().collect();
    let visible: BTreeSet<&String> = visible.iter().filter(|v| !hidden.contains(v)).collect();
    let listed: BTreeSet<&String> = hidden.iter().chain(&visible).copied().collect();
    let inside = |root: &str| -> BTreeSet<String> {
        listed
            .iter()
            .filter(|r| r.as_str() != root && is_within(r, root))
            .map(|r| r.to_string())
            .collect()
    };
    let mut out = Links::default();
    let mut nodes: BTreeMap<(u64, u64), Node> = BTreeMap::new();
    let mut kept_bytes = 0usize;
    let roots: Vec<&String> = hidden.iter().copied().collect();
    for (i, root) in roots.iter().enumerate() {
        let walked = host.walk(root, &inside(root), bounds, &mut |m| {
            if m.nlink > 1 {
                let n = nodes.entry((m.dev, m.ino)).or_insert_with(|| {
                    let path = (kept_bytes + m.path.len() <= KEPT_BYTES).then(|| {
                        kept_bytes += m.path.len();
                        m.path.to_string()
                    });
                    Node {
                        nlink: m.nlink,
                        root: i,
                        path,
                        hidden: 0,
                        visible: BTreeSet::new(),
                        more_visible: 0,
                    }
                });
                n.hidden += 1;
            }
            true
        });
        if let Err(e) = walked {
            out.unchecked.push((root.to_string(), e));
        }
    }
    nodes.retain(|_, n| n.hidden < n.nlink);
    if nodes.is_empty() {
        return out;
    }
    // What is still to be found; a walk ends early once nothing is.
    let mut missing: u64 = nodes.values().map(|n| n.nlink - n.hidden).sum();
    for root in &visible {
        if missing == 0 {
            break;
        }
        let walked = host.walk(root, &inside(root), bounds, &mut |m| {
            if let Some(n) = nodes.get_mut(&(m.dev, m.ino)) {
                if n.visible.len() < KEPT && kept_bytes + m.path.len() <= KEPT_BYTES {
                    if n.visible.insert(m.path.to_string()) {
                        kept_bytes += m.path.len();
                        missing = missing.saturating_sub(1);
                    }
                } else {
                    n.more_visible += 1;
                    missing = missing.saturating_sub(1);
                }
            }
            missing > 0
        });
        if let Err(e) = walked {
            out.partial.push((root.to_string(), e));
        }
    }
    let mut exposed: Vec<Exposed> = nodes
        .into_values()
        .map(|n| {
            let found = n.hidden + n.visible.len() as u64 + n.more_visible;
            Exposed {
                root: roots.get(n.root).map(|r| r.to_string()).unwrap_or_default(),
                path: n.path.unwrap_or_else(|| NOT_KEPT.to_string()),
                visible: n.visible.into_iter().collect(),
                more_visible: n.more_visible,
                elsewhere: n.nlink.saturating_sub(found),
            }
        })
        .collect();
    exposed.sort_by(|a, b| (&a.root, &a.path).cmp(&(&b.root, &b.path)));
    out.exposed = exposed;
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::FakeHost;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|p| p.to_string()).collect()
    }

    #[test]
    fn a_link_in_a_write_root_is_named_and_one_outside_counted() {
        let h = FakeHost::new()
            .file("/w/g/answer", b"")
            .hard_link("/w/g/answer", "/w/.peek")
            .file("/w/g/other", b"")
            .links_elsewhere("/w/g/other", 2)
            .file("/w/plain", b"");
        let l = exposed(&s(&["/w/g"]), &s(&["/w"]), &h, BOUNDS);
        assert!(l.unchecked.is_empty() && l.partial.is_empty(), "{l:?}");
        assert_eq!(l.exposed.len(), 2, "{l:?}");
        assert_eq!(l.exposed[0].path, "/w/g/answer");
        assert_eq!(l.exposed[0].visible, ["/w/.peek"]);
        assert_eq!(l.exposed[0].elsewhere, 0);
        assert_eq!(l.exposed[1].path, "/w/g/other");
        assert!(l.exposed[1].visible.is_empty());
        assert_eq!(l.exposed[1].elsewhere, 2);
    }

    #[test]
    fn links_among_hidden_roots_expose_nothing() {
        let h = FakeHost::new()
            .file("/w/g/a", b"")
            .hard_link("/w/g/a", "/w/g/b")
            .hard_link("/w/g/a", "/w/h/c");
        let l = exposed(&s(&["/w/g", "/w/h"]), &s(&["/w"]), &h, BOUNDS);
        assert_eq!(l, Links::default());
    }

    #[test]
    fn a_visible_root_inside_a_hidden_one_is_visible() {
        let h = FakeHost::new()
            .file("/w/g/a", b"")
            .hard_link("/w/g/a", "/w/g/pub/b");
        let l = exposed(&s(&["/w/g"]), &s(&["/w", "/w/g/pub"]), &h, BOUNDS);
        assert_eq!(l.exposed.len(), 1, "{l:?}");
        assert_eq!(l.exposed[0].visible, ["/w/g/pub/b"]);
    }

    #[test]
    fn another_mount_is_not_entered() {
        let h = FakeHost::new()
            .mount("/w/g/m")
            .file("/w/g/m/a", b"")
            .hard_link("/w/g/m/a", "/w/g/m/b")
            .links_elsewhere("/w/g/m/a", 1);
        let l = exposed(&s(&["/w/g"]), &s(&["/w"]), &h, BOUNDS);
        assert_eq!(l, Links::default());
    }

    #[test]
    fn a_hidden_root_past_the_bounds_is_unchecked_and_a_visible_one_partial() {
        let mut h = FakeHost::new()
            .file("/w/g/a", b"")
            .hard_link("/w/g/a", "/w/z/b");
        for i in 0..10 {
            h = h.file(&format!("/w/f{i}"), b"");
        }
        let small = Bounds {
            entries: 8,
            depth: 8,
        };
        // The hidden root within bounds, the write root not: the link is
        // counted as elsewhere, never passed over.
        let l = exposed(&s(&["/w/g"]), &s(&["/w"]), &h, small);
        assert!(l.unchecked.is_empty(), "{l:?}");
        assert_eq!(l.partial, [("/w".to_string(), Unwalked::Entries(8))]);
        assert_eq!(l.exposed.len(), 1);
        assert!(l.exposed[0].visible.is_empty());
        assert_eq!(l.exposed[0].elsewhere, 1);
        // The hidden root past them: unchecked.
        let l = exposed(&s(&["/w"]), &[], &h, small);
        assert_eq!(l.unchecked, [("/w".to_string(), Unwalked::Entries(8))]);
        // Too deep.
        let deep = FakeHost::new().file("/w/g/1/2/3/f", b"");
        let l = exposed(
            &s(&["/w/g"]),
            &s(&["/w"]),
            &deep,
            Bounds {
                entries: 100,
                depth: 2,
            },
        );
        assert_eq!(
            l.unchecked,
            [("/w/g".to_string(), Unwalked::Depth(2, "/w/g/1/2/3".into()))]
        );
    }

    #[test]
    fn visible_links_are_kept_up_to_a_bound_and_counted_past_it() {
        let mut h = FakeHost::new().file("/w/g/a", b"");
        for i in 0..30 {
            h = h.hard_link("/w/g/a", &format!("/w/l{i:02}"));
        }
        let l = exposed(&s(&["/w/g"]), &s(&["/w"]), &h, BOUNDS);
        assert_eq!(l.exposed[0].visible.len(), KEPT);
        assert_eq!(l.exposed[0].more_visible, 10);
        assert_eq!(l.exposed[0].elsewhere, 0);
    }
}
