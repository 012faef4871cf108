//! A secret's value is never written anywhere: not in an artifact, the
//! record, or a diagnostic, even when it is set while compiling.

mod common;

use common::*;

const VALUE: &str = "sk-proj-SEALC-TEST-3b1f9e7d5c";

fn spec() -> String {
    std::fs::read_to_string(root().join("specs/probe-rep.toml")).unwrap()
}

#[test]
fn the_secret_value_appears_in_no_output() {
    let home = root().join("tests/fixtures/demo-home");
    let out = Sealc::new()
        .file("probe-rep.toml", spec())
        .env("OPENAI_API_KEY", VALUE)
        .env("PATH", "/usr/bin:/bin")
        .args(["compile", "probe-rep.toml", "--var"])
        .args([format!("home={}", home.display())])
        .args([
            "--var",
            "run=/private/tmp/sealc-secret/run",
            "--var",
            "checkout=/private/tmp/sealc-secret/co",
        ])
        .args(["--var", "proxy_port=8080"])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!out.stdout.contains(VALUE) && !out.stderr.contains(VALUE));
    let mut checked = 0;
    for f in ["seal.sb", "env.json", "codex/config.toml", "seal.json"] {
        let bytes = std::fs::read(out.path("seal").join(f)).unwrap();
        assert!(
            !bytes.windows(VALUE.len()).any(|w| w == VALUE.as_bytes()),
            "{f} holds the secret value"
        );
        checked += 1;
    }
    assert_eq!(checked, 4);
    // The name crosses, without a value.
    let env: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.path("seal/env.json")).unwrap()).unwrap();
    assert_eq!(env["secrets"], serde_json::json!(["OPENAI_API_KEY"]));
    assert!(env["env"].get("OPENAI_API_KEY").is_none());
}

#[test]
fn a_var_that_would_read_a_secret_is_refused_before_reading_it() {
    let src = "version = 1\nname = \"s\"\n[vars]\nk = { env = \"OPENAI_API_KEY\" }\n[env]\nsecret = [\"OPENAI_API_KEY\"]\n";
    let out = Sealc::new()
        .file("s.toml", src)
        .env("OPENAI_API_KEY", VALUE)
        .args(["compile", "s.toml"])
        .run();
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("sealc::var::secret"), "{}", out.stderr);
    assert!(!out.stderr.contains(VALUE));
}
