//! The SBPL reader: the language of `grammar/sbpl.pest` → an AST with spans,
//! and a printer.
//!
//! Atoms keep their raw text, so printing a profile writes every string,
//! number and symbol exactly as it was read; the text between top-level
//! forms (comments, blank lines) is kept too, so sealc's own profiles round
//! trip byte for byte.

use std::ops::Range;

/// Where a profile's lists, quotes and unescaped strings are kept while it
/// is read: one region, grown a block at a time and freed at once, so a
/// profile of a thousand lists costs a few allocations, not a thousand
/// (and nothing is dropped node by node).
pub type Arena = bumpalo::Bump;

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

/// One S-expression. Its atoms borrow the text read and its lists and
/// quotes the [`Arena`] (`'a`): a string is allocated only where an escape
/// makes its value differ from what is written.
///
/// Its tag is a word (`repr(u64)`), so every variant's fields start on
/// one: with a byte tag, `Bool` and `Quoted` put theirs right after it,
/// and moving an `Expr` became byte-offset copies the CPU could not
/// forward from the stores before them (the reader took half again as
/// long; the size is the same either way).
#[derive(Clone, Debug, PartialEq, Eq)]
#[repr(u64)]
pub enum Node<'a> {
    List {
        items: &'a [Expr<'a>],
        tail: Option<&'a Expr<'a>>,
    },
    /// A symbol as written.
    Symbol(&'a str),
    /// A `"..."` string: the raw text between the quotes, and its value
    /// where an escape makes it differ (`None`: the value is `raw`).
    Str {
        raw: &'a str,
        value: Option<&'a str>,
    },
    /// A `#"..."` string: no escapes.
    RawStr(&'a str),
    /// A number as written (`42`, `#x2a`, `#o52`) and its value.
    Int {
        raw: &'a str,
        value: i64,
    },
    Bool(bool),
    Char(&'a str),
    Quoted {
        kind: QuoteKind,
        inner: &'a Expr<'a>,
    },
}

/// An S-expression with its byte span and 1-based line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expr<'a> {
    pub node: Node<'a>,
    pub span: Range<usize>,
    pub line: usize,
}

impl<'a> Expr<'a> {
    pub fn symbol(&self) -> Option<&'a str> {
        match self.node {
            Node::Symbol(s) => Some(s),
            _ => None,
        }
    }
    pub fn list(&self) -> Option<&'a [Expr<'a>]> {
        match self.node {
            Node::List { items, tail: None } => Some(items),
            _ => None,
        }
    }
    /// The value of a string of either kind.
    pub fn string(&self) -> Option<&'a str> {
        match self.node {
            Node::Str {
                value: Some(value), ..
            } => Some(value),
            Node::Str { raw, value: None } => Some(raw),
            Node::RawStr(s) => Some(s),
            _ => None,
        }
    }
}

/// A parsed profile: top-level forms and the text around them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Profile<'a> {
    pub forms: Vec<Expr<'a>>,
    /// The text read: each form's `span` indexes it.
    pub source: &'a str,
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

/// Parse profile text, keeping its lists in `arena`.
///
/// A recursive-descent reader of exactly the language `grammar/sbpl.pest`
/// defines (`tests/sbpl_grammar.rs` holds the two to the same answers on
/// generated and fuzzed text): one pass over the bytes, no backtracking.
pub fn parse<'a>(src: &'a str, arena: &'a Arena) -> Result<Profile<'a>, SyntaxError> {
    let mut r = Reader {
        src,
        arena,
        b: src.as_bytes(),
        at: 0,
        line: 1,
        line_start: 0,
        depth: 0,
        // Room for a form every 128 bytes (sealc's profiles have one every
        // 170, their comments included) and the lists open in one, so that
        // the stack is not copied as it grows.
        items: Vec::with_capacity(src.len() / 128 + 64),
    };
    r.skip_ws()?;
    while r.at < r.b.len() {
        r.push_datum()?;
        r.skip_ws()?;
    }
    // What is left on the stack is the top-level forms, in order.
    Ok(Profile {
        forms: r.items,
        source: src,
    })
}

/// The deepest nesting read (lists and quotes): deeper input is refused
/// rather than risk the stack (the reader, printer and evaluator recurse).
pub const MAX_DEPTH: usize = 256;

/// Bytes that end a symbol or number (`delimiter` in the grammar).
fn is_delimiter(c: u8) -> bool {
    matches!(
        c,
        b' ' | b'\t' | b'\r' | b'\n' | 0x0C | b'(' | b')' | b'"' | b';' | b'\'' | b'`' | b','
    )
}

