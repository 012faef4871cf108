//! Stage 4a, **render** the seatbelt profile (`seal.sb`): a pure function of the IR.
//!
//! Emission discipline, so that the profile means one thing under every
//! reading of seatbelt's precedence (see `sbpl-notes.md`, §3):
//!
//! - `(version 1)` and an explicit default come first; every later rule is
//!   filtered (the one exception, `(allow process-fork)` in the deny-default
//!   base, names an operation no other rule touches, so it cannot conflict).
//! - Path rules of one operation are emitted shallowest first, so the deepest
//!   root that contains a path decides ("last match wins" then means "most
//!   specific root wins").
//! - Rules on a child operation (`file-read-metadata`, `file-write-unlink`)
//!   come after every rule on its parent (`file-read*`, `file-write*`), so the
//!   child-first and the source-order readings agree.
//! - Regexes are never emitted; strings are validated by the IR and escaped
//!   again here; every rule has a comment naming the spec entry it came from.

mod rules;
#[cfg(test)]
use self::rules::ancestors;
use self::rules::{
    base_rules, ipc_rules, launder_rules, metadata_rules, network_rules, read_rules, write_rules,
};

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::fmt::Write as _;

use crate::diag::visible;
use crate::ir::{is_within, macos_aliases, Ir, PathSet, Root, RootKind, Standing};
use crate::paths::is_aliased;
use crate::spec::{Base, NetMode};

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Action {
    Allow,
    Deny,
}

#[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Filter<'a> {
    Subpath(Cow<'a, str>),
    Literal(Cow<'a, str>),
    /// `(global-name "...")`: a Mach service.
    GlobalName(&'a str),
    /// Any other filter, already in SBPL syntax (built in this file from
    /// fixed text and numbers only).
    Raw(Cow<'a, str>),
}

/// The comment above a rule: fixed or formatted text, or the spec entry a
/// root came from (written straight into the profile, without a temporary).
enum Comment<'a> {
    Text(Cow<'a, str>),
    Root {
        root: &'a Root,
        note: &'static str,
        suffix: &'static str,
        /// The rule holds the spelling's macOS alias too (`/private/tmp/x`
        /// beside `/tmp/x`).
        alias: bool,
    },
    /// `ancestors of <of> "<entry>"`: the metadata of a root's or a
    /// launcher entry's ancestors.
    Ancestors {
        of: &'static str,
        entry: &'a str,
    },
    /// An IPC entry's rule: what it would open, and whether the spec
    /// re-allows it (by its name).
    Ipc {
        allowed: Option<&'static str>,
        opens: &'static str,
    },
}

impl From<&'static str> for Comment<'_> {
    fn from(s: &'static str) -> Self {
        Comment::Text(Cow::Borrowed(s))
    }
}

impl From<String> for Comment<'_> {
    fn from(s: String) -> Self {
        Comment::Text(Cow::Owned(s))
    }
}

impl Comment<'_> {
    fn with_suffix(self, suffix: &'static str) -> Self {
        match self {
            Comment::Root {
                root, note, alias, ..
            } => Comment::Root {
                root,
                note,
                suffix,
                alias,
            },
            text => text,
        }
    }

    fn write(&self, out: &mut String) {
        match self {
            Comment::Text(t) => crate::diag::push_visible(t, out),
            Comment::Root {
                root,
                note,
                suffix,
                alias,
            } => {
                out.push_str(root.kind.key());
                out.push_str(" \"");
                crate::diag::push_visible(&root.origin, out);
                out.push_str("\" (");
                out.push_str(note);
                if *alias {
                    out.push_str(", and its macOS alias");
                }
                out.push(')');
                out.push_str(suffix);
            }
            Comment::Ancestors { of, entry } => {
                out.push_str("ancestors of ");
                out.push_str(of);
                out.push_str(" \"");
                crate::diag::push_visible(entry, out);
                out.push('"');
            }
            Comment::Ipc {
                allowed: Some(name),
                opens,
            } => {
                out.push_str("ipc.allow \"");
                crate::diag::push_visible(name, out);
                out.push_str("\": re-allowed by the spec; it can ");
                crate::diag::push_visible(opens, out);
            }
            Comment::Ipc {
                allowed: None,
                opens,
            } => {
                out.push_str("ipc: it would ");
                crate::diag::push_visible(opens, out);
            }
        }
    }
}

/// What the sections of one profile share: the IR, and the spellings of
/// its denied roots as a set, made once and only when a section asks (two
/// sections look paths up in it; 20,000 spellings for a big spec).
struct Cx<'a> {
    ir: &'a Ir,
    denied: std::cell::OnceCell<PathSet<'a>>,
}

