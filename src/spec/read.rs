//! The TOML walker: `toml`'s spanned document tree → [`Spec`], collecting
//! every problem (cargo-deny style) instead of stopping at the first. TOML
//! syntax is the exception: only its first error is reported.

use std::collections::BTreeMap;

use std::fmt::Display;

use toml::de::{DeTable, DeValue};
use toml::Spanned as TSpanned;

use super::*;
use crate::diag::{did_you_mean, quote, Diagnostic, Diagnostics, Span};

mod sections;

type Val<'i> = TSpanned<DeValue<'i>>;

pub(super) fn parse(text: &str) -> Result<Spec, Diagnostics> {
    let (doc, errors) = DeTable::parse_recoverable(text);
    // Only the first syntax error: the parser's recovery is a guess, and any
    // later error may be a consequence of it (one missing `]` turns the rest
    // of the file into array elements). The spec itself is then not read.
    if let Some(e) = errors.first() {
        return Err(syntax_error(text, e).into());
    }
    let mut cx = Cx::default();
    let root_span = doc.span();
    let spec = cx.spec(doc.get_ref(), root_span);
    match spec {
        Some(spec) if !cx.diags.has_errors() => Ok(spec),
        _ => Err(cx.diags.sorted()),
    }
}

/// The 1-based line of the innermost bracket still open at `pos` when it is
/// `open` (`[` or `{`): a small scan of the text before a syntax error, which
/// the parser read without complaint, skipping comments and strings.
fn opened_on_line(text: &str, pos: usize, open: u8) -> Option<usize> {
    let b = &text.as_bytes()[..pos.min(text.len())];
    let mut stack = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'#' => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            q @ (b'"' | b'\'') => {
                let triple = b[i..].starts_with(&[q, q, q]);
                i += if triple { 3 } else { 1 };
                while i < b.len() {
                    if q == b'"' && b[i] == b'\\' {
                        i += 2;
                    } else if triple && b[i..].starts_with(&[q, q, q]) {
                        // A closing `"""` may be followed by one or two more quotes.
                        i += 3;
                        while i < b.len() && b[i] == q {
                            i += 1;
                        }
                        break;
                    } else if !triple && (b[i] == q || b[i] == b'\n') {
                        i += 1;
                        break;
                    } else {
                        i += 1;
                    }
                }
                continue;
            }
            c @ (b'[' | b'{') => stack.push((c, i)),
            b']' | b'}' => {
                stack.pop();
            }
            _ => {}
        }
        i += 1;
    }
    match stack.last() {
        Some(&(c, at)) if c == open => Some(text[..at].matches('\n').count() + 1),
        _ => None,
    }
}

/// The diagnostic for a TOML syntax error, with a help that names the likely
/// mistake for the common shapes.
fn syntax_error(text: &str, e: &toml::de::Error) -> Diagnostic {
    let span = e.span().unwrap_or(0..0);
    let msg = crate::diag::lowercase_first(e.message().trim_end_matches('.'));
    let msg = match text.get(span.clone()) {
        Some(key) if msg == "duplicate key" && !key.is_empty() => {
            // On a header line, the table is what repeats.
            let line_start = text[..span.start].rfind('\n').map_or(0, |i| i + 1);
            let line = text[line_start..].lines().next().unwrap_or("").trim_start();
            match line.find(']') {
                Some(end) if line.starts_with('[') => {
                    let end = end + usize::from(line[end + 1..].starts_with(']'));
                    format!("duplicate table {}", quote(&line[..=end]))
                }
                _ => format!("duplicate key {}", quote(key)),
            }
        }
        _ => msg,
    };
    let starts = |p: &[&str]| p.iter().any(|p| msg.starts_with(p));
    let opened = |open, what: &str| match opened_on_line(text, span.start, open) {
        Some(line) => format!("{what} opened on line {line}"),
        None => what.to_string(),
    };
    let help = if msg.contains("array") {
        format!(
            "an array separates its elements with `,` and ends with `]`: \
             is the `]` of {} missing, or a `,`?",
            opened(b'[', "the array")
        )
    } else if starts(&[
        "missing comma between key-value pairs",
        "unclosed inline table",
    ]) {
        format!(
            "an inline table separates its pairs with `,` and ends with `}}` on the \
             line it starts: is the `}}` of {} missing, or a `,`?",
            opened(b'{', "the inline table")
        )
    } else if starts(&["unclosed table"]) {
        "a table header is a name in brackets on a line of its own, like `[filesystem]`".to_string()
    } else if starts(&[
        "invalid basic string",
        "invalid literal string",
        "invalid multi-line",
    ]) {
        "a string ends with the quote it starts with, on the same line \
         (only `\"\"\"` and `'''` strings span lines): is the closing quote missing?"
            .to_string()
    } else if starts(&["missing escaped value", "invalid escape"]) {
        "in a `\"...\"` string `\\` starts an escape such as `\\n`: write `\\\\` \
         for a backslash, or use a literal string `'...'`, which has no escapes"
            .to_string()
    } else if starts(&["duplicate"]) {
        "a key is set once per table, and a `[table]` header appears once: \
         remove or merge the repeat"
            .to_string()
    } else {
        "fix the TOML syntax; see https://toml.io".to_string()
    };
    Diagnostic::error(crate::diag::code::SPEC_TOML, format!("invalid TOML: {msg}"))
        .at(span)
        .help(help)
}

