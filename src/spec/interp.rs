//! `${var}` references inside spec strings.
//!
//! `${name}` is replaced by the var's value, `$${` stands for a literal `${`,
//! and any other `$` is kept as it is (so values such as `a$b` are carried byte
//! for byte).

use std::collections::BTreeMap;

use super::Spanned;
use crate::diag::{did_you_mean, quote, Diagnostic, Span};

/// One `${name}` in a string, with the span of the reference itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reference {
    pub name: String,
    pub span: Span,
}

enum Piece<'a> {
    Text(&'a str),
    Var(Reference),
}

/// Where the string's content starts in the source, when the source token is
/// the content between its delimiters byte for byte (no escapes).
fn content_offset(s: &Spanned<String>, src: &str) -> Option<usize> {
    let raw = src.get(s.span.clone())?;
    for d in ["\"\"\"", "'''", "\"", "'"] {
        if raw.len() >= 2 * d.len() && raw.starts_with(d) && raw.ends_with(d) {
            let inner = &raw[d.len()..raw.len() - d.len()];
            if inner == s.value {
                return Some(s.span.start + d.len());
            }
            if inner.strip_prefix('\n') == Some(s.value.as_str()) {
                return Some(s.span.start + d.len() + 1);
            }
            return None;
        }
    }
    None
}

fn pieces<'a>(s: &'a Spanned<String>, src: &str) -> Result<Vec<Piece<'a>>, Diagnostic> {
    let base = content_offset(s, src);
    let sub = |a: usize, b: usize| base.map_or(s.span.clone(), |o| o + a..o + b);
    let v = s.value.as_str();
    let mut out = Vec::new();
    let mut i = 0;
    let mut text_start = 0;
    let bytes = v.as_bytes();
    while i < bytes.len() {
        if bytes[i] == b'$' && v[i..].starts_with("$${") {
            out.push(Piece::Text(&v[text_start..i]));
            text_start = i + 1; // keep `${` as text
            i += 3;
            continue;
        }
        if bytes[i] == b'$' && v[i..].starts_with("${") {
            out.push(Piece::Text(&v[text_start..i]));
            let Some(end) = memchr::memchr(b'}', &bytes[i + 2..]) else {
                return Err(Diagnostic::error(
                    crate::diag::code::SPEC_INTERPOLATION,
                    "unterminated `${` reference",
                )
                .at(sub(i, v.len()))
                .label("no closing `}`")
                .help("write `${name}`, or `$${` for a literal `${`"));
            };
            let name = &v[i + 2..i + 2 + end];
            let span = sub(i, i + 3 + end);
            if !super::read::is_var_name(name) {
                return Err(Diagnostic::error(
                    crate::diag::code::SPEC_INTERPOLATION,
                    format!("{} is not a var name", quote(name)),
                )
                .at(span)
                .label("letters, digits and `_`, not starting with a digit")
                .help("write `${name}`, or `$${` for a literal `${`"));
            }
            out.push(Piece::Var(Reference {
                name: name.to_string(),
                span,
            }));
            i += 3 + end;
            text_start = i;
            continue;
        }
        i += 1;
    }
    out.push(Piece::Text(&v[text_start..]));
    Ok(out)
}

/// The `${var}` references of a spec string.
pub fn references(s: &Spanned<String>, src: &str) -> Result<Vec<Reference>, Diagnostic> {
    if memchr::memchr(b'$', s.value.as_bytes()).is_none() {
        return Ok(Vec::new());
    }
    Ok(pieces(s, src)?
        .into_iter()
        .filter_map(|p| match p {
            Piece::Var(r) => Some(r),
            Piece::Text(_) => None,
        })
        .collect())
}

/// The names of the `${var}` references of a spec string value, as
/// [`references`] reads them but without their spans or a copy of each
/// name: `None` where [`references`] reports an error (an unterminated
/// reference, a name that is not a var name).
pub fn reference_names(v: &str) -> Option<smallvec::SmallVec<[&str; 4]>> {
    let mut out = smallvec::SmallVec::new();
    scan(v, |part| {
        if let Part::Name(name) = part {
            out.push(name);
        }
        Some(())
    })?;
    Some(out)
}

