//! `sealc verify`: goldens of its output, the tamper campaign, a consistent
//! forgery, host independence, the live check and the Codex-config check.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::*;
use sealc::verify::{verify, Verdict};

/// The probe-rep seal compiled on the demo host: every file by name.
fn probe_files() -> BTreeMap<String, Vec<u8>> {
    let src = std::fs::read_to_string(root().join("specs/probe-rep.toml")).unwrap();
    sealc::compile("probe-rep.toml", &src, &demo_flags(), &demo_host())
        .unwrap()
        .files
}

type Files = BTreeMap<String, Vec<u8>>;
type Mutator = Box<dyn Fn(&mut Files)>;

fn write_seal(dir: &Path, files: &BTreeMap<String, Vec<u8>>) {
    for (name, bytes) in files {
        let p = dir.join("seal").join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }
}

fn verify_files(files: &BTreeMap<String, Vec<u8>>) -> Verdict {
    let lookup = |n: &str| files.get(n).cloned();
    verify(&files["seal.json"], &lookup).report.verdict()
}

/// Run `sealc verify` on a seal written with `mutate` applied.
fn run_verify(mutate: impl FnOnce(&mut BTreeMap<String, Vec<u8>>), format: &str) -> Out {
    let mut files = probe_files();
    mutate(&mut files);
    let dir = tempfile::tempdir().unwrap();
    write_seal(dir.path(), &files);
    Sealc::new()
        .in_dir(dir)
        .args(["verify", "seal/seal.json", "--format", format])
        .run()
}

fn replace(files: &mut BTreeMap<String, Vec<u8>>, name: &str, from: &str, to: &str) {
    let text = String::from_utf8(files[name].clone()).unwrap();
    assert!(text.contains(from), "{name} has no {from:?}");
    files.insert(name.to_string(), text.replacen(from, to, 1).into_bytes());
}

#[test]
fn verify_output_goldens() {
    type Mutation = fn(&mut BTreeMap<String, Vec<u8>>);
    let cases: [(&str, Mutation, i32); 4] = [
        ("clean", |_| {}, 0),
        (
            "drifted-profile",
            |f| replace(f, "seal.sb", "localhost:8080", "localhost:9999"),
            1,
        ),
        (
            "drifted-codex-config",
            |f| {
                replace(
                    f,
                    "codex/config.toml",
                    "approval_policy = \"never\"",
                    "approval_policy = \"on-request\"",
                )
            },
            1,
        ),
        (
            "unknown-field",
            |f| {
                replace(
                    f,
                    "seal.json",
                    "  \"schema\": ",
                    "  \"sandbox\": \"off\",\n  \"schema\": ",
                )
            },
            2,
        ),
    ];
    let mut failures = Vec::new();
    for (name, mutate, code) in cases {
        for (format, ext) in [("text", "txt"), ("json", "json")] {
            let out = run_verify(mutate, format);
            if out.code != code {
                failures.push(format!(
                    "{name} ({format}): exit {} (want {code})\n{}{}",
                    out.code, out.stdout, out.stderr
                ));
            }
            failures.extend(check_golden(
                &root().join("tests/verify").join(format!("{name}.{ext}")),
                out.stdout.as_bytes(),
            ));
        }
    }
    assert_goldens(failures);
}

/// Byte positions to flip: all of a small file, 256 spread over a large one.
fn positions(len: usize) -> Vec<usize> {
    if len <= 2048 {
        (0..len).collect()
    } else {
        (0..256).map(|i| i * len / 256).chain([len - 1]).collect()
    }
}

#[test]
fn tamper_campaign_never_verifies() {
    let files = probe_files();
    assert_eq!(verify_files(&files), Verdict::Verified);
    let mut flips = 0;
    for (name, bytes) in &files {
        for pos in positions(bytes.len()) {
            let mut tampered = files.clone();
            tampered.get_mut(name).unwrap()[pos] ^= 0x01;
            let verdict = verify_files(&tampered);
            assert_ne!(
                verdict,
                Verdict::Verified,
                "flipping byte {pos} of {name} still verifies"
            );
            flips += 1;
        }
    }
    eprintln!("tamper campaign: {flips} single-byte flips, none verified");
    assert!(flips > 1000, "{flips}");
}

