//! Proof by enforcement: the permission profile sealc writes
//! (`[codex] sandbox = "profile"`) is run by the real Codex sandbox
//! (`codex sandbox -P sealc -- PROBE` on Linux; `--permissions-profile` on
//! 0.137) on read, write, create and list probes over a small tree and a TCP
//! connect to a listener of the host's, and each
//! outcome is compared with the seal's meaning (the mount model of the same
//! IR's `seal.bwrap.json`, `sealc::mounts::Model`). Every difference must be
//! one listed per release in [`KNOWN`] (and in docs/codex.md); a listed one
//! that no longer shows fails too, so the list stays exact.

mod codex_support;

use std::path::Path;
use std::process::Command;

use codex_support::*;

/// The releases the probes run on: the oldest tested, the oldest whose
/// sandbox takes `-P`, and the newest.
const RELEASES: &[&str] = &["0.137.0", "0.160.1", "0.171.0"];

/// Where Codex's sandbox decides otherwise than the seal, per release:
/// (release, op, path relative to the tree, what Codex decided: `true`
/// allowed). docs/codex.md lists them.
const KNOWN: &[(&str, &str, &str, bool)] = &[
    // A denied directory takes the search right of everything below it: a
    // read re-allowed inside is refused (stricter than the seal).
    ("0.137.0", "read", "secret/public/p", false),
    ("0.137.0", "list", "secret/public", false),
    ("0.160.1", "read", "secret/public/p", false),
    ("0.160.1", "list", "secret/public", false),
    ("0.171.0", "read", "secret/public/p", false),
    ("0.171.0", "list", "secret/public", false),
    // 0.137 hides a denied directory behind an empty one: it lists (looser).
    ("0.137.0", "list", "secret", true),
];

/// (op, the seal's operation, path relative to the tree, shell probe).
fn probes() -> Vec<(&'static str, &'static str, &'static str, String)> {
    let mut v = Vec::new();
    for f in [
        "secret/f",
        "secret/sub/g",
        "secret/public/p",
        "ws/f",
        "ro/f",
    ] {
        v.push(("read", "file-read-data", f, format!("cat {{}}/{f}")));
    }
    for d in ["secret", "secret/sub", "secret/public", "ws", "ro"] {
        v.push(("list", "file-read-data", d, format!("ls {{}}/{d}")));
    }
    for f in [
        "secret/f",
        "secret/public/p",
        "ws/f",
        "ws/sub/g",
        "ro/f",
        "ws/.git/hooks/h",
    ] {
        v.push(("write", "file-write-data", f, format!("echo x >> {{}}/{f}")));
    }
    v.push((
        "write",
        "file-write-data",
        "/dev/null",
        "echo x >> /dev/null".into(),
    ));
    for d in [
        "secret",
        "secret/public",
        "ws",
        "ws/sub",
        "ro",
        "ws/.git/hooks",
    ] {
        let new: &'static str = Box::leak(format!("{d}/new").into_boxed_str());
        v.push((
            "create",
            "file-write-create",
            new,
            format!("touch {{}}/{new}"),
        ));
    }
    v
}

fn spec(t: &Path, version: &str) -> String {
    let t = t.display();
    format!(
        r#"version = 1
name = "enforced"
[target]
platform = "linux"
[filesystem]
deny_read     = ["{t}/secret"]
allow_read    = ["{t}/secret/public"]
write         = ["{t}/ws", "{t}/home"]
write_devices = ["/dev/null"]
# Read-only inside the write root: `"read"` in the profile.
protect       = [".git/hooks"]
[network]
mode = "none"
[env]
# No PATH: `codex sandbox` 0.137 and 0.160 start their helper
# (`codex-linux-sandbox`) by the PATH of the env policy, and a PATH there
# (without Codex's helper directory) stops their sandbox from starting.
set  = {{ HOME = "{t}/home", CODEX_HOME = "{t}/home/.codex" }}
[codex]
version = "{version}"
sandbox = "profile"
workspace = "{t}/ws"
"#
    )
}

