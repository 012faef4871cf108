//! `[limits]` and the run report, for real under the Linux seal: each limit
//! fires on a command that reaches it, the report names the outcome and the
//! limit, nothing survives the run, and the command's argv arrives byte for
//! byte. Without bubblewrap these tests are ignored, unless
//! `SEALC_REQUIRE_BWRAP=1` (set by `.ci/run`), under which they fail.

mod common;

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use common::{bwrap_works, text};

struct Lab {
    _tmp: tempfile::TempDir,
    t: PathBuf,
}

impl Lab {
    /// A Linux seal with these `[limits]` lines, compiled.
    fn new(limits: &str) -> Lab {
        let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let t = tmp.path().canonicalize().unwrap();
        // Started by root, the agent runs as `nobody`: it must reach the lab.
        std::fs::set_permissions(&t, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        std::fs::create_dir(t.join("ws")).unwrap();
        let spec = format!(
            "version = 1\nname = \"limits\"\n[target]\nplatform = \"linux\"\n[filesystem]\nwrite = [\"{ws}\"]\n[network]\nmode = \"none\"\n[env]\npass = [\"PATH\"]\n[limits]\n{limits}\n",
            ws = t.join("ws").display()
        );
        std::fs::write(t.join("spec.toml"), spec).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_sealc"))
            .current_dir(&t)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .args(["compile", "spec.toml", "--out", "seal"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out));
        Lab { _tmp: tmp, t }
    }

    fn report_path(&self) -> PathBuf {
        self.t.join("report.json")
    }

    /// `sealc exec --report` of `argv`.
    fn run(&self, argv: &[&str]) -> (Output, serde_json::Value) {
        let _ = std::fs::remove_file(self.report_path());
        let out = Command::new(env!("CARGO_BIN_EXE_sealc"))
            .current_dir(&self.t)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .arg("exec")
            .arg(self.t.join("seal/seal.json"))
            .arg("--report")
            .arg(self.report_path())
            .arg("--")
            .args(argv)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let report = std::fs::read(self.report_path())
            .unwrap_or_else(|e| panic!("no report ({e}):\n{}", text(&out)));
        (out, serde_json::from_slice(&report).unwrap())
    }

    fn sh(&self, script: &str) -> (Output, serde_json::Value) {
        self.run(&["/bin/bash", "-c", script])
    }
}

/// No process of the run is left: none whose command line holds `marker`.
fn survivors(marker: &str) -> Vec<String> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok())
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(marker) && !c.contains("cargo") && !c.contains("limits-"))
        .collect()
}

fn check(out: &Output, r: &serde_json::Value, kind: &str, limit: &str, code: i32) {
    let all = format!("{}\nreport: {r:#}", text(out));
    assert_eq!(r["schema"], "sealc.run/v1", "{all}");
    assert_eq!(r["outcome"]["kind"], kind, "{all}");
    assert_eq!(out.status.code(), Some(code), "{all}");
    assert_eq!(r["exit_code"], code, "{all}");
    if !limit.is_empty() {
        assert!(
            r["limits_reached"]
                .as_array()
                .unwrap()
                .iter()
                .any(|l| l == limit),
            "{all}"
        );
        assert!(
            r["limits"][limit]["enforced_by"].is_string(),
            "the report says what enforced `{limit}`: {all}"
        );
    }
    assert!(
        r["binding"].as_str().unwrap().starts_with("sha256:"),
        "{all}"
    );
}