#[test]
fn a_consistent_forgery_is_caught_by_recompilation() {
    let mut files = probe_files();
    replace(
        &mut files,
        "seal.sb",
        "(deny file-read* (subpath \"/Users/agent/src/skills\"))",
        "(allow file-read* (subpath \"/Users/agent/src/skills\"))",
    );
    // Recompute every digest, length and the binding, as a forger would.
    let mut record = sealc::verify::read_record(&files["seal.json"]).unwrap();
    for a in &mut record.artifacts {
        a.bytes = files[&a.file].len() as u64;
        a.digest = sealc::digest::sha256(&files[&a.file]);
    }
    record.binding = record.compute_binding();
    files.insert("seal.json".into(), record.to_canonical().into_bytes());
    assert!(
        sealc::verify::read_record(&files["seal.json"]).is_ok(),
        "the forgery is a well-formed record"
    );
    let lookup = |n: &str| files.get(n).cloned();
    let outcome = verify(&files["seal.json"], &lookup);
    assert_eq!(outcome.report.verdict(), Verdict::Drift);
    let failed: Vec<&str> = outcome
        .report
        .checks
        .iter()
        .filter(|c| c.status == sealc::verify::Status::Drift)
        .map(|c| c.subject.as_str())
        .collect();
    assert!(
        failed.contains(&"artifact seal.sb") && failed.contains(&"file seal.sb"),
        "{failed:?}"
    );
}

#[test]
fn unusable_records_exit_2() {
    let cases: [(&str, Mutator, &str); 5] = [
        (
            "not json",
            Box::new(|f| {
                f.insert("seal.json".into(), b"not json".to_vec());
            }),
            "not JSON",
        ),
        (
            "not canonical",
            Box::new(|f| replace(f, "seal.json", "{\n  \"artifacts\"", "{\n   \"artifacts\"")),
            "canonical",
        ),
        (
            "schema v2",
            Box::new(|f| replace(f, "seal.json", "sealc.record/v1", "sealc.record/v2")),
            "unknown record schema",
        ),
        (
            "missing field",
            Box::new(|f| replace(f, "seal.json", "  \"sealc_version\": \"0.1.0\",\n", "")),
            "sealc_version",
        ),
        (
            "wrong type",
            Box::new(|f| replace(f, "seal.json", "\"bytes\": ", "\"bytes\": -")),
            "/artifacts/0/bytes",
        ),
    ];
    for (what, mutate, needle) in cases {
        let out = run_verify(mutate, "text");
        assert_eq!(out.code, 2, "{what}: {}", out.stdout);
        assert!(
            out.stdout.starts_with("unusable: "),
            "{what}: {}",
            out.stdout
        );
        assert!(out.stdout.contains(needle), "{what}: {}", out.stdout);
    }
}

