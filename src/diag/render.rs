//! Diagnostics rendered for people: miette's graphical reports, each over an
//! excerpt of the spec built for it, and many findings of one kind grouped.
//!
//! The cost is what is printed, not the spec's size times the findings:
//! the spec's lines are indexed once ([`Lines`]), each report reads only
//! the few lines it shows, a line longer than [`MAX_LINE`] characters is
//! shown as a window around the label, and after [`SHOWN`] findings of one
//! code and severity the rest are counted on one line (the JSON output
//! lists every one). The text shown is the spec's, with control and bidi
//! characters made visible: a hostile spec cannot move the terminal's
//! cursor, colour it, or reorder what a reviewer reads.

use std::collections::BTreeMap;
use std::fmt;

use super::{quote, Diagnostic, Diagnostics, Severity, Span};

/// Findings of one code and severity rendered in full when there are more
/// than [`GROUP_OVER`] of them; the rest are counted.
pub const SHOWN: usize = 3;
/// More findings of one code and severity than this are grouped.
pub const GROUP_OVER: usize = 10;
/// A line longer than this many characters is shown as a window.
pub const MAX_LINE: usize = 160;
/// Characters of a window shown before the label, and after it.
const AROUND: usize = 40;
/// Characters of a long label shown.
const LABEL: usize = 60;
/// A span over more lines than this is labelled on its first line only.
const MAX_SPAN_LINES: usize = 8;
/// Hidden findings of a group named in its summary line.
const NAMED: usize = 3;

/// Where each line of a text starts, and how many characters precede
/// every 4 KiB block: a byte offset's line and column in O(log n + 4 KiB).
pub struct Lines<'a> {
    src: &'a str,
    starts: Vec<usize>,
    chars_before_block: Vec<usize>,
}

const BLOCK: usize = 4096;

impl<'a> Lines<'a> {
    pub fn new(src: &'a str) -> Self {
        let mut starts = vec![0];
        starts.extend(memchr::memchr_iter(b'\n', src.as_bytes()).map(|i| i + 1));
        let mut chars_before_block = Vec::with_capacity(src.len() / BLOCK + 1);
        let mut n = 0;
        for block in src.as_bytes().chunks(BLOCK) {
            chars_before_block.push(n);
            n += block.iter().filter(|b| !is_continuation(**b)).count();
        }
        chars_before_block.push(n);
        Lines {
            src,
            starts,
            chars_before_block,
        }
    }

    /// `at` clamped into the text, on a character boundary.
    pub fn clamp(&self, at: usize) -> usize {
        self.src.floor_char_boundary(at.min(self.src.len()))
    }

    /// The 0-based line holding byte `at`.
    fn line_of(&self, at: usize) -> usize {
        self.starts.partition_point(|s| *s <= at).saturating_sub(1)
    }

    /// Line `i`'s bytes, without its `\n` (or `\r\n`).
    fn line(&self, i: usize) -> Span {
        let start = self.starts[i];
        let mut end = self.starts.get(i + 1).map_or(self.src.len(), |s| s - 1);
        if self.src.as_bytes().get(end.wrapping_sub(1)) == Some(&b'\r') && end > start {
            end -= 1;
        }
        start..end
    }

    /// Characters in the text before byte `at` (a character boundary).
    fn chars_before(&self, at: usize) -> usize {
        let block = at / BLOCK;
        self.chars_before_block[block]
            + self.src.as_bytes()[block * BLOCK..at]
                .iter()
                .filter(|b| !is_continuation(**b))
                .count()
    }

    /// 1-based line and column (in characters) of byte `at`.
    pub fn line_col(&self, at: usize) -> (usize, usize) {
        let at = self.clamp(at);
        let line = self.line_of(at);
        let col = self.chars_before(at) - self.chars_before(self.starts[line]);
        (line + 1, col + 1)
    }
}

fn is_continuation(b: u8) -> bool {
    b & 0xC0 == 0x80
}