impl<'a> Cx<'a> {
    fn denied(&self) -> &PathSet<'a> {
        self.denied.get_or_init(|| {
            PathSet::new(
                self.ir
                    .roots
                    .iter()
                    .filter(|r| r.kind.is_denied())
                    .flat_map(|r| r.spellings.iter()),
            )
        })
    }
}

struct Rule<'a> {
    comment: Comment<'a>,
    action: Action,
    ops: &'static [&'static str],
    filters: Filters<'a>,
}

/// A rule's filters: most rules have one, or two once a macOS alias is
/// merged in, held in the rule itself (a big profile has 70,000 rules,
/// each an allocation of its own when they were a `Vec`).
type Filters<'a> = smallvec::SmallVec<[Filter<'a>; 2]>;

/// The system base of `deny-default`: what a command-line program needs to
/// start on macOS. Read-only; writes stay an allow-list.
pub const DENY_DEFAULT_READ_ROOTS: &[&str] = &[
    "/System",
    "/bin",
    "/private/etc",
    "/private/var/db/dyld",
    "/sbin",
    "/usr",
];
/// Files of the deny-default base, by literal path.
pub const DENY_DEFAULT_READ_FILES: &[&str] =
    &["/", "/dev/null", "/dev/random", "/dev/urandom", "/dev/zero"];
/// Symlinks walked on the way to system files; metadata only.
pub const DENY_DEFAULT_METADATA: &[&str] =
    &["/etc", "/private", "/private/var", "/tmp", "/var", "/dev"];

/// Render the profile.
pub fn render(ir: &Ir) -> Vec<u8> {
    // About what a spelling's rules and comments take (a denied root's read
    // and link rules with their comments are about 300 bytes), so that a big
    // profile is not copied when it outgrows its buffer: pages reserved and
    // not written cost nothing.
    let spellings: usize = ir.roots.iter().map(|r| r.spellings.len()).sum();
    let mut out = String::with_capacity(8192 + spellings * 320);
    header(ir, &mut out);
    // Each section is rendered as soon as its rules are made, and its rules
    // dropped before the next is made: a big spec's rules are never all
    // held at once.
    type Section = for<'a> fn(&Cx<'a>) -> Vec<Rule<'a>>;
    let mut sections: Vec<(&str, Section)> = Vec::new();
    if ir.base == Base::DenyDefault {
        sections.push((
            "deny-default system base: process and service basics",
            base_rules,
        ));
    }
    sections.extend([
        (
            "reads: denied roots, then re-allowed roots; the deepest root decides",
            read_rules as Section,
        ),
        (
            "metadata: stat-only roots, and ancestors of re-allowed roots",
            metadata_rules,
        ),
        (
            "writes: an allow-list of write roots and devices",
            write_rules,
        ),
        (
            "links and clones: never of denied or stat-only files, always within write roots",
            launder_rules,
        ),
        ("network", network_rules),
        (
            "ipc: services and programs that act outside the seal (docs/ipc.md)",
            ipc_rules,
        ),
    ]);
    let cx = Cx {
        ir,
        denied: std::cell::OnceCell::new(),
    };
    for (title, make) in sections {
        let rules = make(&cx);
        let _ = writeln!(out, "\n;; ---- {title} ----");
        if rules.is_empty() {
            out.push_str(";; (no rules)\n");
        }
        for r in &rules {
            emit(r, &mut out);
        }
    }
    out.into_bytes()
}

fn header(ir: &Ir, out: &mut String) {
    let _ = writeln!(
        out,
        ";; seal `{}`: seatbelt profile generated by sealc; do not edit.",
        visible(&ir.name)
    );
    if let Some(d) = &ir.description {
        let _ = writeln!(out, ";; {}", visible(d));
    }
    let _ = writeln!(
        out,
        ";; base {}; network {}. The comment above each rule names the spec entry it came from.",
        ir.base.as_str(),
        ir.network.mode.as_str()
    );
    out.push_str("(version 1)\n");
    out.push_str(match ir.base {
        Base::AllowDefault => "(allow default)\n",
        Base::DenyDefault => "(deny default)\n",
    });
}

