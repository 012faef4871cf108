//! `sealc show` and `sealc diff`: golden texts of `show` for every shipped
//! spec (compiled on the in-memory demo host, both platforms), and the CLI's
//! behaviour. Regenerate the goldens with `SEALC_BLESS=1 cargo test --test show`.

mod common;

use std::collections::BTreeMap;

use common::*;
use sealc::spec::Platform;

fn probe_rep() -> String {
    std::fs::read_to_string(root().join("specs/probe-rep.toml")).unwrap()
}

/// Every file of a seal compiled from `src` on the demo host.
fn seal(src: &str, platform: Option<Platform>) -> BTreeMap<String, Vec<u8>> {
    match sealc::compile_for("spec.toml", src, &flags_for(src), platform, &demo_host()) {
        Ok(c) => c.files,
        Err(d) => panic!(
            "does not compile:\n{}",
            sealc::diag::render(&d, "spec.toml", src)
        ),
    }
}

/// A run with each seal's files under its directory.
fn with_seals(seals: &[(&str, &BTreeMap<String, Vec<u8>>)]) -> Sealc {
    let mut s = Sealc::new();
    for (dir, files) in seals {
        for (name, bytes) in *files {
            s = s.file(&format!("{dir}/{name}"), bytes.clone());
        }
    }
    s
}

#[test]
fn show_of_every_shipped_spec_matches_its_golden() {
    let mut failures = Vec::new();
    let specs = toml_files(&root().join("specs"));
    assert!(specs.len() >= 4, "{specs:?}");
    for spec in specs {
        let src = std::fs::read_to_string(&spec).unwrap();
        let stem = spec.file_stem().unwrap().to_string_lossy().into_owned();
        for (platform, suffix) in [(None, ""), (Some(Platform::Linux), ".linux")] {
            let files = seal(&src, platform);
            let out = with_seals(&[("seal", &files)])
                .args(["show", "seal/seal.json"])
                .run();
            assert_eq!(out.code, 0, "{stem}{suffix}: {}{}", out.stdout, out.stderr);
            assert!(out.stderr.is_empty(), "{}", out.stderr);
            failures.extend(check_golden(
                &root().join(format!("tests/show/{stem}{suffix}.txt")),
                out.stdout.as_bytes(),
            ));
        }
    }
    assert_goldens(failures);
}

#[test]
fn show_says_what_the_seal_allows_grouped() {
    let files = seal(&probe_rep(), None);
    let out = with_seals(&[("seal", &files)])
        .args(["show", "seal/seal.json"])
        .run();
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let s = &out.stdout;
    assert!(s.contains("verified: the record and the artifact files agree"));
    // A root as written, with the path it names.
    assert!(
        s.contains("  ${checkout} → /Users/agent/src/skills\n"),
        "{s}"
    );
    // ... and its realpath where that differs.
    assert!(
        s.contains(
            "${home}/.claude/skills → /Users/agent/.claude/skills (realpath /Users/agent/skill-store/skills)"
        ),
        "{s}"
    );
    // Each group says what it means.
    assert!(s.contains("\ncannot read: hidden"), "{s}");
    assert!(
        s.contains("\nstat only: metadata can be read; contents cannot"),
        "{s}"
    );
    assert!(s.contains("\ncan write: read and written beneath"), "{s}");
    assert!(s.contains("\nnetwork: proxy\n"), "{s}");
    assert!(s.contains("  ports: 443\n"), "{s}");
    assert!(
        s.contains("secrets, supplied by the runner at start and never recorded: OPENAI_API_KEY"),
        "{s}"
    );
    assert!(s.contains("  wall_seconds 240\n"), "{s}");
    assert!(
        s.contains("config: /Users/agent/runs/r1/home/.codex/config.toml"),
        "{s}"
    );
    // Names, never values: the captured PATH and a set value do not show.
    assert!(!s.contains("/usr/bin:/bin"), "{s}");
    assert!(s.contains("passed, with the value captured when compiled: LANG, PATH, TERM"));
}

