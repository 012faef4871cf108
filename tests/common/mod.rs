//! Test support: one small builder for running the CLI, golden-file
//! comparison with unified diffs, and the in-memory demo host.
#![allow(dead_code)]

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use sealc::facts::{FakeHost, VarFlags};

/// Set `SEALC_BLESS=1` to rewrite golden files instead of comparing.
pub fn blessing() -> bool {
    std::env::var_os("SEALC_BLESS").is_some_and(|v| v == "1")
}

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Compare `actual` with the golden file, or write it when blessing.
/// Returns a description of the mismatch (with a unified diff) if any.
pub fn check_golden(path: &Path, actual: &[u8]) -> Option<String> {
    if blessing() {
        // Only when it changes, and by a rename: another test binary may be
        // reading the same golden (the schemas) at this moment.
        if std::fs::read(path).ok().as_deref() != Some(actual) {
            let dir = path.parent().unwrap();
            std::fs::create_dir_all(dir).unwrap();
            let tmp = dir.join(format!(
                ".{}.bless-{}",
                path.file_name().unwrap().to_string_lossy(),
                std::process::id()
            ));
            std::fs::write(&tmp, actual).unwrap();
            std::fs::rename(&tmp, path).unwrap();
        }
        return None;
    }
    let expected = match std::fs::read(path) {
        Ok(e) => e,
        Err(_) => {
            return Some(format!(
                "{} is missing; run with SEALC_BLESS=1",
                path.display()
            ))
        }
    };
    if expected == actual {
        return None;
    }
    let e = String::from_utf8_lossy(&expected);
    let a = String::from_utf8_lossy(actual);
    let diff = similar::TextDiff::from_lines(e.as_ref(), a.as_ref())
        .unified_diff()
        .context_radius(3)
        .header("golden", "actual")
        .to_string();
    Some(format!(
        "{} differs (SEALC_BLESS=1 to accept):\n{diff}",
        path.display()
    ))
}

