//! `sealc explain`: the operation names (one table for `--op`,
//! `[[assert]]`, the spec schema and `--list-ops`), the spec entry behind
//! the deciding rule or step, and one JSON shape for both seal kinds.

mod common;

use common::*;

fn explain(args: &[&str]) -> Out {
    Sealc::new()
        .args(["explain"])
        .args(args.iter().copied())
        .run()
}

fn golden(dir: &str, file: &str) -> String {
    root().join(dir).join(file).display().to_string()
}

#[test]
fn list_ops_names_each_operation_and_the_seals_that_answer_it() {
    let out = explain(&["--list-ops"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), sealc::ops::OPERATIONS.len());
    assert!(lines.contains(&"file-read-data            seal.sb, seal.bwrap.json (PATH)"));
    assert!(lines.contains(&"rename                    seal.bwrap.json (PATH --to PATH)"));
    assert!(lines.contains(&"process-exec              seal.sb (as process-exec*)"));
    assert!(
        lines.contains(&"network-outbound          seal.sb, seal.bwrap.json (--remote HOST:PORT)")
    );
    // Every name listed is one `--op` takes, on the seal the list names.
    let json = explain(&["--list-ops", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(v["schema"], "sealc.ops/v1");
    let ops = v["operations"].as_array().unwrap();
    assert_eq!(ops.len(), lines.len());
    let rename = ops.iter().find(|o| o["name"] == "rename").unwrap();
    assert_eq!(
        rename["answered_by"],
        serde_json::json!(["seal.bwrap.json"])
    );
    assert_eq!(rename["bwrap_subject"], "PATH --to PATH");
    // `--list-ops` stands alone.
    let both = explain(&["--list-ops", "--op", "rename"]);
    assert_eq!(both.code, 2);
}

#[test]
fn an_unknown_operation_is_refused_with_the_nearest_and_the_list() {
    let sb = golden("tests/golden/probe-rep", "seal.sb");
    let bwrap = golden("tests/golden-linux/probe-rep", "seal.bwrap.json");
    for seal in [&sb, &bwrap] {
        let out = explain(&[seal, "--op", "file-raed-data", "/x"]);
        assert_eq!(out.code, 2, "{}", out.stdout);
        assert!(out.stdout.is_empty());
        let mut lines = out.stderr.lines();
        assert_eq!(
            lines.next(),
            Some("error: `file-raed-data` is not an operation sealc models; did you mean `file-read-data`?")
        );
        let list = lines.next().unwrap();
        assert!(
            list.starts_with("  the operations modelled: file*, "),
            "{list}"
        );
        for name in sealc::ops::names() {
            assert!(list.contains(name), "{name} not in {list}");
        }
    }
    // Far from every name: no guess, the list still.
    let out = explain(&[&sb, "--op", "iokit-open", "/x"]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.starts_with(
        "error: `iokit-open` is not an operation sealc models\n  the operations modelled: "
    ));
}

const ASSERT_SPEC: &str = "version = 1\nname = \"ops\"\n[filesystem]\ndeny_read = [\"/secret\"]\n[network]\nmode = \"none\"\n[[assert]]\ndeny = \"OP\"\npaths = [\"/secret/x\"]\n";

#[test]
fn an_assert_with_an_unknown_operation_is_refused_before_anything_is_proved() {
    let out = Sealc::new()
        .file("s.toml", ASSERT_SPEC.replace("OP", "file-read-dta"))
        .args(["compile", "s.toml"])
        .run();
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("sealc::assert::op"), "{}", out.stderr);
    assert!(
        out.stderr
            .contains("`file-read-dta` is not an operation sealc models"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("did you mean `file-read-data`?"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("`sealc explain --list-ops`"),
        "{}",
        out.stderr
    );
    assert!(!out.path("seal").exists());
    // The name it suggests compiles, and is proved.
    let ok = Sealc::new()
        .file("s.toml", ASSERT_SPEC.replace("OP", "file-read-data"))
        .args(["compile", "s.toml"])
        .run();
    assert_eq!(ok.code, 0, "{}", ok.stderr);
}

#[test]
fn the_spec_schema_enumerates_the_operations() {
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("schemas/seal-spec.schema.json")).unwrap(),
    )
    .unwrap();
    let names: Vec<serde_json::Value> = sealc::ops::names()
        .into_iter()
        .map(serde_json::Value::from)
        .collect();
    for verdict in ["allow", "deny"] {
        let field = &schema["definitions"]["Assert"]["properties"][verdict];
        assert_eq!(field["enum"], serde_json::Value::Array(names.clone()));
    }
    let validator = jsonschema::validator_for(&schema).unwrap();
    let as_json =
        |op: &str| -> serde_json::Value { toml::from_str(&ASSERT_SPEC.replace("OP", op)).unwrap() };
    assert!(validator.is_valid(&as_json("file-read-data")));
    assert!(validator.is_valid(&as_json("rename")));
    assert!(!validator.is_valid(&as_json("file-raed-data")));
}
