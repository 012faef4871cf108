//! The macOS IPC surface (issue 24): `docs/ipc.md` is fresh from the table
//! in `src/backend/ipc.rs`, and every profile sealc compiles, from every
//! shipped spec and golden spec under either base, denies each sealed entry
//! with a rule after the last allow of its operation.

mod common;

use common::*;
use sealc::backend::ipc::{rule_text, Sealed, SEALED};
use sealc::sbpl::eval::{Action, Model, Target, Verdict};

#[test]
fn the_document_is_fresh() {
    let failures: Vec<String> = check_golden(
        &root().join("docs/ipc.md"),
        sealc::backend::ipc::docs().as_bytes(),
    )
    .into_iter()
    .collect();
    assert_goldens(failures);
}

/// Every spec the project ships or tests with, for macOS.
fn profiles() -> Vec<(String, String)> {
    let mut specs = toml_files(&root().join("specs"));
    specs.extend(toml_files(&root().join("tests/golden")));
    specs
        .into_iter()
        .map(|p| {
            let src = std::fs::read_to_string(&p).unwrap();
            let c = sealc::compile_for(
                "s.toml",
                &src,
                &flags_for(&src),
                Some(sealc::spec::Platform::Macos),
                &demo_host(),
            )
            .unwrap_or_else(|e| panic!("{}: {e:?}", p.display()));
            let sb = String::from_utf8(c.files["seal.sb"].clone()).unwrap();
            (p.display().to_string(), sb)
        })
        .collect()
}

#[test]
fn every_profile_denies_each_sealed_entry_after_every_allow() {
    let all = profiles();
    assert!(all.len() >= 8, "{} specs", all.len());
    let mut bases = std::collections::BTreeSet::new();
    for (spec, sb) in &all {
        bases.insert(sb.contains("(deny default)"));
        let rules: Vec<&str> = sb.lines().filter(|l| l.starts_with('(')).collect();
        for e in SEALED {
            let want = rule_text(e.sealed);
            let at = rules
                .iter()
                .position(|r| *r == want)
                .unwrap_or_else(|| panic!("{spec}: no `{want}`\n{sb}"));
            let op = match e.sealed {
                Sealed::Service(_) => "mach-lookup",
                Sealed::Operation(op) => op,
                Sealed::Program(_) => "process-exec",
            };
            // No allow of the same operation after it.
            for later in &rules[at + 1..] {
                assert!(
                    !(later.starts_with("(allow ") && later.contains(op)),
                    "{spec}: `{later}` follows `{want}`"
                );
            }
        }
    }
    assert_eq!(bases.len(), 2, "both bases are among the specs");
}

#[test]
fn the_evaluator_reads_the_sealed_programs_as_denied() {
    for (spec, sb) in profiles() {
        let profile = sealc::sbpl::parse::parse(&sb).unwrap();
        let model = Model::new(&profile, &Default::default());
        for e in SEALED {
            let Sealed::Program(p) = e.sealed else {
                continue;
            };
            match model.query("process-exec", &Target::Path(p.into())) {
                Verdict::Decided(d) => assert_eq!(d.action, Action::Deny, "{spec}: {p}"),
                other => panic!("{spec}: {p}: {other:?}"),
            }
        }
    }
}
