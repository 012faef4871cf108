//! Property tests over large and strange specs: many roots, long paths,
//! long lines, many vars, deep nesting, stray control characters. Whatever
//! the shape, compiling and linting give a result (never a panic), and what
//! is rendered for people stays bounded: a few reports per kind of finding,
//! each of short lines, however many findings there are.

use std::fmt::Write as _;

use proptest::prelude::*;
use sealc::diag::{Diagnostics, Render};
use sealc::facts::{FakeHost, VarFlags};

#[derive(Clone, Debug)]
struct Big {
    roots: usize,
    path_len: usize,
    one_line: bool,
    vars: usize,
    /// Arrays nested this deep under an unknown key (refused), or none.
    depth: Option<usize>,
    /// A character spliced into the spec somewhere (a control, a bidi
    /// override, a quote, a newline), and where, as a fraction.
    junk: Option<(char, u8)>,
    writes: usize,
}

fn big() -> impl Strategy<Value = Big> {
    (
        0usize..3_000,
        1usize..300,
        any::<bool>(),
        0usize..200,
        prop::option::of(1usize..2_000),
        prop::option::of((
            prop::sample::select(vec![
                '\u{1b}', '\u{0}', '\r', '\n', '"', '\u{202e}', '\u{85}', '\t', 'é', '[', '$',
            ]),
            any::<u8>(),
        )),
        0usize..20,
    )
        .prop_map(
            |(roots, path_len, one_line, vars, depth, junk, writes)| Big {
                roots,
                path_len,
                one_line,
                vars,
                depth,
                junk,
                writes,
            },
        )
}

fn spec(b: &Big) -> String {
    let mut s = String::from("version = 1\nname = \"big\"\n[target]\nplatform = \"macos\"\n");
    s.push_str("[vars]\n");
    for i in 0..b.vars {
        let _ = writeln!(s, "v{i} = {{ default = \"/srv/v{i}\" }}");
    }
    s.push_str("[filesystem]\ndeny_read = [");
    let sep = if b.one_line { " " } else { "\n  " };
    let seg = "d".repeat(b.path_len);
    for i in 0..b.roots {
        let var = if b.vars > 0 && i % 7 == 0 {
            format!("${{v{}}}", i % b.vars)
        } else {
            "/srv".to_string()
        };
        let _ = write!(s, "{sep}\"{var}/{seg}/{i}\",");
    }
    s.push_str("\n]\nwrite = [");
    for i in 0..b.writes {
        let _ = write!(s, "\"/srv/w{i}\", ");
    }
    s.push_str("]\n");
    if let Some(depth) = b.depth {
        let _ = writeln!(s, "x = {}{}", "[".repeat(depth), "]".repeat(depth));
    }
    if let Some((c, at)) = b.junk {
        let mut at = s.len() * at as usize / 256;
        while !s.is_char_boundary(at) {
            at -= 1;
        }
        s.insert(at, c);
    }
    s
}

/// Rendered for people: every line short, and a bounded number of them for
/// each kind of finding, whatever the count.
fn assert_bounded(diags: &Diagnostics, src: &str) {
    let text = Render {
        file: "big.toml",
        src,
        color: false,
        all_in: Some("`--format json`"),
    }
    .render(diags);
    let kinds: std::collections::BTreeSet<_> =
        diags.0.iter().map(|d| (d.code, d.severity)).collect();
    let lines = text.lines().count();
    // A report is its header, at most 3 excerpt lines plus labels, a
    // message and help wrapped at 100 columns (long messages wrap more).
    let per_report = 40;
    assert!(
        lines <= kinds.len() * (sealc::diag::GROUP_OVER + 1) * per_report,
        "{lines} lines for {} kinds of {} findings",
        kinds.len(),
        diags.0.len()
    );
    let widest = text.lines().map(|l| l.chars().count()).max().unwrap_or(0);
    assert!(widest <= 300, "a rendered line of {widest} characters");
    assert!(
        !text.contains('\u{1b}') && !text.contains('\u{202e}'),
        "a control or bidi character reached the output"
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, .. ProptestConfig::default() })]

    #[test]
    fn big_specs_give_a_result_and_bounded_output(b in big()) {
        let src = spec(&b);
        let host = FakeHost::new().dir("/srv/w0");
        let flags: VarFlags = Vec::new();
        match sealc::compile_for("big.toml", &src, &flags, None, &host) {
            Ok(c) => {
                prop_assert!(!c.files.is_empty());
                // Every root made it into the profile.
                let sb = String::from_utf8_lossy(&c.files["seal.sb"]);
                let last = format!("/{}\"", b.roots.saturating_sub(1));
                prop_assert!(b.roots == 0 || sb.contains(&last), "no rule for the last root");
                assert_bounded(&c.warnings, &src);
            }
            Err(d) => {
                prop_assert!(d.has_errors());
                // A clean spec compiles: only the unknown key or the junk
                // may refuse it.
                prop_assert!(b.depth.is_some() || b.junk.is_some(), "{:?}", d.0.first());
                assert_bounded(&d, &src);
            }
        }
        let linted = sealc::lint::lint_for(&src, Some(sealc::platform::Select::Both));
        assert_bounded(&linted, &src);
        // JSON gives every finding, each with its place.
        let json = sealc::lint::to_json(&linted, "big.toml", &src);
        let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
        prop_assert_eq!(doc["diagnostics"].as_array().unwrap().len(), linted.0.len());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, .. ProptestConfig::default() })]

    /// Any span over any text renders without a panic: past the end, inside
    /// a character, empty, over many lines, over a line of any length.
    #[test]
    fn any_span_over_any_text_renders(
        text in "(\\PC|\n|\r|\u{1b}|\u{202e}){0,400}",
        repeat in 1usize..400,
        start in 0usize..200_000,
        len in 0usize..200_000,
    ) {
        let src = text.repeat(repeat);
        let d = sealc::diag::Diagnostic::error("sealc::spec::value", "a value")
            .at(start..start.saturating_add(len))
            .label("here");
        let diags = Diagnostics(vec![d; 12]);
        assert_bounded(&diags, &src);
    }
}