#[test]
#[cfg_attr(
    any(
        sealc_no_codex = "0.137.0",
        sealc_no_codex = "0.160.1",
        sealc_no_codex = "0.171.0"
    ),
    ignore = "needs Codex 0.137.0, 0.160.1 and 0.171.0 (bash .ci/install-codex)"
)]
fn codex_sandbox_enforces_the_profile_as_the_seal_means_it() {
    let Some(releases) = releases(RELEASES) else {
        return;
    };
    let mut compared = 0;
    let mut failures = Vec::new();
    for (version, bin) in &releases {
        // Not under /tmp: Codex 0.137 and 0.160 refuse to make their sandbox
        // helper's link in a CODEX_HOME below it, and then cannot start.
        let t = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let t = t.path();
        for d in [
            "secret/sub",
            "secret/public",
            "ws/sub",
            "ws/.git/hooks",
            "ro",
            "home/.codex",
            "tmpd",
        ] {
            std::fs::create_dir_all(t.join(d)).unwrap();
        }
        for f in [
            "secret/f",
            "secret/sub/g",
            "secret/public/p",
            "ws/f",
            "ws/sub/g",
            "ro/f",
            "ws/.git/hooks/h",
        ] {
            std::fs::write(t.join(f), "data\n").unwrap();
        }
        let c = sealc::compile(
            "e.toml",
            &spec(t, version),
            &Vec::new(),
            &sealc::facts::RealHost,
        )
        .unwrap_or_else(|e| panic!("{e:?}"));
        let config = &c.files[sealc::backend::CODEX];
        std::fs::write(t.join("home/.codex/config.toml"), config).unwrap();
        let model = sealc::mounts::Model::from_artifact(&c.files[sealc::backend::BWRAP]).unwrap();
        let flag = if version == "0.137.0" {
            "--permissions-profile"
        } else {
            "-P"
        };
        let mut diffs = Vec::new();
        for (op, seal_op, rel, probe) in probes() {
            let path = if rel.starts_with('/') {
                rel.to_string()
            } else {
                format!("{}/{rel}", t.display())
            };
            let want = model.ask(seal_op, &path, None).unwrap().allowed;
            // Codex refuses to make its helper links under TMPDIR, so the
            // tree's own tmpd is Codex's TMPDIR (CODEX_HOME lies outside it).
            let out = Command::new(bin)
                .args(["sandbox", flag, "sealc", "--", "/bin/sh", "-c"])
                .arg(probe.replace("{}", &t.display().to_string()))
                .env_clear()
                .env("PATH", "/usr/bin:/bin")
                .env("HOME", t.join("home"))
                .env("CODEX_HOME", t.join("home/.codex"))
                .env("TMPDIR", t.join("tmpd"))
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            // A sandbox that does not start denies everything: never count
            // that as a denial.
            if stderr.contains("panicked") || stderr.lines().any(|l| l.starts_with("bwrap:")) {
                failures.push(format!(
                    "Codex {version}: the sandbox did not start for {op} {rel}: {}",
                    stderr.trim()
                ));
                continue;
            }
            let got = out.status.success();
            compared += 1;
            if got != want {
                diffs.push((op, rel, got, stderr.trim().to_string()));
            }
            // Undo what a probe may have made, so each probe sees the tree.
            if op == "create" && got {
                let _ = std::fs::remove_file(&path);
            }
        }
        // The network: a TCP connect to a listener of the host's, which
        // the same probe reaches outside the sandbox (so a refusal inside is
        // the sandbox's).
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let connect = format!("exec 3<>/dev/tcp/127.0.0.1/{port}");
        let control = Command::new("/bin/bash")
            .args(["-c", &connect])
            .status()
            .unwrap();
        assert!(
            control.success(),
            "the connect probe fails outside the sandbox"
        );
        let out = Command::new(bin)
            .args(["sandbox", flag, "sealc", "--", "/bin/bash", "-c", &connect])
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("HOME", t.join("home"))
            .env("CODEX_HOME", t.join("home/.codex"))
            .env("TMPDIR", t.join("tmpd"))
            .output()
            .unwrap();
        let want = model.connect("127.0.0.1", port).allowed;
        compared += 1;
        if out.status.success() != want {
            diffs.push((
                "connect",
                "127.0.0.1",
                out.status.success(),
                String::from_utf8_lossy(&out.stderr).trim().to_string(),
            ));
        }
        drop(listener);
        let mut seen: Vec<(&str, &str, bool)> =
            diffs.iter().map(|(o, r, got, _)| (*o, *r, *got)).collect();
        let mut known: Vec<(&str, &str, bool)> = KNOWN
            .iter()
            .filter(|(v, _, _, _)| v == version)
            .map(|(_, o, r, g)| (*o, *r, *g))
            .collect();
        seen.sort();
        known.sort();
        if seen != known {
            failures.push(format!(
                "Codex {version}: outcomes that differ from the seal's meaning: {seen:?}, known: {known:?}; (op, path, Codex allowed, stderr): {diffs:#?}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(compared, releases.len() * (probes().len() + 1));
}
