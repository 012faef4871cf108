//! The README's Codex quick start, run as written: its `sh` block is read
//! from README.md (the book's copy must be the same block) and run by bash,
//! line for line, with the real Codex and bubblewrap, against the local
//! stand-in for the Responses API that the Codex tests use. What the test
//! supplies is what a reader's machine would:
//!
//! - the pinned Codex where the block's `npm install --prefix` puts it:
//!   the test's own mount namespace (`unshare --mount`, as root) holds a
//!   tmpfs on `/opt` and the installed release bound at `/opt/codex/V`, so
//!   the host's `/opt` is never touched; `npm` itself is a stub that checks
//!   it is asked for exactly that release (no network in tests);
//! - `sealc` on `PATH` (the built binary), a scratch `HOME` and `TMPDIR`,
//!   and a checkout holding `specs/`;
//! - the three `--var`s the README gives for another Responses endpoint,
//!   read from the README, with the stand-in's port;
//! - the key (`OPENAI_API_KEY=...`) and the binding `sealc verify` printed
//!   (`--expect sha256:...`), as a reader copies them.
//!
//! The run must end as the quick start says: exit 0, Codex's answer on
//! stdout, the file the task asked for written in the workspace, the model
//! reached through sealc's proxy only (the report's network entries), and
//! the key sent to the model and to nothing else.

mod codex_support;
mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};

use codex_support::*;
use common::*;

const VERSION: &str = "0.171.0";
const KEY: &str = "sk-quickstart-5e0d";

/// The `sh` block under `heading` in `text`.
fn block_under(text: &str, heading: &str) -> String {
    let at = text
        .find(heading)
        .unwrap_or_else(|| panic!("no `{heading}`"));
    let rest = &text[at..];
    let open = rest.find("```sh\n").expect("an sh block") + "```sh\n".len();
    let close = rest[open..].find("```").expect("the block's end");
    rest[open..open + close].to_string()
}

