//! Every generated Codex config validates against the JSON Schema of each
//! tested Codex release that has one, from `tests/data/codex-config/` (kept
//! in the repository with its provenance, so nothing outside it is needed
//! and nothing is skipped). The newer releases without a schema copy are
//! checked with the real binaries in `tests/codex_conformance.rs`.

mod common;

use common::*;
use sha2::Digest;

fn schema_dir() -> std::path::PathBuf {
    root().join("tests/data/codex-config")
}

/// `(version, schema)` for each committed schema, checked against the sha256
/// that PROVENANCE.md lists for it.
fn schemas() -> Vec<(String, serde_json::Value)> {
    let provenance = std::fs::read_to_string(schema_dir().join("PROVENANCE.md")).unwrap();
    let mut out = Vec::new();
    for line in provenance
        .lines()
        .filter(|l| l.starts_with("| config.schema."))
    {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let (file, sha) = (cells[1], cells[5]);
        let bytes = std::fs::read(schema_dir().join(file)).unwrap();
        assert_eq!(
            format!("{:x}", sha2::Sha256::digest(&bytes)),
            sha,
            "{file} is not the copy PROVENANCE.md describes"
        );
        let version = file
            .strip_prefix("config.schema.rust-v")
            .and_then(|f| f.strip_suffix(".json"))
            .unwrap()
            .to_string();
        out.push((version, serde_json::from_slice(&bytes).unwrap()));
    }
    out
}

/// The generated config of a spec, rendered for one Codex release.
fn config_for(spec: &std::path::Path, version: &str) -> serde_json::Value {
    let src = std::fs::read_to_string(spec).unwrap();
    let mut c = sealc::compile("s.toml", &src, &flags_for(&src), &demo_host()).unwrap();
    c.ir.codex.versions = vec![version.to_string()];
    let text = String::from_utf8(sealc::backend::codex::render(&c.ir)).unwrap();
    toml::from_str(&text).unwrap()
}

fn spec_files() -> Vec<std::path::PathBuf> {
    let mut specs = toml_files(&root().join("specs"));
    specs.extend(toml_files(&root().join("tests/golden")));
    specs.extend(toml_files(&root().join("tests/codex")));
    specs
}

#[test]
fn the_schemas_of_tested_releases_are_in_the_repository() {
    let versions: Vec<String> = schemas().into_iter().map(|(v, _)| v).collect();
    assert!(versions.len() >= 2, "{versions:?}");
    for v in &versions {
        assert!(
            sealc::backend::codex::TESTED.contains(&v.as_str()),
            "{v} has a schema but is not a tested release"
        );
    }
    // The oldest tested release is always checked against its schema.
    assert!(versions.contains(&sealc::backend::codex::TESTED[0].to_string()));
    // Where the shared conformance set is checked out beside the repository,
    // each copy is still its file (nothing here depends on it being there).
    let shared = root().join("../shared/conformance/codex-config");
    for v in &versions {
        let file = format!("config.schema.rust-v{v}.json");
        if let Ok(theirs) = std::fs::read(shared.join(&file)) {
            let ours = std::fs::read(schema_dir().join(&file)).unwrap();
            assert!(ours == theirs, "{file} differs from {}", shared.display());
        }
    }
}

#[test]
fn generated_configs_validate_against_each_release_schema() {
    let mut checked = 0;
    for (version, schema) in schemas() {
        let validator = jsonschema::draft7::new(&schema).unwrap();
        for spec in spec_files() {
            let value = config_for(&spec, &version);
            let errors: Vec<String> = validator
                .iter_errors(&value)
                .map(|e| format!("{e} at {}", e.instance_path()))
                .collect();
            assert!(
                errors.is_empty(),
                "{} for Codex {version}: {errors:#?}",
                spec.display()
            );
            // The sealed settings hold.
            assert_eq!(value["approval_policy"], "never");
            if value.get("default_permissions").is_some() {
                // Profile mode: Codex's own sandbox, with sealc's profile.
                assert_eq!(value["default_permissions"], "sealc");
                assert!(value.get("sandbox_mode").is_none());
                assert!(value["permissions"]["sealc"]["filesystem"].is_object());
                assert!(value["permissions"]["sealc"]["network"].is_object());
            } else {
                assert_eq!(value["sandbox_mode"], "danger-full-access");
                assert!(value.get("permissions").is_none());
            }
            assert_eq!(value["web_search"], "disabled");
            assert_eq!(value["allow_login_shell"], false);
            assert_eq!(value["skills"]["bundled"]["enabled"], false);
            assert_eq!(value["shell_environment_policy"]["inherit"], "none");
            for absent in ["notify", "hooks", "profiles"] {
                assert!(
                    value.get(absent).is_none(),
                    "{absent} must not be generated"
                );
            }
            // MCP servers only as the seal lists them, each sealc's relay.
            for (name, server) in value["mcp_servers"].as_object().into_iter().flatten() {
                assert_eq!(server["command"], "/dev/.sealc-init", "{name}");
                assert_eq!(server["args"][0], "__mcp", "{name}");
                assert_eq!(server["required"], true, "{name}");
                assert_eq!(
                    server.as_object().map(|o| o.len()),
                    Some(3),
                    "{name}: {server}"
                );
            }
            // No deprecated alias and no removed flag is written.
            let features = value["features"].as_object().unwrap();
            for gone in [
                "codex_hooks",
                "connectors",
                "memory_tool",
                "web_search",
                "web_search_cached",
                "web_search_request",
                "js_repl",
                "plugin_hooks",
                "remote_control",
            ] {
                assert!(!features.contains_key(gone), "{gone} is written");
            }
            // A workspace, when named, is recorded as untrusted.
            if let Some(projects) = value.get("projects").and_then(|p| p.as_object()) {
                assert!(!projects.is_empty());
                for p in projects.values() {
                    assert_eq!(p["trust_level"], "untrusted");
                }
            }
            checked += 1;
        }
    }
    assert!(checked >= 10, "{checked}");
}

