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
            list.starts_with("  the operations modelled: appleevent-send, file*, "),
            "{list}"
        );
        for name in sealc::ops::names() {
            assert!(list.contains(name), "{name} not in {list}");
        }
    }
    // Far from every name: no guess, the list still.
    let out = explain(&[&sb, "--op", "nvram-get", "/x"]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.starts_with(
        "error: `nvram-get` is not an operation sealc models\n  the operations modelled: "
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

fn json(out: &Out) -> serde_json::Value {
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout))
}

/// The keys of `sealc.explain/v1`, on both seal kinds, whatever the answer.
const KEYS: &[&str] = &[
    "also",
    "answer",
    "assumes",
    "checked",
    "decided_by",
    "detail",
    "name",
    "notes",
    "op",
    "path",
    "readings",
    "remote",
    "schema",
    "seal",
    "to",
    "undetermined",
];
const BY_KEYS: &[&str] = &["line", "rule", "source", "spec_entry", "step", "why"];

fn keys(v: &serde_json::Value) -> Vec<&str> {
    v.as_object().unwrap().keys().map(String::as_str).collect()
}

/// Issue 16: a refusal inside the Linux seal names the spec entry that
/// decides it, in text and in JSON.
#[test]
fn a_refusal_in_a_bwrap_seal_names_the_spec_entry() {
    let bwrap = golden("tests/golden-linux/probe-rep", "seal.bwrap.json");
    let skill = "/Users/agent/src/skills/premortem/SKILL.md";
    let out = explain(&[&bwrap, "--op", "file-read-data", skill]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        out.stdout,
        format!("deny\n  decided by `--tmpfs /Users/agent`\n  spec entry: filesystem.deny_read \"${{home}}\"\n  assumes: no link on the way to `{skill}` but those named here (a record names the links on the way to its roots); through another, made after compiling or on no root's way, the kernel goes where it leads and the seal decides there: ask about that path\n")
    );
    let v = json(&explain(&[
        &bwrap,
        "--op",
        "file-read-data",
        skill,
        "--format",
        "json",
    ]));
    assert_eq!(keys(&v), KEYS);
    assert_eq!(v["schema"], "sealc.explain/v1");
    assert_eq!(v["seal"], "seal.bwrap.json");
    assert_eq!(v["answer"], "deny");
    let by = &v["decided_by"];
    assert_eq!(keys(by), BY_KEYS);
    assert_eq!(by["source"], "seal.bwrap.json");
    assert_eq!(by["rule"], "--tmpfs /Users/agent");
    assert_eq!(by["spec_entry"], "filesystem.deny_read \"${home}\"");
    assert_eq!(by["line"], serde_json::Value::Null);
    assert_eq!(
        by["why"],
        "deny_read `${home}` (/Users/agent): an empty read-only stand-in directory"
    );
    // The step number is the step's place in the plan.
    let plan: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&bwrap).unwrap()).unwrap();
    let step = &plan["steps"][by["step"].as_u64().unwrap() as usize - 1];
    assert_eq!(step["args"], serde_json::json!(["--tmpfs", "/Users/agent"]));
    assert_eq!(step["spec"], by["spec_entry"]);
    // A write root, allowed: its own entry.
    let out = explain(&[
        &bwrap,
        "--op",
        "file-write-data",
        "/Users/agent/runs/r1/ws/notes.md",
    ]);
    assert!(
        out.stdout
            .contains("\n  spec entry: filesystem.write \"${run}/ws\"\n  assumes: "),
        "{}",
        out.stdout
    );
    // A move across mounts names both steps, each with its entry.
    let v = json(&explain(&[
        &bwrap,
        "--op",
        "rename",
        "/Users/agent/runs/r1/ws/a",
        "--to",
        "/Users/agent/runs/r1/a",
        "--format",
        "json",
    ]));
    assert_eq!(v["answer"], "deny");
    assert_eq!(v["to"], "/Users/agent/runs/r1/a");
    assert_eq!(
        v["decided_by"]["spec_entry"],
        "filesystem.write \"${run}/ws\""
    );
    assert_eq!(
        v["also"][0]["spec_entry"],
        "filesystem.deny_read \"${home}\""
    );
    assert!(v["detail"].as_str().unwrap().ends_with("(EXDEV)"), "{v}");
    // What it assumes of links no record names covers both names.
    let assumes = v["assumes"].as_str().unwrap_or_default();
    assert!(
        assumes.contains("`/Users/agent/runs/r1/ws/a` or to `/Users/agent/runs/r1/a`"),
        "{v}"
    );
    // The network: the mode is the entry.
    let out = explain(&[
        &bwrap,
        "--op",
        "network-outbound",
        "--remote",
        "127.0.0.1:22",
    ]);
    assert_eq!(
        out.stdout,
        "deny\n  decided by `--unshare-net`: only the sandbox's own loopback exists\n  spec entry: network.mode = \"proxy\"\n"
    );
    // What every seal has: no entry, the plan's reason instead.
    let out = explain(&[&bwrap, "--op", "file-read-data", "/proc/kcore"]);
    assert!(
        out.stdout.starts_with(
            "deny\n  decided by `--ro-bind-try /dev/null /proc/kcore`\n  no spec entry (every seal has it): host-global /proc entry, masked (as container runtimes do)\n  assumes: "
        ),
        "{}",
        out.stdout
    );
}

