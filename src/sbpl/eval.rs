//! The SBPL evaluator: which rule of a profile decides an operation on a path
//! or a network endpoint.
//!
//! Two readings of seatbelt precedence are modelled (see `sbpl-notes.md` §3):
//!
//! - **filtered first**: for the operation and then each fallback parent, the
//!   last *matching filtered* rule of that operation decides; an unfiltered
//!   rule only sets that operation's fallback, wherever it sits;
//! - **source order**: every rule of the operation or of one of its parents is
//!   considered in source order, and the last match wins.
//!
//! When the two disagree the answer is **ambiguous**. Anything the evaluator
//! does not model (Scheme it does not run, unknown filters, unsupported
//! regexes, imports) makes the answer **undetermined**, naming the construct
//! and its line: never a guess.

mod expr;
mod table;
use self::expr::eval;
pub use self::table::{chain, modelled_operations};
use self::table::{chain_of, name_of, operation, OpId};

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::ops::Range;

use super::parse::{print_expr, Expr, Node, Profile};
use super::regex::Regex;

/// What a rule does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    Allow,
    Deny,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Allow => "allow",
            Action::Deny => "deny",
        }
    }
}

/// What an operation is applied to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    Path(String),
    /// An outbound TCP endpoint.
    Remote {
        host: String,
        port: u16,
    },
    /// A named service or object: a Mach service, an Apple Events
    /// destination, an IOKit user client class, a POSIX IPC name, a sysctl,
    /// a preference domain, or whom a signal is sent to.
    Name {
        kind: NameKind,
        name: String,
    },
}

pub use crate::ops::NameKind;

/// The name filters: the SBPL name, its namespace, and how it matches.
const NAME_FILTERS: &[(&str, NameKind, PathKind)] = &[
    (
        "appleevent-destination",
        NameKind::AppleEvent,
        PathKind::Literal,
    ),
    ("global-name", NameKind::MachGlobal, PathKind::Literal),
    ("global-name-prefix", NameKind::MachGlobal, PathKind::Prefix),
    (
        "iokit-registry-entry-class",
        NameKind::IokitClass,
        PathKind::Literal,
    ),
    (
        "iokit-user-client-class",
        NameKind::IokitClass,
        PathKind::Literal,
    ),
    ("ipc-posix-name", NameKind::IpcPosix, PathKind::Literal),
    (
        "ipc-posix-name-prefix",
        NameKind::IpcPosix,
        PathKind::Prefix,
    ),
    ("local-name", NameKind::MachLocal, PathKind::Literal),
    ("local-name-prefix", NameKind::MachLocal, PathKind::Prefix),
    (
        "preference-domain",
        NameKind::PreferenceDomain,
        PathKind::Literal,
    ),
    ("sysctl-name", NameKind::Sysctl, PathKind::Literal),
    ("sysctl-name-prefix", NameKind::Sysctl, PathKind::Prefix),
    ("xpc-service-name", NameKind::XpcService, PathKind::Literal),
    (
        "xpc-service-name-prefix",
        NameKind::XpcService,
        PathKind::Prefix,
    ),
];
/// The regex forms of the name filters.
const NAME_REGEX_FILTERS: &[(&str, NameKind)] = &[
    ("global-name-regex", NameKind::MachGlobal),
    ("iokit-user-client-class-regex", NameKind::IokitClass),
    ("ipc-posix-name-regex", NameKind::IpcPosix),
    ("local-name-regex", NameKind::MachLocal),
    ("preference-domain-regex", NameKind::PreferenceDomain),
    ("sysctl-name-regex", NameKind::Sysctl),
    ("xpc-service-name-regex", NameKind::XpcService),
];

/// A rule, as a reviewer reads it: its line and its text. The text is
/// printed only when asked ([`RuleRef::text`]): most answers (a proved
/// assertion) never show it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuleRef<'a> {
    pub line: usize,
    span: Range<usize>,
    /// The profile's text, borrowed as the model borrows it.
    source: &'a str,
}

impl RuleRef<'_> {
    /// The rule as [`text_of`] prints it: read again from the profile's
    /// text (it parsed once, so it parses again).
    pub fn text(&self) -> String {
        let raw = self.source.get(self.span.clone()).unwrap_or_default();
        match crate::sbpl::parse::parse(raw, &crate::sbpl::parse::Arena::new()) {
            Ok(p) if p.forms.len() == 1 => text_of(&p.forms[0]),
            _ => raw.chars().take(120).collect(),
        }
    }
}

