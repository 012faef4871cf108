//! Golden files for every artifact of every spec in `specs/` and
//! `tests/golden/`, compiled on the in-memory demo host.
//! Regenerate with `SEALC_BLESS=1 cargo test --test golden`.

mod common;

use std::path::Path;

use common::*;

fn golden_specs() -> Vec<std::path::PathBuf> {
    let mut specs = toml_files(&root().join("specs"));
    specs.extend(toml_files(&root().join("tests/golden")));
    specs
}

#[test]
fn every_artifact_matches_its_golden() {
    check_platform(None, "tests/golden");
}

/// The same specs compiled with `--platform linux`: `seal.bwrap.json`
/// instead of `seal.sb`, and a record that says so.
#[test]
fn every_linux_artifact_matches_its_golden() {
    check_platform(Some(sealc::spec::Platform::Linux), "tests/golden-linux");
}

fn check_platform(platform: Option<sealc::spec::Platform>, golden_root: &str) {
    let mut failures = Vec::new();
    let specs = golden_specs();
    assert!(
        specs.len() >= 5,
        "expected the example and golden specs, found {specs:?}"
    );
    for spec in specs {
        let src = std::fs::read_to_string(&spec).unwrap();
        let name = spec.file_name().unwrap().to_string_lossy().into_owned();
        let stem = spec.file_stem().unwrap().to_string_lossy().into_owned();
        let compiled =
            match sealc::compile_for(&name, &src, &flags_for(&src), platform, &demo_host()) {
                Ok(c) => c,
                Err(d) => panic!(
                    "{name} does not compile:\n{}",
                    sealc::diag::render(&d, &name, &src)
                ),
            };
        let dir = root().join(golden_root).join(&stem);
        for (file, bytes) in &compiled.files {
            failures.extend(check_golden(&dir.join(file), bytes));
        }
        // No stale golden file without an artifact.
        if !blessing() {
            for entry in walk(&dir) {
                let rel = entry
                    .strip_prefix(&dir)
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/");
                if !compiled.files.contains_key(&rel) {
                    failures.push(format!("{} is not an artifact of {name}", entry.display()));
                }
            }
        }
    }
    assert_goldens(failures);
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd {
            let p = e.unwrap().path();
            if p.is_dir() {
                out.extend(walk(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}

#[test]
fn every_golden_directory_has_a_spec() {
    let specs: Vec<String> = golden_specs()
        .iter()
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    for dir in ["tests/golden", "tests/golden-linux"] {
        for e in std::fs::read_dir(root().join(dir)).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                let name = p.file_name().unwrap().to_string_lossy().into_owned();
                assert!(specs.contains(&name), "{dir}/{name}/ has no spec");
            }
        }
    }
}

#[test]
fn every_example_spec_starts_with_the_schema_directive() {
    for spec in toml_files(&root().join("specs")) {
        let src = std::fs::read_to_string(&spec).unwrap();
        assert!(
            src.starts_with("#:schema ../schemas/seal-spec.schema.json\n"),
            "{} must start with `#:schema ../schemas/seal-spec.schema.json`",
            spec.display()
        );
    }
}