#[test]
fn a_seatbelt_answer_names_the_spec_entry_from_the_rule_comment() {
    let sb = golden("tests/golden/probe-rep", "seal.sb");
    let skill = "/Users/agent/src/skills/premortem/SKILL.md";
    let out = explain(&[&sb, "--op", "file-read-data", skill]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines[0], "deny");
    assert!(lines[1].starts_with("  decided by line "), "{}", out.stdout);
    // The deepest denied root decides here (on Linux the checkout, inside
    // the hidden home, needs no stand-in of its own: the home's decides).
    assert_eq!(
        lines[2],
        "  spec entry: filesystem.deny_read \"${checkout}\""
    );
    let v = json(&explain(&[
        &sb,
        "--op",
        "file-read-data",
        skill,
        "--format",
        "json",
    ]));
    assert_eq!(keys(&v), KEYS);
    assert_eq!(v["seal"], "seal.sb");
    let by = &v["decided_by"];
    assert_eq!(keys(by), BY_KEYS);
    assert_eq!(by["source"], "seal.sb");
    assert_eq!(by["step"], serde_json::Value::Null);
    assert_eq!(by["spec_entry"], "filesystem.deny_read \"${checkout}\"");
    // The line is the rule's, and the comment above it is the `why`.
    let profile = std::fs::read_to_string(&sb).unwrap();
    let line = by["line"].as_u64().unwrap() as usize;
    let text: Vec<&str> = profile.lines().collect();
    assert!(text[line - 1].starts_with(by["rule"].as_str().unwrap().split(' ').next().unwrap()));
    assert_eq!(format!("; {}", by["why"].as_str().unwrap()), text[line - 2]);
    // The base's own rule names the base.
    let v = json(&explain(&[
        &sb,
        "--op",
        "file-read-data",
        "/usr/bin/env",
        "--format",
        "json",
    ]));
    assert_eq!(v["answer"], "allow");
    assert_eq!(v["decided_by"]["rule"], "(allow default)");
    assert_eq!(
        v["decided_by"]["spec_entry"],
        "target.base = \"allow-default\""
    );
    // A proxy endpoint: the proxy entry.
    let v = json(&explain(&[
        &sb,
        "--op",
        "network-outbound",
        "--remote",
        "127.0.0.1:8080",
        "--format",
        "json",
    ]));
    assert_eq!(v["remote"], "127.0.0.1:8080");
    assert_eq!(v["path"], serde_json::Value::Null);
    assert_eq!(
        v["decided_by"]["spec_entry"],
        "network.proxy \"127.0.0.1:8080\""
    );
}

