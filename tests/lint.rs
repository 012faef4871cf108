//! `sealc lint`: snapshots of text and JSON output for the example specs, the
//! smelly specs under `tests/lint/`, and the hostile catalogue; exit codes;
//! and the schema's descriptions.

mod common;

use std::path::Path;

use common::*;

fn lint(spec: &Path, format: &str) -> Out {
    let name = spec.file_name().unwrap().to_string_lossy().into_owned();
    Sealc::new()
        .file(&name, std::fs::read(spec).unwrap())
        .args(["lint", name.as_str(), "--format", format])
        .run()
}

fn snapshot_folder(
    specs: Vec<std::path::PathBuf>,
    out_dir: &Path,
    failures: &mut Vec<String>,
) -> usize {
    let mut n = 0;
    for spec in specs {
        let stem = spec.file_stem().unwrap().to_string_lossy().into_owned();
        let text = lint(&spec, "text");
        let json = lint(&spec, "json");
        let report: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
        let errors = report["errors"].as_u64().unwrap();
        let want = if errors > 0 { 1 } else { 0 };
        if text.code != want || json.code != want {
            failures.push(format!(
                "{stem}: exit {}/{} with {errors} errors",
                text.code, json.code
            ));
        }
        if text.stderr.contains("panicked") || json.stderr.contains("panicked") {
            failures.push(format!("{stem}: panicked"));
        }
        // Every diagnostic with a span has a 1-based range.
        for d in report["diagnostics"].as_array().unwrap() {
            if let Some(r) = d["range"].as_object() {
                assert!(
                    r["start"]["line"].as_u64().unwrap() >= 1
                        && r["start"]["column"].as_u64().unwrap() >= 1
                );
            }
        }
        failures.extend(check_golden(
            &out_dir.join(format!("{stem}.txt")),
            text.stdout.as_bytes(),
        ));
        failures.extend(check_golden(
            &out_dir.join(format!("{stem}.json")),
            json.stdout.as_bytes(),
        ));
        n += 1;
    }
    n
}

#[test]
fn example_specs_lint_without_errors() {
    let mut failures = Vec::new();
    for spec in toml_files(&root().join("specs")) {
        let out = lint(&spec, "json");
        let report: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
        if report["errors"] != 0 || report["warnings"] != 0 {
            failures.push(format!("{}: {}", spec.display(), out.stdout));
        }
    }
    assert_goldens(failures);
}

#[test]
fn lint_output_snapshots() {
    let mut failures = Vec::new();
    let out = root().join("tests/lint/out");
    let mut specs = toml_files(&root().join("specs"));
    specs.extend(toml_files(&root().join("tests/lint")));
    let smelly = snapshot_folder(specs, &out, &mut failures);
    let hostile = snapshot_folder(
        toml_files(&root().join("tests/hostile")),
        &out.join("hostile"),
        &mut failures,
    );
    assert!(smelly >= 15 && hostile >= 30, "{smelly} {hostile}");
    assert_goldens(failures);
}

#[test]
fn each_smell_is_found() {
    let cases = [
        ("open-network", "sealc::network::open"),
        ("allow-outside-deny", "sealc::lint::allow_outside_deny"),
        ("redundant-deny", "sealc::lint::redundant_root"),
        ("deny-inside-write", "sealc::lint::deny_inside_write"),
        ("unused-var", "sealc::lint::unused_var"),
        ("secret-pass", "sealc::lint::secret_pass"),
        ("undeclared-var", "sealc::var::undeclared"),
        ("git-unprotected", "sealc::protect::git"),
        ("protect-denied", "sealc::protect::denied"),
        ("protect-denied", "sealc::lint::redundant_root"),
    ];
    for (spec, code) in cases {
        let out = lint(
            &root().join("tests/lint").join(format!("{spec}.toml")),
            "json",
        );
        assert!(out.stdout.contains(code), "{spec}: {}", out.stdout);
    }
    // Symbolic vars raise no false alarm, and deny-default makes allow_read meaningful.
    for clean in ["clean-symbolic", "deny-default-allow-read"] {
        let out = lint(
            &root().join("tests/lint").join(format!("{clean}.toml")),
            "json",
        );
        let report: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
        assert_eq!(
            report["diagnostics"],
            serde_json::json!([]),
            "{clean}: {}",
            out.stdout
        );
        assert_eq!(out.code, 0);
    }
}

#[test]
fn lint_reads_nothing_from_the_host() {
    // HOME and the launcher would be read by compile; lint must not need them.
    let spec = "version = 1\nname = \"h\"\n[vars]\nhome = { env = \"HOME\" }\n[filesystem]\ndeny_read = [\"${home}\"]\n[launcher]\npath = \"${home}/.local/bin/codex\"\n[env]\npass = [\"PATH\"]\n";
    let out = Sealc::new()
        .file("h.toml", spec)
        .args(["lint", "h.toml", "--format", "json"])
        .run();
    assert_eq!(out.code, 0, "{}", out.stdout);
    let report: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(
        report["diagnostics"],
        serde_json::json!([]),
        "{}",
        out.stdout
    );
}

fn walk_properties(schema: &serde_json::Value, path: &str, missing: &mut Vec<String>) {
    if let Some(props) = schema.get("properties").and_then(|p| p.as_object()) {
        for (k, v) in props {
            let here = format!("{path}.{k}");
            if v.get("description")
                .and_then(|d| d.as_str())
                .is_none_or(str::is_empty)
            {
                missing.push(here.clone());
            }
            walk_properties(v, &here, missing);
        }
    }
    for key in ["definitions", "additionalProperties", "items"] {
        match schema.get(key) {
            Some(serde_json::Value::Object(m)) if key == "definitions" => {
                for (name, d) in m {
                    walk_properties(d, &format!("#{name}"), missing);
                }
            }
            Some(v @ serde_json::Value::Object(_)) => walk_properties(v, path, missing),
            _ => {}
        }
    }
}

#[test]
fn every_property_of_the_spec_schema_has_a_description() {
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("schemas/seal-spec.schema.json")).unwrap(),
    )
    .unwrap();
    let mut missing = Vec::new();
    walk_properties(&schema, "", &mut missing);
    assert!(missing.is_empty(), "no description: {missing:?}");
    // And objects refuse unknown keys everywhere.
    let text = serde_json::to_string(&schema).unwrap();
    let objects = text.matches("\"type\":\"object\"").count();
    let closed = text.matches("\"additionalProperties\":false").count();
    assert!(
        closed >= objects - 3,
        "{closed} closed of {objects} objects (vars, env.set and codex.mcp_servers are maps)"
    );
}
