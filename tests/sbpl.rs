//! The SBPL grammar and evaluator from the outside: construct fixtures,
//! rejected inputs with their positions, round trips of sealc's own output,
//! the operation table against the macOS 10.15 catalogue (`tests/data/sbpl/`), a no-panic property,
//! the model a proof builds for its operations against the whole one,
//! and `sealc explain`.

mod common;

use std::collections::BTreeMap;

use common::*;
use proptest::prelude::*;
use sealc::sbpl::parse::{parse, print};

fn sb_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "sb"))
        .collect();
    v.sort();
    v
}

#[test]
fn the_construct_fixture_parses_and_prints_back() {
    let src = std::fs::read_to_string(root().join("tests/sbpl/constructs.sb")).unwrap();
    let arena = sealc::sbpl::parse::Arena::new();
    let p = parse(&src, &arena).unwrap();
    assert_eq!(p.forms.len(), 34);
    // Canonical text (single spaces) prints back byte for byte.
    assert_eq!(print(&p), src);
}

#[test]
fn rejected_inputs_report_their_position() {
    let bad = sb_files(&root().join("tests/sbpl/bad"));
    assert!(bad.len() >= 6);
    for f in bad {
        let src = std::fs::read_to_string(&f).unwrap();
        let want = src
            .lines()
            .next()
            .unwrap()
            .strip_prefix("; error: ")
            .unwrap()
            .to_string();
        let arena = sealc::sbpl::parse::Arena::new();
        let e = parse(&src, &arena).expect_err(&f.display().to_string());
        assert_eq!(format!("{}:{}", e.line, e.column), want, "{}", f.display());
    }
}

#[test]
fn every_profile_sealc_emits_round_trips() {
    let mut n = 0;
    for dir in std::fs::read_dir(root().join("tests/golden")).unwrap() {
        let sb = dir.unwrap().path().join("seal.sb");
        if let Ok(src) = std::fs::read_to_string(&sb) {
            let arena = sealc::sbpl::parse::Arena::new();
            let p = parse(&src, &arena).unwrap();
            assert_eq!(print(&p), src, "{}", sb.display());
            n += 1;
        }
    }
    assert!(n >= 5);
}

/// The macOS 10.15 operation table, from `tests/data/sbpl/` (kept in the
/// repository with its provenance, so nothing outside it is needed and
/// nothing is skipped), checked against the sha256 its PROVENANCE.md lists.
fn catalina_table() -> String {
    let dir = root().join("tests/data/sbpl");
    let provenance = std::fs::read_to_string(dir.join("PROVENANCE.md")).unwrap();
    let sha = provenance
        .lines()
        .find_map(|l| l.strip_prefix("| sbpl-operations-catalina.tsv |"))
        .and_then(|l| l.rsplit('|').nth(1))
        .map(str::trim)
        .expect("PROVENANCE.md lists the table's sha256");
    let bytes = std::fs::read(dir.join("sbpl-operations-catalina.tsv")).unwrap();
    assert_eq!(
        format!("{:x}", <sha2::Sha256 as sha2::Digest>::digest(&bytes)),
        sha,
        "tests/data/sbpl/sbpl-operations-catalina.tsv is not the copy PROVENANCE.md describes"
    );
    String::from_utf8(bytes).unwrap()
}

#[test]
fn the_operation_table_agrees_with_the_catalina_catalogue() {
    let text = catalina_table();
    let table: BTreeMap<&str, &str> = text
        .lines()
        .skip(1)
        .filter_map(|l| {
            let cols: Vec<&str> = l.split('\t').collect();
            Some((*cols.get(1)?, *cols.get(4)?))
        })
        .collect();
    assert!(table.len() >= 140, "{} operations", table.len());
    let modelled = sealc::sbpl::eval::modelled_operations();
    assert!(!modelled.is_empty());
    for (op, parent) in modelled {
        assert_eq!(table.get(op), Some(&parent), "{op}");
    }
    // Where the shared design notes are checked out beside the repository,
    // the copy is still theirs (nothing here depends on them being there).
    let shared = root().join("../shared/design/sbpl-operations-catalina.tsv");
    if let Ok(theirs) = std::fs::read_to_string(&shared) {
        assert_eq!(
            text,
            theirs,
            "tests/data/sbpl differs from {}",
            shared.display()
        );
    }
}