/// A character as shown in a snippet: control characters as their Unicode
/// pictures, bidi controls and the C1 range as U+FFFD; tabs stay (miette
/// expands them).
fn shown(c: char) -> char {
    match c {
        '\t' => c,
        '\u{0}'..='\u{1f}' => char::from_u32(0x2400 + c as u32).unwrap_or('\u{fffd}'),
        '\u{7f}' => '\u{2421}',
        '\u{80}'..='\u{9f}' => '\u{fffd}',
        c if super::is_bidi(c) => '\u{fffd}',
        c => c,
    }
}

fn push_shown(out: &mut String, s: &str) {
    out.extend(s.chars().map(shown));
}

/// The first `n` characters of `s` (all of it when shorter), and whether
/// any were left.
fn head(s: &str, n: usize) -> (&str, bool) {
    match s.char_indices().nth(n) {
        Some((i, _)) => (&s[..i], true),
        None => (s, false),
    }
}

/// The last `n` characters of `s`, and whether any were left.
fn tail(s: &str, n: usize) -> (&str, bool) {
    if n == 0 {
        return ("", !s.is_empty());
    }
    match s.char_indices().rev().nth(n - 1) {
        Some((i, _)) => (&s[i..], i > 0),
        None => (s, false),
    }
}

/// What one report shows of the spec: a few lines, each short, with the
/// label's place in them and its real line and column.
struct Excerpt {
    name: String,
    text: String,
    /// 0-based line number of `text`'s first line.
    first_line: usize,
    line_count: usize,
    label: Span,
    /// 0-based line and column (characters) of the label in the spec.
    at: (usize, usize),
}

impl Excerpt {
    fn new(lines: &Lines<'_>, name: &str, span: &Span) -> Excerpt {
        let src = lines.src;
        let start = lines.clamp(span.start);
        let mut end = lines.clamp(span.end.max(start));
        let l0 = lines.line_of(start);
        // The last line the span covers (a span ending just after a newline
        // ends on the line before it).
        let mut l1 = lines.line_of(end.saturating_sub(1).max(start));
        let long = |i: usize| {
            let r = lines.line(i);
            src[r].chars().nth(MAX_LINE).is_some()
        };
        if l1 > l0 && (l1 - l0 >= MAX_SPAN_LINES || (l0..=l1).any(long)) {
            end = lines.line(l0).end.max(start);
            l1 = l0;
        }
        let (line, col) = lines.line_col(start);
        let mut text = String::new();
        let mut label = 0..0;
        // One line of context on either side, unless it is long.
        let first = if l0 > 0 && !long(l0 - 1) { l0 - 1 } else { l0 };
        let last = if l1 + 1 < lines.starts.len() && !long(l1 + 1) {
            l1 + 1
        } else {
            l1
        };
        for i in first..=last {
            if i > first {
                text.push('\n');
            }
            let r = lines.line(i);
            let s = &src[r.clone()];
            if i == l0 && l0 == l1 && long(i) {
                // A window around the label.
                let a = start.clamp(r.start, r.end) - r.start;
                let b = end.clamp(r.start, r.end) - r.start;
                let (before, cut_before) = tail(&s[..a], AROUND);
                let (lab, cut_lab) = head(&s[a..b], LABEL);
                if cut_before {
                    text.push('…');
                }
                push_shown(&mut text, before);
                label.start = text.len();
                push_shown(&mut text, lab);
                if cut_lab {
                    text.push('…');
                    label.end = text.len();
                } else {
                    label.end = text.len();
                    let (after, cut_after) = head(&s[b..], AROUND);
                    push_shown(&mut text, after);
                    if cut_after {
                        text.push('…');
                    }
                }
                continue;
            }
            // The offset in `text` of spec byte `x` on this line.
            let base = text.len();
            let at = |x: usize| {
                base + s[..x - r.start]
                    .chars()
                    .map(|c| shown(c).len_utf8())
                    .sum::<usize>()
            };
            if i == l0 {
                label.start = at(start.clamp(r.start, r.end));
            }
            if i == l1 {
                label.end = at(end.clamp(r.start, r.end));
            }
            push_shown(&mut text, s);
        }
        if label.end < label.start {
            label.end = label.start;
        }
        Excerpt {
            name: name.to_string(),
            line_count: last - first + 1,
            text,
            first_line: first,
            label,
            at: (line - 1, col - 1),
        }
    }
}