/// Ambiguous and undetermined answers keep the shape: their own fields
/// filled, the others null.
#[test]
fn every_answer_has_the_one_shape() {
    let amb = Sealc::new()
        .file(
            "amb.sb",
            "(version 1)\n(allow default)\n; filesystem.write \"/x\" (as written)\n(allow file-write* (subpath \"/x\"))\n(deny file-write*)\n",
        )
        .args(["explain", "amb.sb", "--op", "file-write-data", "/x/y", "--format", "json"])
        .run();
    assert_eq!(amb.code, 3);
    let v = json(&amb);
    assert_eq!(keys(&v), KEYS);
    assert_eq!(v["answer"], "ambiguous");
    assert_eq!(v["decided_by"], serde_json::Value::Null);
    let first = &v["readings"]["filtered_first"];
    assert_eq!(first["answer"], "allow");
    assert_eq!(keys(&first["decided_by"]), BY_KEYS);
    assert_eq!(first["decided_by"]["spec_entry"], "filesystem.write \"/x\"");
    assert_eq!(v["readings"]["source_order"]["answer"], "deny");
    assert_eq!(
        v["readings"]["source_order"]["decided_by"]["spec_entry"],
        serde_json::Value::Null
    );

    let sb = golden("tests/golden/probe-rep", "seal.sb");
    let bwrap = golden("tests/golden-linux/probe-rep", "seal.bwrap.json");
    // A Linux-only operation on a seatbelt profile, a seatbelt-only one on
    // a plan: modelled, but not by that seal.
    for (seal, op, says) in [
        (&sb, "rmdir", "a seatbelt profile does not model it"),
        (
            &bwrap,
            "process-exec",
            "seal.bwrap.json does not model `process-exec`",
        ),
    ] {
        let out = explain(&[seal, "--op", op, "/bin/ls"]);
        assert_eq!(out.code, 3, "{}", out.stderr);
        assert!(out.stdout.starts_with("undetermined\n  "), "{}", out.stdout);
        assert!(out.stdout.contains(says), "{}", out.stdout);
        let v = json(&explain(&[seal, "--op", op, "/bin/ls", "--format", "json"]));
        assert_eq!(keys(&v), KEYS);
        assert_eq!(v["answer"], "undetermined");
        assert_eq!(v["decided_by"], serde_json::Value::Null);
        assert_eq!(v["readings"], serde_json::Value::Null);
        assert!(v["undetermined"]["construct"].is_string(), "{v}");
        assert!(v["detail"].as_str().unwrap().contains(says), "{v}");
    }
    // `rename` without the new name.
    let v = json(&explain(&[
        &bwrap, "--op", "rename", "/a", "--format", "json",
    ]));
    assert_eq!(v["answer"], "undetermined");
    assert_eq!(v["detail"], "`rename` needs the new name: `--to PATH`");
}

/// The record is what a harness keeps: given where the seal goes, explain
/// answers from the seal it lists beside it, with the record's links, as
/// when asked of that seal; a record that lists no seal is refused.
#[test]
fn a_record_is_explained_by_the_seal_it_lists() {
    for dir in ["tests/golden/probe-rep", "tests/golden-linux/probe-rep"] {
        let record = golden(dir, "seal.json");
        let seal = if dir.contains("linux") {
            "seal.bwrap.json"
        } else {
            "seal.sb"
        };
        let by_record = explain(&[&record, "--op", "file-read-data", "/etc/passwd"]);
        let by_seal = explain(&[&golden(dir, seal), "--op", "file-read-data", "/etc/passwd"]);
        assert_eq!(by_record.code, by_seal.code, "{}", by_record.stderr);
        assert_eq!(by_record.stdout, by_seal.stdout);
        assert!(!by_record.stdout.is_empty());
        assert!(
            by_record.stderr.contains(&format!(
                "is a record: explaining its seal `{}",
                root().join(dir).join(seal).display()
            )),
            "{}",
            by_record.stderr
        );
    }
    let tmp = tempfile::tempdir().unwrap();
    let bare = tmp.path().join("seal.json");
    std::fs::write(&bare, r#"{"schema": "sealc.record/v1", "artifacts": []}"#).unwrap();
    let out = explain(&[bare.to_str().unwrap(), "--op", "file-read-data", "/x"]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("lists no seal"), "{}", out.stderr);
}