#[test]
fn explain_answers_and_exit_codes() {
    let profile = std::fs::read_to_string(root().join("tests/golden/probe-rep/seal.sb")).unwrap();
    let run = |args: &[&str]| {
        Sealc::new()
            .file("seal.sb", profile.clone())
            .file("amb.sb", "(version 1)\n(allow default)\n(allow file-write* (subpath \"/x\"))\n(deny file-write*)\n")
            .file("bad.sb", "(version 1\n")
            .args(["explain"])
            .args(args.iter().copied())
            .run()
    };
    let denied = run(&[
        "seal.sb",
        "--op",
        "file-read-data",
        "/Users/agent/src/skills/SKILL.md",
    ]);
    assert_eq!(denied.code, 0);
    assert!(
        denied.stdout.starts_with("deny\n  decided by line "),
        "{}",
        denied.stdout
    );
    assert!(denied
        .stdout
        .contains("(deny file-read* (subpath \"/Users/agent/src/skills\"))"));
    let proxy = run(&[
        "seal.sb",
        "--op",
        "network-outbound",
        "--remote",
        "127.0.0.1:8080",
        "--format",
        "json",
    ]);
    assert_eq!(proxy.code, 0);
    let v: serde_json::Value = serde_json::from_str(&proxy.stdout).unwrap();
    assert_eq!(v["answer"], "allow");
    let amb = run(&["amb.sb", "--op", "file-write-data", "/x/y"]);
    assert_eq!(amb.code, 3);
    assert!(amb.stdout.starts_with("ambiguous\n"), "{}", amb.stdout);
    // A Linux-only operation: modelled, but not by a seatbelt profile.
    let und = run(&["seal.sb", "--op", "rmdir", "/x"]);
    assert_eq!(und.code, 3);
    assert!(und.stdout.starts_with("undetermined"));
    // A name no seal models is bad input, with the list.
    let unknown = run(&["seal.sb", "--op", "nvram-get", "/x"]);
    assert_eq!(unknown.code, 2);
    assert!(
        unknown
            .stderr
            .starts_with("error: `nvram-get` is not an operation sealc models\n"),
        "{}",
        unknown.stderr
    );
    // An operation on a name is asked with `--name`, not a path.
    let named = run(&["seal.sb", "--op", "iokit-open", "/x"]);
    assert_eq!(named.code, 2);
    assert!(
        named.stderr.contains("give it with `--name`"),
        "{}",
        named.stderr
    );
    let bad = run(&["bad.sb", "--op", "file-read-data", "/x"]);
    assert_eq!(bad.code, 2);
    assert!(bad.stderr.contains("line 2, column 1"), "{}", bad.stderr);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, .. ProptestConfig::default() })]

    #[test]
    fn the_parser_never_panics(src in "[()\";'`,@#|\\\\a-z0-9 \n.*/-]{0,64}") {
        let arena = sealc::sbpl::parse::Arena::new();
        if let Ok(p) = parse(&src, &arena) {
            // What parses, prints to something that parses to the same forms.
            let printed = print(&p);
            let arena = sealc::sbpl::parse::Arena::new();
            let again = parse(&printed, &arena).unwrap();
            prop_assert_eq!(again.forms.len(), p.forms.len());
            let m = sealc::sbpl::eval::Model::new(&p, &BTreeMap::new());
            let _ = m.query("file-read-data", &sealc::sbpl::eval::Target::Path("/a".into()));
        }
    }
}

/// Operations a generated rule names: the table's, an alias
/// (`file-unlink`), `default`, a family a later macOS has and one name the
/// table does not know.
const RULE_OPS: &[&str] = &[
    "default",
    "file*",
    "file-read*",
    "file-read-data",
    "file-read-metadata",
    "file-write*",
    "file-write-data",
    "file-write-unlink",
    "file-unlink",
    "file-link",
    "mach-lookup",
    "network*",
    "network-outbound",
    "process-exec",
    "ipc-posix-shm-read*",
    "file-foo",
];

/// Filters: on paths, a `define`d one, a negation, one the model cannot
/// read (a regex it does not support), on names and on the network.
const RULE_FILTERS: &[&str] = &[
    "(subpath \"/a\")",
    "(literal \"/a/b\")",
    "(prefix \"/a/b\")",
    "(regex #\"^/a/[bc]\")",
    "(regex #\"(?=x)\")",
    "defined",
    "(require-not (subpath \"/a\"))",
    "(global-name \"com.x\")",
    "(remote tcp \"localhost:80\")",
];

fn rule() -> impl Strategy<Value = String> {
    (
        any::<bool>(),
        proptest::sample::subsequence(RULE_OPS.to_vec(), 1..3),
        proptest::sample::subsequence(RULE_FILTERS.to_vec(), 0..3),
    )
        .prop_map(|(allow, ops, filters)| {
            let action = if allow { "allow" } else { "deny" };
            format!("({action} {} {})", ops.join(" "), filters.join(" "))
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, .. ProptestConfig::default() })]

    /// The proof of a seal's assertions builds the model for the
    /// operations asserted only (`Model::for_operations`): on each of
    /// them, every question gets the whole model's answer.
    #[test]
    fn the_model_for_some_operations_answers_them_as_the_whole_one(
        rules in proptest::collection::vec(rule(), 0..12),
        asked in proptest::sample::subsequence(RULE_OPS.to_vec(), 1..4),
    ) {
        use sealc::sbpl::eval::{Model, NameKind, Target};
        let src = format!(
            "(version 1)\n(define defined (subpath \"/b\"))\n{}\n",
            rules.join("\n")
        );
        let arena = sealc::sbpl::parse::Arena::new();
        let profile = parse(&src, &arena).unwrap();
        let whole = Model::new(&profile, &BTreeMap::new());
        let some = Model::for_operations(&profile, &BTreeMap::new(), &asked);
        let targets = [
            Target::Path("/a".into()),
            Target::Path("/a/b".into()),
            Target::Path("/b/x".into()),
            Target::Path("/c".into()),
            Target::Name { kind: NameKind::MachGlobal, name: "com.x".into() },
            Target::Remote { host: "localhost".into(), port: 80 },
        ];
        for op in &asked {
            for t in &targets {
                prop_assert_eq!(some.query(op, t), whole.query(op, t), "{} {:?}\n{}", op, t, src);
            }
        }
    }
}