#[test]
fn verify_is_host_independent() {
    // Compile for real, with a launcher in a directory that is deleted later.
    let host_dir = tempfile::tempdir().unwrap();
    let home = host_dir.path().join("home");
    std::fs::create_dir_all(home.join(".local/bin")).unwrap();
    std::fs::write(home.join(".local/bin/codex"), "#!/bin/sh\n").unwrap();
    let spec = std::fs::read_to_string(root().join("specs/probe-rep.toml")).unwrap();
    let compiled = Sealc::new()
        .file("probe-rep.toml", spec)
        .env("PATH", "/usr/bin:/bin")
        .args(["compile", "probe-rep.toml", "--var"])
        .args([format!("home={}", home.display())])
        .args([
            "--var",
            "run=/private/tmp/sealc-hi/run",
            "--var",
            "checkout=/private/tmp/sealc-hi/co",
            "--var",
            "proxy_port=3128",
        ])
        .run();
    assert_eq!(compiled.code, 0, "{}", compiled.stderr);
    let first = Sealc::new()
        .args(["verify"])
        .args([compiled.path("seal/seal.json")])
        .run();
    assert_eq!(first.code, 0, "{}", first.stdout);

    // Move the seal elsewhere, delete the host paths, verify from another
    // directory with an empty environment (HOME is set to the temp dir by
    // the builder; clear it too).
    let elsewhere = tempfile::tempdir().unwrap();
    for f in ["seal.json", "seal.sb", "env.json", "codex/config.toml"] {
        let to = elsewhere.path().join("moved").join(f);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(compiled.path("seal").join(f), to).unwrap();
    }
    drop(host_dir);
    drop(compiled);
    let mut cmd = assert_cmd::Command::cargo_bin("sealc").unwrap();
    let out = cmd
        .current_dir(elsewhere.path().join("moved"))
        .env_clear()
        .args(["verify", "seal.json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        first.stdout,
        "output depends on the host or cwd"
    );

    // --live reports the deleted launcher as absent here, and does not fail for it.
    let live = assert_cmd::Command::cargo_bin("sealc")
        .unwrap()
        .current_dir(elsewhere.path().join("moved"))
        .env_clear()
        .args(["verify", "seal.json", "--live"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&live.stdout);
    assert!(
        text.contains("absent here  live launcher ")
            || text.contains("absent here") && text.contains("live launcher"),
        "{text}"
    );
    assert_eq!(live.status.code(), Some(0), "{text}");
}

#[test]
fn live_reports_checked_facts_and_drifted_launchers() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(home.join(".local/bin")).unwrap();
    std::fs::write(home.join(".local/bin/codex"), "v1\n").unwrap();
    let spec = "version = 1\nname = \"live\"\n[vars]\nhome = { required = true }\n[filesystem]\ndeny_read = [\"${home}\"]\n[launcher]\npath = \"${home}/.local/bin/codex\"\n";
    let args = |extra: &[&str]| {
        let mut v = vec![
            "compile".to_string(),
            "s.toml".into(),
            "--var".into(),
            format!("home={}", home.display()),
        ];
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    let c = Sealc::new().file("s.toml", spec).args(args(&[])).run();
    assert_eq!(c.code, 0, "{}", c.stderr);
    let ok = Sealc::new()
        .args(["verify", "--live"])
        .args([c.path("seal/seal.json")])
        .run();
    assert_eq!(ok.code, 0, "{}", ok.stdout);
    assert!(
        ok.stdout.contains("ok          live launcher"),
        "{}",
        ok.stdout
    );
    // The launcher changes on the host: live drift, exit 1.
    std::fs::write(home.join(".local/bin/codex"), "v2\n").unwrap();
    let drift = Sealc::new()
        .args(["verify", "--live"])
        .args([c.path("seal/seal.json")])
        .run();
    assert_eq!(drift.code, 1, "{}", drift.stdout);
    assert!(
        drift.stdout.contains("drift       live launcher"),
        "{}",
        drift.stdout
    );
    // Without --live the record still verifies: the host is not consulted.
    let plain = Sealc::new()
        .args(["verify"])
        .args([c.path("seal/seal.json")])
        .run();
    assert_eq!(plain.code, 0, "{}", plain.stdout);
}

#[test]
fn live_reports_a_linux_root_that_changed_kind() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap().join("secret");
    std::fs::create_dir_all(&root).unwrap();
    let spec = format!(
        "version = 1\nname = \"kind\"\n[filesystem]\ndeny_read = [{:?}]\n",
        root.display().to_string()
    );
    let c = Sealc::new()
        .file("s.toml", spec)
        .args(["compile", "s.toml", "--platform", "linux"])
        .run();
    assert_eq!(c.code, 0, "{}", c.stderr);
    let record = c.path("seal/seal.json");
    let ok = Sealc::new()
        .args(["verify", "--live"])
        .args([&record])
        .run();
    assert_eq!(ok.code, 0, "{}", ok.stdout);
    assert!(
        ok.stdout.contains("ok          live kind "),
        "{}",
        ok.stdout
    );
    // The directory becomes a file: a tmpfs no longer hides it right.
    std::fs::remove_dir(&root).unwrap();
    std::fs::write(&root, "now a file").unwrap();
    let drift = Sealc::new()
        .args(["verify", "--live"])
        .args([&record])
        .run();
    assert_eq!(drift.code, 1, "{}", drift.stdout);
    assert!(
        drift.stdout.contains("record a directory, here a file"),
        "{}",
        drift.stdout
    );
}

/// Issue 22, finding 3: `--live` runs the hard-link check `sealc exec`
/// runs, and says a denied file linked into the write root after
/// compiling, without blanking the other live facts.
#[test]
fn live_reports_a_denied_file_linked_into_a_write_root() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap().join("ws");
    std::fs::create_dir_all(ws.join("grader")).unwrap();
    std::fs::write(ws.join("grader/answer"), "a").unwrap();
    let spec = format!(
        "version = 1\nname = \"links\"\n[filesystem]\nwrite = [{:?}]\ndeny_read = [{:?}]\n",
        ws.display().to_string(),
        ws.join("grader").display().to_string()
    );
    let c = Sealc::new()
        .file("s.toml", spec)
        .args(["compile", "s.toml", "--platform", "linux"])
        .run();
    assert_eq!(c.code, 0, "{}", c.stderr);
    let record = c.path("seal/seal.json");
    std::fs::hard_link(ws.join("grader/answer"), ws.join(".peek")).unwrap();
    let drift = Sealc::new()
        .args(["verify", "--live"])
        .args([&record])
        .run();
    assert_eq!(drift.code, 1, "{}", drift.stdout);
    assert!(
        drift.stdout.contains("drift       live hard links") && drift.stdout.contains("/ws/.peek`"),
        "{}",
        drift.stdout
    );
    assert!(
        drift.stdout.contains("ok          live kind "),
        "{}",
        drift.stdout
    );
}

