//! The SBPL grammar's own reading of a profile: `grammar/sbpl.pest` through
//! pest, built into sealc's AST. This was sealc's reader until a one-pass
//! reader replaced it (`src/sbpl/parse.rs`); it is kept as the oracle that
//! `tests/sbpl_grammar.rs` and the `sbpl_grammar` fuzz target hold the
//! shipped reader to. It has no depth limit: callers keep inputs shallow.

use pest::Parser as _;
use pest_derive::Parser;
use sealc::sbpl::parse::{unescape, Arena, Expr, Node, Profile, QuoteKind, SyntaxError};

#[derive(Parser)]
#[grammar = "../grammar/sbpl.pest"]
struct SbplParser;

/// Read `src` with the grammar, its lists kept in `arena`.
pub fn parse<'a>(src: &'a str, arena: &'a Arena) -> Result<Profile<'a>, SyntaxError> {
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
        forms.push(build(p, &lines, arena)?);
    }
    Ok(Profile { forms, source: src })
}

fn is_comment(r: Rule) -> bool {
    matches!(r, Rule::line_comment | Rule::block_comment | Rule::shebang)
}

fn build<'a>(
    p: pest::iterators::Pair<'a, Rule>,
    lines: &[usize],
    arena: &'a Arena,
) -> Result<Expr<'a>, SyntaxError> {
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
                    tail = Some(&*arena.alloc(build(t, lines, arena)?));
                } else {
                    items.push(build(q, lines, arena)?);
                }
            }
            Node::List {
                items: arena.alloc_slice_fill_iter(items),
                tail,
            }
        }
        Rule::quoted => {
            // A comment may stand between the mark and its datum (the
            // earlier reader refused that, which the grammar allows).
            let mut inner = p.into_inner().filter(|p| !is_comment(p.as_rule()));
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
                inner: arena.alloc(build(d, lines, arena)?),
            }
        }
        Rule::string => {
            let raw = p
                .into_inner()
                .next()
                .map(|i| i.as_str())
                .unwrap_or_default();
            let value = raw
                .contains('\\')
                .then(|| &*arena.alloc_str(&unescape(raw)));
            Node::Str { raw, value }
        }
        Rule::raw_string => Node::RawStr(
            p.into_inner()
                .next()
                .map(|i| i.as_str())
                .unwrap_or_default(),
        ),
        Rule::boolean => Node::Bool(p.as_str() == "#t"),
        Rule::number => {
            let raw = p.as_str();
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
        Rule::char_lit => Node::Char(p.as_str()),
        Rule::symbol => Node::Symbol(p.as_str()),
        r => return Err(err(format!("unexpected {r:?}"))),
    };
    Ok(Expr { node, span, line })
}