/// One reading's answer: the action and the rule that decided it (`None`:
/// no rule matched and no default is written, which seatbelt treats as allow).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision<'a> {
    pub action: Action,
    pub rule: Option<RuleRef<'a>>,
}

/// The evaluator's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict<'a> {
    /// Both readings agree (`rule` is the filtered-first reading's).
    Decided(Decision<'a>),
    Ambiguous {
        filtered_first: Decision<'a>,
        source_order: Decision<'a>,
    },
    Undetermined {
        construct: String,
        line: usize,
    },
}

impl Verdict<'_> {
    pub fn action(&self) -> Option<Action> {
        match self {
            Verdict::Decided(d) => Some(d.action),
            _ => None,
        }
    }
}

#[derive(Clone, Debug)]
enum PathKind {
    Literal,
    Subpath,
    Prefix,
}

/// A filter's strings, held in the filter where it has one (almost every
/// filter of sealc's profiles does): not an allocation a filter.
type Pats<'a> = smallvec::SmallVec<[Cow<'a, str>; 1]>;

/// A filter of a rule: its strings borrow the profile's text (`'a`) where
/// no escape made them differ from it.
#[derive(Clone, Debug)]
enum Filter<'a> {
    Path(PathKind, Pats<'a>),
    Regex(Vec<Regex>),
    /// A name filter: literal or prefix patterns in one namespace.
    Name(NameKind, PathKind, Pats<'a>),
    /// A name filter's regex form.
    NameRegex(NameKind, Vec<Regex>),
    Net {
        remote: bool,
        proto: &'a str,
        addr: Option<Cow<'a, str>>,
    },
    Any(Vec<Filter<'a>>),
    All(Vec<Filter<'a>>),
    Not(Box<Filter<'a>>),
    Opaque {
        what: String,
        line: usize,
    },
    /// The filters of a rule on none of the operations a model was built
    /// for ([`Model::for_operations`]): not evaluated, so a question that
    /// reaches the rule is undetermined, never answered without it.
    Unread,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tri {
    Yes,
    No,
}

type Match = Result<Tri, (String, usize)>;

impl Filter<'_> {
    fn matches(&self, t: &Target) -> Match {
        Ok(match (self, t) {
            (Filter::Path(kind, pats), Target::Path(p)) => {
                let hit = pats.iter().any(|pat| match kind {
                    PathKind::Literal => p == pat,
                    PathKind::Subpath => {
                        pat == "/"
                            || p == pat
                            || (p.starts_with(pat.as_ref())
                                && p.as_bytes().get(pat.len()) == Some(&b'/'))
                    }
                    PathKind::Prefix => p.starts_with(pat.as_ref()),
                });
                if hit {
                    Tri::Yes
                } else {
                    Tri::No
                }
            }
            (Filter::Regex(res), Target::Path(p)) => {
                if res.iter().any(|r| r.is_match(p)) {
                    Tri::Yes
                } else {
                    Tri::No
                }
            }
            (Filter::Path(..) | Filter::Regex(_), Target::Remote { .. } | Target::Name { .. }) => {
                Tri::No
            }
            (Filter::Net { .. }, Target::Path(_) | Target::Name { .. }) => Tri::No,
            (Filter::Name(..) | Filter::NameRegex(..), Target::Path(_) | Target::Remote { .. }) => {
                Tri::No
            }
            (Filter::Name(kind, how, pats), Target::Name { kind: asked, name }) => {
                let hit = kind == asked
                    && pats.iter().any(|pat| match how {
                        PathKind::Prefix => name.starts_with(pat.as_ref()),
                        _ => name == pat,
                    });
                if hit {
                    Tri::Yes
                } else {
                    Tri::No
                }
            }
            (Filter::NameRegex(kind, res), Target::Name { kind: asked, name }) => {
                if kind == asked && res.iter().any(|r| r.is_match(name)) {
                    Tri::Yes
                } else {
                    Tri::No
                }
            }
            (
                Filter::Net {
                    remote,
                    proto,
                    addr,
                },
                Target::Remote { host, port },
            ) => {
                let proto_ok = proto.starts_with("ip") || proto.starts_with("tcp");
                let (h, p) = match addr {
                    None => ("*", "*"),
                    Some(a) => a.rsplit_once(':').unwrap_or((a.as_ref(), "*")),
                };
                if !*remote && (h != "*" || p != "*") {
                    return Err((
                        format!("(local {proto} \"{h}:{p}\") on an outbound query"),
                        0,
                    ));
                }
                let host_ok = h == "*"
                    || (h == "localhost"
                        && matches!(host.as_str(), "localhost" | "127.0.0.1" | "::1" | "0.0.0.0"));
                let port_ok = p == "*" || p.parse::<u16>().ok() == Some(*port);
                if proto_ok && host_ok && port_ok {
                    Tri::Yes
                } else {
                    Tri::No
                }
            }
            (Filter::Any(fs), t) => {
                let mut unknown = None;
                for f in fs {
                    match f.matches(t) {
                        Ok(Tri::Yes) => return Ok(Tri::Yes),
                        Ok(Tri::No) => {}
                        Err(e) => unknown = unknown.or(Some(e)),
                    }
                }
                match unknown {
                    Some(e) => return Err(e),
                    None => Tri::No,
                }
            }
            (Filter::All(fs), t) => {
                let mut unknown = None;
                for f in fs {
                    match f.matches(t) {
                        Ok(Tri::No) => return Ok(Tri::No),
                        Ok(Tri::Yes) => {}
                        Err(e) => unknown = unknown.or(Some(e)),
                    }
                }
                match unknown {
                    Some(e) => return Err(e),
                    None => Tri::Yes,
                }
            }
            (Filter::Not(f), t) => match f.matches(t)? {
                Tri::Yes => Tri::No,
                Tri::No => Tri::Yes,
            },
            (Filter::Opaque { what, line }, _) => return Err((what.clone(), *line)),
            (Filter::Unread, _) => {
                return Err((
                    "a rule whose filters were not read for this question".to_string(),
                    0,
                ))
            }
        })
    }
}

#[derive(Clone, Debug)]
struct Rule<'a> {
    action: Action,
    /// The operations the rule names (in the model's `ops`): the table's
    /// by place, the others (a later macOS's) by name.
    ops: Range<usize>,
    filter: Option<Filter<'a>>,
    /// Where the rule is in the profile's text: its text is printed only
    /// for the answers that name it.
    line: usize,
    span: Range<usize>,
}

/// A profile, evaluated: its rules, and what could not be evaluated.
#[derive(Clone, Debug, Default)]
pub struct Model<'a> {
    rules: Vec<Rule<'a>>,
    /// Top-level constructs not modelled (imports, unknown forms): they could
    /// add rules for any operation, so every answer is undetermined.
    blockers: Vec<(String, usize)>,
    /// `(version N)` seen.
    pub version: Option<i64>,
    /// The profile's text, for the rules' text.
    source: &'a str,
    /// Families (`x*`) the rules name that the operation table does not
    /// know, each with the line of its first rule: an answer for an
    /// operation such a family may hold is undetermined.
    unknown_families: Vec<(String, usize)>,
    /// The operations whose rules are evaluated (each with its fallback
    /// parents); `None`: every rule's.
    only: Option<Vec<OpId>>,
    /// Every rule's operations, one rule after the other.
    ops: Vec<Result<OpId, &'a str>>,
}

#[derive(Clone, Debug)]
enum Value<'a> {
    Str(Cow<'a, str>),
    Bool(bool),
    Filter(Filter<'a>),
    Opaque(String, usize),
}

/// The params given, and what the profile has `define`d so far.
struct Env<'p, 'a> {
    params: &'p BTreeMap<String, String>,
    defines: BTreeMap<&'a str, Value<'a>>,
}

fn text_of(e: &Expr<'_>) -> String {
    let mut s = String::new();
    print_expr(e, &mut s);
    if s.len() > 120 {
        let cut = s.char_indices().nth(117).map_or(s.len(), |(i, _)| i);
        s.truncate(cut);
        s.push_str("...");
    }
    s
}

impl<'a> Model<'a> {
    /// Evaluate a parsed profile with `-D` parameters.
    pub fn new(profile: &Profile<'a>, params: &BTreeMap<String, String>) -> Model<'a> {
        Self::build(profile, params, None)
    }

    /// The model for questions on `ops` only: a rule on none of them, nor
    /// of their fallback parents, keeps its operations but its filters are
    /// not evaluated (the proof of a seal's assertions asks a few
    /// operations of a profile of many rules). Such a rule cannot decide a
    /// question on `ops`; one of another operation that reaches it is
    /// undetermined.
    pub fn for_operations(
        profile: &Profile<'a>,
        params: &BTreeMap<String, String>,
        ops: &[&str],
    ) -> Model<'a> {
        let mut only: Vec<OpId> = ops
            .iter()
            .filter_map(|op| chain_of(op))
            .flat_map(|c| c.ids.into_iter().take(c.len))
            .collect();
        only.sort_unstable();
        only.dedup();
        Self::build(profile, params, Some(only))
    }

    fn build(
        profile: &Profile<'a>,
        params: &BTreeMap<String, String>,
        only: Option<Vec<OpId>>,
    ) -> Model<'a> {
        let mut m = Model {
            source: profile.source,
            only,
            // A rule a form, about (sealc's profiles have a few more forms
            // than rules): the list is not copied as it grows.
            rules: Vec::with_capacity(profile.forms.len()),
            ..Model::default()
        };
        let mut env = Env {
            params,
            defines: BTreeMap::new(),
        };
        for f in &profile.forms {
            m.top(f, &mut env);
        }
        for r in &m.rules {
            for o in m.ops[r.ops.clone()].iter().filter_map(|o| o.err()) {
                if o.ends_with('*') && !m.unknown_families.iter().any(|(u, _)| u == o) {
                    m.unknown_families.push((o.to_string(), r.line));
                }
            }
        }
        m
    }

    fn top(&mut self, e: &Expr<'a>, env: &mut Env<'_, 'a>) {
        let Some(items) = e.list() else {
            self.blockers.push((text_of(e), e.line));
            return;
        };
        let head = items.first().and_then(Expr::symbol).unwrap_or("");
        match head {
            "version" => {
                if let Some(Node::Int { value, .. }) = items.get(1).map(|x| &x.node) {
                    self.version = Some(*value);
                }
            }
            "allow" | "deny" => self.rule(e, items, env),
            "define" | "define-once" => match items.get(1).map(|x| &x.node) {
                Some(Node::Symbol(name)) => {
                    let v = items.get(2).map_or(Value::Bool(false), |x| eval(x, env));
                    env.defines.insert(name, v);
                }
                Some(Node::List { items: sig, .. }) => {
                    if let Some(name) = sig.first().and_then(Expr::symbol) {
                        env.defines.insert(
                            name,
                            Value::Opaque(format!("the function `{name}`"), e.line),
                        );
                    }
                }
                _ => self.blockers.push((text_of(e), e.line)),
            },
            "if" | "when" | "unless" => {
                let cond = items.get(1).map(|c| eval(c, env));
                let truth = match cond {
                    Some(Value::Bool(b)) => b,
                    Some(Value::Str(_)) | Some(Value::Filter(_)) => true,
                    Some(Value::Opaque(what, line)) => {
                        self.blockers.push((what, line));
                        return;
                    }
                    None => false,
                };
                let branch: Vec<&Expr<'a>> = match head {
                    "if" if truth => items.get(2).into_iter().collect(),
                    "if" => items.get(3).into_iter().collect(),
                    "when" if truth => items[2..].iter().collect(),
                    "unless" if !truth => items[2..].iter().collect(),
                    _ => Vec::new(),
                };
                for b in branch {
                    self.top(b, env);
                }
            }
            "begin" => {
                for b in &items[1..] {
                    self.top(b, env);
                }
            }
            "debug" | "trace" => {}
            "import" => self.blockers.push((
                format!(
                    "import of {}",
                    items.get(1).map(text_of).unwrap_or_default()
                ),
                e.line,
            )),
            _ => self.blockers.push((text_of(e), e.line)),
        }
    }

    fn rule(&mut self, e: &Expr<'a>, items: &[Expr<'a>], env: &Env<'_, 'a>) {
        let action = if items[0].symbol() == Some("allow") {
            Action::Allow
        } else {
            Action::Deny
        };
        // The operations: the symbols that name no `define`d value.
        let start = self.ops.len();
        self.ops
            .extend(items[1..].iter().filter_map(|arg| match arg.node {
                Node::Symbol(s) if !env.defines.contains_key(s) => Some(operation(s).ok_or(s)),
                _ => None,
            }));
        let ops = start..self.ops.len();
        if let Some(only) = &self.only {
            if !self.ops[ops.clone()]
                .iter()
                .any(|o| o.is_ok_and(|id| only.binary_search(&id).is_ok()))
            {
                self.rules.push(Rule {
                    action,
                    ops,
                    filter: Some(Filter::Unread),
                    line: e.line,
                    span: e.span.clone(),
                });
                return;
            }
        }
        // Most rules have one filter: it is held as it is, and only a
        // second one makes a list (for `Any`).
        let mut first: Option<Filter<'a>> = None;
        let mut rest: Vec<Filter<'a>> = Vec::new();
        let mut push = |f: Filter<'a>| match first {
            None => first = Some(f),
            Some(_) => rest.push(f),
        };
        for arg in &items[1..] {
            match &arg.node {
                Node::Symbol(s) => match env.defines.get(s) {
                    Some(Value::Filter(f)) => push(f.clone()),
                    Some(Value::Opaque(what, line)) => push(Filter::Opaque {
                        what: what.clone(),
                        line: *line,
                    }),
                    Some(_) => push(Filter::Opaque {
                        what: format!("`{s}` used as a filter"),
                        line: arg.line,
                    }),
                    None => {} // an operation
                },
                Node::List { items: inner, .. }
                    if inner.first().and_then(Expr::symbol) == Some("with") => {}
                _ => match eval(arg, env) {
                    Value::Filter(f) => push(f),
                    Value::Opaque(what, line) => push(Filter::Opaque { what, line }),
                    _ => push(Filter::Opaque {
                        what: text_of(arg),
                        line: arg.line,
                    }),
                },
            }
        }
        let filter = match first {
            Some(f) if !rest.is_empty() => {
                rest.insert(0, f);
                Some(Filter::Any(rest))
            }
            one => one,
        };
        self.rules.push(Rule {
            action,
            ops,
            filter,
            line: e.line,
            span: e.span.clone(),
        });
    }

    /// Decide `op` on `target` under both readings.
    pub fn query(&self, op: &str, target: &Target) -> Verdict<'a> {
        if let Some((what, line)) = self.blockers.first() {
            return Verdict::Undetermined {
                construct: what.clone(),
                line: *line,
            };
        }
        let Some(chain) = chain_of(op) else {
            return Verdict::Undetermined {
                construct: format!("the operation `{op}` is not modelled"),
                line: 0,
            };
        };
        // A rule on a family the table does not know (`ipc-posix-shm-read*`
        // is a later macOS's) may cover the operation asked: say so, rather
        // than answer as if the rule were not there.
        for (family, line) in &self.unknown_families {
            let stem = family.trim_end_matches('*');
            if chain.iter().any(|&c| name_of(c).starts_with(stem)) {
                return Verdict::Undetermined {
                    construct: format!(
                        "`{family}` is not in the operation table (macOS 10.15's), and may hold `{op}`"
                    ),
                    line: *line,
                };
            }
        }
        let a = match self.filtered_first(&chain, target) {
            Ok(d) => d,
            Err((construct, line)) => return Verdict::Undetermined { construct, line },
        };
        let b = match self.source_order(&chain, target) {
            Ok(d) => d,
            Err((construct, line)) => return Verdict::Undetermined { construct, line },
        };
        if a.action == b.action {
            Verdict::Decided(a)
        } else {
            Verdict::Ambiguous {
                filtered_first: a,
                source_order: b,
            }
        }
    }

    fn filtered_first(&self, chain: &[OpId], t: &Target) -> Result<Decision<'a>, (String, usize)> {
        for &op in chain {
            let own = self
                .rules
                .iter()
                .filter(|r| self.ops[r.ops.clone()].contains(&Ok(op)));
            let mut fallback: Option<&Rule> = None;
            for r in own.clone().rev() {
                match &r.filter {
                    None => {
                        fallback = fallback.or(Some(r));
                    }
                    Some(f) => match f.matches(t) {
                        Ok(Tri::Yes) => return Ok(self.decision(r)),
                        Ok(Tri::No) => {}
                        Err((what, line)) => {
                            return Err((what, if line == 0 { r.line } else { line }))
                        }
                    },
                }
            }
            if let Some(r) = fallback {
                return Ok(self.decision(r));
            }
        }
        Ok(Decision {
            action: Action::Allow,
            rule: None,
        })
    }

    fn source_order(&self, chain: &[OpId], t: &Target) -> Result<Decision<'a>, (String, usize)> {
        for r in self.rules.iter().rev() {
            if !self.ops[r.ops.clone()]
                .iter()
                .any(|o| o.is_ok_and(|id| chain.contains(&id)))
            {
                continue;
            }
            match &r.filter {
                None => return Ok(self.decision(r)),
                Some(f) => match f.matches(t) {
                    Ok(Tri::Yes) => return Ok(self.decision(r)),
                    Ok(Tri::No) => {}
                    Err((what, line)) => return Err((what, if line == 0 { r.line } else { line })),
                },
            }
        }
        Ok(Decision {
            action: Action::Allow,
            rule: None,
        })
    }
}

impl<'a> Model<'a> {
    fn decision(&self, r: &Rule<'_>) -> Decision<'a> {
        Decision {
            action: r.action,
            rule: Some(RuleRef {
                line: r.line,
                span: r.span.clone(),
                source: self.source,
            }),
        }
    }
}

#[cfg(test)]
mod tests;
