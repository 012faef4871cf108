//! Where a path that does not exist yet would be: once it appears
//! ([`would_appear`], every link on the way followed), or once `sealc exec`
//! makes it ([`would_be`], under its nearest existing ancestor).

use super::host::{Host, Kind};
use crate::paths::normalize;

/// The longest path [`would_appear`] resolves: the kernel refuses longer
/// ones (`ENAMETOOLONG`; `PATH_MAX` is 1,024 on macOS and 4,096 on Linux).
const MAX_RESOLVED: usize = 4096;

/// The next component of `path` at or after byte `from` (empty ones, of a
/// `//`, skipped): its bounds, or `None` at the end.
fn next_component(path: &str, from: usize) -> Option<(usize, usize)> {
    let rest = path.get(from..)?.as_bytes();
    let skip = rest.iter().position(|&b| b != b'/')?;
    let start = from + skip;
    let end = memchr::memchr(b'/', &path.as_bytes()[start..]).map_or(path.len(), |i| start + i);
    Some((start, end))
}

/// What the components of `rest` take once joined, each after a `/`.
fn joined_len(rest: &str) -> usize {
    rest.split('/')
        .filter(|c| !c.is_empty())
        .map(|c| c.len() + 1)
        .sum()
}

/// Where an absent path would be once it appears, as the kernel will
/// resolve it then: every symlink on the way followed, a dangling one
/// included (its target may appear too), and a final one; a component that
/// does not exist, and all after it, taken as names. `None` when a file is
/// on the way (nothing can appear below it), for a loop of links, and for a
/// path too long to resolve.
pub fn would_appear(path: &str, host: &dyn Host) -> Option<String> {
    if path.len() > MAX_RESOLVED || !path.starts_with('/') {
        return None;
    }
    // The path's own components are read where they are, front to back
    // (10,000 absent roots are walked here); a link target's are copied
    // onto a stack, last first, and walked before the rest of the path.
    let mut own = 0;
    let mut linked: Vec<String> = Vec::new();
    let mut cur = String::with_capacity(path.len() + 16);
    let mut absent = false;
    let mut hops = 0;
    loop {
        let from_link;
        let c: &str = match linked.pop() {
            Some(c) => {
                from_link = c;
                &from_link
            }
            None => match next_component(path, own) {
                Some((start, end)) => {
                    own = end;
                    &path[start..end]
                }
                None => break,
            },
        };
        match c {
            "." => continue,
            ".." => {
                cur.truncate(cur.rfind('/').unwrap_or(0));
                continue;
            }
            _ => {}
        }
        let before = cur.len();
        cur.push('/');
        cur.push_str(c);
        if absent {
            continue;
        }
        match host.lstat(&cur) {
            None => absent = true,
            Some(Kind::Dir) => {}
            Some(Kind::Symlink) => {
                hops += 1;
                if hops > 40 {
                    return None;
                }
                let to = host.read_link(&cur)?;
                cur.truncate(if to.starts_with('/') { 0 } else { before });
                linked.extend(
                    to.split('/')
                        .filter(|c| !c.is_empty())
                        .rev()
                        .map(str::to_string),
                );
                let still =
                    linked.iter().map(|c| c.len() + 1).sum::<usize>() + joined_len(&path[own..]);
                if cur.len() + still > MAX_RESOLVED {
                    return None;
                }
            }
            Some(Kind::File | Kind::Other)
                if !linked.is_empty() || next_component(path, own).is_some() =>
            {
                return None
            }
            Some(_) => {}
        }
    }
    Some(if cur.is_empty() { "/".to_string() } else { cur })
}