impl miette::SourceCode for Excerpt {
    fn read_span<'a>(
        &'a self,
        span: &miette::SourceSpan,
        before: usize,
        after: usize,
    ) -> Result<Box<dyn miette::SpanContents<'a> + 'a>, miette::MietteError> {
        if before == 0 && after == 0 {
            // Where the report's header points: the label, at its real
            // line and column.
            let r = span.offset().min(self.text.len())
                ..(span.offset() + span.len()).min(self.text.len());
            return Ok(Box::new(miette::MietteSpanContents::new_named(
                self.name.clone(),
                self.text.as_bytes().get(r.clone()).unwrap_or_default(),
                (r.start, r.len()).into(),
                self.at.0,
                self.at.1,
                1,
            )));
        }
        Ok(Box::new(miette::MietteSpanContents::new_named(
            self.name.clone(),
            self.text.as_bytes(),
            (0, self.text.len()).into(),
            self.first_line,
            0,
            self.line_count,
        )))
    }
}

/// One diagnostic over its excerpt, as miette renders it.
struct Shown<'a> {
    d: &'a Diagnostic,
    excerpt: Option<Excerpt>,
    /// [`Render::all_in`].
    all_in: Option<&'a str>,
}

impl fmt::Debug for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.d, f)
    }
}

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&plain(&self.d.message, self.all_in))
    }
}

/// Characters of a message or help shown; a longer one (a finding that
/// names every root of a big spec) is cut, and says where it is whole.
pub const MAX_MESSAGE: usize = 1_200;

/// [`plain_whole`], cut at [`MAX_MESSAGE`] characters; the cut names
/// `all_in`, where the whole text is, if the command has one.
fn plain<'s>(s: &'s str, all_in: Option<&str>) -> std::borrow::Cow<'s, str> {
    match s.char_indices().nth(MAX_MESSAGE) {
        None => plain_whole(s),
        Some((at, _)) => {
            let rest = thousands(s[at..].chars().count());
            let whole = match all_in {
                Some(all_in) => format!("{rest} more characters: {all_in} gives it whole"),
                None => format!("{rest} more characters not shown"),
            };
            format!("{}… ({whole})", plain_whole(&s[..at])).into()
        }
    }
}

/// A message or help as printed: whatever a library or a value put in it,
/// no control character but a line break, and no bidi control, reaches the
/// terminal.
fn plain_whole(s: &str) -> std::borrow::Cow<'_, str> {
    let hidden = |c: char| (c.is_control() && c != '\n') || super::is_bidi(c);
    if !s.chars().any(hidden) {
        return s.into();
    }
    s.chars()
        .map(|c| {
            if hidden(c) {
                format!("\\u{{{:x}}}", c as u32)
            } else {
                c.to_string()
            }
        })
        .collect::<String>()
        .into()
}

impl std::error::Error for Shown<'_> {}

impl miette::Diagnostic for Shown<'_> {
    fn code<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
        miette::Diagnostic::code(self.d)
    }

    fn severity(&self) -> Option<miette::Severity> {
        miette::Diagnostic::severity(self.d)
    }

    fn help<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
        let help = self.d.help.as_deref()?;
        Some(Box::new(plain(help, self.all_in)))
    }

    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        self.excerpt.as_ref().map(|e| e as &dyn miette::SourceCode)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = miette::LabeledSpan> + '_>> {
        let e = self.excerpt.as_ref()?;
        let label = miette::LabeledSpan::new_with_span(
            self.d.label.as_deref().map(str::to_string),
            e.label.clone(),
        );
        Some(Box::new(std::iter::once(label)))
    }
}

/// The width diagnostics are rendered to; miette wraps messages and helps
/// to two columns less.
const WIDTH: usize = 100;
/// Columns before a message's first line (`  × `) and a help's (`  help: `).
const MESSAGE_INDENT: usize = 4;
const HELP_INDENT: usize = 8;

