//! The path invariant: every path that reaches a profile is absolute,
//! normalized and free of anything that could break out of an SBPL string.

/// Seatbelt accepts string literals of at most this many bytes.
pub const MAX_LITERAL: usize = 1024;

/// What is wrong with a path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PathProblem {
    Empty,
    Nul,
    Control,
    Quote,
    Backslash,
    Relative,
    TooLong(usize),
    DoubleSlash,
    TrailingSlash,
    DotSegment(&'static str),
}

impl PathProblem {
    pub fn message(&self) -> String {
        match self {
            PathProblem::Empty => "is empty".into(),
            PathProblem::Nul => "holds a NUL byte".into(),
            PathProblem::Control => "holds a control character".into(),
            PathProblem::Quote => "holds `\"`".into(),
            PathProblem::Backslash => "holds a backslash".into(),
            PathProblem::Relative => "is not absolute".into(),
            PathProblem::TooLong(n) => {
                format!("is {n} bytes long, over the {MAX_LITERAL} bytes seatbelt accepts")
            }
            PathProblem::DoubleSlash => "has an empty segment (`//`)".into(),
            PathProblem::TrailingSlash => "ends with `/`".into(),
            PathProblem::DotSegment(s) => format!("has a `{s}` segment"),
        }
    }

    pub fn label(&self) -> &'static str {
        match self {
            PathProblem::Empty | PathProblem::Relative => "paths are absolute",
            PathProblem::Nul
            | PathProblem::Control
            | PathProblem::Quote
            | PathProblem::Backslash => "would break out of a profile string",
            PathProblem::TooLong(_) => "too long for a profile string",
            PathProblem::DoubleSlash | PathProblem::TrailingSlash | PathProblem::DotSegment(_) => {
                "paths are normalized"
            }
        }
    }

    pub fn help(&self, path: &str) -> Option<String> {
        match self {
            PathProblem::Relative | PathProblem::Empty => {
                Some("write an absolute path, or start it with a var such as `${home}/`".into())
            }
            PathProblem::DoubleSlash | PathProblem::TrailingSlash | PathProblem::DotSegment(_) => {
                Some(format!("write `{}`", normalize(path)))
            }
            PathProblem::Nul
            | PathProblem::Control
            | PathProblem::Quote
            | PathProblem::Backslash => {
                Some("rename the directory, or deny a parent that has a plain name".into())
            }
            PathProblem::TooLong(_) => Some("deny a shorter parent directory instead".into()),
        }
    }
}