#[test]
fn show_json_has_a_schema_tag_and_names_only() {
    let files = seal(&probe_rep(), None);
    let out = with_seals(&[("seal", &files)])
        .args(["show", "seal/seal.json", "--format", "json"])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["schema"], "sealc.show/v1");
    assert_eq!(v["verified"], true);
    assert_eq!(v["policy"]["seal"], "probe-rep");
    assert_eq!(v["policy"]["network"]["mode"], "proxy");
    assert_eq!(v["policy"]["network"]["proxy"], "127.0.0.1:8080");
    assert_eq!(
        v["policy"]["env"]["secrets"],
        serde_json::json!(["OPENAI_API_KEY"])
    );
    assert_eq!(
        v["policy"]["filesystem"]["stat_only"]["paths"][0]["written"],
        "${run}/dispatch"
    );
    assert!(!out.stdout.contains("/usr/bin:/bin"));
    // Sorted keys, the same bytes every time.
    assert_eq!(
        out.stdout,
        sealc::record::canonical_json(&v),
        "not in canonical form"
    );
}

#[test]
fn show_of_a_record_without_its_artifacts_says_it_does_not_verify() {
    let files = seal(&probe_rep(), None);
    let record: BTreeMap<String, Vec<u8>> = files
        .iter()
        .filter(|(n, _)| *n == "seal.json")
        .map(|(n, b)| (n.clone(), b.clone()))
        .collect();
    let out = with_seals(&[("lone", &record), ("seal", &files)])
        .args(["show", "lone/seal.json"])
        .run();
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("NOT VERIFIED"), "{}", out.stdout);
    assert!(
        out.stdout.contains("file seal.sb: missing"),
        "{}",
        out.stdout
    );
    // What the record says is still shown.
    assert!(out.stdout.contains("\nnetwork: proxy\n"), "{}", out.stdout);
    // `--artifacts` names where they are.
    let dir = out.dir;
    let out = Sealc::new()
        .in_dir(dir)
        .args(["show", "lone/seal.json", "--artifacts", "seal"])
        .run();
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
}

#[test]
fn show_of_an_edited_record_says_it_does_not_verify() {
    let mut files = seal(&probe_rep(), None);
    let mut v: serde_json::Value = serde_json::from_slice(&files["seal.json"]).unwrap();
    v["facts"]["vars"]["proxy_port"] = "9090".into();
    files.insert(
        "seal.json".into(),
        sealc::record::canonical_json(&v).into_bytes(),
    );
    let out = with_seals(&[("seal", &files)])
        .args(["show", "seal/seal.json"])
        .run();
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("NOT VERIFIED"), "{}", out.stdout);
    assert!(out.stdout.contains("binding: recorded"), "{}", out.stdout);
}

#[test]
fn diff_compares_a_record_that_does_not_verify_and_says_so() {
    let old = seal(&probe_rep(), None);
    let mut new = old.clone();
    let mut v: serde_json::Value = serde_json::from_slice(&new["seal.json"]).unwrap();
    v["facts"]["vars"]["proxy_port"] = "9090".into();
    new.insert(
        "seal.json".into(),
        sealc::record::canonical_json(&v).into_bytes(),
    );
    let out = with_seals(&[("a", &old), ("b", &new)])
        .args(["diff", "a/seal.json", "b/seal.json"])
        .run();
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains("does not verify with this sealc"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("~ network  proxy at `127.0.0.1:9090` (was `127.0.0.1:8080`)"),
        "{}",
        out.stdout
    );
}

#[test]
fn diff_of_a_seal_with_itself_finds_no_difference() {
    let files = seal(&probe_rep(), None);
    let out = with_seals(&[("a", &files)])
        .args(["diff", "a/seal.json", "a/seal.json"])
        .run();
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout
            .contains("no difference: the two seals allow the same"),
        "{}",
        out.stdout
    );
}

