//! The command line: compile, `--check`, `--force`, exit codes, atomic writes.

mod common;

use std::path::Path;

use common::*;

const SPEC: &str = r#"#:schema ../schemas/seal-spec.schema.json
version = 1
name = "cli"

[vars]
ws = { required = true }

[filesystem]
deny_read = ["/Users/Shared/secret"]
write = ["${ws}"]

[env]
set = { A = "1" }
"#;

fn compile(extra: &[&str]) -> Sealc {
    Sealc::new()
        .file("spec.toml", SPEC)
        .args(["compile", "spec.toml", "--var", "ws=/private/tmp/cli-ws"])
        .args(extra.iter().copied())
}

const FILES: [&str; 4] = ["seal.sb", "env.json", "codex/config.toml", "seal.json"];

#[test]
fn compile_writes_every_artifact_and_the_record() {
    let out = compile(&[]).run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    for f in FILES {
        assert!(out.path("seal").join(f).is_file(), "{f} missing");
        assert!(
            out.stdout.contains(&format!("seal/{f}")),
            "stdout names {f}: {}",
            out.stdout
        );
    }
    // No temp file left behind.
    let leftovers: Vec<_> = std::fs::read_dir(out.path("seal"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("sealc-tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    let sb = std::fs::read_to_string(out.path("seal/seal.sb")).unwrap();
    assert!(sb.starts_with(";; seal `cli`"));
    assert!(sb.contains("(allow file-write* (subpath \"/private/tmp/cli-ws\"))"));
}

#[test]
fn out_flag_chooses_the_directory() {
    let out = compile(&["--out", "a/b"]).run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.path("a/b/seal.json").is_file());
    assert!(!out.path("seal").exists());
}

#[test]
fn check_passes_on_identical_outputs_and_fails_on_drift() {
    let first = compile(&[]).run();
    assert_eq!(first.code, 0);
    let same = compile(&["--check"]).in_dir(first.dir).run();
    assert_eq!(same.code, 0, "{}{}", same.stdout, same.stderr);
    assert!(
        same.stdout.lines().all(|l| l.starts_with("ok")),
        "{}",
        same.stdout
    );

    let sb = same.path("seal/seal.sb");
    std::fs::write(&sb, "(version 1)\n(allow default)\n").unwrap();
    let drift = compile(&["--check"]).in_dir(same.dir).run();
    assert_eq!(drift.code, 1);
    assert!(
        drift.stdout.contains("differs seal/seal.sb"),
        "{}",
        drift.stdout
    );
    // ... and shows how, from what is on disk to what compile would write.
    assert!(
        drift
            .stdout
            .contains("--- seal/seal.sb (on disk)\n+++ seal/seal.sb (this compile)\n"),
        "{}",
        drift.stdout
    );
    assert!(
        drift.stdout.contains("\n+;; seal `cli`"),
        "{}",
        drift.stdout
    );
    // --check writes nothing.
    assert_eq!(
        std::fs::read_to_string(drift.path("seal/seal.sb")).unwrap(),
        "(version 1)\n(allow default)\n"
    );
}

#[test]
fn check_on_an_empty_directory_reports_missing_and_writes_nothing() {
    let out = compile(&["--check"]).run();
    assert_eq!(out.code, 1);
    assert!(
        out.stdout.contains("missing seal/seal.sb"),
        "{}",
        out.stdout
    );
    assert!(!out.path("seal").exists());
}

#[test]
fn a_differing_output_is_not_replaced_without_force() {
    let first = compile(&[]).run();
    let env = first.path("seal/env.json");
    std::fs::write(&env, "{}\n").unwrap();
    let before_sb = std::fs::read(first.path("seal/seal.sb")).unwrap();
    let refused = compile(&[]).in_dir(first.dir).run();
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("sealc::out::differs"),
        "{}",
        refused.stderr
    );
    assert!(refused.stderr.contains("--force"));
    assert_eq!(
        std::fs::read_to_string(&env).unwrap(),
        "{}\n",
        "refused run wrote env.json"
    );
    assert_eq!(
        std::fs::read(refused.path("seal/seal.sb")).unwrap(),
        before_sb
    );

    let forced = compile(&["--force"]).in_dir(refused.dir).run();
    assert_eq!(forced.code, 0, "{}", forced.stderr);
    assert_ne!(
        std::fs::read_to_string(forced.path("seal/env.json")).unwrap(),
        "{}\n"
    );
}

#[test]
fn recompiling_identical_outputs_needs_no_force() {
    let first = compile(&[]).run();
    let again = compile(&[]).in_dir(first.dir).run();
    assert_eq!(again.code, 0, "{}", again.stderr);
}

#[test]
fn bad_input_exits_2_and_writes_nothing() {
    let missing_var = Sealc::new()
        .file("spec.toml", SPEC)
        .args(["compile", "spec.toml"])
        .run();
    assert_eq!(missing_var.code, 2);
    assert!(
        missing_var
            .stderr
            .contains("required var `ws` has no value"),
        "{}",
        missing_var.stderr
    );
    assert!(missing_var.stderr.contains("--var ws=VALUE"));
    assert!(!missing_var.path("seal").exists());

    let no_file = Sealc::new().args(["compile", "nope.toml"]).run();
    assert_eq!(no_file.code, 2);
    assert!(
        no_file.stderr.contains("sealc::io::read"),
        "{}",
        no_file.stderr
    );

    let bad_flag = Sealc::new().args(["compile"]).run();
    assert_eq!(bad_flag.code, 2);
}

#[test]
fn an_unwritable_output_directory_is_bad_input() {
    // A file where the output directory should be.
    let out = compile(&["--out", "blocker"])
        .file("blocker", "not a directory")
        .run();
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("sealc::io"), "{}", out.stderr);
    assert_eq!(
        std::fs::read_to_string(out.path("blocker")).unwrap(),
        "not a directory"
    );
}