#[test]
#[cfg_attr(sealc_no_bwrap, ignore = "needs bubblewrap that can make namespaces")]
fn each_limit_fires_and_the_report_names_it() {
    if !bwrap_works() {
        return;
    }
    let lab = Lab::new(
        "wall_seconds = 20\ncpu_seconds = 1\nmemory_mib = 64\nprocesses = 32\nopen_files = 32\nfile_size_mib = 1\noutput_bytes = 4096",
    );
    // A CPU spin.
    let (out, r) = lab.sh("exec -a zz-limits-spin /bin/bash -c 'while :; do :; done'");
    check(&out, &r, "cpu_limit", "cpu_seconds", 152);
    assert!(r["cpu_seconds"].as_f64().unwrap() >= 0.5, "{r:#}");
    // A memory hog that grows.
    let (out, r) = lab.sh(
        "exec -a zz-limits-hog /usr/bin/python3 -c 'import time\nb = []\nwhile True:\n    b.append(bytearray(4 * 2**20)); time.sleep(0.005)'",
    );
    check(&out, &r, "memory_limit", "memory_mib", 120);
    assert!(r["peak_memory_kib"].as_u64().unwrap() > 64 * 1024, "{r:#}");
    // A file too large: the host keeps at most the limit.
    let (out, r) = lab.sh(&format!(
        "dd if=/dev/zero of={}/big bs=1M count=8",
        lab.t.join("ws").display()
    ));
    check(&out, &r, "file_size_limit", "file_size_mib", 153);
    assert!(std::fs::metadata(lab.t.join("ws/big")).unwrap().len() <= 1 << 20);
    // A flood of output: exactly the cap reaches the caller, the rest is dropped.
    let (out, r) = lab.sh("exec -a zz-limits-flood /usr/bin/yes flood");
    check(&out, &r, "output_limit", "output_bytes", 121);
    assert_eq!(out.stdout.len(), 4096);
    assert_eq!(r["stdout"]["bytes"], 4096);
    assert_eq!(r["stdout"]["truncated"], true);
    // A fork bomb: fork fails past the limit; the command decides its exit.
    let bomb = Lab::new("wall_seconds = 20\nprocesses = 32");
    let (out, r) = bomb.run(&[
        "/usr/bin/python3",
        "-c",
        "import os, time\nfailed = 0\nfor i in range(100):\n    try:\n        if os.fork() == 0:\n            os.execv('/bin/sleep', ['zz-limits-bomb', '5'])\n    except OSError:\n        failed += 1\ntime.sleep(0.3)\nprint('failed', failed)\nos._exit(3 if failed else 0)",
    ]);
    check(&out, &r, "exited", "processes", 3);
    // Open files past the limit fail inside.
    let (out, r) = lab.sh("exec 40</dev/null && echo OPENED; exit 0");
    check(&out, &r, "exited", "", 0);
    assert!(!String::from_utf8_lossy(&out.stdout).contains("OPENED"));
    for m in [
        "zz-limits-spin",
        "zz-limits-hog",
        "zz-limits-flood",
        "zz-limits-bomb",
    ] {
        assert!(survivors(m).is_empty(), "{m} survived: {:?}", survivors(m));
    }
}

#[test]
#[cfg_attr(sealc_no_bwrap, ignore = "needs bubblewrap that can make namespaces")]
fn the_wall_limit_ends_a_command_that_ignores_sigterm() {
    if !bwrap_works() {
        return;
    }
    let lab = Lab::new("wall_seconds = 1");
    let (out, r) = lab.sh("trap '' TERM; exec -a zz-limits-stubborn sleep 30");
    check(&out, &r, "wall_timeout", "wall_seconds", 124);
    assert!(r["duration_seconds"].as_f64().unwrap() < 10.0, "{r:#}");
    // Said once, on one line, and nothing else (issue 16).
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "sealc: the run was stopped at the wall-clock limit (exit 124)\n"
    );
    assert!(survivors("zz-limits-stubborn").is_empty());
}

#[test]
#[cfg_attr(sealc_no_bwrap, ignore = "needs bubblewrap that can make namespaces")]
fn outcomes_are_told_apart() {
    if !bwrap_works() {
        return;
    }
    let lab = Lab::new("wall_seconds = 20");
    let (out, r) = lab.sh("exit 7");
    check(&out, &r, "exited", "", 7);
    let (out, r) = lab.sh("kill -9 $$");
    check(&out, &r, "signaled", "", 137);
    assert_eq!(r["outcome"]["signal"], 9);
    // A command that exits 137 itself is not a signal.
    let (out, r) = lab.sh("exit 137");
    check(&out, &r, "exited", "", 137);
    // Not found inside: 127, as a shell says it, and the phase says so.
    let (out, r) = lab.run(&["/nonexistent/agent"]);
    check(&out, &r, "could_not_start", "", 127);
    assert_eq!(r["outcome"]["phase"], "command_not_found", "{r:#}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("/nonexistent/agent"),
        "{}",
        text(&out)
    );
    // There but not executable: 126, not 127.
    let (out, r) = lab.run(&["/dev/null"]);
    check(&out, &r, "could_not_start", "", 126);
    assert_eq!(r["outcome"]["phase"], "command_start", "{r:#}");
    // A tampered record: nothing starts, and the report says where it stopped.
    let seal = lab.t.join("seal/seal.json");
    let bytes = std::fs::read(&seal).unwrap();
    std::fs::write(
        &seal,
        String::from_utf8(bytes)
            .unwrap()
            .replace("limits", "limitz"),
    )
    .unwrap();
    let (out, r) = lab.sh("echo STARTED");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("STARTED"));
    assert_eq!(r["outcome"]["kind"], "could_not_start", "{r:#}");
    assert_eq!(r["outcome"]["phase"], "verify", "{r:#}");
    assert_eq!(r["exit_code"], out.status.code().unwrap());
}