#[test]
fn diff_ignores_what_does_not_change_the_policy() {
    let old = seal(&probe_rep(), None);
    let edited = probe_rep().replace(
        "description = \"one sealed codex exec rep of the skill-probe harness\"",
        "description = \"reworded\"",
    );
    let new = seal(&edited, None);
    assert_ne!(old["seal.json"], new["seal.json"]);
    let out = with_seals(&[("a", &old), ("b", &new)])
        .args(["diff", "a/seal.json", "b/seal.json"])
        .run();
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout
            .contains("the records differ in nothing the seal allows"),
        "{}",
        out.stdout
    );
}

/// Diff probe-rep against probe-rep with `from` replaced by `to`.
fn diff_edit(from: &str, to: &str, format: &str) -> Out {
    let src = probe_rep();
    assert!(src.contains(from), "{from}");
    let old = seal(&src, None);
    let new = seal(&src.replace(from, to), None);
    with_seals(&[("a", &old), ("b", &new)])
        .args(["diff", "a/seal.json", "b/seal.json", "--format", format])
        .run()
}

#[test]
fn diff_names_a_new_write_root() {
    let out = diff_edit(
        "\"${run}/tmp\"]",
        "\"${run}/tmp\", \"${home}/.cache\"]",
        "text",
    );
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains("\nallows more:\n+ filesystem  `${home}/.cache` (/Users/agent/.cache) is writable (was hidden; newly listed)\n"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("1 difference, 1 allowing more"));
}

/// `exec.reset`: `show` lists the roots emptied before each run, and `diff`
/// says a root no longer reset lets one run's state reach the next.
#[test]
fn show_and_diff_name_the_reset_roots() {
    let src = probe_rep();
    let from = "timeout = { bin = \"/usr/bin/timeout\", seconds = 240 }";
    assert!(src.contains(from));
    let reset = src.replace(from, &format!("{from}\nreset = [\"${{run}}/tmp\"]"));
    let (old, new) = (seal(&reset, None), seal(&src, None));
    let show = with_seals(&[("a", &old)])
        .args(["show", "a/seal.json"])
        .run();
    assert!(
        show.stdout
            .contains("  emptied before each run (`exec.reset`): /Users/agent/runs/r1/tmp\n"),
        "{}",
        show.stdout
    );
    // The same roots in another order: the same policy.
    let two = |a: &str, b: &str| {
        let src = src.replace(
            from,
            &format!("{from}\nreset = [\"${{run}}/{a}\", \"${{run}}/{b}\"]"),
        );
        let s = seal(&src, None);
        with_seals(&[("a", &s)])
            .args(["show", "a/seal.json", "--format", "json"])
            .run()
    };
    let (ab, ba) = (two("tmp", "home"), two("home", "tmp"));
    assert_eq!(ab.code, 0, "{}", ab.stderr);
    let reset = |o: &Out| {
        serde_json::from_str::<serde_json::Value>(&o.stdout).unwrap()["policy"]["reset"].clone()
    };
    assert_eq!(
        reset(&ab),
        serde_json::json!(["/Users/agent/runs/r1/home", "/Users/agent/runs/r1/tmp"])
    );
    assert_eq!(reset(&ab), reset(&ba));
    let out = with_seals(&[("a", &old), ("b", &new)])
        .args(["diff", "a/seal.json", "b/seal.json"])
        .run();
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains("+ filesystem  /Users/agent/runs/r1/tmp kept from one run to the next (was emptied before each run)\n"),
        "{}",
        out.stdout
    );
}

/// `exec.outputs`: `show` names the files a run vouches for, and `diff`
/// says when the list changes (neither more nor less allowed).
#[test]
fn show_and_diff_name_the_outputs() {
    let src = probe_rep();
    let from = "timeout = { bin = \"/usr/bin/timeout\", seconds = 240 }";
    let with = src.replace(
        from,
        &format!("{from}\noutputs = [\"${{run}}/ws/answer.md\"]"),
    );
    let (old, new) = (seal(&src, None), seal(&with, None));
    let show = with_seals(&[("b", &new)])
        .args(["show", "b/seal.json"])
        .run();
    assert!(
        show.stdout.contains(
            "  hashed after each run, attested when written (`exec.outputs`): /Users/agent/runs/r1/ws/answer.md\n"
        ),
        "{}",
        show.stdout
    );
    let out = with_seals(&[("a", &old), ("b", &new)])
        .args(["diff", "a/seal.json", "b/seal.json"])
        .run();
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains(
            "~ filesystem  /Users/agent/runs/r1/ws/answer.md hashed and attested after each run\n"
        ),
        "{}",
        out.stdout
    );
}

