//! The SBPL reader: `grammar/sbpl.pest` → an AST with spans, and a printer.
//!
//! Atoms keep their raw text, so printing a profile writes every string,
//! number and symbol exactly as it was read; the text between top-level
//! forms (comments, blank lines) is kept too, so sealc's own profiles round
//! trip byte for byte.

use std::ops::Range;

use pest::Parser as _;
use pest_derive::Parser;

#[derive(Parser)]
#[grammar = "../grammar/sbpl.pest"]
struct SbplParser;

/// How a quoted form was written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QuoteKind {
    Quote,
    Quasiquote,
    Unquote,
    UnquoteSplicing,
}

impl QuoteKind {
    fn mark(self) -> &'static str {
        match self {
            QuoteKind::Quote => "'",
            QuoteKind::Quasiquote => "`",
            QuoteKind::Unquote => ",",
            QuoteKind::UnquoteSplicing => ",@",
        }
    }
}

/// One S-expression.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Node {
    List {
        items: Vec<Expr>,
        tail: Option<Box<Expr>>,
    },
    Symbol(String),
    /// A `"..."` string: the raw text between the quotes, and its value.
    Str {
        raw: String,
        value: String,
    },
    /// A `#"..."` string: no escapes.
    RawStr(String),
    /// A number as written (`42`, `#x2a`, `#o52`) and its value.
    Int {
        raw: String,
        value: i64,
    },
    Bool(bool),
    Char(String),
    Quoted {
        kind: QuoteKind,
        inner: Box<Expr>,
    },
}

/// An S-expression with its byte span and 1-based line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expr {
    pub node: Node,
    pub span: Range<usize>,
    pub line: usize,
}

impl Expr {
    pub fn symbol(&self) -> Option<&str> {
        match &self.node {
            Node::Symbol(s) => Some(s),
            _ => None,
        }
    }
    pub fn list(&self) -> Option<&[Expr]> {
        match &self.node {
            Node::List { items, tail: None } => Some(items),
            _ => None,
        }
    }
    /// The value of a string of either kind.
    pub fn string(&self) -> Option<&str> {
        match &self.node {
            Node::Str { value, .. } => Some(value),
            Node::RawStr(s) => Some(s),
            _ => None,
        }
    }
}

/// A parsed profile: top-level forms and the text around them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Profile {
    pub forms: Vec<Expr>,
    /// `trivia[i]` is the text before `forms[i]`; the last entry follows the last form.
    pub trivia: Vec<String>,
}

/// A syntax error, with its 1-based position.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyntaxError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl std::fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "line {}, column {}: {}",
            self.line, self.column, self.message
        )
    }
}

/// Parse profile text.
pub fn parse(src: &str) -> Result<Profile, SyntaxError> {
    if let Some(at) = too_deep(src) {
        let line = src[..at].matches('\n').count() + 1;
        let column = at - src[..at].rfind('\n').map_or(0, |n| n + 1) + 1;
        return Err(SyntaxError {
            line,
            column,
            message: format!("lists nest deeper than {MAX_DEPTH}"),
        });
    }
    let mut pairs = SbplParser::parse(Rule::file, src).map_err(|e| {
        let (line, column) = match e.line_col {
            pest::error::LineColLocation::Pos(p) | pest::error::LineColLocation::Span(p, _) => p,
        };
        let message = match &e.variant {
            pest::error::ErrorVariant::ParsingError { positives, .. }
                if positives.contains(&Rule::datum) || positives.is_empty() =>
            {
                "unbalanced parentheses or an unreadable datum".to_string()
            }
            pest::error::ErrorVariant::ParsingError { positives, .. } => {
                let names: Vec<String> = positives
                    .iter()
                    .map(|r| format!("{r:?}").replace('_', " "))
                    .collect();
                format!("expected {}", names.join(" or "))
            }
            pest::error::ErrorVariant::CustomError { message } => message.clone(),
        };
        SyntaxError {
            line,
            column,
            message,
        }
    })?;
    let file = pairs.next().ok_or(SyntaxError {
        line: 1,
        column: 1,
        message: "empty input".into(),
    })?;
    // Line starts, so each node's line is a binary search rather than a scan
    // from the start of the text (pest's `line_col` is linear).
    let lines: Vec<usize> = std::iter::once(0)
        .chain(src.match_indices('\n').map(|(i, _)| i + 1))
        .collect();
    let mut forms = Vec::new();
    for p in file.into_inner().filter(|p| !is_comment(p.as_rule())) {
        if p.as_rule() == Rule::EOI {
            break;
        }
        forms.push(build(p, &lines)?);
    }
    let mut trivia = Vec::with_capacity(forms.len() + 1);
    let mut at = 0;
    for f in &forms {
        trivia.push(src[at..f.span.start].to_string());
        at = f.span.end;
    }
    trivia.push(src[at..].to_string());
    Ok(Profile { forms, trivia })
}