#[test]
fn warnings_do_not_fail_the_compile() {
    let out = Sealc::new()
        .file("s.toml", "version = 1\nname = \"w\"\n[network]\nmode = \"open\"\n[env]\npass = [\"SEALC_UNSET\"]\n")
        .args(["compile", "s.toml"])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains("sealc::network::open"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("sealc::env::absent"), "{}", out.stderr);
}

#[test]
fn schema_prints_the_committed_schemas() {
    for (which, file) in [
        ("spec", "seal-spec.schema.json"),
        ("record", "seal-record.schema.json"),
    ] {
        let out = Sealc::new().args(["schema", which]).run();
        assert_eq!(out.code, 0);
        let committed = std::fs::read_to_string(root().join("schemas").join(file)).unwrap();
        assert_eq!(out.stdout, committed, "sealc schema {which}");
    }
}

#[test]
fn help_and_version_exit_0() {
    let help = Sealc::new().args(["--help"]).run();
    assert_eq!(help.code, 0);
    assert!(help.stdout.contains("compile"));
    let version = Sealc::new().args(["--version"]).run();
    assert_eq!(version.code, 0);
    assert!(version.stdout.contains(env!("CARGO_PKG_VERSION")));
}

#[test]
fn explain_reads_a_linux_seal_back() {
    let seal = root().join("tests/golden-linux/probe-rep/seal.bwrap.json");
    let seal = seal.to_str().unwrap();
    // Every answer on a path ends with what it assumes of links no record
    // names; the answers below are compared without that line, which is
    // checked here once.
    let run = |args: &[&str]| {
        let mut out = Sealc::new()
            .args(["explain", seal])
            .args(args.iter().copied())
            .run();
        if args.iter().any(|a| a.starts_with('/')) && !args.contains(&"--remote") {
            let at = out.stdout.find("  assumes: no link on the way to `");
            assert!(at.is_some(), "{}", out.stdout);
            let at = at.unwrap_or(0);
            let end = out.stdout[at..]
                .find('\n')
                .map_or(out.stdout.len(), |e| at + e + 1);
            out.stdout.replace_range(at..end, "");
        }
        out
    };
    let out = run(&[
        "--op",
        "file-read-data",
        "/Users/agent/src/skills/premortem/SKILL.md",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        out.stdout,
        // The checkout lies in the denied home: hidden by its stand-in.
        "deny\n  decided by `--tmpfs /Users/agent`\n  spec entry: filesystem.deny_read \"${home}\"\n"
    );
    let out = run(&[
        "--op",
        "file-write-data",
        "/Users/agent/runs/r1/ws/notes.md",
    ]);
    assert_eq!(
        out.stdout,
        "allow\n  decided by `--bind /Users/agent/runs/r1/ws /Users/agent/runs/r1/ws`\n  spec entry: filesystem.write \"${run}/ws\"\n"
    );
    let out = run(&["--op", "network-outbound", "--remote", "127.0.0.1:8080"]);
    assert!(out.stdout.starts_with("allow\n"), "{}", out.stdout);
    let out = run(&["--op", "network-outbound", "--remote", "127.0.0.1:22"]);
    assert!(out.stdout.starts_with("deny\n"), "{}", out.stdout);
    let out = run(&["--op", "process-exec", "/bin/ls"]);
    assert_eq!(out.code, 3, "{}", out.stdout);
    // Names: a rename within the write root, one out of it, the write root
    // itself, the launcher's symlink in a hidden directory.
    let ws = "/Users/agent/runs/r1/ws";
    let out = run(&[
        "--op",
        "rename",
        &format!("{ws}/a"),
        "--to",
        &format!("{ws}/b"),
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        out.stdout,
        format!("allow\n  decided by `--bind {ws} {ws}`: one writable mount holds both names, and neither is a mount point\n  spec entry: filesystem.write \"${{run}}/ws\"\n")
    );
    let out = run(&[
        "--op",
        "rename",
        &format!("{ws}/a"),
        "--to",
        "/Users/agent/runs/r1/a",
    ]);
    assert_eq!(
        out.stdout,
        format!("deny\n  decided by `--bind {ws} {ws}` and `--tmpfs /Users/agent`: different mounts, a rename cannot cross them (EXDEV)\n  spec entry of `--bind {ws} {ws}`: filesystem.write \"${{run}}/ws\"\n  spec entry of `--tmpfs /Users/agent`: filesystem.deny_read \"${{home}}\"\n")
    );
    let out = run(&["--op", "file-link", &format!("{ws}/a"), "--to", "/tmp/a"]);
    assert!(out.stdout.starts_with("deny\n"), "{}", out.stdout);
    let out = run(&["--op", "file-write-unlink", ws]);
    assert_eq!(
        out.stdout,
        "deny\n  decided by `--tmpfs /Users/agent`: read-only since `--remount-ro /Users/agent` (EROFS)\n  spec entry of `--tmpfs /Users/agent`: filesystem.deny_read \"${home}\"\n  spec entry of `--remount-ro /Users/agent`: filesystem.deny_read \"${home}\"\n"
    );
    let out = run(&["--op", "unlink", "/Users/agent/.local/bin/codex"]);
    assert!(out.stdout.contains("(EROFS)\n"), "{}", out.stdout);
    let out = run(&["--op", "rename", &format!("{ws}/a")]);
    assert_eq!(out.code, 3, "{}", out.stdout);
    assert!(out.stdout.contains("`--to PATH`"), "{}", out.stdout);
    let out = run(&["--op", "unlink", &format!("{ws}/a"), "--to", "/x"]);
    assert_eq!(out.code, 3, "{}", out.stdout);
    // `--to` on a seatbelt profile is bad input.
    let sb = root().join("tests/golden/probe-rep/seal.sb");
    let out = Sealc::new()
        .args(["explain", sb.to_str().unwrap()])
        .args(["--op", "rename", "/a", "--to", "/b"])
        .run();
    assert_eq!(out.code, 2, "{}", out.stdout);
}

/// Issue 11, item 8: explain answers for the path the kernel sees: `..`
/// taken away (from where a recorded link leads), a relative path refused
/// unless `--cwd` says where it starts, each recorded link on the way named.
#[test]
fn explain_answers_for_the_path_the_kernel_sees() {
    let sb = root().join("tests/golden/probe-rep/seal.sb");
    let bw = root().join("tests/golden-linux/probe-rep/seal.bwrap.json");
    let run = |seal: &std::path::Path, args: &[&str]| {
        Sealc::new()
            .args(["explain", seal.to_str().unwrap(), "--op", "file-read-data"])
            .args(args.iter().copied())
            .run()
    };
    let secret = "/Users/agent/src/skills/premortem/SKILL.md";
    let escape = "/Users/agent/runs/r1/ws/../../../src/skills/premortem/SKILL.md";
    for seal in [&sb, &bw] {
        let out = run(seal, &[escape]);
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert!(out.stdout.starts_with("deny\n"), "{}", out.stdout);
        assert!(
            out.stdout.contains(&format!("checked as `{secret}`")),
            "{}",
            out.stdout
        );
        // Relative: refused, or taken from `--cwd`.
        let out = run(seal, &["ws/notes.md"]);
        assert_eq!(out.code, 2, "{}", out.stdout);
        assert!(out.stderr.contains("is relative"), "{}", out.stderr);
        let out = run(seal, &["--cwd", "/Users/agent/runs/r1", "ws/notes.md"]);
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert!(out.stdout.starts_with("allow\n"), "{}", out.stdout);
        let out = run(
            seal,
            &["--cwd", "/Users/agent/runs/r1/ws", "../../../src/skills/x"],
        );
        assert!(out.stdout.starts_with("deny\n"), "{}", out.stdout);
    }
    // A recorded link on the way is named, and `..` goes up from where it
    // leads (the record beside seal.sb knows `/tmp` -> `/private/tmp`).
    let out = run(&sb, &["/tmp/x/../../etc/hosts", "--format", "json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["checked"], "/private/etc/hosts", "{v}");
    assert_eq!(v["answer"], "allow", "{v}");
    assert!(
        v["notes"][0]
            .as_str()
            .unwrap()
            .contains("`/tmp` is a recorded symlink to `/private/tmp`"),
        "{v}"
    );
    let out = run(&sb, &["/Users/agent/.claude/skills"]);
    assert!(
        out.stdout.contains("is itself a recorded symlink"),
        "{}",
        out.stdout
    );
    // Without a record, only the links every macOS has: `/tmp` leads to
    // `/private/tmp` on any Mac, the rest lexically.
    let dir = tempfile::tempdir().unwrap();
    let alone = dir.path().join("seal.sb");
    std::fs::copy(&sb, &alone).unwrap();
    let out = run(&alone, &["/tmp/x/../../etc/hosts"]);
    assert!(
        out.stdout.contains("checked as `/private/etc/hosts`"),
        "{}",
        out.stdout
    );
    let out = run(&alone, &["/Users/agent/.claude/skills/../x"]);
    assert!(
        out.stdout.contains("checked as `/Users/agent/.claude/x`"),
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains("note:"), "{}", out.stdout);
}

#[test]
fn a_denied_file_on_linux_is_warned_about() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().canonicalize().unwrap().join("auth.json");
    std::fs::write(&file, "token").unwrap();
    let spec = format!(
        "version = 1\nname = \"f\"\n[filesystem]\ndeny_read = [{:?}]\n",
        file.display().to_string()
    );
    let out = Sealc::new()
        .file("s.toml", spec)
        .args(["compile", "s.toml", "--platform", "linux"])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains("sealc::linux::file-root"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("deny its directory instead"),
        "{}",
        out.stderr
    );
    // The same spec for macOS: seatbelt rules name paths, nothing to warn.
    let out = Sealc::new()
        .file(
            "s.toml",
            format!(
                "version = 1\nname = \"f\"\n[filesystem]\ndeny_read = [{:?}]\n",
                file.display().to_string()
            ),
        )
        .args(["compile", "s.toml"])
        .run();
    assert!(!out.stderr.contains("file-root"), "{}", out.stderr);
}

#[test]
fn loader_variables_need_allow_loader_vars() {
    let spec = |allow: &str| {
        format!("version = 1\nname = \"l\"\n[env]\nset = {{ LD_PRELOAD = \"/opt/lib/x.so\", A = \"1\" }}\n{allow}")
    };
    let out = Sealc::new()
        .file("s.toml", spec(""))
        .args(["compile", "s.toml"])
        .run();
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("sealc::env::loader"), "{}", out.stderr);
    assert!(out.stderr.contains("allow_loader_vars"), "{}", out.stderr);
    assert!(!out.path("seal").exists());
    // Lint says the same, without a host.
    let out = Sealc::new()
        .file("s.toml", spec(""))
        .args(["lint", "s.toml"])
        .run();
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(out.stdout.contains("sealc::env::loader"), "{}", out.stdout);
    // Opted in: it is in the allowlist, for the command inside the sandbox.
    let out = Sealc::new()
        .file("s.toml", spec("allow_loader_vars = true\n"))
        .args(["compile", "s.toml"])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let env = std::fs::read_to_string(out.path("seal/env.json")).unwrap();
    assert!(env.contains("\"LD_PRELOAD\": \"/opt/lib/x.so\""), "{env}");
    // `false` is the default, said out loud.
    let out = Sealc::new()
        .file("s.toml", spec("allow_loader_vars = false\n"))
        .args(["compile", "s.toml"])
        .run();
    assert_eq!(out.code, 2, "{}", out.stderr);
}

#[test]
fn the_programs_that_start_the_sandbox_are_pinned_and_out_of_reach() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(t.join("ws")).unwrap();
    std::fs::create_dir_all(t.join("tools")).unwrap();
    std::fs::write(t.join("tools/bwrap"), "stand-in bwrap").unwrap();
    let spec = |bwrap: &Path| {
        format!(
            "version = 1\nname = \"b\"\n[target]\nplatform = \"linux\"\n[filesystem]\nwrite = [{:?}]\n[exec]\nbwrap = {:?}\n",
            t.join("ws").display().to_string(),
            bwrap.display().to_string()
        )
    };
    let out = Sealc::new()
        .file("s.toml", spec(&t.join("tools/bwrap")))
        .args(["compile", "s.toml"])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.path("seal/seal.json")).unwrap()).unwrap();
    let builders = &record["facts"]["builders"];
    let bwrap = &builders[t.join("tools/bwrap").display().to_string()];
    assert_eq!(
        bwrap[0]["digest"],
        sealc::digest::sha256(b"stand-in bwrap").as_str(),
        "{builders:#}"
    );
    // `env` is recorded too: its digest where it exists, an empty chain where not.
    let env = &builders[sealc::backend::env::ENV_BIN];
    match std::fs::read(sealc::backend::env::ENV_BIN) {
        Ok(_) => assert!(
            env.as_array()
                .unwrap()
                .last()
                .is_some_and(|l| l["digest"].as_str().unwrap().starts_with("sha256:")),
            "{builders:#}"
        ),
        Err(_) => assert_eq!(env, &serde_json::json!([]), "{builders:#}"),
    }

    // Reached through a symlink outside the write root, it still lies inside it.
    std::fs::write(t.join("ws/bwrap"), "agent-written").unwrap();
    std::os::unix::fs::symlink(t.join("ws/bwrap"), t.join("tools/link")).unwrap();
    let out = Sealc::new()
        .file("s.toml", spec(&t.join("tools/link")))
        .args(["compile", "s.toml"])
        .run();
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("sealc::exec::in-write-root"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("(through"), "{}", out.stderr);
    assert!(!out.path("seal").exists());
}