#[derive(Default)]
struct Cx {
    diags: Diagnostics,
}

/// Reads one table: remembers the keys it was asked for and reports the rest.
struct Table<'t, 'i> {
    path: &'t str,
    span: Span,
    /// Held in place up to a table of 16 keys (every table of the shipped
    /// specs): not an allocation a table.
    entries: smallvec::SmallVec<[Entry<'t, 'i>; 16]>,
}

/// A key of a table and its value.
type Entry<'t, 'i> = (&'t TSpanned<Cow<'i, str>>, &'t Val<'i>);

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn kind(v: &DeValue<'_>) -> &'static str {
    match v {
        DeValue::String(_) => "a string",
        DeValue::Integer(_) => "an integer",
        DeValue::Float(_) => "a float",
        DeValue::Boolean(_) => "a boolean",
        DeValue::Datetime(_) => "a datetime",
        DeValue::Array(_) => "an array",
        DeValue::Table(_) => "a table",
    }
}

impl<'t, 'i> Table<'t, 'i> {
    fn new(t: &'t DeTable<'i>, path: &'t str, span: Span) -> Self {
        Table {
            path,
            span,
            entries: t.iter().collect(),
        }
    }

    fn get(&self, key: &str) -> Option<&'t Val<'i>> {
        self.entries
            .iter()
            .find(|(k, _)| k.get_ref().as_ref() == key)
            .map(|(_, v)| *v)
    }

    /// Report every key not in `known`, with a suggestion.
    fn finish(&self, cx: &mut Cx, known: &[&str]) {
        for (k, _) in &self.entries {
            let key = k.get_ref().as_ref();
            if known.contains(&key) {
                continue;
            }
            let what = if self.path.is_empty() {
                format!("unknown key {}", quote(key))
            } else {
                format!("unknown key {} in `[{}]`", quote(key), self.path)
            };
            let mut d = Diagnostic::error(crate::diag::code::SPEC_UNKNOWN_KEY, what)
                .at(k.span())
                .label("not a key of this table");
            d = match did_you_mean(key, known.iter().copied()) {
                Some(s) => d.help(format!("did you mean `{s}`?")),
                None => d.help(format!("the keys here are: {}", known.join(", "))),
            };
            cx.push(d);
        }
    }

    fn missing(&self, cx: &mut Cx, key: &str, what: &str) {
        let where_ = if self.path.is_empty() {
            "the spec".to_string()
        } else {
            format!("`[{}]`", self.path)
        };
        cx.push(
            Diagnostic::error(
                crate::diag::code::SPEC_MISSING_KEY,
                format!("{where_} has no `{key}`"),
            )
            .at(self.span.clone())
            .help(format!("add `{key} = {what}`")),
        );
    }
}

impl Cx {
    fn push(&mut self, d: Diagnostic) {
        self.diags.push(d);
    }

    /// `path` is said only here: callers pass it unformatted
    /// (`format_args!`), so a value of the right type costs no text.
    fn type_error(&mut self, path: impl Display, v: &Val<'_>, expected: &str) {
        let mut d = Diagnostic::error(
            crate::diag::code::SPEC_TYPE,
            format!("`{path}` must be {expected}, found {}", kind(v.get_ref())),
        )
        .at(v.span())
        .label(format!("expected {expected}"));
        if let Some(e) = super::shape::example(&path.to_string()) {
            d = d.help(format!("write it like `{e}`"));
        }
        self.push(d);
    }

    fn string(&mut self, path: impl Display, v: &Val<'_>) -> Option<Spanned<String>> {
        match v.get_ref() {
            DeValue::String(s) => Some(Spanned::new(s.to_string(), v.span())),
            _ => {
                self.type_error(path, v, "a string");
                None
            }
        }
    }

    fn integer(&mut self, path: impl Display, v: &Val<'_>) -> Option<Spanned<i64>> {
        match v.get_ref() {
            DeValue::Integer(i) => match i64::from_str_radix(i.as_str(), i.radix()) {
                Ok(n) => Some(Spanned::new(n, v.span())),
                Err(_) => {
                    self.push(
                        Diagnostic::error(
                            crate::diag::code::SPEC_VALUE,
                            format!("`{path}` is out of range"),
                        )
                        .at(v.span()),
                    );
                    None
                }
            },
            _ => {
                self.type_error(path, v, "an integer");
                None
            }
        }
    }

    fn boolean(&mut self, path: impl Display, v: &Val<'_>) -> Option<Spanned<bool>> {
        match v.get_ref() {
            DeValue::Boolean(b) => Some(Spanned::new(*b, v.span())),
            _ => {
                self.type_error(path, v, "a boolean");
                None
            }
        }
    }

    fn table<'t, 'i>(&mut self, path: &'t str, v: &'t Val<'i>) -> Option<Table<'t, 'i>> {
        match v.get_ref() {
            DeValue::Table(t) => Some(Table::new(t, path, v.span())),
            _ => {
                self.type_error(path, v, "a table");
                None
            }
        }
    }

    fn array<'t, 'i>(
        &mut self,
        path: impl Display,
        v: &'t Val<'i>,
        expected: &str,
    ) -> Vec<&'t Val<'i>> {
        match v.get_ref() {
            DeValue::Array(a) => a.iter().collect(),
            _ => {
                self.type_error(path, v, expected);
                Vec::new()
            }
        }
    }

    fn strings(&mut self, path: impl Display, v: Option<&Val<'_>>) -> Vec<Spanned<String>> {
        let Some(v) = v else { return Vec::new() };
        let DeValue::Array(items) = v.get_ref() else {
            self.type_error(path, v, "an array of strings");
            return Vec::new();
        };
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            // The common case first, without building the item's path.
            match item.get_ref() {
                DeValue::String(s) => out.push(Spanned::new(s.to_string(), item.span())),
                _ => self.type_error(format_args!("{path}[{i}]"), item, "a string"),
            }
        }
        out
    }

    fn opt_string(&mut self, t: &Table<'_, '_>, key: &str) -> Option<Spanned<String>> {
        let v = t.get(key)?;
        match v.get_ref() {
            DeValue::String(s) => Some(Spanned::new(s.to_string(), v.span())),
            _ => self.string(join(t.path, key), v),
        }
    }

    fn enum_value<T: Copy>(
        &mut self,
        t: &Table<'_, '_>,
        key: &str,
        choices: &[(&str, T)],
    ) -> Option<Spanned<T>> {
        let v = t.get(key)?;
        // The common case, a string that is one of the choices, without
        // copying the string or building the key's path.
        if let DeValue::String(given) = v.get_ref() {
            if let Some((_, c)) = choices.iter().find(|(n, _)| *n == given.as_ref()) {
                return Some(Spanned::new(*c, v.span()));
            }
        }
        let path = join(t.path, key);
        let s = self.string(&path, v)?;
        if let Some((_, v)) = choices.iter().find(|(n, _)| *n == s.value) {
            return Some(Spanned::new(*v, s.span));
        }
        let names: Vec<&str> = choices.iter().map(|(n, _)| *n).collect();
        let mut d = Diagnostic::error(
            crate::diag::code::SPEC_VALUE,
            format!("`{path}` cannot be {}", quote(&s.value)),
        )
        .at(s.span)
        .label(format!("one of: {}", names.join(", ")));
        if let Some(m) = did_you_mean(&s.value, names.iter().copied()) {
            d = d.help(format!("did you mean `{m}`?"));
        } else {
            d = d.help(format!("use one of: {}", names.join(", ")));
        }
        self.push(d);
        None
    }

    fn spec(&mut self, doc: &DeTable<'_>, span: Span) -> Option<Spec> {
        let t = Table::new(doc, "", span.clone());
        t.finish(
            self,
            &[
                "version",
                "name",
                "description",
                "target",
                "vars",
                "filesystem",
                "launcher",
                "network",
                "env",
                "exec",
                "ipc",
                "limits",
                "codex",
                "assert",
            ],
        );
        let version = match t.get("version") {
            Some(v) => self.integer("version", v),
            None => {
                t.missing(self, "version", "1");
                None
            }
        };
        if let Some(v) = &version {
            if v.value != 1 {
                self.push(
                    Diagnostic::error(
                        crate::diag::code::SPEC_VERSION,
                        format!("spec version `{}` is not supported", v.value),
                    )
                    .at(v.span.clone())
                    .label("this sealc reads version 1")
                    .help("write `version = 1`"),
                );
            }
        }
        let name = match t.get("name") {
            Some(v) => self.string("name", v),
            None => {
                t.missing(self, "name", "\"my-seal\"");
                None
            }
        };
        if let Some(n) = &name {
            let ok = !n.value.is_empty()
                && n.value.len() <= 64
                && n.value
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.');
            if !ok {
                self.push(
                    Diagnostic::error(
                        crate::diag::code::SPEC_VALUE,
                        format!("seal name {} is not allowed", quote(&n.value)),
                    )
                    .at(n.span.clone())
                    .label("letters, digits, `-`, `_` and `.` only, 1 to 64 of them")
                    .help("a name such as `probe-rep`"),
                );
            }
        }
        let description = self.opt_string(&t, "description");
        let target = t.get("target").map(|v| self.target(v)).unwrap_or_default();
        let vars = t.get("vars").map(|v| self.vars(v)).unwrap_or_default();
        let filesystem = t
            .get("filesystem")
            .map(|v| self.filesystem(v))
            .unwrap_or_default();
        let launcher = t.get("launcher").and_then(|v| self.launcher(v));
        let network = t
            .get("network")
            .map(|v| self.network(v))
            .unwrap_or_default();
        let env = t.get("env").map(|v| self.env(v)).unwrap_or_default();
        let exec = t.get("exec").map(|v| self.exec(v)).unwrap_or_default();
        let ipc = t.get("ipc").map(|v| self.ipc(v)).unwrap_or_default();
        let limits = t.get("limits").map(|v| self.limits(v)).unwrap_or_default();
        let codex = t.get("codex").map(|v| self.codex(v)).unwrap_or_default();
        let asserts = t.get("assert").map(|v| self.asserts(v)).unwrap_or_default();
        Some(Spec {
            version: version?,
            name: name?,
            description,
            target,
            vars,
            filesystem,
            launcher,
            network,
            env,
            exec,
            ipc,
            limits,
            codex,
            asserts,
        })
    }
}

pub(crate) fn is_var_name(s: &str) -> bool {
    let mut b = s.bytes();
    matches!(b.next(), Some(c) if c.is_ascii_alphabetic() || c == b'_')
        && b.all(|c| c.is_ascii_alphanumeric() || c == b'_')
}