/// Whether textwrap would print `text` as it is, each line behind the
/// indent: every line printable ASCII (one column a byte), with no space at
/// either end, and short enough to fit.
fn fits(text: &str, indent: usize) -> bool {
    !text.is_empty()
        && text.split('\n').all(|line| {
            !line.is_empty()
                && line.len() + indent <= WIDTH - 2
                && line.bytes().all(|b| b.is_ascii_graphic() || b == b' ')
                && !line.starts_with(' ')
                && !line.ends_with(' ')
        })
}

/// How diagnostics are rendered.
pub struct Render<'a> {
    pub file: &'a str,
    pub src: &'a str,
    pub color: bool,
    /// Where every finding of a group can be seen (`--format json`), named
    /// on the group's summary line.
    pub all_in: Option<&'a str>,
}

impl Render<'_> {
    /// Every diagnostic in full, but for a code and severity with more
    /// than [`GROUP_OVER`]: its first [`SHOWN`], then one report that
    /// counts the rest.
    pub fn render(&self, diags: &Diagnostics) -> String {
        let theme = if self.color {
            miette::GraphicalTheme::unicode()
        } else {
            miette::GraphicalTheme::unicode_nocolor()
        };
        let handler = miette::GraphicalReportHandler::new_themed(theme)
            .with_width(WIDTH)
            .with_links(false);
        // The same handler without textwrap: it prints each line as it is,
        // which is what wrapping prints for lines that fit (`fits`; a
        // property test holds the two to the same bytes). Wrapping was a
        // fifth of a compile's own time on a spec with a few warnings.
        let straight = handler.clone().with_wrap_lines(false);
        let pick = |shown: &Shown<'_>| {
            let help_fits = shown
                .d
                .help
                .as_deref()
                .is_none_or(|h| fits(&plain(h, shown.all_in), HELP_INDENT));
            if help_fits && fits(&shown.to_string(), MESSAGE_INDENT) {
                &straight
            } else {
                &handler
            }
        };
        let lines = Lines::new(self.src);
        let mut count: BTreeMap<(&str, Severity), usize> = BTreeMap::new();
        for d in &diags.0 {
            *count.entry((d.code, d.severity)).or_insert(0) += 1;
        }
        let mut seen: BTreeMap<(&str, Severity), usize> = BTreeMap::new();
        let mut hidden: Vec<((&str, Severity), Vec<&Diagnostic>)> = Vec::new();
        let mut s = String::new();
        for d in &diags.0 {
            let key = (d.code, d.severity);
            let n = seen.entry(key).or_insert(0);
            *n += 1;
            if *n > SHOWN && count[&key] > GROUP_OVER {
                match hidden.iter_mut().find(|(k, _)| *k == key) {
                    Some((_, v)) => v.push(d),
                    None => hidden.push((key, vec![d])),
                }
                continue;
            }
            let excerpt = d
                .span
                .as_ref()
                .filter(|_| !self.src.is_empty())
                .map(|span| Excerpt::new(&lines, self.file, span));
            let all_in = self.all_in;
            let shown = Shown { d, excerpt, all_in };
            let _ = pick(&shown).render_report(&mut s, &shown);
        }
        for ((code, severity), ds) in hidden {
            let summary = self.summary(&lines, code, severity, &ds);
            let shown = Shown {
                d: &summary,
                excerpt: None,
                all_in: self.all_in,
            };
            let _ = pick(&shown).render_report(&mut s, &shown);
        }
        s
    }

    /// One diagnostic that counts a group's hidden findings and names the
    /// first few by where they are and what is there.
    fn summary(
        &self,
        lines: &Lines<'_>,
        code: &'static str,
        severity: Severity,
        ds: &[&Diagnostic],
    ) -> Diagnostic {
        let plural = ds.len() > 1;
        let kind = match severity {
            Severity::Error if plural => "errors",
            Severity::Error => "error",
            Severity::Warning if plural => "warnings",
            Severity::Warning => "warning",
            Severity::Advice => "advice",
        };
        let named: Vec<String> = ds
            .iter()
            .take(NAMED)
            .map(|d| match &d.span {
                Some(span) if !self.src.is_empty() => {
                    let (line, col) = lines.line_col(span.start);
                    let a = lines.clamp(span.start);
                    let b = lines.clamp(span.end.max(a));
                    let first_line = self.src[a..b].split('\n').next().unwrap_or("");
                    format!("{line}:{col} {}", quote(first_line))
                }
                _ => quote(&d.message),
            })
            .collect();
        let more = ds.len().saturating_sub(NAMED);
        let mut message = format!(
            "{} more {kind} like {} above, not shown: {}",
            thousands(ds.len()),
            if SHOWN == 1 { "the one" } else { "those" },
            named.join(", ")
        );
        if more > 0 {
            message.push_str(&format!(", and {} more", thousands(more)));
        }
        let d = Diagnostic {
            code,
            severity,
            message,
            span: None,
            label: None,
            help: None,
        };
        match self.all_in {
            Some(all_in) => d.help(format!("{all_in} lists every one")),
            None => d,
        }
    }
}