/// A seal for the other platform (a macOS seal run on Linux) says so, and
/// starts nothing: no "not found" from a missing `sandbox-exec`, no 127 that
/// a command not found inside would also give.
#[test]
fn a_seal_for_the_other_platform_says_so() {
    let (other, said, program) = if cfg!(target_os = "macos") {
        (
            "linux",
            "this seal targets Linux (bubblewrap), and this host is macOS",
            "bwrap",
        )
    } else {
        (
            "macos",
            "this seal targets macOS (seatbelt, `sandbox-exec`), and this host is Linux",
            "sandbox-exec",
        )
    };
    let out = compile(&["--platform", other]).run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let out = Sealc::new()
        .in_dir(out.dir)
        .args(["exec", "seal/seal.json", "--", "/bin/echo", "STARTED"])
        .run();
    assert_eq!(out.code, 125, "{}", out.stderr);
    assert!(!out.stdout.contains("STARTED"));
    assert!(
        out.stderr
            .contains(&format!("{said}, so nothing was started")),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("--platform"), "{}", out.stderr);
    // --dry-run still shows the plan: it starts nothing.
    let out = Sealc::new()
        .in_dir(out.dir)
        .args(["exec", "seal/seal.json", "--dry-run", "--", "/bin/true"])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains(program), "{}", out.stdout);
}

