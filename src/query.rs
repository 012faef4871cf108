//! A path in a question (`sealc explain`, the parity tests) as the kernel
//! sees it: absolute, `.` and `..` taken away, and every symlink the record
//! knows followed on the way, so `..` goes up from where the link leads (as
//! the kernel does), not from the link's own name. Links the record does
//! not know are taken as given: the result is then the lexical normal form.
//!
//! What a record knows comes in two kinds ([`Link::itself`]): a name that is
//! itself a symlink (the launcher chain, a root that is a link), and a name
//! that is not, but is reached through a link on the way (a root below a
//! symlinked directory, a root absent when compiled). The two differ only
//! when the name is the last component of the question: a link there is
//! not followed by the operations that act on the name, a plain name is the
//! object wherever the links put it. Every entry is known in every spelling
//! the other entries give its directory (`/tmp/x/l` is also
//! `/private/tmp/x/l` on macOS), as the kernel reaches it by either.

use std::collections::BTreeMap;

use crate::facts::{normalize, Facts, LinkKind};

/// The symlinks every macOS has at the top of its tree (`sbpl-notes.md`):
/// a seatbelt profile is read with them known.
pub const MACOS_LINKS: [(&str, &str); 3] = [
    ("/etc", "/private/etc"),
    ("/tmp", "/private/tmp"),
    ("/var", "/private/var"),
];

/// Where a known name leads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Link {
    pub to: String,
    /// `Some(true)`: the name is itself a symlink to `to`. `Some(false)`:
    /// it is not; a link on the way puts the object at `to`. `None`: the
    /// record does not say (made by a sealc that did not record it).
    pub itself: Option<bool>,
}

/// The names a question's path is resolved through.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Links(BTreeMap<String, Link>);

/// A path, resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    /// What the kernel checks.
    pub path: String,
    /// Each known name followed on the way: its path, where it leads, and
    /// whether it is itself a link (as [`Link::itself`]).
    pub followed: Vec<(String, String, Option<bool>)>,
    /// The final component, when it is itself a known link (not followed:
    /// data follows it, metadata is the link's own): its path (`path`
    /// above) and where it leads.
    pub last: Option<(String, String)>,
    /// The final component, when the record does not say whether it is a
    /// link or lies below one: its path as asked, and where it leads.
    pub unsure: Option<(String, String)>,
}

/// How many times one question may go through a link (the kernel's own
/// limit on Linux is 40).
const MAX_HOPS: usize = 40;
/// How many rounds of new spellings [`Links::spelled_everywhere`] makes.
const MAX_ROUNDS: usize = 8;

impl Links {
    /// Names that are each itself a symlink.
    pub fn symlinks(links: BTreeMap<String, String>) -> Self {
        Links(
            links
                .into_iter()
                .map(|(p, to)| {
                    (
                        p,
                        Link {
                            to,
                            itself: Some(true),
                        },
                    )
                })
                .collect(),
        )
    }

    /// Add one name (an earlier entry for it is kept).
    pub fn add(&mut self, path: &str, to: &str, itself: Option<bool>) {
        if path != to {
            self.0.entry(path.to_string()).or_insert(Link {
                to: to.to_string(),
                itself,
            });
        }
    }

    /// Add another set's names (these win).
    pub fn extend(&mut self, other: Links) {
        for (p, l) in other.0 {
            self.0.insert(p, l);
        }
    }