/// What [`scan`] reads: the text between references, or a reference's name.
enum Part<'a> {
    Text(&'a str),
    Name(&'a str),
}

/// One pass over a string value, as [`pieces`] reads it: `each` is given
/// the text between references (a `$` that starts none kept as it is, a
/// `$${` as the literal `${`) and the name of each `${name}`, in order.
/// `None` where [`pieces`] reports an error (an unterminated reference, a
/// name that is not a var name) or where `each` says `None`.
fn scan<'a>(v: &'a str, mut each: impl FnMut(Part<'a>) -> Option<()>) -> Option<()> {
    let mut rest = v;
    while let Some(i) = memchr::memchr(b'$', rest.as_bytes()) {
        each(Part::Text(&rest[..i]))?;
        let after = &rest[i + 1..];
        if let Some(literal) = after.strip_prefix("${") {
            // `$${`: a literal `${`, read on from after it.
            each(Part::Text("${"))?;
            rest = literal;
            continue;
        }
        let Some(reference) = after.strip_prefix('{') else {
            // Any other `$` is kept as it is.
            each(Part::Text("$"))?;
            rest = after;
            continue;
        };
        let end = memchr::memchr(b'}', reference.as_bytes())?;
        let name = &reference[..end];
        if !super::read::is_var_name(name) {
            return None;
        }
        each(Part::Name(name))?;
        rest = &reference[end + 1..];
    }
    each(Part::Text(rest))
}

/// Replace every `${var}` with its value. A reference to a var without a
/// value is an error at the reference.
pub fn interpolate(
    s: &Spanned<String>,
    src: &str,
    vars: &BTreeMap<String, String>,
) -> Result<String, Diagnostic> {
    interpolated(s, src, vars).map(std::borrow::Cow::into_owned)
}

/// The common case of [`interpolated`] in one pass, allocating only the
/// result: every `${name}` names a var with a value. `None` for anything
/// else, which [`pieces`] reads (and reports).
fn interpolated_plainly(v: &str, vars: &BTreeMap<String, String>) -> Option<String> {
    let mut out = String::with_capacity(v.len() + 32);
    scan(v, |part| {
        out.push_str(match part {
            Part::Text(t) => t,
            Part::Name(name) => vars.get(name)?,
        });
        Some(())
    })?;
    Some(out)
}

/// [`interpolate`], borrowing a value without `$` rather than copying it
/// (the facts look every root up several times).
pub fn interpolated<'a>(
    s: &'a Spanned<String>,
    src: &str,
    vars: &BTreeMap<String, String>,
) -> Result<std::borrow::Cow<'a, str>, Diagnostic> {
    if memchr::memchr(b'$', s.value.as_bytes()).is_none() {
        return Ok(std::borrow::Cow::Borrowed(&s.value));
    }
    match interpolated_plainly(&s.value, vars) {
        Some(out) => Ok(std::borrow::Cow::Owned(out)),
        None => interpolated_by_pieces(s, src, vars).map(std::borrow::Cow::Owned),
    }
}