/// Panic with every golden mismatch at once.
pub fn assert_goldens(failures: Vec<String>) {
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The in-memory host every golden is compiled on: a macOS-like layout with
/// the `/tmp`, `/var`, `/etc` symlinks, a skill root that is a symlink, and a
/// launcher reached through a symlink chain. Nothing is read from this machine.
pub fn demo_host() -> FakeHost {
    FakeHost::new()
        .env("HOME", "/Users/agent")
        .env("PATH", "/usr/bin:/bin:/usr/sbin:/sbin")
        .env("LANG", "en_US.UTF-8")
        .env("TERM", "xterm-256color")
        .env("TMPDIR", "/var/folders/xy/T")
        .link("/tmp", "private/tmp")
        .link("/var", "private/var")
        .link("/etc", "private/etc")
        .dir("/private/tmp/sealc")
        .dir("/private/var/folders/xy/T")
        .dir("/private/etc")
        .dir("/Users/agent/.codex")
        .dir("/Users/agent/.agents")
        .dir("/Users/agent/skill-store/skills")
        .link(
            "/Users/agent/.claude/skills",
            "/Users/agent/skill-store/skills",
        )
        .dir("/Users/agent/src/skills")
        .dir("/Users/agent/runs/r1/ws/.harness/secrets")
        .dir("/opt/job/src/.git")
        .dir("/Users/agent/src/app/.git/hooks")
        .file("/Users/agent/src/app/.git/config", b"[core]\n")
        .file(
            "/Users/agent/src/wt/.git",
            b"gitdir: /Users/agent/src/app/.git/worktrees/wt\n",
        )
        .dir("/opt/homebrew/bin")
        .link(
            "/Users/agent/.local/bin/codex",
            "../lib/node_modules/@openai/codex/bin/codex.js",
        )
        .file(
            "/Users/agent/.local/lib/node_modules/@openai/codex/bin/codex.js",
            b"#!/usr/bin/env node\n// stand-in launcher\n",
        )
}

/// Values for the vars the example specs require.
pub fn demo_flags() -> VarFlags {
    [
        ("run", "/Users/agent/runs/r1"),
        ("checkout", "/Users/agent/src/skills"),
        ("proxy_port", "8080"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// Only the demo flags the spec declares; and the demo host's Codex
/// launcher for a spec that requires a `codex` var, and a stand-in model's
/// port for one that declares `model_port` (tests/codex/probe-harness.toml).
pub fn flags_for(src: &str) -> VarFlags {
    let spec = sealc::spec::parse(src).expect("spec parses");
    let mut flags: VarFlags = demo_flags()
        .into_iter()
        .filter(|(k, _)| spec.vars.contains_key(k))
        .collect();
    if spec
        .vars
        .get("codex")
        .is_some_and(|v| v.required.as_ref().is_some_and(|r| r.value))
    {
        flags.push(("codex".into(), "/Users/agent/.local/bin/codex".into()));
    }
    if spec.vars.contains_key("model_port") {
        flags.push(("model_port".into(), "8081".into()));
    }
    // tests/codex/mcp-agent.toml and mcp-server.toml.
    let zeros = format!("sha256:{}", "0".repeat(64));
    for (k, v) in [
        ("mcp_seal", "/srv/seals/mcp/seal.json"),
        ("mcp_binding", zeros.as_str()),
        ("mcp_server", "/srv/mcp/server.py"),
        ("secret", "/srv/secret"),
        ("out", "/srv/out"),
        ("port", "9"),
        // tests/codex/held-key.toml.
        ("api_port", "8443"),
    ] {
        let required = spec
            .vars
            .get(k)
            .is_some_and(|v| v.required.as_ref().is_some_and(|r| r.value));
        if required && !flags.iter().any(|(n, _)| n == k) {
            flags.push((k.into(), v.into()));
        }
    }
    flags
}

/// The `.toml` files of a directory, sorted.
pub fn toml_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    v.sort();
    v
}

/// What a CLI run left behind.
pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    pub dir: tempfile::TempDir,
}

impl Out {
    pub fn path(&self, p: &str) -> PathBuf {
        self.dir.path().join(p)
    }
}

/// Runs `sealc` in a fresh temporary directory with a cleared environment
/// (`HOME` points into the temp dir, so no test touches the real one).
pub struct Sealc {
    args: Vec<OsString>,
    env: Vec<(String, String)>,
    files: Vec<(String, Vec<u8>)>,
    dir: Option<tempfile::TempDir>,
}

impl Sealc {
    pub fn new() -> Self {
        Sealc {
            args: Vec::new(),
            env: Vec::new(),
            files: Vec::new(),
            dir: None,
        }
    }

    /// Reuse the directory of an earlier run.
    pub fn in_dir(mut self, dir: tempfile::TempDir) -> Self {
        self.dir = Some(dir);
        self
    }

    pub fn args<I: IntoIterator<Item = S>, S: Into<OsString>>(mut self, args: I) -> Self {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    pub fn env(mut self, k: &str, v: &str) -> Self {
        self.env.push((k.into(), v.into()));
        self
    }

    /// A file written into the run directory before the run.
    pub fn file(mut self, name: &str, bytes: impl Into<Vec<u8>>) -> Self {
        self.files.push((name.into(), bytes.into()));
        self
    }

    pub fn run(self) -> Out {
        let dir = self.dir.unwrap_or_else(|| tempfile::tempdir().unwrap());
        for (name, bytes) in &self.files {
            let p = dir.path().join(name);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, bytes).unwrap();
        }
        let mut cmd = assert_cmd::Command::cargo_bin("sealc").unwrap();
        cmd.current_dir(dir.path())
            .env_clear()
            .env("HOME", dir.path())
            .args(&self.args);
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        let output = cmd.output().unwrap();
        Out {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
            dir,
        }
    }
}

/// A process's exit, stdout and stderr, for an assertion message.
#[allow(dead_code)]
pub fn text(o: &std::process::Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}--- stderr\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A service on a loopback port that answers every connection with `reply`.
#[allow(dead_code)]
pub fn serve(reply: &'static str) -> u16 {
    use std::io::Write;
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut c in l.incoming().flatten() {
            let _ = c.write_all(reply.as_bytes());
        }
    });
    port
}