#[test]
fn diff_names_a_new_host() {
    let out = diff_edit(
        "\"auth.openai.com\"]",
        "\"auth.openai.com\", \"example.com\"]",
        "text",
    );
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains("+ network  host `example.com` added\n"),
        "{}",
        out.stdout
    );
}

#[test]
fn diff_names_a_new_env_pass_name() {
    // Set on the demo host: it crosses, which allows more.
    let src = std::fs::read_to_string(root().join("specs/minimal.toml")).unwrap();
    let (old, new) = (
        seal(&src, None),
        seal(&format!("{src}\n[env]\npass = [\"TERM\"]\n"), None),
    );
    let out = with_seals(&[("a", &old), ("b", &new)])
        .args(["diff", "a/seal.json", "b/seal.json"])
        .run();
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains(
            "\nallows more:\n+ env  `TERM` added: passed, its value captured when compiled\n"
        ),
        "{}",
        out.stdout
    );
    // Not set on the demo host: listed, but nothing crosses.
    let out = diff_edit(
        "pass   = [\"PATH\", \"LANG\", \"TERM\"]",
        "pass   = [\"PATH\", \"LANG\", \"TERM\", \"HOME_LANG\"]",
        "text",
    );
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout
            .contains("~ env  `HOME_LANG` added: listed in `pass` but unset when compiled"),
        "{}",
        out.stdout
    );
    let out = diff_edit(
        "pass   = [\"PATH\", \"LANG\", \"TERM\"]",
        "pass   = [\"PATH\", \"LANG\"]",
        "text",
    );
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout
            .contains("\nallows less:\n- env  `TERM` removed (was passed, its value captured when compiled)\n"),
        "{}",
        out.stdout
    );
    // The value never shows.
    assert!(!out.stdout.contains("xterm-256color"), "{}", out.stdout);
}

#[test]
fn diff_puts_widening_first_and_says_which_way() {
    let src = probe_rep();
    let old = seal(&src, None);
    let edited = src
        .replace("ports = [443]", "ports = [443, 80]")
        .replace("seconds = 240", "seconds = 120")
        .replace("model = \"gpt-5.5\"", "model = \"gpt-5.4\"");
    let new = seal(&edited, None);
    let out = with_seals(&[("a", &old), ("b", &new)])
        .args(["diff", "a/seal.json", "b/seal.json"])
        .run();
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    let s = &out.stdout;
    let more = s.find("allows more:\n+ network  port `80` added").expect(s);
    let less = s
        .find("allows less:\n- limits   wall_seconds 120 (was 240)")
        .expect(s);
    let changed = s
        .find("changed:\n~ codex    model `gpt-5.4` (was `gpt-5.5`)")
        .expect(s);
    assert!(more < less && less < changed, "{s}");
}

#[test]
fn diff_json_has_a_schema_tag_and_each_change() {
    let out = diff_edit("ports = [443]", "ports = [443, 80]", "json");
    assert_eq!(out.code, 1, "{}", out.stderr);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["schema"], "sealc.diff/v1");
    assert_eq!(v["same"], false);
    assert_eq!(v["old"]["verified"], true);
    assert_eq!(
        v["changes"],
        serde_json::json!([{
            "effect": "more",
            "section": "network",
            "subject": "80",
            "text": "port `80` added",
        }])
    );
    assert_eq!(out.stdout, sealc::record::canonical_json(&v));
}

#[test]
fn diff_across_platforms_says_so() {
    let src = probe_rep();
    let (mac, linux) = (seal(&src, None), seal(&src, Some(Platform::Linux)));
    let out = with_seals(&[("a", &mac), ("b", &linux)])
        .args(["diff", "a/seal.json", "b/seal.json"])
        .run();
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains("~ seal  platform linux (was macos)"),
        "{}",
        out.stdout
    );
}

