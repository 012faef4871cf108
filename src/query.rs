//! A path in a question (`sealc explain`, the parity tests) as the kernel
//! sees it: absolute, `.` and `..` taken away, and every symlink the record
//! knows followed on the way, so `..` goes up from where the link leads (as
//! the kernel does), not from the link's own name. Links the record does
//! not know are taken as given: the result is then the lexical normal form.

use std::collections::BTreeMap;

use crate::facts::{normalize, Facts, LinkKind};

/// A path, resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    /// What the kernel checks.
    pub path: String,
    /// Each recorded link followed on the way: its path and where it leads.
    pub followed: Vec<(String, String)>,
    /// The final component, when it is itself a recorded link (not
    /// followed: data follows it, metadata is the link's own).
    pub last: Option<(String, String)>,
}

/// The links a record knows: every root whose realpath differs from the
/// path as written, every write root made elsewhere than written, and every
/// symlink of the launcher chain.
pub fn known_links(facts: &Facts) -> BTreeMap<String, String> {
    let mut links: BTreeMap<String, String> = facts
        .realpaths
        .iter()
        .chain(&facts.absent_writes)
        .filter(|(p, r)| p != r)
        .map(|(p, r)| (p.clone(), r.clone()))
        .collect();
    for pair in facts.launcher.windows(2) {
        if pair[0].kind == LinkKind::Symlink {
            links.insert(pair[0].path.clone(), pair[1].path.clone());
        }
    }
    links
}

/// Resolve an absolute `path` through `links` (paths that lead elsewhere:
/// a link's own path, or a path with a link on the way). `None` for a
/// relative path.
pub fn resolve(path: &str, links: &BTreeMap<String, String>) -> Option<Resolved> {
    if !path.starts_with('/') {
        return None;
    }
    let mut followed = Vec::new();
    let mut cur: Vec<String> = Vec::new();
    let comps: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
    let mut last = None;
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
        let Some(to) = links.get(&here) else {
            continue;
        };
        let final_name = comps[i + 1..].iter().all(|c| *c == ".");
        if final_name {
            last = Some((here, to.clone()));
            break;
        }
        hops += 1;
        if hops > 40 {
            break;
        }
        followed.push((here, to.clone()));
        cur = normalize(to)
            .split('/')
            .filter(|c| !c.is_empty())
            .map(str::to_string)
            .collect();
    }
    Some(Resolved {
        path: format!("/{}", cur.join("/")),
        followed,
        last,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn links() -> BTreeMap<String, String> {
        BTreeMap::from([
            ("/tmp".to_string(), "/private/tmp".to_string()),
            ("/w/ws".to_string(), "/w/real".to_string()),
        ])
    }

    #[test]
    fn dot_dot_goes_up_from_where_a_link_leads() {
        let r = resolve("/w/ws/../../grader/a.txt", &links()).unwrap();
        assert_eq!(r.path, "/grader/a.txt");
        let r = resolve("/tmp/x/../../etc/y", &links()).unwrap();
        assert_eq!(r.path, "/private/etc/y");
        assert_eq!(r.followed, [("/tmp".into(), "/private/tmp".into())]);
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
}