/// A Linux record whose facts lose a root's kind (an edit, re-bound by
/// whoever made it) does not compile back: no root goes unmounted.
#[test]
fn a_linux_record_without_a_roots_kind_does_not_recompile() {
    let src = "version = 1\nname = \"k\"\n[target]\nplatform = \"linux\"\n[filesystem]\ndeny_read = [\"/d\"]\n";
    let host = sealc::facts::FakeHost::new().dir("/d");
    let c = sealc::compile("k.toml", src, &Vec::new(), &host).unwrap();
    assert!(c.facts().kinds.contains_key("/d"));
    let mut facts = c.facts().clone();
    facts.kinds.clear();
    let err = sealc::compile_with_facts("k.toml", src, facts).unwrap_err();
    assert!(
        err.0.iter().any(|d| d.code == "sealc::linux::kind"),
        "{err:?}"
    );
}

/// `sealc verify --codex-config AFTER --workspace WS` on `files`, the
/// generated config edited by `edit`.
fn verify_codex_after(
    mut files: BTreeMap<String, Vec<u8>>,
    ws: &str,
    edit: impl Fn(&str) -> String,
) -> Out {
    let generated = String::from_utf8(files["codex/config.toml"].clone()).unwrap();
    files.insert("after.toml".into(), edit(&generated).into_bytes());
    let dir = tempfile::tempdir().unwrap();
    write_seal(dir.path(), &files);
    Sealc::new()
        .in_dir(dir)
        .args([
            "verify",
            "seal/seal.json",
            "--codex-config",
            "seal/after.toml",
            "--workspace",
            ws,
        ])
        .run()
}

#[test]
fn codex_config_may_only_gain_the_workspace_trust_entry() {
    // A seal that names no workspace: Codex may trust its working directory.
    let src = std::fs::read_to_string(root().join("specs/probe-rep.toml"))
        .unwrap()
        .replace("workspace = \"${run}/ws\"", "");
    let files = sealc::compile("probe-rep.toml", &src, &demo_flags(), &demo_host())
        .unwrap()
        .files;
    let ws = "/Users/agent/runs/r1/ws";
    let cases: [(&str, String, i32); 5] = [
        (
            "trust entry",
            format!("\n[projects.\"{ws}\"]\ntrust_level = \"trusted\"\n"),
            0,
        ),
        ("empty projects", "\n[projects]\n".to_string(), 1),
        (
            "other path",
            "\n[projects.\"/Users/agent\"]\ntrust_level = \"trusted\"\n".to_string(),
            1,
        ),
        (
            "mcp server",
            "\n[mcp_servers.evil]\ncommand = \"/bin/sh\"\n".to_string(),
            1,
        ),
        (
            "untrusted",
            format!("\n[projects.\"{ws}\"]\ntrust_level = \"untrusted\"\n"),
            1,
        ),
    ];
    for (what, appended, code) in cases {
        let out = verify_codex_after(files.clone(), ws, |g| format!("{g}{appended}"));
        assert_eq!(out.code, code, "{what}: {}", out.stdout);
        assert!(
            out.stdout.contains("codex config"),
            "{what}: {}",
            out.stdout
        );
    }
}

#[test]
fn a_recorded_untrusted_workspace_must_stay_untrusted() {
    let ws = "/Users/agent/runs/r1/ws";
    let files = probe_files();
    let generated = String::from_utf8(files["codex/config.toml"].clone()).unwrap();
    assert!(
        generated.contains(&format!("[projects.\"{ws}\"]\ntrust_level = \"untrusted\"")),
        "{generated}"
    );
    let out = verify_codex_after(files.clone(), ws, str::to_string);
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert!(
        out.stdout
            .lines()
            .any(|l| l.starts_with("ok ") && l.contains("codex config")),
        "{}",
        out.stdout
    );
    let trusted = verify_codex_after(files.clone(), ws, |g| {
        g.replace("\"untrusted\"", "\"trusted\"")
    });
    assert_eq!(trusted.code, 1, "{}", trusted.stdout);
    assert!(trusted.stdout.contains("trust_level"), "{}", trusted.stdout);
    let dropped = verify_codex_after(files, ws, |g| {
        g.replace(
            &format!("[projects.\"{ws}\"]\ntrust_level = \"untrusted\"\n"),
            "",
        )
    });
    assert_eq!(dropped.code, 1, "{}", dropped.stdout);
}