    pub fn get(&self, path: &str) -> Option<&Link> {
        self.0.get(path)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Every name also under each spelling of its directory the other names
    /// give: a name whose directory resolves elsewhere is known there too.
    pub fn spelled_everywhere(mut self) -> Self {
        for _ in 0..MAX_ROUNDS {
            let mut new = Vec::new();
            for (p, l) in &self.0 {
                let (dir, name) = match p.rsplit_once('/') {
                    Some((d, n)) if !n.is_empty() => (if d.is_empty() { "/" } else { d }, n),
                    _ => continue,
                };
                if dir == "/" {
                    continue;
                }
                let Some(r) = resolve(dir, &self) else {
                    continue;
                };
                // A directory that is itself a link, last in `dir`, leads on.
                let at = match &r.last {
                    Some((_, to)) => normalize(to),
                    None => r.path,
                };
                let spelled = if at == "/" {
                    format!("/{name}")
                } else {
                    format!("{at}/{name}")
                };
                if spelled != *p && !self.0.contains_key(&spelled) && spelled != l.to {
                    new.push((spelled, l.clone()));
                }
            }
            if new.is_empty() {
                break;
            }
            for (p, l) in new {
                self.0.entry(p).or_insert(l);
            }
        }
        self
    }
}

/// The links a record knows: every root whose realpath differs from the
/// path as written (a link itself, or below one, as `facts.located` says),
/// every root absent when compiled whose place is elsewhere than written
/// (below a link), every symlink of the launcher chain and, for a macOS
/// seal, [`MACOS_LINKS`]; each in every spelling.
pub fn known_links(facts: &Facts, macos: bool) -> Links {
    let mut links = Links::default();
    if macos {
        for (p, to) in MACOS_LINKS {
            links.add(p, to, Some(true));
        }
    }
    for pair in facts.launcher.windows(2) {
        if pair[0].kind == LinkKind::Symlink {
            links.add(&pair[0].path, &pair[1].path, Some(true));
        }
    }
    // A root absent when compiled is below a link (its place is where the
    // links put it), unless `located` says it is itself a dangling one.
    let absent = facts.absent_denied.iter().chain(&facts.absent_allowed);
    for (p, r) in facts.realpaths.iter().chain(absent.clone()) {
        match facts.located.get(p) {
            Some(at) if at == r => links.add(p, r, Some(false)),
            Some(at) => {
                // Itself a link, found at `at`: its directory leads there.
                links.add(p, r, Some(true));
                links.add(at, r, Some(true));
                if let (Some((pd, pn)), Some((ad, an))) = (p.rsplit_once('/'), at.rsplit_once('/'))
                {
                    if pn == an && !pd.is_empty() && !ad.is_empty() {
                        links.add(pd, ad, Some(false));
                    }
                }
            }
            None if facts.realpaths.contains_key(p) => links.add(p, r, None),
            None => links.add(p, r, Some(false)),
        }
    }
    for (p, at) in &facts.absent_writes {
        links.add(p, at, Some(false));
    }
    links.spelled_everywhere()
}

/// Resolve an absolute `path` through `links`. `None` for a relative path.
pub fn resolve(path: &str, links: &Links) -> Option<Resolved> {
    if !path.starts_with('/') {
        return None;
    }
    let mut followed = Vec::new();
    let mut cur: Vec<String> = Vec::new();
    let comps: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
    let mut last = None;
    let mut unsure = None;
    let mut hops = 0;
    for (i, c) in comps.iter().enumerate() {
        match *c {
            "." => continue,
            ".." => {
                cur.pop();
                continue;
            }
            c => cur.push(c.to_string()),
        }
        let here = format!("/{}", cur.join("/"));
        let Some(link) = links.get(&here) else {
            continue;
        };
        let final_name = comps[i + 1..].iter().all(|c| *c == ".");
        if final_name {
            match link.itself {
                Some(true) => {
                    last = Some((here, link.to.clone()));
                    break;
                }
                None => {
                    unsure = Some((here, link.to.clone()));
                    break;
                }
                Some(false) => {}
            }
        }
        hops += 1;
        if hops > MAX_HOPS {
            break;
        }
        followed.push((here, link.to.clone(), link.itself));
        cur = normalize(&link.to)
            .split('/')
            .filter(|c| !c.is_empty())
            .map(str::to_string)
            .collect();
    }
    Some(Resolved {
        path: format!("/{}", cur.join("/")),
        followed,
        last,
        unsure,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn links() -> Links {
        Links::symlinks(BTreeMap::from([
            ("/tmp".to_string(), "/private/tmp".to_string()),
            ("/w/ws".to_string(), "/w/real".to_string()),
        ]))
    }

    #[test]
    fn dot_dot_goes_up_from_where_a_link_leads() {
        let r = resolve("/w/ws/../../grader/a.txt", &links()).unwrap();
        assert_eq!(r.path, "/grader/a.txt");
        let r = resolve("/tmp/x/../../etc/y", &links()).unwrap();
        assert_eq!(r.path, "/private/etc/y");
        assert_eq!(
            r.followed,
            [("/tmp".into(), "/private/tmp".into(), Some(true))]
        );
        // Lexical where nothing is known.
        let r = resolve("/a/./b/../c//d", &links()).unwrap();
        assert_eq!(r.path, "/a/c/d");
        assert!(r.followed.is_empty() && r.last.is_none());
        assert_eq!(resolve("/..", &links()).unwrap().path, "/");
    }

    #[test]
    fn a_final_link_is_named_not_followed_and_relative_paths_are_refused() {
        let r = resolve("/w/ws", &links()).unwrap();
        assert_eq!(r.path, "/w/ws");
        assert_eq!(r.last, Some(("/w/ws".into(), "/w/real".into())));
        assert!(resolve("ws/f", &links()).is_none());
    }

    /// Issue 24, finding 1: a link known under `/tmp` is the same link under
    /// `/private/tmp`.
    #[test]
    fn a_link_is_known_in_every_spelling_of_its_directory() {
        let mut l = Links::default();
        l.add("/tmp", "/private/tmp", Some(true));
        l.add("/tmp/t/ln", "/private/tmp/t/d/priv", Some(true));
        let l = l.spelled_everywhere();
        for asked in ["/tmp/t/ln/out", "/private/tmp/t/ln/out"] {
            let r = resolve(asked, &l).unwrap();
            assert_eq!(r.path, "/private/tmp/t/d/priv/out", "{asked}");
        }
        let r = resolve("/private/tmp/t/ln", &l).unwrap();
        assert_eq!(
            r.last,
            Some(("/private/tmp/t/ln".into(), "/private/tmp/t/d/priv".into()))
        );
    }

    /// Issue 24, finding 2: a name below a link is not itself a link.
    #[test]
    fn a_name_below_a_link_is_the_object_where_the_link_puts_it() {
        let mut l = Links::default();
        l.add("/c/link/new", "/c/real/new", Some(false));
        let r = resolve("/c/link/new", &l).unwrap();
        assert_eq!(r.path, "/c/real/new");
        assert!(r.last.is_none() && r.unsure.is_none());
        let mut l = Links::default();
        l.add("/c/old", "/c/elsewhere", None);
        let r = resolve("/c/old", &l).unwrap();
        assert_eq!(r.unsure, Some(("/c/old".into(), "/c/elsewhere".into())));
        // Below it, either way the kernel goes on from where it leads.
        assert_eq!(resolve("/c/old/f", &l).unwrap().path, "/c/elsewhere/f");
    }
}