#[test]
fn the_schema_rejects_what_the_seal_forbids() {
    // The validator is not vacuous: a config with an unknown key or an
    // unknown policy fails every schema.
    for (version, schema) in schemas() {
        let validator = jsonschema::draft7::new(&schema).unwrap();
        let bad: serde_json::Value =
            serde_json::json!({ "approval_policy": "sometimes", "not_a_key": 1 });
        assert!(!validator.is_valid(&bad), "{version}");
        let bad_trust: serde_json::Value =
            serde_json::json!({ "projects": { "/w": { "trust_level": "maybe" } } });
        assert!(!validator.is_valid(&bad_trust), "{version}");
    }
}

/// The strict schema of `[permissions]` (Codex lets typos through): every
/// profile sealc writes passes it, for each tested release, and a profile
/// spec is among them, so the check is not vacuous.
#[test]
fn every_generated_profile_passes_the_strict_permissions_check() {
    let mut profiles = 0;
    for version in sealc::backend::codex::TESTED {
        for spec in spec_files() {
            let src = std::fs::read_to_string(&spec).unwrap();
            let mut c = sealc::compile("s.toml", &src, &flags_for(&src), &demo_host()).unwrap();
            c.ir.codex.versions = vec![version.to_string()];
            let text = String::from_utf8(sealc::backend::codex::render(&c.ir)).unwrap();
            let checked = sealc::backend::codex_profile::check_config(&text, &c.ir.codex.versions);
            assert_eq!(checked, Ok(()), "{} for Codex {version}", spec.display());
            if text.contains("[permissions.sealc") {
                profiles += 1;
                // A typo planted in the profile is caught.
                let typo =
                    text.replace("[permissions.sealc.network]", "[permissions.sealc.netwrok]");
                assert!(
                    sealc::backend::codex_profile::check_config(&typo, &c.ir.codex.versions)
                        .is_err()
                );
                let home = text.replace("\":root\" = ", "\":home\" = ");
                assert!(
                    sealc::backend::codex_profile::check_config(&home, &c.ir.codex.versions)
                        .is_err()
                );
            }
        }
    }
    assert!(
        profiles >= sealc::backend::codex::TESTED.len(),
        "{profiles}"
    );
}

/// The strict check runs in `compile` (and so in `verify`): a root whose
/// path Codex would read as a glob (the seal means the literal name) makes
/// a profile that fails it, and nothing compiles.
#[test]
fn a_profile_that_fails_the_strict_check_does_not_compile() {
    let src = "version = 1\nname = \"g\"\n[filesystem]\ndeny_read = [\"/r/x*\"]\nwrite = [\"/r/ws\"]\n[env]\nset = { HOME = \"/r/ws\" }\n[codex]\nsandbox = \"profile\"\n";
    let err = match sealc::compile("g.toml", src, &Vec::new(), &demo_host()) {
        Ok(_) => panic!("a glob in a profile compiled"),
        Err(e) => e,
    };
    assert!(
        err.0.iter().any(|d| d.code == "sealc::codex::profile"),
        "{err:?}"
    );
    // The same spec in outer mode compiles.
    let outer = src.replace("sandbox = \"profile\"", "sandbox = \"outer\"");
    assert!(sealc::compile("g.toml", &outer, &Vec::new(), &demo_host()).is_ok());
}