#[test]
fn expect_pins_the_reviewed_binding() {
    let files = probe_files();
    let record: serde_json::Value = serde_json::from_slice(&files["seal.json"]).unwrap();
    let binding = record["binding"].as_str().unwrap().to_string();
    let other = format!("sha256:{}", "0".repeat(64));
    let run = |expect: &str, format: &str| {
        let dir = tempfile::tempdir().unwrap();
        write_seal(dir.path(), &files);
        Sealc::new()
            .in_dir(dir)
            .args(["verify", "seal/seal.json", "--format", format])
            .args(["--expect", expect])
            .run()
    };
    // The reviewed seal: verified, and the report shows what was pinned.
    let out = run(&binding, "text");
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert!(
        out.stdout.contains(&format!("binding {binding}\n")),
        "{}",
        out.stdout
    );
    let line = |status: &str| {
        out.stdout
            .lines()
            .find(|l| l.starts_with(status) && l.contains(" expected binding "))
            .map(str::to_string)
    };
    assert!(line("ok ").is_some(), "{}", out.stdout);
    // Any other seal, however well it verifies: drift, both digests shown.
    let out = run(&other, "text");
    assert_eq!(out.code, 1, "{}", out.stdout);
    let drift = out
        .stdout
        .lines()
        .find(|l| l.starts_with("drift ") && l.contains(" expected binding "))
        .unwrap_or_default();
    assert!(
        drift.ends_with(&format!("expected {other}, the record binds {binding}")),
        "{}",
        out.stdout
    );
    let out = run(&other, "json");
    assert_eq!(out.code, 1, "{}", out.stdout);
    let report: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(report["binding"], binding.as_str());
    assert_eq!(report["verdict"], "drift");
    // A value that is no binding at all is bad input.
    for bad in [
        "",
        "sha256:",
        &binding[7..],
        &binding.to_uppercase(),
        &format!("{binding}0"),
        "sha512:00",
    ] {
        let out = run(bad, "text");
        assert_eq!(out.code, 2, "--expect {bad:?}: {}", out.stderr);
        assert!(out.stderr.contains("--expect"), "{}", out.stderr);
    }
}

#[test]
fn live_reports_a_moved_denied_root_and_a_replaced_builder() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(t.join("ws/a/secret")).unwrap();
    std::fs::create_dir_all(t.join("tools")).unwrap();
    std::fs::write(t.join("tools/bwrap"), "reviewed").unwrap();
    let spec = format!(
        "version = 1\nname = \"moved\"\n[filesystem]\nwrite = [{:?}]\ndeny_read = [{:?}]\n[exec]\nbwrap = {:?}\n",
        t.join("ws").display().to_string(),
        t.join("ws/a/secret").display().to_string(),
        t.join("tools/bwrap").display().to_string(),
    );
    let c = Sealc::new()
        .file("s.toml", spec)
        .args(["compile", "s.toml", "--platform", "linux"])
        .run();
    assert_eq!(c.code, 0, "{}", c.stderr);
    let record = c.path("seal/seal.json");
    let live = || {
        Sealc::new()
            .args(["verify", "--live"])
            .args([&record])
            .run()
    };
    let ok = live();
    assert_eq!(ok.code, 0, "{}", ok.stdout);
    let line = |out: &Out, subject: &str| {
        out.stdout
            .lines()
            .find(|l| l.contains(subject))
            .unwrap_or_default()
            .to_string()
    };
    let a = format!("live identity {} ", t.join("ws/a").display());
    assert!(line(&ok, &a).starts_with("ok "), "{}", ok.stdout);
    let b = format!("live builder {} ", t.join("tools/bwrap").display());
    assert!(line(&ok, &b).starts_with("ok "), "{}", ok.stdout);

    std::fs::rename(t.join("ws/a"), t.join("ws/a2")).unwrap();
    std::fs::create_dir_all(t.join("ws/a/secret")).unwrap();
    std::fs::write(t.join("tools/bwrap"), "replaced").unwrap();
    let drift = live();
    assert_eq!(drift.code, 1, "{}", drift.stdout);
    assert!(line(&drift, &a).starts_with("drift "), "{}", drift.stdout);
    assert!(
        line(&drift, &a).contains("moved or replaced since compiling"),
        "{}",
        drift.stdout
    );
    assert!(line(&drift, &b).starts_with("drift "), "{}", drift.stdout);
    assert!(
        line(&drift, &b).contains(&sealc::digest::sha256(b"replaced")),
        "{}",
        drift.stdout
    );
}