/// `compile` says what it wrote and what it left alone, how many
/// assertions it proved and the binding to pass to `--expect`; `--quiet`
/// says nothing on success.
#[test]
fn compile_says_what_it_wrote_left_unchanged_and_proved() {
    let spec = format!(
        "{SPEC}\n[[assert]]\ndeny = \"file-read-data\"\npaths = [\"/Users/Shared/secret/x\"]\n"
    );
    let first = Sealc::new()
        .file("spec.toml", spec.clone())
        .args(["compile", "spec.toml", "--var", "ws=/private/tmp/cli-ws"])
        .run();
    assert_eq!(first.code, 0, "{}", first.stderr);
    for f in FILES {
        assert!(
            first
                .stdout
                .lines()
                .any(|l| l.starts_with("wrote     sha256:") && l.ends_with(&format!("seal/{f}"))),
            "{}",
            first.stdout
        );
    }
    let binding = first
        .stdout
        .lines()
        .last()
        .and_then(|l| l.split("binding ").nth(1))
        .unwrap()
        .to_string();
    assert!(
        first.stdout.ends_with(&format!(
            "seal `cli`: 4 written, 0 unchanged; 1 assertion proved; binding {binding}\n"
        )),
        "{}",
        first.stdout
    );
    let record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(first.path("seal/seal.json")).unwrap()).unwrap();
    assert_eq!(record["binding"], binding.as_str());
    let again = Sealc::new()
        .in_dir(first.dir)
        .args(["compile", "spec.toml", "--var", "ws=/private/tmp/cli-ws"])
        .run();
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(
        again
            .stdout
            .contains("seal `cli`: 0 written, 4 unchanged; 1 assertion proved"),
        "{}",
        again.stdout
    );
    assert_eq!(
        again.stdout.matches("unchanged sha256:").count(),
        4,
        "{}",
        again.stdout
    );
    let quiet = Sealc::new()
        .in_dir(again.dir)
        .args([
            "compile",
            "spec.toml",
            "--var",
            "ws=/private/tmp/cli-ws",
            "--quiet",
        ])
        .run();
    assert_eq!(
        (quiet.code, quiet.stdout.as_str()),
        (0, ""),
        "{}",
        quiet.stderr
    );
    let quiet = Sealc::new()
        .in_dir(quiet.dir)
        .args(["-q", "verify", "seal/seal.json"])
        .run();
    assert_eq!(
        (quiet.code, quiet.stdout.as_str()),
        (0, ""),
        "{}",
        quiet.stderr
    );
}