/// Where an absent path would be made: the realpath of its nearest
/// existing ancestor, then the rest of the path as written. `None` when
/// that ancestor is not a directory (nothing can be made under it).
pub fn would_be(path: &str, host: &dyn Host) -> Option<String> {
    let path = normalize(path);
    let mut cut = path.len();
    loop {
        let above = match path[..cut].rfind('/') {
            Some(0) | None => "/",
            Some(i) => &path[..i],
        };
        let rest = &path[above.len().max(1)..];
        if let Some(real) = host.canonicalize(above) {
            if host.lstat(&real) != Some(Kind::Dir) {
                return None;
            }
            let joined = if real == "/" {
                rest.to_string()
            } else {
                format!("{real}{rest}")
            };
            return Some(normalize(&joined));
        }
        if above == "/" {
            return None;
        }
        cut = above.len();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::host::FakeHost;
    use proptest::prelude::*;

    /// The walk as first written: every component of the path collected
    /// onto the stack before it starts. The one above reads the path's own
    /// in place and must answer as this does.
    fn reference(path: &str, host: &dyn Host) -> Option<String> {
        if path.len() > MAX_RESOLVED || !path.starts_with('/') {
            return None;
        }
        let mut pending: Vec<String> = path
            .split('/')
            .filter(|c| !c.is_empty())
            .rev()
            .map(str::to_string)
            .collect();
        let mut cur = String::new();
        let mut absent = false;
        let mut hops = 0;
        while let Some(c) = pending.pop() {
            match c.as_str() {
                "." => continue,
                ".." => {
                    cur.truncate(cur.rfind('/').unwrap_or(0));
                    continue;
                }
                _ => {}
            }
            let before = cur.len();
            cur.push('/');
            cur.push_str(&c);
            if absent {
                continue;
            }
            match host.lstat(&cur) {
                None => absent = true,
                Some(Kind::Dir) => {}
                Some(Kind::Symlink) => {
                    hops += 1;
                    if hops > 40 {
                        return None;
                    }
                    let to = host.read_link(&cur)?;
                    cur.truncate(if to.starts_with('/') { 0 } else { before });
                    pending.extend(
                        to.split('/')
                            .filter(|c| !c.is_empty())
                            .rev()
                            .map(str::to_string),
                    );
                    if cur.len() + pending.iter().map(|c| c.len() + 1).sum::<usize>() > MAX_RESOLVED
                    {
                        return None;
                    }
                }
                Some(Kind::File | Kind::Other) if !pending.is_empty() => return None,
                Some(_) => {}
            }
        }
        Some(if cur.is_empty() { "/".to_string() } else { cur })
    }

    /// A tree entry: a directory, a file, or a link to one of a few targets
    /// (relative, absolute, dangling, looping, long).
    #[derive(Clone, Debug)]
    enum Entry {
        Dir,
        File,
        Link(&'static str),
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        #[test]
        fn the_walk_in_place_answers_as_the_walk_from_a_stack(
            entries in prop::collection::vec((
                prop::collection::vec(prop::sample::select(vec!["a", "b", "c"]), 1..4),
                prop_oneof![
                    Just(Entry::Dir),
                    Just(Entry::File),
                    prop::sample::select(vec![
                        "a", "../b", "b/../a", ".", "..", "c/a", "/a", "/b/c", "nope",
                        "//a//b/", "/l", "l",
                    ]).prop_map(Entry::Link),
                ],
            ), 0..12),
            asked in prop::collection::vec(
                prop::collection::vec(
                    prop::sample::select(vec!["a", "b", "c", ".", "..", "", "nope"]),
                    0..6,
                ),
                1..24,
            ),
        ) {
            let mut host = FakeHost::new();
            for (names, entry) in &entries {
                let p = format!("/{}", names.join("/"));
                host = match entry {
                    Entry::Dir => host.dir(&p),
                    Entry::File => host.file(&p, b"x"),
                    Entry::Link(t) => host.link(&p, t),
                };
            }
            // A link that loops, and one whose target is nearly too long.
            host = host.link("/l", "/l").link("/long", &"/x".repeat(MAX_RESOLVED / 2 - 2));
            for names in &asked {
                let p = format!("/{}", names.join("/"));
                prop_assert_eq!(would_appear(&p, &host), reference(&p, &host), "{}", p);
                let long = format!("/long/{}", names.join("/"));
                prop_assert_eq!(would_appear(&long, &host), reference(&long, &host), "{}", long);
            }
        }
    }

    #[test]
    fn the_walk_refuses_what_it_cannot_resolve() {
        let host = FakeHost::new()
            .dir("/a")
            .file("/a/f", b"x")
            .link("/l", "/l");
        assert_eq!(would_appear("/a/new/x", &host).as_deref(), Some("/a/new/x"));
        assert_eq!(
            would_appear("/a//new/./x/..", &host).as_deref(),
            Some("/a/new")
        );
        assert_eq!(would_appear("/a/f/x", &host), None);
        assert_eq!(would_appear("/a/f", &host).as_deref(), Some("/a/f"));
        assert_eq!(would_appear("/l/x", &host), None);
        assert_eq!(would_appear("relative", &host), None);
        assert_eq!(would_appear("/", &host).as_deref(), Some("/"));
        let long = format!("/{}", "x".repeat(MAX_RESOLVED));
        assert_eq!(would_appear(&long, &host), None);
    }
}