#[test]
fn bad_input_exits_2_and_prints_nothing_to_stdout() {
    let files = seal(&probe_rep(), None);
    let cases: [&[&str]; 5] = [
        &["show", "missing.json"],
        &["show", "spec.toml"],
        &["diff", "a/seal.json", "missing.json"],
        &["diff", "spec.toml", "a/seal.json"],
        &["diff", "a/seal.json"],
    ];
    for args in cases {
        let out = with_seals(&[("a", &files)])
            .file("spec.toml", probe_rep())
            .args(args.iter().copied())
            .run();
        assert_eq!(out.code, 2, "{args:?}: {}{}", out.stdout, out.stderr);
        assert!(out.stdout.is_empty(), "{args:?}: {}", out.stdout);
        assert!(!out.stderr.is_empty(), "{args:?}");
    }
    let out = Sealc::new().args(["show", "missing.json"]).run();
    assert!(out.stderr.contains("sealc::io::read"), "{}", out.stderr);
    assert!(out.stderr.contains("`missing.json`"), "{}", out.stderr);
    let out = Sealc::new()
        .file("spec.toml", probe_rep())
        .args(["show", "spec.toml"])
        .run();
    assert!(
        out.stderr.contains("sealc::record::unusable"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("not JSON"), "{}", out.stderr);
}

/// A harness compiles the reviewed spec once per run directory: `diff`
/// says in one line that only var values differ (text and JSON), then
/// what they change. A host on which a root resolves elsewhere (a link) is
/// more than a var, and gets no such line.
#[test]
fn diff_of_two_run_directories_of_one_spec_says_only_vars_differ() {
    let src = probe_rep();
    let compile = |run: &str, host: sealc::facts::FakeHost| {
        let flags: Vec<(String, String)> = flags_for(&src)
            .into_iter()
            .map(|(k, v)| {
                if k == "run" {
                    (k, run.to_string())
                } else {
                    (k, v)
                }
            })
            .collect();
        sealc::compile_for("spec.toml", &src, &flags, None, &host)
            .unwrap_or_else(|d| panic!("{}", sealc::diag::render(&d, "spec.toml", &src)))
            .files
    };
    let a = compile("/Users/agent/runs/r1", demo_host());
    let b = compile(
        "/Users/agent/runs/r2",
        demo_host().dir("/Users/agent/runs/r2/ws/.harness/secrets"),
    );
    let out = with_seals(&[("a", &a), ("b", &b)])
        .args(["diff", "a/seal.json", "b/seal.json"])
        .run();
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    let line = out.stdout.lines().nth(2).unwrap_or_default().to_string();
    assert_eq!(
        line,
        "only var values differ (the same spec, the same policy with each var as written): `run` `/Users/agent/runs/r1` → `/Users/agent/runs/r2`",
        "{}",
        out.stdout
    );
    let json = with_seals(&[("a", &a), ("b", &b)])
        .args(["diff", "a/seal.json", "b/seal.json", "--format", "json"])
        .run();
    let v: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(
        v["only_vars"],
        serde_json::json!([{"name": "run", "old": "/Users/agent/runs/r1", "new": "/Users/agent/runs/r2"}])
    );
    // The second run directory's workspace is a link elsewhere: a policy
    // difference no var explains.
    let linked = compile(
        "/Users/agent/runs/r2",
        demo_host()
            .dir("/Users/agent/elsewhere/.harness/secrets")
            .dir("/Users/agent/runs/r2")
            .link("/Users/agent/runs/r2/ws", "/Users/agent/elsewhere"),
    );
    let out = with_seals(&[("a", &a), ("b", &linked)])
        .args(["diff", "a/seal.json", "b/seal.json"])
        .run();
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(!out.stdout.contains("only var values"), "{}", out.stdout);
    // Another spec: no such line either.
    let out = diff_edit(
        "\"${run}/tmp\"]",
        "\"${run}/tmp\", \"${home}/.cache\"]",
        "text",
    );
    assert!(!out.stdout.contains("only var values"), "{}", out.stdout);
}