/// Check one path against the invariant. Every problem is looked for in one
/// pass over the bytes; the first of them in this order is the answer:
/// empty, NUL, control, quote, backslash, relative, too long, trailing
/// slash, then the first bad segment.
pub fn check_path(p: &str) -> Result<(), PathProblem> {
    if plainly_fine(p.as_bytes()) {
        return Ok(());
    }
    if p.is_empty() {
        return Err(PathProblem::Empty);
    }
    let (mut nul, mut control, mut quote, mut backslash) = (false, false, false, false);
    let mut segment: Option<PathProblem> = None;
    // The start of the segment being read (after its `/`).
    let mut start = 1;
    let bytes = p.as_bytes();
    // Segments are read only of an absolute path (a relative one is refused
    // before them, and its first byte may start a longer character).
    let absolute = bytes[0] == b'/';
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            0 => nul = true,
            b'"' => quote = true,
            b'\\' => backslash = true,
            0x01..=0x1f | 0x7f => control = true,
            b'/' if absolute && i > 0 && segment.is_none() => {
                segment = bad_segment(&p[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    // C1 controls (U+0080 to U+009F) are two bytes in UTF-8.
    control |= !p.is_ascii() && p.chars().any(char::is_control);
    if nul {
        return Err(PathProblem::Nul);
    }
    if control {
        return Err(PathProblem::Control);
    }
    if quote {
        return Err(PathProblem::Quote);
    }
    if backslash {
        return Err(PathProblem::Backslash);
    }
    if bytes[0] != b'/' {
        return Err(PathProblem::Relative);
    }
    if p.len() > MAX_LITERAL {
        return Err(PathProblem::TooLong(p.len()));
    }
    if p == "/" {
        return Ok(());
    }
    if p.ends_with('/') {
        return Err(PathProblem::TrailingSlash);
    }
    match segment.or_else(|| bad_segment(&p[start..])) {
        Some(problem) => Err(problem),
        None => Ok(()),
    }
}

/// A path every check passes, told without looking for which fails: at
/// least two bytes, absolute, not too long, not ending in `/`, of printable
/// ASCII other than `"` and `\` only, and no `/` followed by `/` or `.`
/// (so no empty, `.` or `..` segment). Two passes without branches, which
/// the compiler does many bytes at a time; a path with a hidden name (`/.`)
/// or anything else takes the full check.
fn plainly_fine(p: &[u8]) -> bool {
    let n = p.len();
    if !(2..=MAX_LITERAL).contains(&n) || p[0] != b'/' || p[n - 1] == b'/' {
        return false;
    }
    let plain = p.iter().fold(true, |ok, &b| {
        ok & (b > 0x1f) & (b < 0x7f) & (b != b'"') & (b != b'\\')
    });
    let calm = p[..n - 1].iter().zip(&p[1..]).fold(true, |ok, (&a, &b)| {
        ok & !((a == b'/') & ((b == b'/') | (b == b'.')))
    });
    plain & calm
}

/// What is wrong with one segment of a path, if anything.
fn bad_segment(seg: &str) -> Option<PathProblem> {
    match seg {
        "" => Some(PathProblem::DoubleSlash),
        "." => Some(PathProblem::DotSegment(".")),
        ".." => Some(PathProblem::DotSegment("..")),
        _ => None,
    }
}

/// The `/private` spelling of a path under one of the macOS firmlinked roots
/// `/tmp`, `/var` and `/etc`.
pub fn macos_aliases(p: &str) -> Option<String> {
    is_aliased(p).then(|| ["/private", p].concat())
}

/// `p` lies under one of the macOS firmlinked roots `/tmp`, `/var` and
/// `/etc` (it has a `/private` spelling).
pub fn is_aliased(p: &str) -> bool {
    ["/tmp", "/var", "/etc"]
        .iter()
        .any(|a| p == *a || (p.starts_with(a) && p.as_bytes().get(a.len()) == Some(&b'/')))
}

/// `s.split('/')`, piece for piece, by a scan of the bytes: `str`'s
/// search for a char calls `memchr` and then `memcmp` for every `/` it
/// finds, where a path's pieces are a few bytes each. `/` is ASCII, so
/// every piece starts and ends on a char boundary.
pub fn split_slash(s: &str) -> impl Iterator<Item = &str> {
    let mut rest = Some(s);
    std::iter::from_fn(move || {
        let r = rest?;
        match r.bytes().position(|b| b == b'/') {
            Some(i) => {
                rest = r.get(i + 1..);
                r.get(..i)
            }
            None => {
                rest = None;
                Some(r)
            }
        }
    })
}

/// Lexical normalization: collapse `//`, `.` and `..`.
pub fn normalize(p: &str) -> String {
    // Already normal (absolute, no empty, `.` or `..` component): as it is.
    if p == "/"
        || (p.len() > 1
            && p.starts_with('/')
            && split_slash(&p[1..]).all(|c| !matches!(c, "" | "." | "..")))
    {
        return p.to_string();
    }
    let mut parts: Vec<&str> = Vec::new();
    for c in split_slash(p) {
        match c {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            c => parts.push(c),
        }
    }
    format!("/{}", parts.join("/"))
}

/// `p` is `root` or lies inside it.
pub fn is_within(p: &str, root: &str) -> bool {
    root == "/" || p == root || (p.starts_with(root) && p.as_bytes().get(root.len()) == Some(&b'/'))
}

/// An absolute path and each of its ancestors, deepest first, `/` last.
pub fn ancestors_or_self(p: &str) -> impl Iterator<Item = &str> {
    let mut next = Some(p);
    std::iter::from_fn(move || {
        let here = next?;
        next = match here.rfind('/') {
            _ if here == "/" => None,
            Some(0) => Some("/"),
            Some(i) => Some(&here[..i]),
            None => None,
        };
        Some(here)
    })
}

/// `p` itself and those of its ancestors (`/` among them) whose length is
/// one of `lens` (sorted, each once), shortest first: at most as many steps
/// as `p` has bytes, and as few as there are lengths, where a walk of every
/// ancestor takes one a `/` (the few write roots a big spec has are looked
/// for among the ancestors of each of its 10,000 roots).
pub fn ancestors_of_lengths<'p>(p: &'p str, lens: &'p [usize]) -> impl Iterator<Item = &'p str> {
    let bytes = p.as_bytes();
    lens.iter()
        .take_while(move |&&n| n <= bytes.len())
        .filter(move |&&n| {
            n == bytes.len() || (n > 0 && bytes[n] == b'/') || (n == 1 && bytes[0] == b'/')
        })
        .map(move |&n| &p[..n])
}

/// The lengths given, each once and in order: marked in a bitmap and read
/// back, in one pass over them and one over the bitmap (20,000 spellings
/// have a few lengths).
pub fn lengths(lens: impl IntoIterator<Item = usize>) -> Vec<usize> {
    let mut bits: Vec<u64> = Vec::new();
    for n in lens {
        if bits.len() <= n / 64 {
            bits.resize(n / 64 + 1, 0);
        }
        bits[n / 64] |= 1 << (n % 64);
    }
    let mut out = Vec::new();
    for (i, &w) in bits.iter().enumerate() {
        let mut w = w;
        while w != 0 {
            out.push(i * 64 + w.trailing_zeros() as usize);
            w &= w - 1;
        }
    }
    out
}

/// Sort `v` by `(hash, then)`, stably: by the hash in eight passes of a
/// byte each (a radix sort, linear in `v`, where comparing 20,000 entries
/// was a sort of 300,000 comparisons), then each run of one hash, which
/// is rarely longer than one entry, by `then`.
pub fn sort_by_hash<T: Copy, K: Ord>(
    v: &mut Vec<T>,
    hash: impl Fn(&T) -> u64,
    then: impl Fn(&T) -> K,
) {
    if v.len() < 64 {
        v.sort_by_key(|a| (hash(a), then(a)));
        return;
    }
    let mut from = std::mem::take(v);
    let mut to: Vec<T> = Vec::with_capacity(from.len());
    for byte in 0..8 {
        let digit = |t: &T| ((hash(t) >> (8 * byte)) & 0xff) as usize;
        let mut at = [0usize; 256];
        for t in &from {
            at[digit(t)] += 1;
        }
        if at.contains(&from.len()) {
            // One digit for all: this pass would move nothing.
            continue;
        }
        let mut sum = 0;
        for slot in at.iter_mut() {
            (*slot, sum) = (sum, sum + *slot);
        }
        // Every slot is written once, in place of the entry it receives.
        to.clear();
        to.resize(from.len(), from[0]);
        for t in &from {
            let d = digit(t);
            to[at[d]] = *t;
            at[d] += 1;
        }
        std::mem::swap(&mut from, &mut to);
    }
    for run in from.chunk_by_mut(|a, b| hash(a) == hash(b)) {
        if run.len() > 1 {
            run.sort_by_key(|t| then(t));
        }
    }
    *v = from;
}

/// Paths, each with a value (the first given for it), that answers "which
/// of them is the deepest to hold this path strictly" looking up only those
/// of its ancestors as long as one of them, deepest first: kept as
/// [`PathSet`] keeps them, under a hash of their bytes.
#[derive(Clone, Debug)]
pub struct PathMap<'a, V> {
    /// (hash, path, value), sorted by hash then path, one entry a path.
    sorted: Vec<(u64, &'a str, V)>,
    lens: Vec<usize>,
}

impl<'a, V: Copy> PathMap<'a, V> {
    pub fn new(entries: impl IntoIterator<Item = (&'a str, V)>) -> Self {
        let mut sorted: Vec<(u64, &str, V)> = entries
            .into_iter()
            .map(|(p, v)| (path_hash(p), p, v))
            .collect();
        // Stable, so that of the entries of one path the first stays first.
        sort_by_hash(&mut sorted, |e| e.0, |e| e.1);
        sorted.dedup_by(|later, first| (later.0, later.1) == (first.0, first.1));
        let lens = lengths(sorted.iter().map(|e| e.1.len()));
        PathMap { sorted, lens }
    }

    /// The value of `p`, if it is one of the paths.
    pub fn get(&self, p: &str) -> Option<V> {
        let h = path_hash(p);
        self.sorted
            .binary_search_by(|e| (e.0, e.1).cmp(&(h, p)))
            .ok()
            .map(|i| self.sorted[i].2)
    }

    /// The value of the deepest of the paths that holds `p` and is not `p`.
    pub fn nearest_strictly_enclosing(&self, p: &str) -> Option<V> {
        let bytes = p.as_bytes();
        let shorter = self.lens.partition_point(|&n| n < bytes.len());
        self.lens[..shorter]
            .iter()
            .rev()
            .filter(|&&n| n > 0 && (bytes[n] == b'/' || (n == 1 && bytes[0] == b'/')))
            .find_map(|&n| self.get(&p[..n]))
    }
}

/// A set of absolute paths that answers "is this path inside one of them" in
/// one pass over the path: each path is kept under a hash of its bytes, and
/// only the ancestors of a length some path has are hashed and looked up, so
/// a lookup compares integers and, on a hit, one string. Building it hashes
/// each path once and sorts integers (a big spec's 20,000 spellings share
/// long prefixes, and sorting them as strings was a tenth of its compile).
#[derive(Clone, Debug, Default)]
pub struct PathSet<'a> {
    /// (hash, path), sorted by hash then path.
    sorted: Vec<(u64, &'a str)>,
    /// The lengths of the paths, each once and in order: only a prefix of
    /// such a length is hashed and looked up, and only those lengths are
    /// visited (the write roots are a few lengths, and 20,000 denied
    /// spellings are checked against them; their own 20,000 are two).
    lens: Vec<usize>,
    /// `/` is one of the paths: it holds every path.
    all: bool,
}

/// The hash [`PathSet`] keeps paths under: sorting by it, then by the path
/// among equal hashes, groups equal paths while comparing integers. Eight
/// bytes a step (little-endian, so it is the same on every host), in the
/// manner of rustc's FxHash; paths that collide cost string comparisons,
/// never a wrong answer.
pub fn path_hash(s: &str) -> u64 {
    const K: u64 = 0x51_7c_c1_b7_27_22_0a_95;
    let mut h: u64 = s.len() as u64;
    for chunk in s.as_bytes().chunks(8) {
        let mut w = [0u8; 8];
        w[..chunk.len()].copy_from_slice(chunk);
        h = (h.rotate_left(5) ^ u64::from_le_bytes(w)).wrapping_mul(K);
    }
    h
}

impl<'a> PathSet<'a> {
    pub fn new(paths: impl IntoIterator<Item = &'a String>) -> Self {
        let mut all = false;
        let mut sorted: Vec<(u64, &str)> = paths
            .into_iter()
            .map(|p| {
                all |= p == "/";
                (path_hash(p), p.as_str())
            })
            .collect();
        sort_by_hash(&mut sorted, |e| e.0, |e| e.1);
        sorted.dedup();
        let lens = lengths(sorted.iter().map(|(_, p)| p.len()));
        PathSet { sorted, all, lens }
    }

    /// One of the paths has this hash and these bytes (searched by halves
    /// on both, so even paths that all collide cost `log n` comparisons).
    fn holds(&self, h: u64, p: &str) -> bool {
        self.sorted.binary_search(&(h, p)).is_ok()
    }

    /// `p` is one of the paths or lies inside one.
    pub fn covers(&self, p: &str) -> bool {
        if self.all {
            return true;
        }
        if self.sorted.is_empty() {
            return false;
        }
        ancestors_of_lengths(p, &self.lens).any(|a| self.holds(path_hash(a), a))
    }

    /// `p` lies strictly inside one of the paths.
    pub fn covers_strictly(&self, p: &str) -> bool {
        match p.rfind('/') {
            Some(0) => p != "/" && self.all,
            Some(i) => self.covers(&p[..i]),
            None => false,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.sorted.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// The byte scan gives the pieces `str::split` gives.
        #[test]
        fn split_slash_splits_as_str_does(s in "[/a.é]{0,12}") {
            let fast: Vec<&str> = split_slash(&s).collect();
            let slow: Vec<&str> = s.split('/').collect();
            proptest::prop_assert_eq!(fast, slow);
        }
    }

    #[test]
    fn accepts_normal_paths() {
        for p in ["/", "/a", "/a/b.c", "/a/..b", "/a/.hidden"] {
            assert_eq!(check_path(p), Ok(()), "{p}");
        }
    }

    #[test]
    fn refuses_each_problem() {
        let cases = [
            ("", PathProblem::Empty),
            ("/a\0", PathProblem::Nul),
            ("/a\nb", PathProblem::Control),
            ("/a\"b", PathProblem::Quote),
            ("/a\\b", PathProblem::Backslash),
            ("a/b", PathProblem::Relative),
            ("/a//b", PathProblem::DoubleSlash),
            ("/a/", PathProblem::TrailingSlash),
            ("/a/./b", PathProblem::DotSegment(".")),
            ("/a/..", PathProblem::DotSegment("..")),
        ];
        for (p, want) in cases {
            assert_eq!(check_path(p), Err(want), "{p:?}");
        }
        let long = format!("/{}", "a".repeat(MAX_LITERAL));
        assert_eq!(
            check_path(&long),
            Err(PathProblem::TooLong(MAX_LITERAL + 1))
        );
    }

    #[test]
    fn aliases() {
        assert_eq!(macos_aliases("/tmp").as_deref(), Some("/private/tmp"));
        assert_eq!(
            macos_aliases("/var/folders/x").as_deref(),
            Some("/private/var/folders/x")
        );
        assert_eq!(macos_aliases("/tmpx"), None);
        assert_eq!(macos_aliases("/private/tmp"), None);
    }

    /// The set answers as a walk over every path would.
    #[test]
    fn path_set_covers_as_a_walk_would() {
        use proptest::prelude::*;
        let path = prop::collection::vec(prop::sample::select(vec!["a", "b", "ab", "a.b"]), 0..5)
            .prop_map(|segs| format!("/{}", segs.join("/")));
        proptest!(|(set in prop::collection::vec(path.clone(), 0..12), probes in prop::collection::vec(path, 1..12))| {
            let ps = PathSet::new(&set);
            for p in &probes {
                let walk = set.iter().any(|r| is_within(p, r));
                prop_assert_eq!(ps.covers(p), walk, "{} in {:?}", p, set);
                let strictly = set.iter().any(|r| r != p && is_within(p, r));
                prop_assert_eq!(ps.covers_strictly(p), strictly, "{} strictly in {:?}", p, set);
            }
        });
    }

    #[test]
    fn ancestors_of_lengths_are_the_ancestors_of_those_lengths() {
        use proptest::prelude::*;
        let piece = prop::sample::select(vec!["/", "a", "bc", "//"]);
        proptest!(|(parts in prop::collection::vec(piece, 0..8), lens in prop::collection::btree_set(0usize..12, 0..8))| {
            let p: String = parts.concat();
            let lens: Vec<usize> = lens.into_iter().collect();
            let mut want: Vec<&str> = ancestors_or_self(&p)
                .filter(|a| lens.contains(&a.len()))
                .collect();
            want.reverse();
            let got: Vec<&str> = ancestors_of_lengths(&p, &lens).collect();
            prop_assert_eq!(got, want, "{:?} {:?}", p, lens);
        });
    }

    #[test]
    fn lengths_are_each_length_once_in_order() {
        use proptest::prelude::*;
        proptest!(|(lens in prop::collection::vec(0usize..300, 0..40))| {
            let want: Vec<usize> = lens.iter().copied().collect::<std::collections::BTreeSet<_>>().into_iter().collect();
            prop_assert_eq!(lengths(lens), want);
        });
    }

    #[test]
    fn path_map_finds_the_deepest_enclosing_as_a_walk_would() {
        use proptest::prelude::*;
        let path = prop::collection::vec(prop::sample::select(vec!["a", "b", "ab", ""]), 0..5)
            .prop_map(|segs| format!("/{}", segs.join("/")));
        proptest!(|(set in prop::collection::vec(path.clone(), 0..12), probes in prop::collection::vec(path, 1..12))| {
            let map = PathMap::new(set.iter().enumerate().map(|(i, p)| (p.as_str(), i)));
            for p in &probes {
                // The old walk: each ancestor, deepest first, the first
                // entry of that path.
                let walk = ancestors_or_self(p)
                    .filter(|a| *a != p.as_str())
                    .find_map(|a| set.iter().position(|s| s == a));
                prop_assert_eq!(map.nearest_strictly_enclosing(p), walk, "{} in {:?}", p, set);
                prop_assert_eq!(map.get(p), set.iter().position(|s| s == p), "{} in {:?}", p, set);
            }
        });
    }

    #[test]
    fn sort_by_hash_sorts_as_a_stable_sort_of_the_pair_does() {
        use proptest::prelude::*;
        // Few distinct hashes and words, so that runs of one hash are long
        // and entries repeat; long lists, so that the radix passes run.
        let entry = (
            prop::sample::select(vec![0u64, 1, 255, 256, 1 << 40, u64::MAX]),
            0u8..4,
            0u16..1000,
        );
        proptest!(|(v in prop::collection::vec(entry, 0..300))| {
            let mut want = v.clone();
            want.sort_by_key(|e| (e.0, e.1));
            let mut got = v;
            sort_by_hash(&mut got, |e| e.0, |e| e.1);
            prop_assert_eq!(got, want);
        });
    }

    /// The one-pass check answers as the plain sequence of checks does.
    #[test]
    fn check_path_answers_as_the_checks_in_order_would() {
        use proptest::prelude::*;
        fn slow(p: &str) -> Result<(), PathProblem> {
            if p.is_empty() {
                return Err(PathProblem::Empty);
            }
            if p.contains('\0') {
                return Err(PathProblem::Nul);
            }
            if p.chars().any(char::is_control) {
                return Err(PathProblem::Control);
            }
            if p.contains('"') {
                return Err(PathProblem::Quote);
            }
            if p.contains('\\') {
                return Err(PathProblem::Backslash);
            }
            if !p.starts_with('/') {
                return Err(PathProblem::Relative);
            }
            if p.len() > MAX_LITERAL {
                return Err(PathProblem::TooLong(p.len()));
            }
            if p == "/" {
                return Ok(());
            }
            if p.ends_with('/') {
                return Err(PathProblem::TrailingSlash);
            }
            for seg in p[1..].split('/') {
                match seg {
                    "" => return Err(PathProblem::DoubleSlash),
                    "." => return Err(PathProblem::DotSegment(".")),
                    ".." => return Err(PathProblem::DotSegment("..")),
                    _ => {}
                }
            }
            Ok(())
        }
        let piece = prop::sample::select(vec![
            "/", "a", ".", "..", "\"", "\\", "\0", "\n", "\u{85}", "é", "//", "x.y", "\u{7f}", " ",
            "~",
        ]);
        proptest!(|(parts in prop::collection::vec(piece, 0..10))| {
            let p: String = parts.concat();
            prop_assert_eq!(check_path(&p), slow(&p), "{:?}", p);
        });
        let long = format!("/{}", "a".repeat(MAX_LITERAL));
        assert_eq!(check_path(&long), slow(&long));
        let longest = format!("/{}", "a".repeat(MAX_LITERAL - 1));
        assert_eq!(check_path(&longest), Ok(()));
        assert_eq!(slow(&longest), Ok(()));
    }
}