/// [`interpolated`] of any string: escapes, and the errors at a reference.
fn interpolated_by_pieces(
    s: &Spanned<String>,
    src: &str,
    vars: &BTreeMap<String, String>,
) -> Result<String, Diagnostic> {
    let mut out = String::with_capacity(s.value.len());
    for p in pieces(s, src)? {
        match p {
            Piece::Text(t) => out.push_str(t),
            Piece::Var(r) => match vars.get(&r.name) {
                Some(v) => out.push_str(v),
                None => {
                    let mut d = Diagnostic::error(
                        crate::diag::code::VAR_UNDECLARED,
                        format!("`${{{}}}` names no declared var", r.name),
                    )
                    .at(r.span)
                    .label("not in `[vars]`");
                    d = match did_you_mean(&r.name, vars.keys().map(String::as_str)) {
                        Some(m) => d.help(format!("did you mean `${{{m}}}`?")),
                        None if looks_like_env(&r.name) => {
                            let var = r.name.to_lowercase();
                            d.help(format!(
                                "environment variables are not expanded unless a var reads them: declare `[vars] {var} = {{ env = \"{}\" }}` and write `${{{var}}}`",
                                r.name
                            ))
                        }
                        None => d.help(format!(
                            "declare it: `[vars] {} = {{ required = true }}`",
                            r.name
                        )),
                    };
                    return Err(d);
                }
            },
        }
    }
    Ok(out)
}

/// A name written as environment variables are (`HOME`, `XDG_CACHE_HOME`):
/// upper case letters, digits and `_`, with a letter.
fn looks_like_env(name: &str) -> bool {
    name.chars().any(|c| c.is_ascii_uppercase())
        && name
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sp(src: &str) -> Spanned<String> {
        let start = src.find('"').unwrap();
        let end = src.rfind('"').unwrap() + 1;
        Spanned::new(src[start + 1..end - 1].to_string(), start..end)
    }

    #[test]
    fn replaces_and_escapes() {
        let src = r#"x = "${a}/b$c$${d}""#;
        let s = sp(src);
        let vars = BTreeMap::from([("a".to_string(), "/A".to_string())]);
        assert_eq!(interpolate(&s, src, &vars).unwrap(), "/A/b$c${d}");
    }

    #[test]
    fn reference_spans_point_into_the_string() {
        let src = r#"x = "/p/${home}/q""#;
        let s = sp(src);
        let r = references(&s, src).unwrap();
        assert_eq!(&src[r[0].span.clone()], "${home}");
    }

    /// Strings of up to eight pieces that reference, escape, or half-write
    /// a `${var}` (`a` and `b_1` declared below, `c` not).
    fn var_strings() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::strategy::Strategy;
        proptest::collection::vec(
            proptest::sample::select(vec![
                "${a}", "${b_1}", "${c}", "$${a}", "$", "$$", "/x", "{", "}", "${", "${1}", "é",
                "}$",
            ]),
            0..8,
        )
        .prop_map(|parts| parts.concat())
    }

    proptest::proptest! {
        /// The one-pass common case gives what reading the pieces gives,
        /// and declines only what the pieces report as an error.
        #[test]
        fn the_plain_pass_agrees_with_the_pieces(v in var_strings()) {
            let src = format!("x = \"{v}\"");
            let s = sp(&src);
            let vars = BTreeMap::from([
                ("a".to_string(), "/A".to_string()),
                ("b_1".to_string(), "$".to_string()),
            ]);
            let slow = interpolated_by_pieces(&s, &src, &vars);
            match interpolated_plainly(&v, &vars) {
                Some(fast) => proptest::prop_assert_eq!(Ok(fast), slow.map_err(|_| ())),
                None => proptest::prop_assert!(slow.is_err()),
            }
        }
    }

    proptest::proptest! {
        /// The names read without spans are the names of the references,
        /// and refused where the references are.
        #[test]
        fn the_names_are_the_references_names(v in var_strings()) {
            let src = format!("x = \"{v}\"");
            let s = sp(&src);
            let slow = references(&s, &src)
                .ok()
                .map(|r| r.into_iter().map(|r| r.name).collect::<Vec<_>>());
            let fast = reference_names(&v).map(|n| n.iter().map(|n| n.to_string()).collect());
            proptest::prop_assert_eq!(fast, slow);
        }
    }

    #[test]
    fn unterminated_and_bad_names() {
        let src = r#"x = "${a""#;
        assert!(references(&sp(src), src).is_err());
        let src = r#"x = "${1a}""#;
        assert!(references(&sp(src), src).is_err());
    }
}
