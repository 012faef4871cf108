//! Diagnostics: one type for every problem sealc reports, with a stable code,
//! a lowercase message, an optional span into the spec text and a help line.
//!
//! The table [`CODES`] is the catalogue of every code sealc can emit. A code is
//! part of the interface: harnesses match on it, so codes are never reused.

use std::borrow::Cow;
use std::fmt::{self, Write as _};
use std::ops::Range;

pub mod code;
mod codes;
mod render;

pub use render::{thousands, Lines, Render, GROUP_OVER, MAX_LINE, SHOWN};

/// A byte range into the spec text.
pub type Span = Range<usize>;

/// How bad a diagnostic is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Advice,
    Warning,
    Error,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Advice => "advice",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

pub use codes::CODES;

/// One problem, with everything needed to render it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub code: &'static str,
    pub severity: Severity,
    pub message: String,
    pub span: Option<Span>,
    /// Most labels and helps are fixed text: borrowed, not copied into
    /// each of 10,000 diagnostics of one kind.
    pub label: Option<Cow<'static, str>>,
    pub help: Option<Cow<'static, str>>,
}

impl Diagnostic {
    pub fn error(code: &'static str, message: impl Into<String>) -> Self {
        debug_assert!(
            CODES.iter().any(|(c, _, _)| *c == code),
            "unlisted code {code}"
        );
        Diagnostic {
            code,
            severity: Severity::Error,
            message: message.into(),
            span: None,
            label: None,
            help: None,
        }
    }

    pub fn warning(code: &'static str, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::error(code, message)
        }
    }

    pub fn advice(code: &'static str, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Advice,
            ..Diagnostic::error(code, message)
        }
    }

    pub fn at(mut self, span: Span) -> Self {
        self.span = Some(span);
        self
    }

    pub fn at_opt(mut self, span: Option<Span>) -> Self {
        self.span = span;
        self
    }

    pub fn label(mut self, label: impl Into<Cow<'static, str>>) -> Self {
        self.label = Some(label.into());
        self
    }

    pub fn help(mut self, help: impl Into<Cow<'static, str>>) -> Self {
        self.help = Some(help.into());
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Diagnostic {}

impl miette::Diagnostic for Diagnostic {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        Some(Box::new(self.code))
    }

    fn severity(&self) -> Option<miette::Severity> {
        Some(match self.severity {
            Severity::Advice => miette::Severity::Advice,
            Severity::Warning => miette::Severity::Warning,
            Severity::Error => miette::Severity::Error,
        })
    }

    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.help
            .as_ref()
            .map(|h| Box::new(h) as Box<dyn fmt::Display + 'a>)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = miette::LabeledSpan> + '_>> {
        let span = self.span.clone()?;
        let label =
            miette::LabeledSpan::new_with_span(self.label.as_deref().map(str::to_string), span);
        Some(Box::new(std::iter::once(label)))
    }
}

/// `docs/diagnostics.md`, generated from [`CODES`].
pub fn catalogue() -> String {
    let mut out = String::from(
        "# sealc diagnostics\n\nEvery code sealc reports, with what it means and an example that raises it. \
         Generated from `CODES` in `src/diag/codes.rs`; a test fails when this file is stale \
         (`SEALC_BLESS=1 cargo test --test catalogue` rewrites it).\n",
    );
    let mut section = "";
    for (code, desc, example) in CODES {
        let group = code.split("::").nth(1).unwrap_or("");
        if group != section {
            section = group;
            out.push_str(&format!("\n## `{group}`\n"));
        }
        out.push_str(&format!(
            "\n### `{code}`\n\n{desc}.\n\n```toml\n{example}\n```\n"
        ));
    }
    out
}

/// A non-empty list of diagnostics: every problem found, not just the first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl Diagnostics {
    pub fn push(&mut self, d: Diagnostic) {
        self.0.push(d);
    }

    pub fn has_errors(&self) -> bool {
        self.0.iter().any(Diagnostic::is_error)
    }

    pub fn extend(&mut self, other: Diagnostics) {
        self.0.extend(other.0);
    }

    /// Sorted by position (unspanned last), then code, so output is stable.
    pub fn sorted(mut self) -> Self {
        self.0.sort_by(|a, b| {
            let ka = a
                .span
                .as_ref()
                .map_or((usize::MAX, usize::MAX), |s| (s.start, s.end));
            let kb = b
                .span
                .as_ref()
                .map_or((usize::MAX, usize::MAX), |s| (s.start, s.end));
            ka.cmp(&kb)
                .then(a.code.cmp(b.code))
                .then(a.message.cmp(&b.message))
        });
        self.0.dedup();
        self
    }
}

impl From<Diagnostic> for Diagnostics {
    fn from(d: Diagnostic) -> Self {
        Diagnostics(vec![d])
    }
}