fn is_comment(r: Rule) -> bool {
    matches!(r, Rule::line_comment | Rule::block_comment | Rule::shebang)
}

/// The deepest nesting read: deeper input is refused rather than risk the
/// stack (the reader, printer and evaluator recurse).
pub const MAX_DEPTH: usize = 256;

/// The first position where lists nest deeper than [`MAX_DEPTH`], skipping
/// strings and comments.
fn too_deep(src: &str) -> Option<usize> {
    let b = src.as_bytes();
    let (mut i, mut depth) = (0, 0usize);
    while i < b.len() {
        match b[i] {
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
            }
            b';' => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'(' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Some(i);
                }
            }
            b')' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    None
}

fn build(p: pest::iterators::Pair<'_, Rule>, lines: &[usize]) -> Result<Expr, SyntaxError> {
    let span = p.as_span().start()..p.as_span().end();
    let line = lines.partition_point(|&s| s <= span.start);
    let column = span.start - lines[line - 1] + 1;
    let err = |message: String| SyntaxError {
        line,
        column,
        message,
    };
    let node = match p.as_rule() {
        Rule::list => {
            let mut items = Vec::new();
            let mut tail = None;
            let mut inner = p
                .into_inner()
                .filter(|p| !is_comment(p.as_rule()))
                .peekable();
            while let Some(q) = inner.next() {
                if q.as_rule() == Rule::dot {
                    let t = inner
                        .next()
                        .ok_or_else(|| err("a dot with nothing after it".into()))?;
                    tail = Some(Box::new(build(t, lines)?));
                } else {
                    items.push(build(q, lines)?);
                }
            }
            Node::List { items, tail }
        }
        Rule::quoted => {
            let mut inner = p.into_inner();
            let mark = inner
                .next()
                .map(|m| m.as_str().to_string())
                .unwrap_or_default();
            let kind = match mark.as_str() {
                "'" => QuoteKind::Quote,
                "`" => QuoteKind::Quasiquote,
                ",@" => QuoteKind::UnquoteSplicing,
                _ => QuoteKind::Unquote,
            };
            let d = inner
                .next()
                .ok_or_else(|| err("a quote with nothing after it".into()))?;
            Node::Quoted {
                kind,
                inner: Box::new(build(d, lines)?),
            }
        }
        Rule::string => {
            let raw = p
                .into_inner()
                .next()
                .map(|i| i.as_str().to_string())
                .unwrap_or_default();
            let value = unescape(&raw);
            Node::Str { raw, value }
        }
        Rule::raw_string => Node::RawStr(
            p.into_inner()
                .next()
                .map(|i| i.as_str().to_string())
                .unwrap_or_default(),
        ),
        Rule::boolean => Node::Bool(p.as_str() == "#t"),
        Rule::number => {
            let raw = p.as_str().to_string();
            let value = if let Some(h) = raw.strip_prefix("#x") {
                i64::from_str_radix(h, 16)
            } else if let Some(o) = raw.strip_prefix("#o") {
                i64::from_str_radix(o, 8)
            } else {
                raw.parse()
            }
            .map_err(|_| err(format!("number `{raw}` is out of range")))?;
            Node::Int { raw, value }
        }
        Rule::char_lit => Node::Char(p.as_str().to_string()),
        Rule::symbol => Node::Symbol(p.as_str().to_string()),
        r => return Err(err(format!("unexpected {r:?}"))),
    };
    Ok(Expr { node, span, line })
}

/// TinyScheme string escapes: `\n \t \r \" \\`, `\xHH` (two hex digits),
/// `\ooo` octal; any other `\c` reads as `c`.
pub fn unescape(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('x') => {
                let h: String = chars.by_ref().take(2).collect();
                match u8::from_str_radix(&h, 16) {
                    Ok(b) => out.push(char::from(b)),
                    Err(_) => out.push_str(&h),
                }
            }
            Some(d @ '0'..='7') => {
                let mut v = d.to_digit(8).unwrap_or(0);
                for _ in 0..2 {
                    match chars.peek().and_then(|c| c.to_digit(8)) {
                        Some(n) => {
                            v = v * 8 + n;
                            chars.next();
                        }
                        None => break,
                    }
                }
                out.push(char::from_u32(v).unwrap_or('\u{fffd}'));
            }
            Some(other) => out.push(other),
            None => {}
        }
    }
    out
}

