//! Every generated Codex config validates against the JSON Schema of the
//! Codex version it targets, from `../shared/conformance/codex-config/`.
//! CI sets `SEALC_REQUIRE_SHARED=1`, under which a missing schema fails.

mod common;

use common::*;

fn codex_schema() -> Option<serde_json::Value> {
    let path = root()
        .join("../shared/conformance/codex-config")
        .join(format!(
            "config.schema.{}.json",
            sealc::backend::codex::TARGET_CODEX
        ));
    match std::fs::read_to_string(&path) {
        Ok(text) => Some(serde_json::from_str(&text).unwrap()),
        Err(_) => {
            assert!(
                std::env::var_os("SEALC_REQUIRE_SHARED").is_none(),
                "{} is missing and SEALC_REQUIRE_SHARED is set",
                path.display()
            );
            eprintln!(
                "note: {} not found; conformance not checked",
                path.display()
            );
            None
        }
    }
}

#[test]
fn generated_configs_validate_against_the_targeted_codex_schema() {
    let Some(schema) = codex_schema() else { return };
    let validator = jsonschema::draft7::new(&schema).unwrap();
    let mut specs = toml_files(&root().join("specs"));
    specs.extend(toml_files(&root().join("tests/golden")));
    let mut checked = 0;
    for spec in specs {
        let src = std::fs::read_to_string(&spec).unwrap();
        let c = sealc::compile("s.toml", &src, &flags_for(&src), &demo_host()).unwrap();
        let text = String::from_utf8(c.files["codex/config.toml"].clone()).unwrap();
        let value: serde_json::Value = toml::from_str(&text).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&value)
            .map(|e| format!("{e} at {}", e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{}: {errors:#?}", spec.display());
        // The sealed settings hold.
        assert_eq!(value["approval_policy"], "never");
        assert_eq!(value["sandbox_mode"], "danger-full-access");
        assert_eq!(value["web_search"], "disabled");
        assert_eq!(value["shell_environment_policy"]["inherit"], "none");
        for absent in [
            "mcp_servers",
            "notify",
            "projects",
            "hooks",
            "profiles",
            "model_providers",
        ] {
            assert!(
                value.get(absent).is_none(),
                "{absent} must not be generated"
            );
        }
        checked += 1;
    }
    assert!(checked >= 5);
}

#[test]
fn the_schema_rejects_what_the_seal_forbids() {
    // The validator is not vacuous: a config with an unknown key fails.
    let Some(schema) = codex_schema() else { return };
    let validator = jsonschema::draft7::new(&schema).unwrap();
    let bad: serde_json::Value =
        serde_json::json!({ "approval_policy": "sometimes", "not_a_key": 1 });
    assert!(!validator.is_valid(&bad));
}