/// `__confine` (the last step inside the sandbox) tells its own failure
/// apart from the command's: a layer that cannot be applied is 122 ("the
/// sandbox could not start"), never the 127 of a command not found.
#[test]
fn a_layer_that_cannot_be_applied_is_not_a_command_not_found() {
    let confine = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_sealc"))
            .env_clear()
            .arg("__confine")
            .args(args)
            .output()
            .unwrap()
    };
    // More open files than the kernel's `fs.nr_open` allows: setrlimit fails
    // for root too.
    let out = confine(&[
        "--tcp-any",
        "--limit",
        "open_files=4294967295",
        "--",
        "/bin/true",
    ]);
    assert_eq!(out.status.code(), Some(122), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("the sandbox cannot start"));
    let out = confine(&["--tcp-any", "--", "/nonexistent/agent"]);
    assert_eq!(out.status.code(), Some(127), "{}", text(&out));
    let out = confine(&["--tcp-any", "--", "/dev/null"]);
    assert_eq!(out.status.code(), Some(126), "{}", text(&out));
}

#[test]
#[cfg_attr(sealc_no_bwrap, ignore = "needs bubblewrap that can make namespaces")]
fn literal_argv_reaches_the_command_and_the_report_byte_for_byte() {
    if !bwrap_works() {
        return;
    }
    let lab = Lab::new("wall_seconds = 20");
    let args = [
        "with spaces",
        "\"double\" 'single'",
        "$HOME;$(printf no-shell);*?[]",
        "a\nnewline",
        "",
        "--",
    ];
    let mut argv = vec!["/usr/bin/printf", "%s\\0"];
    argv.extend(args);
    let (out, r) = lab.run(&argv);
    check(&out, &r, "exited", "", 0);
    let got: Vec<&[u8]> = out.stdout.split(|&b| b == 0).collect();
    assert_eq!(got.len(), args.len() + 1, "{}", text(&out));
    for (g, want) in got.iter().zip(args) {
        assert_eq!(*g, want.as_bytes());
    }
    let reported: Vec<&str> = r["argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(reported, argv);
}

#[test]
#[cfg_attr(sealc_no_bwrap, ignore = "needs bubblewrap that can make namespaces")]
fn a_report_that_cannot_be_written_is_an_error_and_nothing_is_left() {
    if !bwrap_works() {
        return;
    }
    let lab = Lab::new("wall_seconds = 20");
    let out = Command::new(env!("CARGO_BIN_EXE_sealc"))
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .arg("exec")
        .arg(lab.t.join("seal/seal.json"))
        .arg("--report")
        .arg(lab.t.join("no-such-dir/report.json"))
        .args(["--", "/bin/true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(125), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot write the run report"));
    let left: Vec<_> = std::fs::read_dir(&lab.t)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains("sealc-tmp"))
        .collect();
    assert!(left.is_empty());
}

/// The report binds what the caller captured: each stream's `sha256` is the
/// digest of the bytes that reached sealc's own stdout or stderr (here
/// files, as a harness keeps its transcripts), also when the output limit
/// cut the stream (sealc's own line on stderr then is not the command's).
#[test]
#[cfg_attr(sealc_no_bwrap, ignore = "needs bubblewrap that can make namespaces")]
fn the_report_digests_what_the_caller_captured() {
    if !bwrap_works() {
        return;
    }
    let digest = |b: &[u8]| {
        use sha2::Digest;
        format!("sha256:{:x}", sha2::Sha256::digest(b))
    };
    for (limits, script, truncated) in [
        (
            "",
            "printf 'one\\0two\\n'; printf 'err\\x1b[31m' >&2",
            false,
        ),
        (
            "output_bytes = 1000",
            "head -c 5000 /dev/zero | tr '\\0' x",
            true,
        ),
    ] {
        let lab = Lab::new(limits);
        let (out, r) = lab.sh(script);
        let all = format!("{}\nreport: {r:#}", text(&out));
        assert_eq!(r["stdout"]["sha256"], digest(&out.stdout), "{all}");
        if !truncated {
            assert_eq!(r["stderr"]["sha256"], digest(&out.stderr), "{all}");
        }
        assert_eq!(r["stdout"]["bytes"], out.stdout.len(), "{all}");
        assert_eq!(r["stdout"]["truncated"], truncated, "{all}");
        assert_ne!(r["stdout"]["sha256"], r["stderr"]["sha256"], "{all}");
    }
}

