//! ARCHITECTURE.md's invariants about which module may do what, checked on
//! the source itself: arrows point downstream only, the pure stages do no IO,
//! and only the CLI prints (the runtime relays the command's own output
//! through descriptors; that is not sealc printing).

use std::path::{Path, PathBuf};

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Every source file, as (path relative to the crate, text).
fn all() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    sources(&root.join("src"), &mut files);
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let rel = p.strip_prefix(root).unwrap().display().to_string();
            (rel, std::fs::read_to_string(&p).unwrap())
        })
        .collect()
}

fn offenders(pred: impl Fn(&str) -> bool, needles: &[&str]) -> Vec<String> {
    let mut bad = Vec::new();
    for (path, text) in all() {
        if !pred(&path) {
            continue;
        }
        for (i, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if needles.iter().any(|n| code.contains(n)) {
                bad.push(format!("{path}:{}: {}", i + 1, line.trim()));
            }
        }
    }
    bad
}

#[test]
fn the_files_are_where_the_architecture_says() {
    let paths: Vec<String> = all().into_iter().map(|(p, _)| p).collect();
    assert!(
        !paths.iter().any(|p| p == "src/cli.rs"),
        "the CLI is one file per command under src/cli/"
    );
    for cmd in [
        "compile", "verify", "exec", "lint", "explain", "schema", "inside", "show", "diff",
    ] {
        let want = format!("src/cli/{cmd}.rs");
        assert!(paths.contains(&want), "{want} is missing");
    }
    assert!(paths.contains(&"src/prove.rs".to_string()));
}

#[test]
fn no_module_below_the_cli_names_it() {
    let bad = offenders(
        |p| !p.starts_with("src/cli/") && p != "src/main.rs",
        &["crate::cli"],
    );
    assert!(bad.is_empty(), "upstream arrows:\n{}", bad.join("\n"));
}

#[test]
fn only_the_cli_prints() {
    let bad = offenders(
        |p| !p.starts_with("src/cli/"),
        &["println!", "print!(", "eprint", "dbg!("],
    );
    assert!(
        bad.is_empty(),
        "printing outside src/cli/:\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_pure_stages_read_nothing_from_the_host() {
    let pure = |p: &str| {
        [
            "src/ir/",
            "src/backend/",
            "src/spec/",
            "src/sbpl/",
            "src/record.rs",
            "src/prove.rs",
            "src/diag/",
            "src/mounts.rs",
            "src/platform.rs",
            "src/query.rs",
            "src/lint.rs",
            "src/describe.rs",
            "src/ops.rs",
            "src/exec/terminal.rs",
        ]
        .iter()
        .any(|m| p.starts_with(m))
    };
    let bad = offenders(
        pure,
        &[
            "std::fs",
            "std::env",
            "std::process",
            "std::net",
            "SystemTime",
            "Instant::now",
            "HashMap",
            "HashSet",
        ],
    );
    assert!(
        bad.is_empty(),
        "IO, a clock or an unordered map in a pure stage:\n{}",
        bad.join("\n")
    );
}
