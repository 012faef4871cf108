//! `exec.reset`: the write roots `sealc exec` empties before each run, so
//! one reviewed binding serves every rep of a harness from the same state.
//! Compiled (what may be reset) and run for real under bubblewrap: what a
//! run left is gone before the next starts, a link in it is removed and
//! never followed, another user's directory moved in or a run holding the
//! root stops the run before anything starts, and `--dry-run` empties
//! nothing. Without bubblewrap the run tests are ignored, unless
//! `SEALC_REQUIRE_BWRAP=1` (set by `.ci/run`), under which they fail.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::{bwrap_works, text};

struct Lab {
    _tmp: tempfile::TempDir,
    t: PathBuf,
}

impl Lab {
    /// A Linux seal writing `ws` and `keep`, with this `[exec] reset`.
    fn new(reset: &str, more: &str) -> (Lab, Output) {
        let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let t = tmp.path().canonicalize().unwrap();
        // Started by root, the agent runs as another user: it must reach the lab.
        std::fs::set_permissions(&t, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        for d in ["ws", "keep", "victim"] {
            std::fs::create_dir(t.join(d)).unwrap();
        }
        std::fs::write(t.join("victim/file"), "victim").unwrap();
        let spec = format!(
            "version = 1\nname = \"reset\"\n[target]\nplatform = \"linux\"\n[vars]\nt = {{ default = \"{t}\" }}\n[filesystem]\nwrite = [\"${{t}}/ws\", \"${{t}}/keep\"]\n{more}\n[network]\nmode = \"none\"\n[env]\npass = [\"PATH\"]\n[exec]\nreset = [{reset}]\n",
            t = t.display()
        );
        std::fs::write(t.join("spec.toml"), spec).unwrap();
        let out = sealc(&t, &["compile", "spec.toml", "--out", "seal"]);
        (Lab { _tmp: tmp, t }, out)
    }

    /// `sealc exec --report` of a bash script, in the lab.
    fn run(&self, extra: &[&str], script: &str) -> (Output, serde_json::Value) {
        let report = self.t.join("report.json");
        let _ = std::fs::remove_file(&report);
        let seal = self.t.join("seal/seal.json");
        let report_arg = report.display().to_string();
        let mut args = vec!["exec", seal.to_str().unwrap(), "--report", &report_arg];
        args.extend(extra);
        args.extend(["--", "/bin/bash", "-c", script]);
        let out = sealc(&self.t, &args);
        let r = std::fs::read(&report)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        (out, r)
    }
}

fn sealc(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sealc"))
        .current_dir(dir)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Only a write root of the seal may be reset, and only one that holds no
/// other root that exists (emptying it would remove that root, and the
/// next run's host check would refuse); a root inside it that does not
/// exist yet is no obstacle.
#[test]
fn only_a_write_root_that_holds_no_other_root_may_be_reset() {
    let (_lab, out) = Lab::new("\"${t}/victim\"", "");
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("sealc::exec::reset"), "{err}");
    assert!(
        err.contains("victim` in `exec.reset` is not a write root"),
        "{err}"
    );

    let (lab, _) = Lab::new("\"${t}/ws\"", "");
    std::fs::create_dir(lab.t.join("ws/secret")).unwrap();
    let spec = std::fs::read_to_string(lab.t.join("spec.toml"))
        .unwrap()
        .replace(
            "[network]",
            "deny_read = [\"${t}/ws/secret\", \"${t}/ws/later\"]\n[network]",
        );
    std::fs::write(lab.t.join("spec.toml"), &spec).unwrap();
    let out = sealc(&lab.t, &["compile", "spec.toml", "--out", "seal2"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("holds the root"), "{err}");
    assert!(err.contains("ws/secret"), "{err}");
    assert!(!err.contains("ws/later`"), "{err}");
    // Absent, it is no obstacle.
    std::fs::remove_dir(lab.t.join("ws/secret")).unwrap();
    let out = sealc(&lab.t, &["compile", "spec.toml", "--out", "seal2"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    // Lint has only its advice and warnings on the roots (no error),
    // nothing on the reset.
    let lint = sealc(&lab.t, &["lint", "spec.toml"]);
    assert_ne!(lint.status.code(), Some(2), "{}", text(&lint));
    assert!(!text(&lint).contains("exec::reset"), "{}", text(&lint));
    assert!(!text(&lint).contains("unused"), "{}", text(&lint));
}

/// What one run left in a reset root is gone before the next starts (a
/// link to a directory outside removed, its target untouched; a directory
/// the run left unwritable emptied too); a write root not reset keeps
/// what it holds; the report counts what went; `--dry-run` empties
/// nothing and lists what a run would reset.
#[test]
#[cfg_attr(sealc_no_bwrap, ignore = "needs bubblewrap that can make namespaces")]
fn each_run_starts_from_an_empty_reset_root() {
    if !bwrap_works() {
        return;
    }
    let (lab, out) = Lab::new("\"${t}/ws\"", "");
    assert!(out.status.success(), "{}", text(&out));
    let victim = lab.t.join("victim").display().to_string();
    let (out, r) = lab.run(
        &[],
        &format!(
            "mkdir -p ws/a/b && echo x > ws/a/b/f && ln -s {victim} ws/l && chmod 500 ws/a/b ws/a && echo k > keep/k"
        ),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(r["reset"][lab.t.join("ws").to_str().unwrap()], 0, "{r:#}");
    assert_eq!(names(&lab.t.join("ws")), ["a", "l"]);

    // --dry-run: nothing emptied, the plan says what a run resets.
    let seal = lab.t.join("seal/seal.json");
    let dry = sealc(
        &lab.t,
        &[
            "exec",
            seal.to_str().unwrap(),
            "--dry-run",
            "--",
            "/bin/true",
        ],
    );
    assert_eq!(dry.status.code(), Some(0), "{}", text(&dry));
    let plan: serde_json::Value = serde_json::from_slice(&dry.stdout).unwrap();
    assert_eq!(
        plan["reset"],
        serde_json::json!([lab.t.join("ws")]),
        "{plan:#}"
    );
    assert_eq!(names(&lab.t.join("ws")), ["a", "l"]);

    let (out, r) = lab.run(&[], "ls -A ws; cat keep/k");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "k\n",
        "{}",
        text(&out)
    );
    assert_eq!(r["reset"][lab.t.join("ws").to_str().unwrap()], 4, "{r:#}");
    assert_eq!(names(&lab.t.join("ws")), Vec::<String>::new());
    assert_eq!(names(&lab.t.join("victim")), ["file"]);
    assert_eq!(std::fs::read(lab.t.join("victim/file")).unwrap(), b"victim");
}

/// Nothing starts, and nothing is removed, when a reset root holds a
/// directory of another user (root's sealc removes nothing that user's
/// directory protects, whatever moved it there), another filesystem
/// mounted inside, or another run holds the root (a run directory shared
/// by two concurrent runs).
#[test]
#[cfg_attr(sealc_no_bwrap, ignore = "needs bubblewrap that can make namespaces")]
#[cfg_attr(sealc_not_root, ignore = "needs root (a directory of another user)")]
fn another_users_directory_or_a_concurrent_run_stops_the_reset() {
    if !bwrap_works() {
        return;
    }
    let (lab, out) = Lab::new("\"${t}/ws\"", "");
    assert!(out.status.success(), "{}", text(&out));
    let ws = lab.t.join("ws");
    std::fs::create_dir_all(ws.join("theirs/inner")).unwrap();
    std::fs::write(ws.join("theirs/inner/f"), "theirs").unwrap();
    std::os::unix::fs::chown(ws.join("theirs/inner"), Some(4242), Some(4242)).unwrap();
    let (out, r) = lab.run(&[], "touch keep/ran");
    assert_eq!(out.status.code(), Some(125), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot reset the write root"), "{err}");
    assert!(err.contains("belongs to uid 4242"), "{err}");
    assert_eq!(r["outcome"]["kind"], "could_not_start", "{r:#}");
    assert!(!lab.t.join("keep/ran").exists());
    assert_eq!(std::fs::read(ws.join("theirs/inner/f")).unwrap(), b"theirs");
    std::fs::remove_dir_all(ws.join("theirs")).unwrap();

    // Another filesystem mounted inside: not entered, nothing removed.
    struct Unmount(PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(&self.0).status();
        }
    }
    std::fs::create_dir(ws.join("mnt")).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "sealc-reset-test"])
        .arg(ws.join("mnt"))
        .status()
        .unwrap();
    assert!(mounted.success(), "root cannot mount a tmpfs here");
    let unmount = Unmount(ws.join("mnt"));
    std::fs::write(ws.join("mnt/f"), "on another mount").unwrap();
    let (out, _) = lab.run(&[], "touch keep/ran");
    assert_eq!(out.status.code(), Some(125), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("is another mount"),
        "{}",
        text(&out)
    );
    assert!(!lab.t.join("keep/ran").exists());
    assert_eq!(
        std::fs::read(ws.join("mnt/f")).unwrap(),
        b"on another mount"
    );
    drop(unmount);
    std::fs::remove_dir_all(ws.join("mnt")).unwrap();

    // More entries than `--walk-limit`: stopped at the limit.
    for i in 0..5 {
        std::fs::write(ws.join(format!("f{i}")), "").unwrap();
    }
    let (out, _) = lab.run(&["--walk-limit", "2"], "touch keep/ran");
    assert_eq!(out.status.code(), Some(125), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("more than 2 entries"),
        "{}",
        text(&out)
    );
    assert!(!lab.t.join("keep/ran").exists());
    assert!(names(&ws).len() >= 3, "{:?}", names(&ws));
    for i in 0..5 {
        let _ = std::fs::remove_file(ws.join(format!("f{i}")));
    }

    // Another run holds it (flock(1) takes the lock a run takes).
    std::fs::write(ws.join("left"), "").unwrap();
    let mut holder = Command::new("flock")
        .arg(&ws)
        .args(["sleep", "30"])
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let (out, _) = lab.run(&[], "touch keep/ran");
    holder.kill().unwrap();
    holder.wait().unwrap();
    assert_eq!(out.status.code(), Some(125), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("another run resets it now"),
        "{}",
        text(&out)
    );
    assert!(!lab.t.join("keep/ran").exists());
    assert!(ws.join("left").exists());
}

/// An unprivileged caller's runs reset their own write root, a directory
/// the last run left unwritable included (made writable for its owner,
/// then removed).
#[test]
#[cfg_attr(sealc_no_bwrap, ignore = "needs bubblewrap that can make namespaces")]
#[cfg_attr(sealc_not_root, ignore = "needs root (to run sealc as a test user)")]
fn an_unprivileged_callers_runs_reset_their_own_write_root() {
    if !common::ready_as_root_with(&[common::USER]) {
        return;
    }
    let (lab, _) = Lab::new("\"${t}/ws\"", "");
    let (uid, gid) = common::ids(common::USER);
    for d in ["", "ws", "keep", "victim", "victim/file", "spec.toml"] {
        std::os::unix::fs::chown(lab.t.join(d), Some(uid), Some(gid)).unwrap();
    }
    let t = lab.t.display().to_string();
    let sealc_bin = env!("CARGO_BIN_EXE_sealc");
    let run = |argv: &[&str]| {
        let mut c = common::as_user(Some(common::USER), argv);
        c.current_dir(&lab.t).output().unwrap()
    };
    let out = run(&[sealc_bin, "compile", "spec.toml", "--out", "own"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let seal = format!("{t}/own/seal.json");
    let script = "ls -A ws; mkdir -p ws/a/b && echo x > ws/a/b/f && chmod 500 ws/a/b ws/a";
    let exec = [sealc_bin, "exec", &seal, "--", "/bin/bash", "-c", script];
    let out = run(&exec);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "", "{}", text(&out));
    let out = run(&exec);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "", "{}", text(&out));
    assert_eq!(names(&lab.t.join("ws")), ["a"]);
}

/// A reset root that holds the record itself, or the run's report, is
/// refused before anything in it is removed (the host check would refuse
/// the run over it anyway, but only after the reset).
#[test]
#[cfg_attr(sealc_no_bwrap, ignore = "needs bubblewrap that can make namespaces")]
fn a_reset_root_that_holds_the_seal_or_the_report_is_left_as_it_is() {
    if !bwrap_works() {
        return;
    }
    let (lab, out) = Lab::new("\"${t}/ws\"", "");
    assert!(out.status.success(), "{}", text(&out));
    let out = sealc(&lab.t, &["compile", "spec.toml", "--out", "ws/seal"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    std::fs::write(lab.t.join("ws/work"), "kept").unwrap();
    let seal = lab.t.join("ws/seal/seal.json");
    let out = sealc(&lab.t, &["exec", seal.to_str().unwrap(), "--", "/bin/true"]);
    assert_eq!(out.status.code(), Some(125), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("it holds the record"),
        "{}",
        text(&out)
    );
    assert!(seal.exists());
    assert!(lab.t.join("ws/work").exists());

    let report = lab.t.join("ws/report.json").display().to_string();
    let seal = lab.t.join("seal/seal.json");
    let out = sealc(
        &lab.t,
        &[
            "exec",
            seal.to_str().unwrap(),
            "--report",
            &report,
            "--",
            "/bin/true",
        ],
    );
    assert_eq!(out.status.code(), Some(125), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("what sealc writes for this run"),
        "{}",
        text(&out)
    );
    assert!(lab.t.join("ws/work").exists());
    assert!(lab.t.join("ws/seal/seal.json").exists());
}