/// Can bubblewrap make a sandbox here (pid and network namespaces)? The
/// probe alone: callers decide whether its absence fails or skips.
/// A failure is tried again a few times (a machine busy with many
/// sandboxes at once can refuse one for a moment), and what bubblewrap
/// said the last time is printed.
#[allow(dead_code)]
pub fn bwrap_sandboxes() -> bool {
    let mut said = String::new();
    for _ in 0..5 {
        let out = std::process::Command::new("bwrap")
            .args([
                "--ro-bind",
                "/",
                "/",
                "--unshare-pid",
                "--unshare-net",
                "true",
            ])
            .stdin(std::process::Stdio::null())
            .output();
        match out {
            Ok(o) if o.status.success() => return true,
            Ok(o) => said = String::from_utf8_lossy(&o.stderr).into_owned(),
            Err(e) => {
                said = e.to_string();
                break;
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    eprintln!("bubblewrap's probe failed: {}", said.trim());
    false
}

/// Is bubblewrap here and able to make namespaces? Fails when not (saying
/// so under `SEALC_REQUIRE_BWRAP=1`, set by `.ci/run`): see [`not_run`].
#[allow(dead_code)]
pub fn bwrap_works() -> bool {
    let ok = bwrap_sandboxes();
    if !ok {
        assert!(
            std::env::var_os("SEALC_REQUIRE_BWRAP").is_none_or(|v| v != "1"),
            "SEALC_REQUIRE_BWRAP=1 but bubblewrap is missing or cannot make namespaces"
        );
        not_run("bubblewrap is missing or cannot make namespaces here");
    }
    ok
}

/// A test whose prerequisite is missing as it runs fails: a test that did
/// not run never passes. build.rs probes the prerequisites when the tests
/// are built and marks a test that lacks one `ignored`, with the reason; one
/// that still gets here was asked for (`--ignored`), is required by a
/// `SEALC_REQUIRE_*` variable, or lost its prerequisite since the build.
pub fn not_run(why: &str) -> ! {
    panic!(
        "not run: {why}\n(the test was run with --ignored or --include-ignored, or this was there when build.rs probed at build time: `touch build.rs` to probe again)"
    )
}

/// Failures collected over every case of a test, reported at once (so one
/// run shows which attacks get through, not just the first).
#[derive(Default)]
pub struct Verdict(pub Vec<String>);

impl Verdict {
    pub fn check(&mut self, ok: bool, what: impl FnOnce() -> String) {
        if !ok {
            self.0.push(what());
        }
    }

    pub fn done(self) {
        assert!(self.0.is_empty(), "\n{}", self.0.join("\n\n"));
    }
}

/// The unprivileged test caller (`.ci/run` creates it).
pub const USER: &str = "sealc-test";
/// A second unprivileged user, who races root's sealc (`.ci/run` creates it).
pub const RIVAL: &str = "sealc-rival";

/// Who starts sealc.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Caller {
    /// This process: root.
    Root,
    /// [`USER`], through `setpriv`.
    User,
}

pub const CALLERS: [Caller; 2] = [Caller::Root, Caller::User];

impl Caller {
    /// The user it is, when not this process.
    pub fn user(self) -> Option<&'static str> {
        match self {
            Caller::Root => None,
            Caller::User => Some(USER),
        }
    }
}

/// `argv` as `user` (through `setpriv`, its groups its own) or, without one,
/// as this process; a cleared environment but `PATH`, stdin null.
pub fn as_user(user: Option<&str>, argv: &[&str]) -> std::process::Command {
    let mut full: Vec<String> = Vec::new();
    if let Some(u) = user {
        full.extend([
            "/usr/bin/setpriv".to_string(),
            format!("--reuid={u}"),
            format!("--regid={u}"),
            "--init-groups".to_string(),
            "--".to_string(),
        ]);
    }
    full.extend(argv.iter().map(|a| a.to_string()));
    let mut c = std::process::Command::new(&full[0]);
    c.args(&full[1..])
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .stdin(std::process::Stdio::null());
    c
}

/// A user's uid and gid (`id`).
pub fn ids(user: &str) -> (u32, u32) {
    let id = |flag: &str| -> u32 {
        let o = std::process::Command::new("id")
            .args([flag, user])
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).trim().parse().unwrap()
    };
    (id("-u"), id("-g"))
}

/// Can the tests that run sealc for real as root and as `users` run here
/// (root, bubblewrap, setpriv, the users)? Fails, saying why, when not (see
/// [`not_run`]; under `SEALC_REQUIRE_BWRAP=1`, set by `.ci/run`, saying so).
pub fn ready_as_root_with(users: &[&str]) -> bool {
    let ok = |program: &str, arg: &str| {
        std::process::Command::new(program)
            .arg(arg)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    let why = if !rustix::process::geteuid().is_root() {
        Some("not root (these tests run sealc as root and switch users)".to_string())
    } else if !bwrap_sandboxes() {
        Some("bubblewrap is missing or cannot make namespaces".into())
    } else if !ok("setpriv", "--version") {
        Some("setpriv (util-linux) is missing".into())
    } else {
        users
            .iter()
            .find(|u| !ok("id", u))
            .map(|u| format!("the user `{u}` does not exist (.ci/run makes it)"))
    };
    match why {
        None => true,
        Some(why) => {
            assert!(
                std::env::var_os("SEALC_REQUIRE_BWRAP").is_none_or(|v| v != "1"),
                "SEALC_REQUIRE_BWRAP=1, but: {why}"
            );
            not_run(&why)
        }
    }
}
