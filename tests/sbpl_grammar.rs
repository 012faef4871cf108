//! The shipped SBPL reader (`src/sbpl/parse.rs`, one pass by hand) reads
//! exactly the language of `grammar/sbpl.pest`: on every profile in the
//! repository, on generated well-formed profiles and on generated hostile
//! text, it accepts what the grammar accepts, refuses what it refuses, and
//! builds the same tree (every node, span and line) from what both accept.

// pest_derive without its `std` feature names `alloc::`.
extern crate alloc;

#[path = "support/sbpl_oracle.rs"]
mod oracle;

use proptest::prelude::*;
use sealc::sbpl::parse::{parse, print, Arena};

/// Both readers on `src`: the same trees, or both refused.
fn agree(src: &str) -> Result<(), String> {
    let (arena, oracle_arena) = (Arena::new(), Arena::new());
    match (parse(src, &arena), oracle::parse(src, &oracle_arena)) {
        (Ok(a), Ok(b)) if a == b => Ok(()),
        (Ok(a), Ok(b)) => Err(format!(
            "different trees for {src:?}:\nreader:  {a:?}\ngrammar: {b:?}"
        )),
        (Err(_), Err(_)) => Ok(()),
        (Ok(_), Err(e)) => Err(format!("the reader accepts {src:?}; the grammar: {e}")),
        (Err(e), Ok(_)) => Err(format!("the grammar accepts {src:?}; the reader: {e}")),
    }
}

#[test]
fn every_profile_in_the_repository_reads_the_same() {
    let mut seen = 0;
    let mut dirs = vec![std::path::PathBuf::from("tests")];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "sb") {
                let text = std::fs::read_to_string(&p).unwrap();
                agree(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
                seen += 1;
            }
        }
    }
    // The goldens and the SBPL fixtures, the bad ones included.
    assert!(seen >= 16, "only {seen} profiles found under tests/");
}

#[test]
fn the_shapes_the_grammar_spells_out() {
    for src in [
        "",
        "  \n",
        "(a)(b)",
        "a(b)",
        "(a . b)",
        "(a .b)",
        "(a . )",
        "(. a)",
        "(a . b c)",
        "(a . . b)",
        "(a .",
        ".",
        ".a",
        "...",
        "-",
        "->",
        "-5",
        "--5",
        "-5a",
        "5",
        "05",
        "5a",
        "1.5",
        "99999999999999999999",
        "#x2a",
        "#X2a",
        "#x",
        "#xg",
        "#o17",
        "#o8",
        "#t",
        "#f",
        "#true",
        "#t)",
        "#\\a",
        "#\\(",
        "#\\",
        "#\\space1",
        "#\\é",
        "#\\\n",
        "#\"raw\\\"",
        "#\"raw",
        "#\"a\nb\"",
        "\"a\\\"b\"",
        "\"a\\",
        "\"unterminated",
        "\"a\nb\" c",
        "\"a\\\nb\" c",
        "(\"x\ny\" \"p\\\nq\"\n r \"\\\\\" s)",
        "\"\\é\"",
        "'a",
        "'",
        "' a",
        "'(a)",
        ",@a",
        ", @a",
        ",",
        "`(a ,b ,@c)",
        "a'b",
        "a;c\nb",
        "; only a comment",
        "#| block |# a",
        "#| unclosed",
        "#| a |# #| b |#",
        "#|#",
        "#||#",
        "#! shebang\n(a)",
        "(a #! x\n b)",
        "(a #| x |# b)",
        "#",
        "#a",
        "(",
        ")",
        "(a))",
        "(version 1\n",
        "é",
        "(é)",
        "a\u{0C}b",
        "a\rb",
        "\u{2028}",
    ] {
        agree(src).unwrap();
    }
}

/// Text built from the grammar's own pieces, well-formed or not.
fn piece() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "(",
        "(",
        "(",
        ")",
        ")",
        ")",
        " ",
        " ",
        "\n",
        "\t",
        "\r",
        "\u{0C}",
        ";c\n",
        ";",
        "#|x|#",
        "#|",
        "|#",
        "#!s\n",
        "'",
        "`",
        ",",
        ",@",
        "@",
        ".",
        ". ",
        "a",
        "file-read*",
        "-",
        "-5",
        "5",
        "0",
        "#x1f",
        "#x",
        "#o7",
        "#o9",
        "#t",
        "#f",
        "#true",
        "\"s\"",
        "\"a\\\"b\"",
        "\"",
        "\\",
        "#\"r\"",
        "#\"",
        "#\\a",
        "#\\(",
        "#\\",
        "#",
        "é",
        "1a",
        "99999999999999999999",
        "x.y",
        "\"é\\é\"",
    ])
}

/// A well-formed datum, as text.
fn datum() -> impl Strategy<Value = String> {
    let atom = prop::sample::select(vec![
        "a",
        "file-read*",
        "%p?",
        "-",
        "->",
        "-5",
        "42",
        "#x2A",
        "#o17",
        "#t",
        "#f",
        "\"/a b\"",
        "\"q\\\"\\n\"",
        "\"l1\nl2\\\nl3\"",
        "#\"^/a$\"",
        "#\\a",
        "#\\space",
        ".a",
        "é",
    ])
    .prop_map(str::to_string);
    atom.prop_recursive(6, 64, 6, |inner| {
        let sep = prop::sample::select(vec![" ", "\n", "  ", " ;c\n", " #|c|# ", "\t"]);
        prop_oneof![
            (prop::collection::vec((inner.clone(), sep.clone()), 0..6)).prop_map(|items| {
                let mut s = String::from("(");
                for (d, sep) in items {
                    s.push_str(&d);
                    s.push_str(sep);
                }
                s.push(')');
                s
            }),
            (prop::collection::vec(inner.clone(), 1..4), inner.clone())
                .prop_map(|(items, tail)| format!("({} . {tail})", items.join(" "))),
            (prop::sample::select(vec!["'", "`", ",", ",@", "' "]), inner)
                .prop_map(|(q, d)| format!("{q}{d}")),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2048, failure_persistence: None, .. ProptestConfig::default() })]

    #[test]
    fn hostile_text_reads_the_same(parts in prop::collection::vec(piece(), 0..48)) {
        let src: String = parts.concat();
        agree(&src).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn well_formed_profiles_read_the_same_and_print_back(forms in prop::collection::vec(datum(), 0..8)) {
        let src = forms.join("\n");
        agree(&src).map_err(TestCaseError::fail)?;
        let arena = sealc::sbpl::parse::Arena::new();
        let p = parse(&src, &arena).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(p.forms.len(), forms.len());
        let printed = print(&p);
        let arena = sealc::sbpl::parse::Arena::new();
        let again = parse(&printed, &arena).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(print(&again), printed);
    }
}
