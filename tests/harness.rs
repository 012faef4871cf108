//! The skill-probe harness's whole run, with no glue: three reps of the
//! real Codex under one seal (`tests/codex/probe-harness.toml`, one binding
//! pinned with `--expect`) against the local Responses stand-in, reached
//! through sealc's allowlisting proxy. Each rep plants a file in its Codex
//! home, its workspace and its temp directory and leaves a process running;
//! the next rep must find none of them (`exec.reset` and the fresh Codex
//! home), and each report must count the survivor, reset what the last rep
//! left, and bind the transcript kept with `--stdout`/`--stderr` by the
//! digest of the bytes the harness reads.

mod codex_support;
mod common;

use std::os::unix::fs::PermissionsExt;

use codex_support::*;
use common::*;
use sha2::Digest;

const KEY: &str = "sk-harness-41b7";

fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{:x}", sha2::Sha256::digest(bytes))
}

#[test]
#[cfg_attr(
    any(sealc_no_bwrap, sealc_no_codex = "0.171.0"),
    ignore = "needs bubblewrap and Codex 0.171.0 (bash .ci/install-codex)"
)]
fn three_reps_share_one_binding_and_start_from_the_same_state() {
    if !bwrap_works() {
        return;
    }
    let Some(releases) = releases(&["0.171.0"]) else {
        return;
    };
    let bin = &releases[0].1;
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let t = tmp.path().canonicalize().unwrap();
    // Started by root, the agent runs as `nobody`: it must reach the run.
    std::fs::set_permissions(&t, PermissionsExt::from_mode(0o755)).unwrap();
    for d in ["op", "run/home", "run/ws", "run/tmp", "out"] {
        std::fs::create_dir_all(t.join(d)).unwrap();
    }
    let run = t.join("run");
    // Every rep asks the same: is anything an earlier rep left here? Then
    // it leaves its own, and a process running.
    let script = vec![
        "ls -A \"$CODEX_HOME\" | grep -c planted; ls -A . \"$TMPDIR\" | grep -c planted; true"
            .to_string(),
        "echo x > \"$CODEX_HOME/planted.md\" && echo x > planted.md && echo x > \"$TMPDIR/planted\" && (setsid sleep 300 >/dev/null 2>&1 &) && echo planted"
            .to_string(),
    ];
    let standin = StandIn::start(script);
    let out = operator_sealc(&t)
        .current_dir(&t)
        .arg("compile")
        .arg(root().join("tests/codex/probe-harness.toml"))
        .args(["--out", "seal"])
        .arg(format!("--var=run={}", run.display()))
        .arg(format!("--var=model_port={}", standin.port))
        .arg(format!("--var=codex={}", bin.display()))
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", text(&out));
    let binding = said
        .split_whitespace()
        .find(|w| w.starts_with("sha256:") && said.contains(&format!("binding {w}")))
        .expect("compile prints the binding")
        .to_string();

    for rep in 1..=3 {
        let (report, stdout, stderr) = (
            t.join(format!("out/rep{rep}.json")),
            t.join(format!("out/rep{rep}.out")),
            t.join(format!("out/rep{rep}.err")),
        );
        let before = standin.requests().len();
        let out = operator_sealc(&t)
            .current_dir(run.join("ws"))
            .env("OPENAI_API_KEY", KEY)
            .arg("exec")
            .arg(t.join("seal/seal.json"))
            .args(["--expect", &binding])
            .arg("--report")
            .arg(&report)
            .arg("--stdout")
            .arg(&stdout)
            .arg("--stderr")
            .arg(&stderr)
            .args(["--", "codex", "exec", "--skip-git-repo-check", "plant"])
            .output()
            .unwrap();
        let what = format!("rep {rep}: {}", text(&out));
        assert_eq!(out.status.code(), Some(0), "{what}");
        let r: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
        assert_eq!(r["binding"], binding.as_str(), "{what}");
        // The transcript: kept in place, bound by its digest, and it holds
        // the stand-in's answer.
        let (o, e) = (
            std::fs::read(&stdout).unwrap(),
            std::fs::read(&stderr).unwrap(),
        );
        assert_eq!(r["stdout"]["sha256"], sha256(&o), "{what}");
        assert_eq!(r["stderr"]["sha256"], sha256(&e), "{what}");
        assert_eq!(r["stdout"]["bytes"], o.len(), "{what}");
        assert!(String::from_utf8_lossy(&o).contains(FINAL), "{what}");
        // The survivor, counted and named, then gone.
        assert_eq!(r["left_running"]["count"], 1, "{what}: {r:#}");
        // What this rep's model heard: nothing an earlier rep planted.
        let requests = standin.requests();
        let last = requests[before..]
            .iter()
            .max_by_key(|q| q.tool_outputs().len())
            .expect("the rep reached the model");
        let outputs = last.tool_outputs();
        assert_eq!(outputs.len(), 2, "{what}: {outputs:#?}");
        let counts: Vec<&str> = outputs[0]
            .1
            .lines()
            .filter(|l| l.trim().parse::<u32>().is_ok())
            .collect();
        assert_eq!(counts, vec!["0", "0"], "{what}: {}", outputs[0].1);
        assert!(outputs[1].1.contains("planted"), "{what}: {}", outputs[1].1);
        for q in &requests[before..] {
            assert_eq!(
                q.header("authorization"),
                Some(format!("Bearer {KEY}").as_str())
            );
        }
        // The reset: the first rep found empty directories; each later one
        // removed what the rep before planted in its workspace and temp
        // directory (and Codex's own files there).
        let ws = r["reset"][run.join("ws").to_str().unwrap()]
            .as_u64()
            .unwrap();
        let tmpd = r["reset"][run.join("tmp").to_str().unwrap()]
            .as_u64()
            .unwrap();
        if rep == 1 {
            assert_eq!((ws, tmpd), (0, 0), "{what}: {r:#}");
        } else {
            assert!(ws >= 1 && tmpd >= 1, "{what}: {r:#}");
        }
        // Its own plants are there after the run, for the next rep to miss.
        assert!(run.join("ws/planted.md").exists(), "{what}");
    }

    // A Codex home a killed run left in a reset root is not reset away
    // unseen: refused, kept for review; `--force` discards it.
    let left = run.join("home/.codex/AGENTS.md");
    std::fs::create_dir_all(left.parent().unwrap()).unwrap();
    std::fs::write(&left, "steer the next run\n").unwrap();
    let rep = |force: bool| {
        let mut c = operator_sealc(&t);
        c.current_dir(run.join("ws"))
            .env("OPENAI_API_KEY", KEY)
            .arg("exec")
            .arg(t.join("seal/seal.json"))
            .args(["--expect", &binding]);
        if force {
            c.arg("--force");
        }
        c.args(["--", "codex", "exec", "--skip-git-repo-check", "plant"])
            .output()
            .unwrap()
    };
    let out = rep(false);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(125), "{said}");
    assert!(said.contains("which an earlier run left"), "{said}");
    assert!(
        left.exists() && run.join("ws/planted.md").exists(),
        "{said}"
    );
    let out = rep(true);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(!left.exists());
}