/// The candidate closest to `word`, when it is close enough to be a likely typo.
pub fn did_you_mean<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    // Case is compared last: `HOME` is one edit from nothing but `home`.
    let lower = word.to_lowercase();
    let mut best: Option<((usize, usize), &str)> = None;
    for c in candidates {
        let folded = levenshtein(&lower, &c.to_lowercase());
        let limit = (c.len().max(word.len()) / 3).max(1);
        let d = (folded, levenshtein(word, c));
        if folded <= limit && best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, c));
        }
    }
    best.map(|(_, c)| c)
}

/// Optimal string alignment distance: edits, with a swap of two neighbours
/// counted as one (the commonest typo).
fn levenshtein(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let w = b.len() + 1;
    let mut d = vec![0usize; (a.len() + 1) * w];
    for i in 0..=a.len() {
        d[i * w] = i;
    }
    for (j, cell) in d.iter_mut().enumerate().take(w) {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[(i - 1) * w + j] + 1)
                .min(d[i * w + j - 1] + 1)
                .min(d[(i - 1) * w + j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[(i - 2) * w + j - 2] + 1);
            }
            d[i * w + j] = v;
        }
    }
    d[a.len() * w + b.len()]
}

/// Messages are lowercase: the first letter of a library's message, lowered.
pub fn lowercase_first(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_lowercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

/// Render text for a diagnostic message: user input is shown in backticks, with
/// control characters made visible so a message never spans lines it should not.
/// Long values are shortened in the middle.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    push_quote(s, &mut out);
    out
}

/// [`quote`], appended to `out`.
pub fn push_quote(s: &str, out: &mut String) {
    if s.len() <= 100 && is_plain(s) {
        // Printable ASCII, short: as it is (the common case, kept cheap for
        // a spec with ten thousand roots).
        out.push('`');
        out.push_str(s);
        out.push('`');
        return;
    }
    let v = visible(s);
    let chars: Vec<char> = v.chars().collect();
    if chars.len() > 100 {
        let head: String = chars[..60].iter().collect();
        let tail: String = chars[chars.len() - 20..].iter().collect();
        let _ = write!(out, "`{head}…{tail}` ({} bytes)", s.len());
        return;
    }
    out.push('`');
    out.push_str(&v);
    out.push('`');
}

/// Control characters escaped so the text stays on one line.
pub fn visible(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    push_visible(s, &mut out);
    out
}

/// [`visible`], appended to `out`.
pub fn push_visible(s: &str, out: &mut String) {
    let hidden = |c: char| c.is_control() || is_bidi(c);
    if is_plain(s) || !s.chars().any(hidden) {
        out.push_str(s);
        return;
    }
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if hidden(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
}

/// Printable ASCII only: nothing [`visible`] would escape. Every byte
/// looked at without a branch, which the compiler does many at a time.
fn is_plain(s: &str) -> bool {
    s.bytes().fold(true, |ok, b| ok & (0x20..0x7f).contains(&b))
}

/// A character that reorders the text around it (the bidi embeddings,
/// overrides, isolates and marks): shown escaped, so a value cannot make a
/// message read as something else.
pub fn is_bidi(c: char) -> bool {
    matches!(
        c,
        '\u{61c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
    )
}

/// Render diagnostics as miette reports, without colour, so output is stable.
pub fn render(diags: &Diagnostics, file: &str, src: &str) -> String {
    render_in(diags, file, src, false)
}

/// [`render`], in colour when `color` (a terminal that wants it).
pub fn render_in(diags: &Diagnostics, file: &str, src: &str, color: bool) -> String {
    Render {
        file,
        src,
        color,
        all_in: None,
    }
    .render(diags)
}

/// One shell word for `s`: as it is when it needs no quoting, otherwise in
/// single quotes (a `'` inside written `'\''`).
pub fn shell_word(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "@%+=:,./_-".contains(c));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique() {
        let mut seen = std::collections::BTreeSet::new();
        for (code, _, _) in CODES {
            assert!(seen.insert(*code), "duplicate code {code}");
            assert!(code.starts_with("sealc::"));
        }
    }

    #[test]
    fn suggestions() {
        assert_eq!(
            did_you_mean("deny_raed", ["deny_read", "allow_read"]),
            Some("deny_read")
        );
        assert_eq!(did_you_mean("zzz", ["deny_read", "allow_read"]), None);
        assert_eq!(did_you_mean("hoem", ["home", "run"]), Some("home"));
        assert_eq!(did_you_mean("xhihg", ["high", "xhigh"]), Some("xhigh"));
        assert_eq!(did_you_mean("HOME", ["home", "run"]), Some("home"));
        assert_eq!(did_you_mean("Home", ["home", "HOME"]), Some("home"));
        assert_eq!(
            did_you_mean("CODEX_HOME", ["codex_home", "home"]),
            Some("codex_home")
        );
    }

    #[test]
    fn visible_escapes_controls() {
        assert_eq!(visible("a\nb\u{0}"), "a\\nb\\u{0}");
        assert_eq!(visible("a\u{202e}b\u{2066}"), "a\\u{202e}b\\u{2066}");
    }
}