/// Print one expression in canonical form: single spaces, atoms as written.
pub fn print_expr(e: &Expr, out: &mut String) {
    match &e.node {
        Node::List { items, tail } => {
            out.push('(');
            for (i, it) in items.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                print_expr(it, out);
            }
            if let Some(t) = tail {
                out.push_str(" . ");
                print_expr(t, out);
            }
            out.push(')');
        }
        Node::Symbol(s) | Node::Char(s) => out.push_str(s),
        Node::Str { raw, .. } => {
            out.push('"');
            out.push_str(raw);
            out.push('"');
        }
        Node::RawStr(s) => {
            out.push_str("#\"");
            out.push_str(s);
            out.push('"');
        }
        Node::Int { raw, .. } => out.push_str(raw),
        Node::Bool(b) => out.push_str(if *b { "#t" } else { "#f" }),
        Node::Quoted { kind, inner } => {
            out.push_str(kind.mark());
            // `,` before a datum that starts with `@` would read as `,@`.
            if *kind == QuoteKind::Unquote
                && matches!(&inner.node, Node::Symbol(s) if s.starts_with('@'))
            {
                out.push(' ');
            }
            print_expr(inner, out);
        }
    }
}

/// Print a profile: each form canonically, the text between forms as read.
pub fn print(p: &Profile) -> String {
    let mut out = String::new();
    for (i, f) in p.forms.iter().enumerate() {
        out.push_str(&p.trivia[i]);
        print_expr(f, &mut out);
    }
    if let Some(t) = p.trivia.last() {
        out.push_str(t);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(src: &str) -> Node {
        parse(src).unwrap().forms.remove(0).node
    }

    #[test]
    fn atoms() {
        assert_eq!(
            one("#x2a"),
            Node::Int {
                raw: "#x2a".into(),
                value: 42
            }
        );
        assert_eq!(
            one("#o0004"),
            Node::Int {
                raw: "#o0004".into(),
                value: 4
            }
        );
        assert_eq!(
            one("-7"),
            Node::Int {
                raw: "-7".into(),
                value: -7
            }
        );
        assert_eq!(one("#t"), Node::Bool(true));
        assert_eq!(one("file-read*"), Node::Symbol("file-read*".into()));
        assert_eq!(
            one("%string-prefix?"),
            Node::Symbol("%string-prefix?".into())
        );
        assert_eq!(one(r#"#"\.apple$""#), Node::RawStr(r"\.apple$".into()));
        assert_eq!(one(r"#\/"), Node::Char(r"#\/".into()));
    }

    #[test]
    fn string_escapes() {
        assert_eq!(unescape(r#"a\n\t\r\"\\"#), "a\n\t\r\"\\");
        assert_eq!(unescape(r"\x41\101"), "AA");
        // Any other \c reads as c: the backslash is dropped.
        assert_eq!(unescape(r"^com\.apple\."), "^com.apple.");
        let Node::Str { raw, value } = one(r#""^com\.apple\.""#) else {
            panic!()
        };
        assert_eq!(
            (raw.as_str(), value.as_str()),
            (r"^com\.apple\.", "^com.apple.")
        );
    }

    #[test]
    fn quotes_dots_and_comments() {
        let p = parse("; c\n#| block |#\n'(a . b) `(x ,y ,@z)\n").unwrap();
        assert_eq!(p.forms.len(), 2);
        let Node::Quoted {
            kind: QuoteKind::Quote,
            inner,
        } = &p.forms[0].node
        else {
            panic!()
        };
        assert!(matches!(&inner.node, Node::List { tail: Some(_), .. }));
        assert_eq!(p.forms[1].line, 3);
    }

    #[test]
    fn an_unquoted_at_sign_symbol_prints_back_unambiguously() {
        // Found by the fuzzer: `, @` must not print as `,@`.
        let p = parse("7,\n@\n").unwrap();
        let again = parse(&print(&p)).unwrap();
        assert_eq!(again.forms.len(), 2);
    }

    #[test]
    fn deep_nesting_is_refused_not_overflowed() {
        let deep = "(".repeat(100_000);
        let e = parse(&deep).unwrap_err();
        assert_eq!((e.line, e.column), (1, MAX_DEPTH + 1));
        let ok = format!("{}{}", "(".repeat(MAX_DEPTH), ")".repeat(MAX_DEPTH));
        assert!(parse(&ok).is_ok());
        // Parentheses inside strings and comments do not count.
        let s = format!("\"{}\" ; {}\n(a)", "(".repeat(1000), "(".repeat(1000));
        assert!(parse(&s).is_ok());
    }

    #[test]
    fn syntax_errors_have_positions() {
        let e = parse("(version 1)\n(allow file-read*\n").unwrap_err();
        assert_eq!(e.line, 3);
        let e = parse("(a))").unwrap_err();
        assert_eq!((e.line, e.column), (1, 4));
        let e = parse("(a \"unterminated)").unwrap_err();
        assert_eq!(e.line, 1);
    }

    #[test]
    fn round_trip_keeps_every_byte_of_canonical_text() {
        let src = ";; header\n(version 1)\n(allow default)\n\n; why\n(deny file-read* (subpath \"/a\") (literal \"/b\\\"c\"))\n(allow network-outbound (remote tcp \"localhost:8080\"))\n";
        assert_eq!(print(&parse(src).unwrap()), src);
    }
}