/// The report is written when the command starts and completed when the
/// run ends: a sealc killed meanwhile (`kill -9`) leaves one that says the
/// run is unfinished, under which binding, with no exit code; a run that
/// ends replaces it.
#[test]
#[cfg_attr(sealc_no_bwrap, ignore = "needs bubblewrap that can make namespaces")]
fn a_killed_sealc_leaves_a_report_that_says_the_run_is_unfinished() {
    if !bwrap_works() {
        return;
    }
    let lab = Lab::new("wall_seconds = 30");
    let mut sealc = Command::new(env!("CARGO_BIN_EXE_sealc"))
        .current_dir(&lab.t)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .arg("exec")
        .arg(lab.t.join("seal/seal.json"))
        .arg("--report")
        .arg(lab.report_path())
        .arg("--stderr")
        .arg(lab.t.join("err.txt"))
        .args(["--", "/bin/sh", "-c", "echo started; exec sleep 20"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(sealc.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    assert_eq!(line, "started\n");
    sealc.kill().unwrap();
    sealc.wait().unwrap();
    // What it ran ends with it.
    let started = std::time::Instant::now();
    while !survivors("sleep 20").is_empty() && started.elapsed().as_secs() < 10 {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(survivors("sleep 20"), Vec::<String>::new());
    let r: serde_json::Value =
        serde_json::from_slice(&std::fs::read(lab.report_path()).unwrap()).unwrap();
    assert_eq!(r["schema"], "sealc.run/v1", "{r:#}");
    assert_eq!(r["outcome"]["kind"], "unfinished", "{r:#}");
    assert!(r["exit_code"].is_null(), "{r:#}");
    assert!(r.get("ended_at").is_none(), "{r:#}");
    assert!(
        r["binding"].as_str().unwrap().starts_with("sha256:"),
        "{r:#}"
    );
    assert_eq!(r["argv"][0], "/bin/sh", "{r:#}");
    assert!(r["layers"].is_object(), "{r:#}");
    // The kept stderr stays under its temp name, never in place half done.
    assert!(!lab.t.join("err.txt").exists());
    let staged = std::fs::read_dir(&lab.t)
        .unwrap()
        .flatten()
        .filter(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            n.starts_with(".err.txt.sealc-") && n.ends_with(".tmp")
        })
        .count();
    assert_eq!(staged, 1);
    // A run that ends replaces it.
    let (out, r) = lab.run(&["/bin/true"]);
    check(&out, &r, "exited", "", 0);
    assert!(r["ended_at"].is_string(), "{r:#}");
}

/// What the command left running when it ended is counted and named in
/// the report before sealc's init ends it, in both isolation modes (a
/// background child and one in a session of its own); a command that
/// leaves nothing says 0.
#[test]
#[cfg_attr(sealc_no_bwrap, ignore = "needs bubblewrap that can make namespaces")]
fn what_the_command_left_running_is_counted_and_named() {
    if !bwrap_works() {
        return;
    }
    for mode in ["", "[exec]\nisolation = \"landlock\""] {
        let lab = Lab::new(&format!("wall_seconds = 30\n{mode}"));
        let (out, r) = lab.sh("sleep 300 & setsid sleep 301 & sleep 0.2; exit 0");
        check(&out, &r, "exited", "", 0);
        assert_eq!(r["left_running"]["count"], 2, "{mode}: {r:#}");
        assert_eq!(
            r["left_running"]["names"],
            serde_json::json!(["sleep", "sleep"]),
            "{mode}: {r:#}"
        );
        assert_eq!(survivors("sleep 30"), Vec::<String>::new());
        let (out, r) = lab.sh("exit 0");
        check(&out, &r, "exited", "", 0);
        assert_eq!(r["left_running"]["count"], 0, "{mode}: {r:#}");
    }
}

/// `--stdout FILE` and `--stderr FILE` keep the command's output where the
/// harness says, as safely as the report: made under a random name beside
/// it and renamed into place (a link planted at the name is replaced, its
/// target untouched), mode 0600, nothing on sealc's own stdout, the
/// report's `sha256` that of the file (also past the output limit). A
/// file inside a write root, one named twice, or a run refused before it
/// starts: nothing runs and no file is made.
#[test]
#[cfg_attr(sealc_no_bwrap, ignore = "needs bubblewrap that can make namespaces")]
fn the_output_is_kept_where_the_harness_says() {
    use std::os::unix::fs::PermissionsExt;
    if !bwrap_works() {
        return;
    }
    let digest = |b: &[u8]| {
        use sha2::Digest;
        format!("sha256:{:x}", sha2::Sha256::digest(b))
    };
    let exec = |lab: &Lab, extra: &[String], script: &str| -> Output {
        Command::new(env!("CARGO_BIN_EXE_sealc"))
            .current_dir(&lab.t)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .arg("exec")
            .arg(lab.t.join("seal/seal.json"))
            .args(extra)
            .args(["--", "/bin/bash", "-c", script])
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let leftovers = |lab: &Lab| -> Vec<String> {
        std::fs::read_dir(&lab.t)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains(".sealc-"))
            .collect()
    };
    let p = |lab: &Lab, name: &str| lab.t.join(name).display().to_string();

    let lab = Lab::new("");
    std::fs::write(lab.t.join("victim"), "victim").unwrap();
    std::os::unix::fs::symlink(lab.t.join("victim"), lab.t.join("out.txt")).unwrap();
    let args = [
        "--stdout".to_string(),
        p(&lab, "out.txt"),
        "--stderr".into(),
        p(&lab, "err.txt"),
        "--report".into(),
        p(&lab, "report.json"),
    ];
    let out = exec(
        &lab,
        &args,
        "printf 'one\\0two\\n'; printf 'err' >&2; exit 3",
    );
    let all = text(&out);
    assert_eq!(out.status.code(), Some(3), "{all}");
    assert!(out.stdout.is_empty(), "{all}");
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("err"),
        "{all}"
    );
    assert_eq!(std::fs::read(lab.t.join("victim")).unwrap(), b"victim");
    let meta = std::fs::symlink_metadata(lab.t.join("out.txt")).unwrap();
    assert!(meta.is_file(), "{all}");
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    let kept = std::fs::read(lab.t.join("out.txt")).unwrap();
    assert_eq!(kept, b"one\0two\n");
    assert_eq!(std::fs::read(lab.t.join("err.txt")).unwrap(), b"err");
    let r: serde_json::Value =
        serde_json::from_slice(&std::fs::read(lab.report_path()).unwrap()).unwrap();
    assert_eq!(r["stdout"]["kept"], p(&lab, "out.txt"), "{r:#}");
    assert_eq!(r["stdout"]["sha256"], digest(&kept), "{r:#}");
    assert_eq!(r["stderr"]["kept"], p(&lab, "err.txt"), "{r:#}");
    assert_eq!(r["stderr"]["sha256"], digest(b"err"), "{r:#}");
    assert_eq!(r["exit_code"], 3, "{r:#}");
    assert_eq!(leftovers(&lab), Vec::<String>::new());

    // Past the output limit: the file holds what was let through.
    let lab = Lab::new("output_bytes = 1000");
    let args = ["--stdout".to_string(), p(&lab, "out.txt")];
    let out = exec(&lab, &args, "head -c 5000 /dev/zero | tr '\\0' x");
    assert_eq!(
        out.status.code(),
        Some(sealc::exit::OUTPUT_LIMIT),
        "{}",
        text(&out)
    );
    assert_eq!(std::fs::read(lab.t.join("out.txt")).unwrap().len(), 1000);

    // Refused: nothing runs (no marker), no file is made.
    let lab = Lab::new("");
    let zeros = format!("sha256:{}", "0".repeat(64));
    for (what, args) in [
        (
            "in a write root",
            vec!["--stdout".to_string(), p(&lab, "ws/out.txt")],
        ),
        (
            "named twice",
            vec![
                "--stdout".to_string(),
                p(&lab, "out.txt"),
                "--stderr".into(),
                p(&lab, "out.txt"),
            ],
        ),
        (
            "the report's",
            vec![
                "--stdout".to_string(),
                p(&lab, "out.txt"),
                "--report".into(),
                p(&lab, "out.txt"),
            ],
        ),
        (
            "another binding",
            vec![
                "--stdout".to_string(),
                p(&lab, "out.txt"),
                "--expect".into(),
                zeros.clone(),
            ],
        ),
    ] {
        let out = exec(&lab, &args, "touch ws/ran");
        let all = text(&out);
        assert_eq!(out.status.code(), Some(125), "{what}: {all}");
        assert!(!lab.t.join("ws/ran").exists(), "{what}: {all}");
        assert!(!lab.t.join("out.txt").exists(), "{what}: {all}");
        assert!(!lab.t.join("ws/out.txt").exists(), "{what}: {all}");
        assert_eq!(leftovers(&lab), Vec::<String>::new(), "{what}");
    }
}
