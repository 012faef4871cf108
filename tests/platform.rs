//! The platform differences: `docs/platform-differences.md` is fresh, its
//! table names exactly the codes `sealc lint --platform both` can report,
//! every difference is in the diagnostics catalogue, and each one's example
//! raises it (for the platform it is about, and not for the other one).

mod common;

use std::collections::BTreeSet;

use common::*;
use sealc::platform::{Select, Side, DIFFERENCES};

#[test]
fn the_document_is_fresh() {
    let failures: Vec<String> = check_golden(
        &root().join("docs/platform-differences.md"),
        sealc::platform::docs().as_bytes(),
    )
    .into_iter()
    .collect();
    assert_goldens(failures);
}

/// The codes in the document's table, read from the file.
fn table_codes() -> BTreeSet<String> {
    let text = std::fs::read_to_string(root().join("docs/platform-differences.md")).unwrap();
    text.lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split('`').next())
        .filter(|c| c.starts_with("sealc::"))
        .map(str::to_string)
        .collect()
}

/// The catalogue's example of a code, as spec text.
fn example(code: &str) -> String {
    let (_, _, ex) = sealc::diag::CODES
        .iter()
        .find(|(c, _, _)| *c == code)
        .unwrap_or_else(|| panic!("{code} is not in the catalogue"));
    let body = ex
        .strip_prefix("# sealc lint --platform both\n")
        .unwrap_or_else(|| panic!("the example of {code} does not say how to see it"));
    format!("version = 1\nname = \"example\"\n{body}\n")
}

fn platform_codes(src: &str, select: Select) -> BTreeSet<String> {
    sealc::lint::lint_for(src, Some(select))
        .0
        .iter()
        .map(|d| d.code.to_string())
        .filter(|c| c.starts_with("sealc::platform::"))
        .collect()
}

#[test]
fn the_table_names_exactly_what_lint_can_report() {
    let table = table_codes();
    let listed: BTreeSet<String> = DIFFERENCES.iter().map(|d| d.code.to_string()).collect();
    assert_eq!(table, listed, "the document and DIFFERENCES");
    let catalogued: BTreeSet<String> = sealc::diag::CODES
        .iter()
        .map(|(c, _, _)| c.to_string())
        .filter(|c| c.starts_with("sealc::platform::"))
        .collect();
    assert_eq!(
        table, catalogued,
        "the document and the diagnostics catalogue"
    );
    // What lint reports, over every example and every shipped spec.
    let mut reported = BTreeSet::new();
    for d in DIFFERENCES {
        reported.extend(platform_codes(&example(d.code), Select::Both));
    }
    let mut specs = toml_files(&root().join("specs"));
    specs.extend(toml_files(&root().join("tests/golden")));
    for s in specs {
        reported.extend(platform_codes(
            &std::fs::read_to_string(s).unwrap(),
            Select::Both,
        ));
    }
    assert_eq!(reported, table, "what lint --platform both reports");
}

#[test]
fn each_example_raises_its_difference_for_its_platform_only() {
    for d in DIFFERENCES {
        let src = example(d.code);
        let both = platform_codes(&src, Select::Both);
        assert!(both.contains(d.code), "{}: {both:?}\n{src}", d.code);
        for (select, side) in [(Select::Linux, Side::Linux), (Select::Macos, Side::Macos)] {
            let got = platform_codes(&src, select).contains(d.code);
            let want = d.side == side || d.side == Side::Both;
            assert_eq!(got, want, "{} with {select:?}\n{src}", d.code);
        }
    }
    // Without `--platform`, lint says nothing of them.
    let plain = sealc::lint::lint(&example("sealc::platform::stand-in"));
    assert!(plain
        .0
        .iter()
        .all(|d| !d.code.starts_with("sealc::platform::")));
}

#[test]
fn lint_platform_on_the_command_line() {
    let out = Sealc::new()
        .file(
            "s.toml",
            "version = 1\nname = \"p\"\n[filesystem]\nwrite = [\"/ws\"]\nmetadata_only = [\"/ws/.h\"]\n",
        )
        .args(["lint", "s.toml", "--platform", "both", "--format", "json"])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let codes: BTreeSet<&str> = v["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|d| d["code"].as_str())
        .filter(|c| c.starts_with("sealc::platform::"))
        .collect();
    for want in [
        "sealc::platform::cross-mount",
        "sealc::platform::metadata-inside",
        "sealc::platform::rename-ancestor",
        "sealc::platform::stand-in",
    ] {
        assert!(codes.contains(want), "{want}: {codes:?}");
    }
    let mac = Sealc::new()
        .file(
            "s.toml",
            "version = 1\nname = \"p\"\n[filesystem]\nmetadata_only = [\"/m\"]\n",
        )
        .args(["lint", "s.toml", "--platform", "macos"])
        .run();
    assert!(
        mac.stdout.contains("sealc::platform::test-existence"),
        "{}",
        mac.stdout
    );
    assert!(
        !mac.stdout.contains("sealc::platform::metadata-inside"),
        "{}",
        mac.stdout
    );
}
