//! The diagnostics catalogue: `docs/diagnostics.md` is generated from the
//! table in `src/diag/codes.rs`; every code used in the source is listed once; and
//! every example that is a spec raises its code.

mod common;

use std::collections::BTreeSet;

use common::*;

#[test]
fn the_catalogue_is_fresh() {
    let failures: Vec<String> = check_golden(
        &root().join("docs/diagnostics.md"),
        sealc::diag::catalogue().as_bytes(),
    )
    .into_iter()
    .collect();
    assert_goldens(failures);
}

/// Every Rust file under `src/` with its text.
fn source_files() -> Vec<(std::path::PathBuf, String)> {
    let mut out = Vec::new();
    let mut stack = vec![root().join("src")];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let text = std::fs::read_to_string(&p).unwrap();
                out.push((p, text));
            }
        }
    }
    out
}

/// A string literal that is a whole diagnostic code.
fn is_code(piece: &str) -> bool {
    piece.starts_with("sealc::") && piece.matches("::").count() == 2 && !piece.contains(' ')
}

fn source_codes() -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for (p, text) in source_files() {
        if p.ends_with("diag/codes.rs") {
            continue;
        }
        for piece in text.split('"').skip(1).step_by(2) {
            if is_code(piece) {
                found.insert(piece.to_string());
            }
        }
    }
    found
}

#[test]
fn every_code_in_the_source_is_catalogued_once() {
    let listed: Vec<&str> = sealc::diag::CODES.iter().map(|(c, _, _)| *c).collect();
    let unique: BTreeSet<&str> = listed.iter().copied().collect();
    assert_eq!(unique.len(), listed.len(), "a code is listed twice");
    for code in source_codes() {
        assert!(
            unique.contains(code.as_str()),
            "{code} is used in src/ but not listed in CODES"
        );
    }
}

/// A code is spelled once, as a constant in `src/diag/code.rs`: everything
/// else (the catalogue, the code that emits it, the code that matches on it)
/// names the constant.
#[test]
fn each_code_is_spelled_once() {
    let mut bad = Vec::new();
    for (p, text) in source_files() {
        if p.ends_with("diag/code.rs") {
            continue;
        }
        for (i, line) in text.lines().enumerate() {
            let code = !line.trim_start().starts_with("//")
                && line.split('"').skip(1).step_by(2).any(is_code);
            if code {
                bad.push(format!("{}:{}: {}", p.display(), i + 1, line.trim()));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "a code spelled outside src/diag/code.rs:\n{}",
        bad.join("\n")
    );
    let text = std::fs::read_to_string(root().join("src/diag/code.rs")).unwrap();
    let constants = text.lines().filter(|l| l.starts_with("pub const ")).count();
    assert_eq!(
        constants,
        sealc::diag::CODES.len(),
        "a constant the catalogue does not list"
    );
}

#[test]
fn spec_examples_raise_their_code() {
    let mut checked = 0;
    for (code, _, example) in sealc::diag::CODES {
        if example.starts_with('#') {
            continue; // a command or a host condition, not a spec on its own
        }
        let src = if example.starts_with("version") || example.starts_with("name") {
            example.to_string()
        } else {
            format!("version = 1\nname = \"example\"\n{example}\n")
        };
        let mut codes: Vec<&str> = Vec::new();
        let lint = sealc::lint::lint(&src);
        codes.extend(lint.0.iter().map(|d| d.code));
        let compile = sealc::compile("e.toml", &src, &Vec::new(), &sealc::facts::FakeHost::new());
        if let Err(d) = &compile {
            codes.extend(d.0.iter().map(|d| d.code));
        }
        assert!(
            codes.contains(code),
            "the example of {code} raises {codes:?}:\n{src}"
        );
        checked += 1;
    }
    assert!(checked >= 25, "{checked}");
}