/// `n` with a `,` between each group of three digits.
pub fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_counts_characters() {
        let l = Lines::new("ab\ncd");
        assert_eq!(l.line_col(0), (1, 1));
        assert_eq!(l.line_col(4), (2, 2));
        assert_eq!(Lines::new("é\nx").line_col(3), (2, 1));
        assert_eq!(Lines::new("é\nx").line_col(1), (1, 1));
        assert_eq!(Lines::new("").line_col(7), (1, 1));
        let long = "é".repeat(5000) + "\nx";
        assert_eq!(Lines::new(&long).line_col(10_000), (1, 5001));
        assert_eq!(Lines::new(&long).line_col(10_001), (2, 1));
    }

    #[test]
    fn head_and_tail() {
        assert_eq!(head("abc", 2), ("ab", true));
        assert_eq!(head("abc", 3), ("abc", false));
        assert_eq!(tail("abc", 2), ("bc", true));
        assert_eq!(tail("abc", 3), ("abc", false));
        assert_eq!(tail("abc", 0), ("", true));
        assert_eq!(tail("", 0), ("", false));
    }

    /// Both handlers of [`Render::render`] on one diagnostic.
    fn both(message: &str, help: &str, color: bool) -> (String, String) {
        let theme = if color {
            miette::GraphicalTheme::unicode()
        } else {
            miette::GraphicalTheme::unicode_nocolor()
        };
        let wrapping = miette::GraphicalReportHandler::new_themed(theme)
            .with_width(WIDTH)
            .with_links(false);
        let straight = wrapping.clone().with_wrap_lines(false);
        let d = Diagnostic::warning(crate::diag::code::ROOT_ABSENT, message.to_string())
            .help(help.to_string());
        let shown = Shown {
            d: &d,
            excerpt: None,
            all_in: None,
        };
        let (mut a, mut b) = (String::new(), String::new());
        let _ = wrapping.render_report(&mut a, &shown);
        let _ = straight.render_report(&mut b, &shown);
        (a, b)
    }

    #[test]
    fn a_line_that_fits_is_printed_as_wrapping_prints_it() {
        for n in [1, 60, 93, 94] {
            let m = "m".repeat(n);
            let (a, b) = both(&m, &"h".repeat(n.saturating_sub(4).max(1)), false);
            assert!(fits(&m, MESSAGE_INDENT));
            assert_eq!(a, b, "{n}");
        }
        // One more column and wrapping breaks it; `fits` says so.
        let m = format!("{} {}", "m".repeat(60), "m".repeat(34));
        assert!(!fits(&m, MESSAGE_INDENT));
        let (a, b) = both(&m, "h", false);
        assert_ne!(a, b);
    }

    proptest::proptest! {
        #[test]
        fn fits_means_wrapping_changes_nothing(
            message in "[a-z `/.-]{1,40}(\n[a-z `/.-]{1,30})?[a-z]{0,70}",
            help in "[a-z `/.-]{1,50}[a-z ]{0,50}",
            color: bool,
        ) {
            let (a, b) = both(&message, &help, color);
            if fits(&message, MESSAGE_INDENT) && fits(&help, HELP_INDENT) {
                proptest::prop_assert_eq!(a, b);
            }
        }
    }

    #[test]
    fn thousands_groups() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(9_997), "9,997");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }
}