fn emit(r: &Rule, out: &mut String) {
    out.push_str("; ");
    r.comment.write(out);
    out.push_str("\n(");
    out.push_str(match r.action {
        Action::Allow => "allow",
        Action::Deny => "deny",
    });
    for op in r.ops {
        out.push(' ');
        out.push_str(op);
    }
    for f in &r.filters {
        match f {
            Filter::Subpath(p) => {
                out.push_str(" (subpath ");
                push_lit(p, out);
                out.push(')');
            }
            Filter::Literal(p) => {
                out.push_str(" (literal ");
                push_lit(p, out);
                out.push(')');
            }
            Filter::GlobalName(n) => {
                out.push_str(" (global-name ");
                push_lit(n, out);
                out.push(')');
            }
            Filter::Raw(s) => {
                out.push(' ');
                out.push_str(s);
            }
        }
    }
    out.push_str(")\n");
}

/// An SBPL string literal. The IR refuses paths with quotes, backslashes and
/// control characters; escaping them here as well keeps the profile
/// well-formed even if that invariant were ever bypassed.
pub fn lit(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    push_lit(s, &mut o);
    o
}

fn push_lit(s: &str, o: &mut String) {
    o.push('"');
    // Every byte looked at without a branch, which the compiler does many
    // at a time (a big profile has 40,000 literals).
    let plain = s.bytes().fold(true, |ok, b| {
        ok & (b != b'"') & (b != b'\\') & (b >= 0x20) & (b != 0x7f)
    });
    if plain {
        o.push_str(s);
    } else {
        for c in s.chars() {
            match c {
                '"' => o.push_str("\\\""),
                '\\' => o.push_str("\\\\"),
                c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                    let _ = write!(o, "\\x{:02x}", c as u32);
                }
                c => o.push(c),
            }
        }
    }
    o.push('"');
}

fn spelling_note(root: &Root, sp: &str) -> &'static str {
    if sp == root.path {
        "as written"
    } else if sp
        .strip_prefix("/private")
        .is_some_and(|rest| root.spellings.contains(rest))
    {
        "macOS alias"
    } else if root.real.is_none() {
        // Absent when compiled, with a link on the way (`facts.absent_denied`).
        "where it would appear, through a link"
    } else {
        "realpath"
    }
}

fn origin<'a>(root: &'a Root, sp: &str) -> Comment<'a> {
    Comment::Root {
        root,
        note: spelling_note(root, sp),
        suffix: "",
        alias: false,
    }
}

/// The comment of a protected root's rule: its entry, or, for the Codex
/// config, what it is.
fn protect_origin<'a>(root: &'a Root, sp: &str) -> Comment<'a> {
    match root.protect.as_ref().map(|p| p.standing) {
        Some(Standing::CodexConfig) => Comment::Text(
            format!("the Codex config `sealc exec` installs in CODEX_HOME (`{sp}`)").into(),
        ),
        Some(Standing::StandIn) => Comment::Text(
            format!(
                "filesystem.protect \"{}\" (`{}`): absent when compiled, `{sp}` is an empty stand-in `sealc exec` makes for the run",
                visible(&root.origin),
                visible(&root.path)
            )
            .into(),
        ),
        Some(Standing::InPlace) => Comment::Text(
            format!(
                "filesystem.protect \"{}\" (`{}`): `{sp}` on the way is not a directory (a worktree's `.git` file), protected in its place",
                visible(&root.origin),
                visible(&root.path)
            )
            .into(),
        ),
        _ => origin(root, sp),
    }
}

fn depth(p: &str) -> usize {
    if p == "/" {
        0
    } else {
        p.bytes().filter(|&b| b == b'/').count()
    }
}