struct Reader<'a> {
    src: &'a str,
    arena: &'a Arena,
    b: &'a [u8],
    at: usize,
    /// The 1-based line of `at`, and the byte where that line starts.
    line: usize,
    line_start: usize,
    depth: usize,
    /// The data read and not yet placed, innermost list's last: a list's
    /// items are moved into the arena, their exact number, when it closes;
    /// the top-level forms stay.
    items: Vec<Expr<'a>>,
}

impl<'a> Reader<'a> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.at).copied()
    }

    fn peek2(&self) -> Option<u8> {
        self.b.get(self.at + 1).copied()
    }

    /// Move to `to`, counting the lines passed.
    fn advance_to(&mut self, to: usize) {
        for i in newlines(&self.b[self.at..to]) {
            self.line += 1;
            self.line_start = self.at + i + 1;
        }
        self.at = to;
    }

    /// The 1-based column of byte `at` on the current line (in characters).
    fn column_of(&self, at: usize) -> usize {
        self.src
            .get(self.line_start..at)
            .map_or(1, |s| s.chars().count() + 1)
    }

    fn error_at(&self, at: usize, message: impl Into<String>) -> SyntaxError {
        SyntaxError {
            line: self.line,
            column: self.column_of(at),
            message: message.into(),
        }
    }

    fn error(&self, message: impl Into<String>) -> SyntaxError {
        self.error_at(self.at, message)
    }

    /// The index of the first `needle` at or after `from`, or the end.
    fn find(&self, from: usize, needle: &[u8]) -> Option<usize> {
        self.b
            .get(from..)?
            .windows(needle.len())
            .position(|w| w == needle)
            .map(|i| from + i)
    }

    /// The next `\n` at or after `from` (by `memchr`, many bytes at a
    /// time: comments are most of a sealc profile's bytes), or the end.
    fn line_end(&self, from: usize) -> usize {
        let rest = self.b.get(from..).unwrap_or_default();
        memchr::memchr(b'\n', rest).map_or(self.b.len(), |i| from + i)
    }

    /// Whitespace and comments (`ws*`).
    fn skip_ws(&mut self) -> Result<(), SyntaxError> {
        while let Some(c) = self.peek() {
            match c {
                b'\n' => {
                    self.at += 1;
                    self.line += 1;
                    self.line_start = self.at;
                }
                b' ' | b'\t' | b'\r' | 0x0C => self.at += 1,
                b';' => self.at = self.line_end(self.at),
                b'#' if self.peek2() == Some(b'!') => self.at = self.line_end(self.at),
                b'#' if self.peek2() == Some(b'|') => match self.find(self.at + 2, b"|#") {
                    Some(end) => self.advance_to(end + 2),
                    None => return Err(self.error("a block comment `#|` is not closed by `|#`")),
                },
                _ => break,
            }
        }
        Ok(())
    }

    /// Read one datum onto `items`. It is built where it is kept: an
    /// `Expr` returned up the recursion was copied in pieces the CPU could
    /// not forward from the stores that made it.
    fn push_datum(&mut self) -> Result<(), SyntaxError> {
        let (start, line) = (self.at, self.line);
        let node = match self.peek() {
            Some(b'(') => self.nested(|r| r.list())?,
            Some(b'\'' | b'`' | b',') => self.nested(|r| r.quoted())?,
            Some(b')') => return Err(self.error("`)` closes no list")),
            Some(b'"') => self.string()?,
            Some(_) => self.atom()?,
            None => return Err(self.error("a datum was expected, the text ends")),
        };
        self.items.push(Expr {
            node,
            span: start..self.at,
            line,
        });
        Ok(())
    }

    /// Read one datum into the arena (a dotted tail, a quoted datum).
    fn datum_in_arena(&mut self) -> Result<&'a Expr<'a>, SyntaxError> {
        self.push_datum()?;
        match self.items.pop() {
            Some(e) => Ok(self.arena.alloc(e)),
            None => Err(self.error("a datum was expected")),
        }
    }

    fn nested(
        &mut self,
        f: impl FnOnce(&mut Self) -> Result<Node<'a>, SyntaxError>,
    ) -> Result<Node<'a>, SyntaxError> {
        if self.depth == MAX_DEPTH {
            return Err(self.error(format!("lists and quotes nest deeper than {MAX_DEPTH}")));
        }
        self.depth += 1;
        let node = f(self);
        self.depth -= 1;
        node
    }

    fn list(&mut self) -> Result<Node<'a>, SyntaxError> {
        let (open, open_line, open_line_start) = (self.at, self.line, self.line_start);
        self.at += 1;
        let unclosed = |r: &Self| {
            let open_column = r
                .src
                .get(open_line_start..open)
                .map_or(1, |s| s.chars().count() + 1);
            r.error(format!(
                "the list opened at line {open_line}, column {open_column} is not closed"
            ))
        };
        let base = self.items.len();
        let mut tail = None;
        loop {
            self.skip_ws()?;
            match self.peek() {
                None => return Err(unclosed(self)),
                Some(b')') => break,
                Some(b'.') if self.peek2().is_none_or(is_delimiter) => {
                    if self.items.len() == base {
                        return Err(self.error("a dot with no datum before it"));
                    }
                    self.at += 1;
                    self.skip_ws()?;
                    match self.peek() {
                        None => return Err(unclosed(self)),
                        Some(b')') => return Err(self.error("a dot with nothing after it")),
                        Some(_) => tail = Some(self.datum_in_arena()?),
                    }
                    self.skip_ws()?;
                    match self.peek() {
                        None => return Err(unclosed(self)),
                        Some(b')') => break,
                        Some(_) => return Err(self.error("more than one datum after a dot")),
                    }
                }
                Some(_) => self.push_datum()?,
            }
        }
        self.at += 1;
        // Copied, then cut from the stack: an item owns nothing to drop
        // (its lists are in the arena), and the copy is one pass.
        let items = self.arena.alloc_slice_clone(&self.items[base..]);
        self.items.truncate(base);
        Ok(Node::List { items, tail })
    }

    fn quoted(&mut self) -> Result<Node<'a>, SyntaxError> {
        let kind = match (self.peek(), self.peek2()) {
            (Some(b','), Some(b'@')) => QuoteKind::UnquoteSplicing,
            (Some(b','), _) => QuoteKind::Unquote,
            (Some(b'`'), _) => QuoteKind::Quasiquote,
            _ => QuoteKind::Quote,
        };
        self.at += kind.mark().len();
        self.skip_ws()?;
        if self.peek().is_none() {
            return Err(self.error("a quote with nothing after it"));
        }
        Ok(Node::Quoted {
            kind,
            inner: self.datum_in_arena()?,
        })
    }

    /// `"..."`: a backslash escapes the next character, whatever it is.
    /// The string is searched for its quote, escapes and line ends only
    /// (`memchr3`), and the lines it spans are counted on the way.
    fn string(&mut self) -> Result<Node<'a>, SyntaxError> {
        let start = self.at + 1;
        let mut i = start;
        let mut escaped = false;
        // The lines it spans, taken on only once it closes: an unclosed
        // string is reported where it opens.
        let (mut line, mut line_start) = (self.line, self.line_start);
        while let Some(found) = memchr::memchr3(b'"', b'\\', b'\n', &self.b[i..]) {
            i += found;
            match self.b[i] {
                b'"' => {
                    let raw = &self.src[start..i];
                    (self.at, self.line, self.line_start) = (i + 1, line, line_start);
                    let value = escaped.then(|| &*self.arena.alloc_str(&unescape(raw)));
                    return Ok(Node::Str { raw, value });
                }
                b'\\' => {
                    escaped = true;
                    let next = self.src[i + 1..].chars().next();
                    if next == Some('\n') {
                        (line, line_start) = (line + 1, i + 2);
                    }
                    i += 1 + next.map_or(0, char::len_utf8);
                }
                _ => {
                    (line, line_start) = (line + 1, i + 1);
                    i += 1;
                }
            }
        }
        Err(self.error("a string is not closed"))
    }

    /// Everything else: a symbol, `#"..."`, `#t`/`#f`, a number, `#\c`.
    fn atom(&mut self) -> Result<Node<'a>, SyntaxError> {
        let start = self.at;
        // The run of non-delimiters from here: a symbol, number or boolean
        // is all of it, and must be.
        let word_end = self.b[start..]
            .iter()
            .position(|&c| is_delimiter(c))
            .map_or(self.b.len(), |i| start + i);
        let word = &self.src[start..word_end];
        let unreadable = |r: &Self| {
            let shown: String = word.chars().take(40).collect();
            r.error(format!("`{shown}` is not a datum SBPL reads"))
        };
        let c = self.b[start];
        if c == b'#' {
            match self.peek2() {
                Some(b'"') => {
                    let Some(end) = self.b[start + 2..].iter().position(|&c| c == b'"') else {
                        return Err(self.error("a raw string `#\"` is not closed"));
                    };
                    let raw = &self.src[start + 2..start + 2 + end];
                    self.advance_to(start + 2 + end + 1);
                    return Ok(Node::RawStr(raw));
                }
                Some(b'\\') => {
                    let Some(ch) = self.src[start + 2..].chars().next() else {
                        return Err(unreadable(self));
                    };
                    let mut end = start + 2 + ch.len_utf8();
                    while self.b.get(end).is_some_and(u8::is_ascii_alphabetic) {
                        end += 1;
                    }
                    let text = &self.src[start..end];
                    self.advance_to(end);
                    return Ok(Node::Char(text));
                }
                _ => {}
            }
            let node = match word {
                "#t" => Node::Bool(true),
                "#f" => Node::Bool(false),
                _ => {
                    let (digits, radix) = match word.get(..2) {
                        Some("#x") => (&word[2..], 16),
                        Some("#o") => (&word[2..], 8),
                        _ => return Err(unreadable(self)),
                    };
                    if digits.is_empty() || !digits.chars().all(|d| d.is_digit(radix)) {
                        return Err(unreadable(self));
                    }
                    let value = i64::from_str_radix(digits, radix)
                        .map_err(|_| self.error(format!("number `{word}` is out of range")))?;
                    Node::Int { raw: word, value }
                }
            };
            self.at = word_end;
            return Ok(node);
        }
        let digits = word.strip_prefix('-').unwrap_or(word);
        if digits.as_bytes().first().is_some_and(u8::is_ascii_digit) {
            if !digits.bytes().all(|d| d.is_ascii_digit()) {
                return Err(unreadable(self));
            }
            let value = word
                .parse()
                .map_err(|_| self.error(format!("number `{word}` is out of range")))?;
            self.at = word_end;
            return Ok(Node::Int { raw: word, value });
        }
        if word == "." {
            return Err(self.error("a dot outside a list, or with no datum before it"));
        }
        self.at = word_end;
        Ok(Node::Symbol(word))
    }
}

