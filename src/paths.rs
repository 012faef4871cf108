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

/// Check one path against the invariant.
pub fn check_path(p: &str) -> Result<(), PathProblem> {
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

/// The `/private` spelling of a path under one of the macOS firmlinked roots
/// `/tmp`, `/var` and `/etc`.
pub fn macos_aliases(p: &str) -> Option<String> {
    ["/tmp", "/var", "/etc"]
        .iter()
        .any(|a| p == *a || (p.starts_with(a) && p.as_bytes().get(a.len()) == Some(&b'/')))
        .then(|| format!("/private{p}"))
}

/// Lexical normalization: collapse `//`, `.` and `..`.
pub fn normalize(p: &str) -> String {
    // Already normal (absolute, no empty, `.` or `..` component): as it is.
    if p == "/"
        || (p.len() > 1
            && p.starts_with('/')
            && p[1..].split('/').all(|c| !matches!(c, "" | "." | "..")))
    {
        return p.to_string();
    }
    let mut parts: Vec<&str> = Vec::new();
    for c in p.split('/') {
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

/// A set of absolute paths that answers "is this path inside one of them" in
/// O(depth · log n), by looking up the path and each of its ancestors: a
/// sorted list searched by halves (one sort to build, where a tree is
/// 20,000 inserts for a big spec's spellings).
#[derive(Clone, Debug, Default)]
pub struct PathSet<'a> {
    sorted: Vec<&'a str>,
    /// `/` is one of the paths: it holds every path.
    all: bool,
}

impl<'a> PathSet<'a> {
    pub fn new(paths: impl IntoIterator<Item = &'a String>) -> Self {
        let mut sorted: Vec<&str> = paths.into_iter().map(String::as_str).collect();
        sorted.sort_unstable();
        sorted.dedup();
        let all = sorted.binary_search(&"/").is_ok();
        PathSet { sorted, all }
    }

    fn contains(&self, p: &str) -> bool {
        self.sorted.binary_search(&p).is_ok()
    }

    /// `p` is one of the paths or lies inside one.
    pub fn covers(&self, p: &str) -> bool {
        if self.all || self.contains(p) {
            return true;
        }
        let mut end = p.len();
        while let Some(i) = p[..end].rfind('/') {
            if i == 0 {
                break;
            }
            if self.contains(&p[..i]) {
                return true;
            }
            end = i;
        }
        false
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
}