/// Path rules sorted so the deepest path comes last; ties (one depth) keep
/// the given rank order, then the order they were pushed in (the IR's, which
/// is sorted), so a literal re-allow follows a subpath deny of the same path.
/// Two paths of one depth are either the same path or disjoint, so the order
/// among different paths of one depth never changes what the profile means;
/// sorting by depth and rank alone compares no strings (10,000 roots share
/// long prefixes, and comparing them was a fifth of a big compile).
struct Sorted<'a>(Vec<(u32, u8, Rule<'a>)>);

impl<'a> Sorted<'a> {
    fn with_capacity(n: usize) -> Self {
        Sorted(Vec::with_capacity(n))
    }
    fn push(&mut self, path: &'a str, rank: u8, rule: Rule<'a>) {
        let d = u32::try_from(depth(path)).unwrap_or(u32::MAX);
        if let Some(last) = self.0.last_mut() {
            if last.1 == rank && merge_alias(&mut last.2, &rule) {
                // Placed as the deeper of the two spellings: a root's alias
                // pair is `p` and `/private` + `p`, every other root's
                // spellings nest the same way in both, so nothing that
                // lies strictly inside either spelling is at that depth or
                // shallower.
                last.0 = last.0.max(d);
                return;
            }
        }
        self.0.push((d, rank, rule));
    }
    fn finish(mut self) -> Vec<Rule<'a>> {
        // A stable sort by the small key keeps pushes of one key in order;
        // the rules are moved in place, not copied into a second list.
        self.0.sort_by_key(|(d, r, _)| (*d, *r));
        self.0.into_iter().map(|(_, _, r)| r).collect()
    }
}

/// `next` is `last`'s rule for the macOS alias of its spelling (or the
/// spelling of its alias): one rule of the same root, action, operations,
/// comment and filter kind, whose one path is the other's with `/private`
/// in front. Then `last` takes its filter (filters of one rule are OR'd), and
/// its comment says so.
fn merge_alias<'a>(last: &mut Rule<'a>, next: &Rule<'a>) -> bool {
    let (
        Comment::Root {
            root: a,
            suffix: sa,
            alias: false,
            ..
        },
        Comment::Root {
            root: b,
            suffix: sb,
            note: nb,
            alias: false,
        },
    ) = (&last.comment, &next.comment)
    else {
        return false;
    };
    fn path<'f>(f: &'f Filter<'_>) -> Option<(u8, &'f str)> {
        match f {
            Filter::Subpath(p) => Some((0, p)),
            Filter::Literal(p) => Some((1, p)),
            Filter::GlobalName(_) | Filter::Raw(_) => None,
        }
    }
    let ([f], [g]) = (&last.filters[..], &next.filters[..]) else {
        return false;
    };
    let (Some((kf, pf)), Some((kg, pg))) = (path(f), path(g)) else {
        return false;
    };
    let paired = |p: &str, q: &str| p.strip_prefix("/private") == Some(q) && is_aliased(q);
    if !std::ptr::eq(*a, *b)
        || sa != sb
        || last.action != next.action
        || last.ops != next.ops
        || kf != kg
        || !(paired(pf, pg) || paired(pg, pf))
    {
        return false;
    }
    // The comment names the spelling as written (or its realpath), the one
    // without `/private`.
    let pf_private = paired(pf, pg);
    let note = if pf_private {
        *nb
    } else {
        match &last.comment {
            Comment::Root { note, .. } => *note,
            Comment::Text(_) | Comment::Ancestors { .. } | Comment::Ipc { .. } => return false,
        }
    };
    let (root, suffix) = (*a, *sa);
    last.comment = Comment::Root {
        root,
        note,
        suffix,
        alias: true,
    };
    // The spelling as written first.
    let g = next.filters[0].clone();
    if pf_private {
        last.filters.insert(0, g);
    } else {
        last.filters.push(g);
    }
    true
}

/// A rule's one filter, with room for its macOS alias's (merged in by
/// [`Sorted::push`]) without growing.
fn one_filter(filter: Filter<'_>) -> Filters<'_> {
    smallvec::smallvec![filter]
}

fn rule<'a>(
    comment: Comment<'a>,
    action: Action,
    ops: &'static [&'static str],
    filter: Filter<'a>,
) -> Rule<'a> {
    Rule {
        comment,
        action,
        ops,
        filters: one_filter(filter),
    }
}

#[cfg(test)]
mod tests;
