//! The committed JSON Schemas are fresh: regenerated from the types, they
//! match `schemas/` byte for byte. `SEALC_BLESS=1` rewrites them.

mod common;

use common::*;

#[test]
fn committed_schemas_are_fresh() {
    let spec = sealc::record::canonical_json(&sealc::spec::json_schema());
    let record = sealc::record::canonical_json(&sealc::record::json_schema());
    let mut failures = Vec::new();
    failures.extend(check_golden(
        &root().join("schemas/seal-spec.schema.json"),
        spec.as_bytes(),
    ));
    failures.extend(check_golden(
        &root().join("schemas/seal-record.schema.json"),
        record.as_bytes(),
    ));
    assert_goldens(failures);
}

#[test]
fn every_example_spec_is_an_instance_of_the_spec_schema() {
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("schemas/seal-spec.schema.json")).unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    for spec in toml_files(&root().join("specs")) {
        let text = std::fs::read_to_string(&spec).unwrap();
        let value: serde_json::Value = toml::from_str(&text).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&value)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{}: {errors:?}", spec.display());
    }
}

#[test]
fn the_spec_schema_refuses_every_schema_bad_fixture() {
    // The same fixtures `.ci/run` feeds to `taplo lint`, which must fail on each.
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("schemas/seal-spec.schema.json")).unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let bad = toml_files(&root().join("tests/schema-bad"));
    assert!(bad.len() >= 15);
    for spec in bad {
        let text = std::fs::read_to_string(&spec).unwrap();
        let value: serde_json::Value = toml::from_str(&text).unwrap();
        assert!(
            !validator.is_valid(&value),
            "{} passes the schema",
            spec.display()
        );
    }
}

/// The spec's JSON Schema allows each limit exactly the values the IR
/// accepts (`sealc::limit::Limit::range`, the one source of them).
#[test]
fn the_schema_ranges_are_the_limits_ranges() {
    use sealc::limit::Limit;
    let schema = serde_json::to_value(schemars::schema_for!(sealc::spec::Limits)).unwrap();
    for l in Limit::ALL {
        let p = &schema["properties"][l.key()];
        let (min, max) = l.range();
        assert_eq!(p["minimum"], serde_json::json!(min), "{}", l.key());
        assert_eq!(p["maximum"], serde_json::json!(max), "{}", l.key());
    }
}