/// The offsets of every `\n` in `b`.
fn newlines(b: &[u8]) -> impl Iterator<Item = usize> + '_ {
    b.iter()
        .enumerate()
        .filter(|(_, &c)| c == b'\n')
        .map(|(i, _)| i)
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
pub fn print_expr(e: &Expr<'_>, out: &mut String) {
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
        Node::Symbol(s) => out.push_str(s),
        Node::Char(s) => out.push_str(s),
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
pub fn print(p: &Profile<'_>) -> String {
    let mut out = String::new();
    let mut at = 0;
    for f in &p.forms {
        out.push_str(p.source.get(at..f.span.start).unwrap_or_default());
        print_expr(f, &mut out);
        at = f.span.end;
    }
    out.push_str(p.source.get(at..).unwrap_or_default());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(src: &'static str) -> Node<'static> {
        parse(src).unwrap().forms.remove(0).node
    }

    /// `parse` with an arena of its own (kept to the end of the test run),
    /// for the tests' short texts.
    fn parse(src: &str) -> Result<Profile<'_>, SyntaxError> {
        super::parse(src, Box::leak(Box::new(Arena::new())))
    }

    #[test]
    fn atoms() {
        assert_eq!(
            one("#x2a"),
            Node::Int {
                raw: "#x2a",
                value: 42
            }
        );
        assert_eq!(
            one("#o0004"),
            Node::Int {
                raw: "#o0004",
                value: 4
            }
        );
        assert_eq!(
            one("-7"),
            Node::Int {
                raw: "-7",
                value: -7
            }
        );
        assert_eq!(one("#t"), Node::Bool(true));
        assert_eq!(one("file-read*"), Node::Symbol("file-read*"));
        assert_eq!(one("%string-prefix?"), Node::Symbol("%string-prefix?"));
        assert_eq!(one(r#"#"\.apple$""#), Node::RawStr(r"\.apple$"));
        assert_eq!(one(r"#\/"), Node::Char(r"#\/"));
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
        assert_eq!((raw, value), (r"^com\.apple\.", Some("^com.apple.")));
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
        let printed = print(&p);
        let again = parse(&printed).unwrap();
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