/// The README's vars for another endpoint: the code span that starts with
/// `--var api_scheme=`, its line break undone.
fn endpoint_vars(readme: &str) -> String {
    let at = readme
        .find("`--var api_scheme=")
        .expect("the README gives the vars for another endpoint");
    let span = &readme[at + 1..];
    let end = span.find('`').unwrap();
    span[..end].split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
#[cfg_attr(
    any(sealc_no_bwrap, sealc_not_root, sealc_no_codex = "0.171.0"),
    ignore = "needs root (for a mount namespace of its own), bubblewrap and Codex 0.171.0 (bash .ci/install-codex)"
)]
fn the_readme_quick_start_runs_as_written() {
    if !bwrap_works() {
        return;
    }
    if !rustix::process::geteuid().is_root() {
        not_run(
            "not root: the test binds the pinned Codex at /opt in a mount namespace of its own",
        );
    }
    let Some(releases) = releases(&[VERSION]) else {
        return;
    };
    let installed = releases[0]
        .1
        .ancestors()
        .find(|p| p.ends_with("node_modules"))
        .and_then(Path::parent)
        .expect("the release's npm prefix")
        .to_path_buf();

    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let heading = "Quick start: a sealed `codex exec` (Linux)";
    let block = block_under(&readme, heading);
    let book = std::fs::read_to_string(root().join("docs/quick-start.md")).unwrap();
    assert_eq!(
        block_under(&book, heading),
        block,
        "docs/quick-start.md's block differs from the README's"
    );
    assert!(
        block.contains(&format!("/opt/codex/{VERSION}")),
        "the quick start installs another Codex than the test binds:\n{block}"
    );

    let standin = StandIn::start(vec!["echo sealed > notes.md && cat notes.md".to_string()]);
    let vars = endpoint_vars(&readme).replace("8000", &standin.port.to_string());
    // What a reader copies in: the key, the binding; the endpoint's vars.
    let mut script = String::new();
    for line in block.lines() {
        let mut line = line.replace("OPENAI_API_KEY=...", &format!("OPENAI_API_KEY={KEY}"));
        line = line.replace("sha256:...", "\"$quickstart_binding\"");
        if line.starts_with("sealc compile ") {
            line = match line.split_once("  #") {
                Some((cmd, _)) => format!("{} {vars}", cmd.trim_end()),
                None => format!("{} {vars}", line.trim_end()),
            };
        }
        script.push_str(&line);
        script.push('\n');
    }
    assert!(script.contains("\"$quickstart_binding\""), "{script}");
    assert!(script.contains(&vars), "no `sealc compile` line:\n{script}");

    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let t = tmp.path().canonicalize().unwrap();
    // Started by root, the agent runs as `nobody`: it must reach the run.
    std::fs::set_permissions(&t, PermissionsExt::from_mode(0o755)).unwrap();
    for d in ["checkout", "home", "tmp", "bin"] {
        std::fs::create_dir(t.join(d)).unwrap();
    }
    std::fs::set_permissions(t.join("tmp"), PermissionsExt::from_mode(0o755)).unwrap();
    std::os::unix::fs::symlink(root().join("specs"), t.join("checkout/specs")).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_sealc"), t.join("bin/sealc")).unwrap();
    let npm = t.join("bin/npm");
    std::fs::write(
        &npm,
        format!(
            "#!/bin/sh\n# The test's npm: the release is already there (bound by the test).\n[ \"$*\" = \"install --prefix /opt/codex/{VERSION} @openai/codex@{VERSION}\" ] && [ -d /opt/codex/{VERSION}/node_modules ] || {{ echo \"npm stub: not the quick start's install: $*\" >&2; exit 1; }}\n"
        ),
    )
    .unwrap();
    std::fs::set_permissions(&npm, PermissionsExt::from_mode(0o755)).unwrap();
    // `sealc verify` prints the binding a reader copies; the run's directory
    // is told on the way out, whatever happened.
    let prelude = r#"set -euo pipefail
sealc() {
  if [ "$1" = verify ]; then
    local out
    out=$(command sealc "$@")
    printf '%s\n' "$out"
    quickstart_binding=$(printf '%s\n' "$out" | sed -n '2s/^binding //p')
  else
    command sealc "$@"
  fi
}
trap 'echo "quickstart-run=${run:-}" >&2' EXIT
"#;
    std::fs::write(t.join("quickstart.sh"), format!("{prelude}{script}")).unwrap();
    let outer = format!(
        "set -e; mount -t tmpfs -o mode=755 quickstart /opt; mkdir -p /opt/codex/{VERSION}; mount --bind '{}' /opt/codex/{VERSION}; cd '{}'; exec bash '{}'",
        installed.display(),
        t.join("checkout").display(),
        t.join("quickstart.sh").display()
    );
    let out = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "--", "bash", "-c"])
        .arg(&outer)
        .env_clear()
        .env(
            "PATH",
            format!("{}:/usr/local/bin:/usr/bin:/bin", t.join("bin").display()),
        )
        .env("HOME", t.join("home"))
        .env("TMPDIR", t.join("tmp"))
        .env("LANG", "C.UTF-8")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    let all = format!("script:\n{script}\nstdout:\n{stdout}\nstderr:\n{stderr}");
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert!(stdout.contains(FINAL), "{all}");
    let run = stderr
        .lines()
        .find_map(|l| l.strip_prefix("quickstart-run="))
        .filter(|r| !r.is_empty())
        .unwrap_or_else(|| panic!("the block made no run directory\n{all}"));
    let run = Path::new(run);
    assert!(run.starts_with(&t), "{}", run.display());

    // The task's file, written in the workspace by Codex's tool.
    assert_eq!(
        std::fs::read_to_string(run.join("ws/notes.md"))
            .ok()
            .as_deref(),
        Some("sealed\n"),
        "{all}"
    );
    // The model saw the tool's output, and the key, as the provider's key.
    let requests = standin.requests();
    assert!(requests.len() >= 2, "{requests:#?}");
    for r in &requests {
        assert!(r.target.ends_with("/v1/responses"), "{}", r.target);
        assert_eq!(
            r.header("authorization"),
            Some(format!("Bearer {KEY}").as_str())
        );
        assert_eq!(r.body["model"], "gpt-5.5");
    }
    let outputs = requests.last().unwrap().tool_outputs();
    assert!(
        outputs.iter().any(|(_, o)| o.contains("sealed")),
        "{outputs:#?}"
    );
    // Through sealc's proxy, and nothing else: every network entry of the
    // report is the stand-in, allowed.
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run.join("report.json")).unwrap()).unwrap();
    assert_eq!(report["exit_code"], 0, "{report:#}");
    let net = report["network"].as_array().expect("network entries");
    assert!(!net.is_empty(), "{report:#}");
    for e in net {
        assert_eq!(e["host"], "127.0.0.1", "{e}");
        assert_eq!(e["port"], standin.port, "{e}");
        assert_eq!(e["decision"], "allowed", "{e}");
    }
    // The key went to the model only: not into the seal, the report or the
    // workspace.
    for (what, bytes) in [
        (
            "the report",
            std::fs::read(run.join("report.json")).unwrap(),
        ),
        (
            "env.json",
            std::fs::read(t.join("checkout/seal-codex/env.json")).unwrap(),
        ),
        (
            "notes.md",
            std::fs::read(run.join("ws/notes.md")).unwrap_or_default(),
        ),
    ] {
        assert!(
            !String::from_utf8_lossy(&bytes).contains(KEY),
            "the key is in {what}"
        );
    }
}