/// A compile for the other platform into the same directory removes the
/// first seal's platform file; one put back is reported by `verify` (and
/// `--check`) as not part of this seal.
#[test]
fn a_seal_left_by_another_platform_is_removed_and_reported() {
    let mac = compile(&["--platform", "macos"]).run();
    assert_eq!(mac.code, 0, "{}", mac.stderr);
    let sb = std::fs::read(mac.path("seal/seal.sb")).unwrap();
    let linux = compile(&["--platform", "linux", "--force"])
        .in_dir(mac.dir)
        .run();
    assert_eq!(linux.code, 0, "{}", linux.stderr);
    assert!(
        linux
            .stdout
            .contains("removed   seal/seal.sb  (not part of this seal)"),
        "{}",
        linux.stdout
    );
    assert!(!linux.path("seal/seal.sb").exists());
    assert!(linux.path("seal/seal.bwrap.json").is_file());
    std::fs::write(linux.path("seal/seal.sb"), &sb).unwrap();
    let verify = Sealc::new()
        .in_dir(linux.dir)
        .args(["verify", "seal/seal.json"])
        .run();
    assert_eq!(verify.code, 1, "{}", verify.stdout);
    assert!(
        verify
            .stdout
            .contains("drift       file seal.sb                not part of this seal"),
        "{}",
        verify.stdout
    );
    let check = compile(&["--platform", "linux", "--check"])
        .in_dir(verify.dir)
        .run();
    assert_eq!(check.code, 1, "{}", check.stdout);
    assert!(
        check
            .stdout
            .contains("stale   seal/seal.sb  (not part of this seal)"),
        "{}",
        check.stdout
    );
}

/// `--color always` colours diagnostics; `never`, a pipe, and `NO_COLOR`
/// do not.
#[test]
fn diagnostics_are_coloured_only_when_asked() {
    let bad = "version = 1\nname = \"c\"\n[filesystem]\nwrite = [\"relative\"]\n";
    let run = |extra: &[&str], no_color: bool| {
        let mut s = Sealc::new()
            .file("spec.toml", bad)
            .args(["compile", "spec.toml"])
            .args(extra.iter().copied());
        if no_color {
            s = s.env("NO_COLOR", "1");
        }
        s.run()
    };
    let always = run(&["--color", "always"], false);
    assert_eq!(always.code, 2);
    assert!(always.stderr.contains("\u{1b}["), "{}", always.stderr);
    for out in [
        run(&["--color", "never"], false),
        run(&[], false),
        run(&[], true),
    ] {
        assert_eq!(out.code, 2);
        assert!(!out.stderr.contains('\u{1b}'), "{}", out.stderr);
        assert!(out.stderr.contains("relative"), "{}", out.stderr);
    }
}

#[test]
fn a_second_compile_leaves_its_own_unchanged_files_and_replaces_any_other() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let out = compile(&[]).run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let sb = out.path("seal/seal.sb");
    let ino = |p: &Path| std::fs::symlink_metadata(p).unwrap().ino();
    let again = |dir| {
        let o = Sealc::new()
            .in_dir(dir)
            .file("spec.toml", SPEC)
            .args(["compile", "spec.toml", "--var", "ws=/private/tmp/cli-ws"])
            .run();
        assert_eq!(o.code, 0, "{}", o.stderr);
        assert!(o.stdout.contains("0 written, 4 unchanged"), "{}", o.stdout);
        o
    };
    let first = ino(&sb);
    let out = again(out.dir);
    assert_eq!(
        ino(&sb),
        first,
        "an unchanged file of ours is left as it is"
    );
    // Another mode: replaced, with the mode it should have.
    std::fs::set_permissions(&sb, std::fs::Permissions::from_mode(0o666)).unwrap();
    let out = again(out.dir);
    assert_ne!(ino(&sb), first);
    assert_eq!(std::fs::metadata(&sb).unwrap().mode() & 0o7777, 0o644);
    // A second name for it: replaced, so the other name is not the seal.
    let second = ino(&sb);
    std::fs::hard_link(&sb, out.path("alias")).unwrap();
    let out = again(out.dir);
    assert_ne!(ino(&sb), second, "a file with another link is rewritten");
    // Another user's file with the very bytes: replaced by one of ours.
    if rustix::process::geteuid().is_root() {
        let third = ino(&sb);
        std::os::unix::fs::lchown(&sb, Some(65534), Some(65534)).unwrap();
        let out = again(out.dir);
        assert_ne!(ino(&sb), third, "another user's file is rewritten");
        assert_eq!(
            std::fs::metadata(out.path("seal/seal.sb")).unwrap().uid(),
            0
        );
    }
}

/// `sealc exec`'s own refusals are never a status a command gives (1, 2):
/// its command line's errors and an unreadable record exit 125, as GNU
/// `timeout` and `docker run` do; other commands keep 2 for bad input.
#[test]
fn exec_refusals_exit_125_and_never_look_like_the_commands_status() {
    for args in [
        &["exec"][..],
        &["-q", "exec", "--bogus", "x", "--", "/bin/true"],
        &[
            "--color",
            "never",
            "exec",
            "/nonexistent/seal.json",
            "--",
            "/bin/true",
        ],
    ] {
        let out = Sealc::new().args(args.iter().copied()).run();
        assert_eq!(out.code, 125, "{args:?}: {}", out.stderr);
    }
    let out = Sealc::new().args(["compile", "--bogus"]).run();
    assert_eq!(out.code, 2, "{}", out.stderr);
}

/// On glibc Linux the binary carries libgcc's unwinder (build.rs,
/// `static_unwinder`): the loader maps no `libgcc_s.so.1`, whose
/// constructor probes the CPU at every start. Asked with the loader's own
/// listing (`LD_TRACE_LOADED_OBJECTS`, what `ldd` sets), which must name
/// the C library for the answer to mean anything.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[test]
#[cfg_attr(
    sealc_unwinder_shared,
    ignore = "the C compiler has no libgcc_eh.a: the build links libgcc_s.so.1 (see its warning)"
)]
fn the_binary_loads_the_c_library_and_no_libgcc_s() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_sealc"))
        .env("LD_TRACE_LOADED_OBJECTS", "1")
        .output()
        .expect("sealc runs");
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(listed.contains("libc.so.6"), "no loader listing: {listed}");
    assert!(!listed.contains("libgcc_s"), "libgcc_s is loaded: {listed}");
    // This test binary is linked the same way, and still unwinds a panic.
    let maps = std::fs::read_to_string("/proc/self/maps").expect("own maps");
    assert!(!maps.contains("libgcc_s"), "libgcc_s in the test binary");
    let caught = std::panic::catch_unwind(|| panic!("unwound"));
    assert!(caught.is_err());
}
