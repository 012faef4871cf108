//! Sealed MCP servers (`codex.mcp_servers`): the agent's Codex starts a
//! server only through sealc's relay, and `sealc exec` starts it on the
//! host side under its own seal, pinned by binding. The server
//! (`tests/codex/mcp_probe_server.py`, a stdio MCP server written for the
//! test) tries to read a file its seal denies and to reach a host port its
//! seal does not allow, and says what happened; the real Codex drives it
//! against the Responses stand-in, and bubblewrap holds both seals.

mod codex_support;
mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use codex_support::*;
use common::*;

const KEY: &str = "sk-mcp-5c1e";

fn sealc(t: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_sealc"));
    c.env_clear()
        .env("HOME", t.join("op"))
        .env("PATH", "/usr/bin:/bin")
        .stdin(Stdio::null());
    c
}

fn binding_of(stdout: &[u8]) -> String {
    let said = String::from_utf8_lossy(stdout);
    said.split_whitespace()
        .find(|w| w.starts_with("sha256:") && said.contains(&format!("binding {w}")))
        .expect("compile prints the binding")
        .to_string()
}

/// A tree the agent (`nobody`, started by root) can reach: the operator's
/// home, the run, the server's secret and its output; the server's seal
/// compiled into `seals/server`. Returns the tree and the server's binding.
struct Tree {
    _tmp: tempfile::TempDir,
    t: PathBuf,
    binding: String,
    /// A host port the server must not reach (a listener that counts).
    host_port: u16,
    _listener: std::net::TcpListener,
}

fn tree() -> Tree {
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let t = tmp.path().canonicalize().unwrap();
    std::fs::set_permissions(&t, PermissionsExt::from_mode(0o755)).unwrap();
    for d in [
        "op", "run/home", "run/ws", "run/tmp", "secret", "out", "seals",
    ] {
        std::fs::create_dir_all(t.join(d)).unwrap();
    }
    std::fs::write(t.join("secret/secret.txt"), "the server's secret\n").unwrap();
    // The server writes its log as the run's user.
    std::fs::set_permissions(t.join("out"), PermissionsExt::from_mode(0o777)).unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let host_port = listener.local_addr().unwrap().port();
    let out = sealc(&t)
        .current_dir(&t)
        .arg("compile")
        .arg(root().join("tests/codex/mcp-server.toml"))
        .args(["--out", "seals/server"])
        .arg(format!("--var=run={}", t.join("run").display()))
        .arg(format!("--var=secret={}", t.join("secret").display()))
        .arg(format!("--var=out={}", t.join("out").display()))
        .arg(format!("--var=port={host_port}"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let binding = binding_of(&out.stdout);
    Tree {
        _tmp: tmp,
        t,
        binding,
        host_port,
        _listener: listener,
    }
}

fn compile_agent(tr: &Tree, model_port: u16, codex: &Path, binding: &str) -> String {
    compile_agent_for(tr, model_port, codex, binding, None)
}

/// As [`compile_agent`], for the model `model` in place of the spec's.
fn compile_agent_for(
    tr: &Tree,
    model_port: u16,
    codex: &Path,
    binding: &str,
    model: Option<&str>,
) -> String {
    let t = &tr.t;
    let mut spec = root().join("tests/codex/mcp-agent.toml");
    if let Some(m) = model {
        let text = std::fs::read_to_string(&spec).unwrap();
        let from = "model     = \"gpt-5.5\"";
        assert!(text.contains(from));
        spec = t.join("mcp-agent.toml");
        std::fs::write(&spec, text.replace(from, &format!("model = \"{m}\""))).unwrap();
    }
    let out = sealc(t)
        .current_dir(t)
        .arg("compile")
        .arg(&spec)
        .args(["--out", "seal"])
        .arg(format!("--var=run={}", t.join("run").display()))
        .arg(format!("--var=model_port={model_port}"))
        .arg(format!("--var=codex={}", codex.display()))
        .arg(format!(
            "--var=mcp_seal={}",
            t.join("seals/server/seal.json").display()
        ))
        .arg(format!("--var=mcp_binding={binding}"))
        .arg(format!(
            "--var=mcp_server={}",
            root().join("tests/codex/mcp_probe_server.py").display()
        ))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    binding_of(&out.stdout)
}

/// `codex exec probe` under the agent's seal (compiled into `t/seal`,
/// pinned by `binding`), from the workspace: where its report is, and how
/// the run went.
fn run_codex(t: &Path, binding: &str) -> (PathBuf, std::process::Output) {
    let rep = t.join("report.json");
    let out = sealc(t)
        .current_dir(t.join("run/ws"))
        .env("OPENAI_API_KEY", KEY)
        .arg("exec")
        .arg(t.join("seal/seal.json"))
        .args(["--expect", binding, "--report"])
        .arg(&rep)
        .args(["--", "codex", "exec", "--skip-git-repo-check", "probe"])
        .output()
        .unwrap();
    (rep, out)
}

fn report(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn probe_log(t: &Path) -> String {
    std::fs::read_to_string(t.join("out/probe.log")).unwrap_or_default()
}

#[test]
#[cfg_attr(
    any(sealc_no_bwrap, sealc_no_codex = "0.171.0"),
    ignore = "needs bubblewrap and Codex 0.171.0 (bash .ci/install-codex)"
)]
fn codex_calls_a_sealed_server_that_holds_its_own_seal() {
    if !bwrap_works() {
        return;
    }
    let Some(releases) = releases(&["0.171.0"]) else {
        return;
    };
    let tr = tree();
    let t = &tr.t;
    // Codex 0.171 defers MCP tools behind its own `tool_search`, which the
    // stand-in does not speak: the model's one call is a shell command
    // that calls the server's tool through the same relay Codex starts.
    let call = r#"printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}' '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"probe","arguments":{}}}' | /dev/.sealc-init __mcp --port 47001; sleep 1"#;
    let standin = StandIn::start(vec![call.to_string()]);
    let binding = compile_agent(&tr, standin.port, &releases[0].1, &tr.binding);
    let (rep, out) = run_codex(t, &binding);
    let requests = standin.requests();
    let tools: Vec<String> = requests
        .iter()
        .flat_map(|q| q.body["tools"].as_array().cloned().unwrap_or_default())
        .map(|t| match t["name"].as_str() {
            Some(n) => n.to_string(),
            None => t.to_string().chars().take(600).collect(),
        })
        .collect();
    let mcp = std::fs::read(&rep)
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .map(|r| format!("{:#}", r["mcp"]))
        .unwrap_or_default();
    let mut codex_said = String::new();
    let kept = t.join("report.json.codex-home");
    for e in walk(&kept) {
        if let Ok(s) = std::fs::read_to_string(&e) {
            for l in s
                .lines()
                .filter(|l| l.to_lowercase().contains("mcp"))
                .take(20)
            {
                codex_said.push_str(&format!("{}: {l}\n", e.display()));
            }
        }
    }
    let what = format!(
        "{}\ntools offered: {tools:?}\nserver log:\n{}\nreport's mcp: {mcp}\nCodex's home on MCP:\n{codex_said}",
        text(&out),
        probe_log(t)
    );
    if out.status.code() != Some(0) && std::env::var_os("SEALC_TEST_KEEP").is_some() {
        eprintln!("kept: {}", t.display());
        std::mem::forget(tr);
        panic!("{what}");
    }
    assert_eq!(out.status.code(), Some(0), "{what}");
    // Codex started the server through the relay (and listed its tools),
    // and the agent's command called its tool.
    let log = probe_log(t);
    assert!(log.contains("\"tools/list\""), "{what}");
    assert!(log.contains("\"tools/call\""), "{what}");
    // What the tool said reached the model: the server's seal held.
    let outputs: Vec<(String, String)> = requests.iter().flat_map(|q| q.tool_outputs()).collect();
    let said = outputs
        .iter()
        .map(|(_, o)| o.as_str())
        .find(|o| o.contains("\"id\": 2"))
        .unwrap_or_else(|| panic!("no tool output from the server: {outputs:#?}\n{what}"));
    // (Codex keeps a command's output only until it exits: the `sleep`
    // lets the last reply through.)
    assert_eq!(said.matches("refused: ").count(), 2, "{said}");
    assert!(!said.contains("the server's secret"), "{said}");
    assert!(!said.contains("connected"), "{said}");
    // The report: one start, its own run under the server's binding.
    let r = report(&rep);
    let m = &r["mcp"][0];
    assert_eq!(m["name"], "probe", "{r:#}");
    assert_eq!(m["binding"], tr.binding.as_str(), "{r:#}");
    assert_eq!(m["starts"].as_array().map(Vec::len), Some(2), "{r:#}");
    let start = &m["starts"][0];
    assert_eq!(start["report"]["binding"], tr.binding.as_str(), "{r:#}");
    assert_eq!(
        start["report"]["argv"][1],
        root()
            .join("tests/codex/mcp_probe_server.py")
            .display()
            .to_string(),
        "{r:#}"
    );
}

/// Codex itself calls the sealed server's tool (`tools/call` from Codex,
/// through sealc's relay, to the server under its own seal). Codex 0.171
/// defers MCP tools behind `tool_search` for the models its catalog says
/// support it (the test above: the stand-in does not speak it); for a
/// model it does not know, it offers each server's tools directly, as a
/// namespace tool (`mcp__probe`), which the stand-in calls.
#[test]
#[cfg_attr(
    any(sealc_no_bwrap, sealc_no_codex = "0.171.0"),
    ignore = "needs bubblewrap and Codex 0.171.0 (bash .ci/install-codex)"
)]
fn codex_itself_calls_the_sealed_servers_tool() {
    if !bwrap_works() {
        return;
    }
    let Some(releases) = releases(&["0.171.0"]) else {
        return;
    };
    let tr = tree();
    let t = &tr.t;
    let standin = StandIn::start(vec!["tool:mcp__probe/probe".to_string()]);
    let binding = compile_agent_for(
        &tr,
        standin.port,
        &releases[0].1,
        &tr.binding,
        Some("stand-in"),
    );
    let (rep, out) = run_codex(t, &binding);
    let requests = standin.requests();
    let offered: Vec<String> = requests
        .iter()
        .flat_map(|q| q.body["tools"].as_array().cloned().unwrap_or_default())
        .filter_map(|t| t["name"].as_str().map(str::to_string))
        .collect();
    let outputs: Vec<(String, String)> = requests.iter().flat_map(|q| q.tool_outputs()).collect();
    let what = format!(
        "{}\ntools offered: {offered:?}\ntool outputs: {outputs:#?}\nserver log:\n{}",
        text(&out),
        probe_log(t)
    );
    assert_eq!(out.status.code(), Some(0), "{what}");
    assert!(offered.iter().any(|n| n == "mcp__probe"), "{what}");
    // The model's call went from Codex to the server: Codex's own
    // `tools/call`, and the tool's answer back in the next request.
    let log = probe_log(t);
    assert!(log.contains("\"tools/call\""), "{what}");
    let said = outputs
        .iter()
        .find(|(id, _)| id == "call_0")
        .map(|(_, o)| o.as_str())
        .unwrap_or_else(|| panic!("no output of the tool call: {what}"));
    // What the server tried was refused by its own seal: its secret file
    // hidden, the host port closed, and it ran as the agent's user.
    assert_eq!(said.matches("refused: ").count(), 2, "{what}");
    assert!(!said.contains("the server's secret"), "{what}");
    assert!(!said.contains("connected"), "{what}");
    assert!(said.contains("\\\"uid\\\": 65534"), "{what}");
    let r = report(&rep);
    let m = &r["mcp"][0];
    assert_eq!(m["name"], "probe", "{r:#}");
    assert_eq!(m["binding"], tr.binding.as_str(), "{r:#}");
}

/// Every file below `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// An agent seal (no Codex binary needed) whose command is `sh -c SCRIPT`,
/// with the probe server allowed `starts` times.
fn shell_agent(tr: &Tree, starts: u32, extra: &str) -> PathBuf {
    let t = &tr.t;
    let spec = format!(
        r#"version = 1
name = "mcp-shell-agent"
[target]
platform = "linux"
[filesystem]
deny_read = ["{op}", "{secret}", "{seals}", "{out}"]
write = ["{run}/home", "{run}/ws"]
[env]
set = {{ PATH = "/usr/bin:/bin", HOME = "{run}/home", CODEX_HOME = "{run}/home/.codex" }}
[network]
mode = "none"
{extra}
[codex]
workspace = "{run}/ws"
[codex.mcp_servers.probe]
seal = "{seals}/server/seal.json"
binding = "{binding}"
command = ["/usr/bin/python3", "{server}"]
starts = {starts}
"#,
        op = t.join("op").display(),
        secret = t.join("secret").display(),
        seals = t.join("seals").display(),
        out = t.join("out").display(),
        run = t.join("run").display(),
        binding = tr.binding,
        server = root().join("tests/codex/mcp_probe_server.py").display(),
    );
    std::fs::write(t.join("shell-agent.toml"), spec).unwrap();
    t.join("shell-agent.toml")
}

/// One JSON-RPC exchange through the relay: initialize, then a call of
/// the probe tool.
const CALL: &str = r#"printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}' '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"probe"}}' | /dev/.sealc-init __mcp --port 47001"#;

fn run_shell(tr: &Tree, spec: &Path, script: &str) -> (std::process::Output, serde_json::Value) {
    let t = &tr.t;
    let _ = std::fs::remove_dir_all(t.join("run/home/.codex"));
    let out = sealc(t)
        .current_dir(t)
        .arg("compile")
        .arg(spec)
        .args(["--out", "shell-seal", "--force", "-q"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let rep = t.join("shell-report.json");
    let _ = std::fs::remove_file(&rep);
    let out = sealc(t)
        .current_dir(t)
        .arg("exec")
        .arg(t.join("shell-seal/seal.json"))
        .arg("--report")
        .arg(&rep)
        .args(["--", "/bin/sh", "-c", script])
        .output()
        .unwrap();
    let r = std::fs::read(&rep)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    (out, r)
}

/// The agent's own command reaches the server only through the relay, as
/// often as `starts` allows: a third connection is refused and counted,
/// and each start is the server's own verified run, as the run's user.
#[test]
#[cfg_attr(sealc_no_bwrap, ignore = "needs bubblewrap")]
fn starts_are_bounded_and_each_is_the_servers_own_run() {
    if !bwrap_works() {
        return;
    }
    let tr = tree();
    let spec = shell_agent(&tr, 2, "");
    let script = format!(
        "for i in 1 2 3; do {CALL}; echo end $i; done; cat {}/secret/secret.txt",
        tr.t.display()
    );
    let (out, r) = run_shell(&tr, &spec, &script);
    let said = String::from_utf8_lossy(&out.stdout);
    let what = format!("{}\n{r:#}", text(&out));
    // Two starts answered both requests; the third got nothing.
    assert_eq!(said.matches("\"id\": 2").count(), 2, "{what}");
    assert_eq!(said.matches("refused: ").count(), 4, "{what}");
    assert!(!said.contains("the server's secret"), "{what}");
    assert!(said.contains("end 3"), "{what}");
    let m = &r["mcp"][0];
    assert_eq!(m["starts"].as_array().map(Vec::len), Some(2), "{what}");
    assert_eq!(m["refused"], 1, "{what}");
    assert_eq!(m["starts_allowed"], 2, "{what}");
    for s in m["starts"].as_array().unwrap() {
        assert_eq!(s["exit_code"], 0, "{what}");
        assert_eq!(s["report"]["binding"], tr.binding.as_str(), "{what}");
        assert_eq!(s["report"]["outcome"]["kind"], "exited", "{what}");
    }
    // What the server logged, the agent could not read; the server could.
    let log = probe_log(&tr.t);
    assert_eq!(log.matches("tools/call").count(), 2, "{log}");
}

/// A server's seal changed after the agent's seal pinned it: each start
/// is refused by the server's own `sealc exec --expect` (nothing of the
/// server runs), and the report says so.
#[test]
#[cfg_attr(sealc_no_bwrap, ignore = "needs bubblewrap")]
fn a_changed_server_seal_starts_nothing() {
    if !bwrap_works() {
        return;
    }
    let tr = tree();
    let spec = shell_agent(&tr, 4, "");
    // Recompiled with another secret directory: another binding.
    let t = &tr.t;
    let out = sealc(t)
        .current_dir(t)
        .arg("compile")
        .arg(root().join("tests/codex/mcp-server.toml"))
        .args(["--out", "seals/server", "--force", "-q"])
        .arg(format!("--var=run={}", t.join("run").display()))
        .arg(format!("--var=secret={}", t.join("op").display()))
        .arg(format!("--var=out={}", t.join("out").display()))
        .arg(format!("--var=port={}", tr.host_port))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let (out, r) = run_shell(&tr, &spec, CALL);
    let what = format!("{}\n{r:#}", text(&out));
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("\"result\""),
        "{what}"
    );
    let s = &r["mcp"][0]["starts"][0];
    assert_eq!(s["exit_code"], 125, "{what}");
    assert_eq!(s["report"]["outcome"]["kind"], "could_not_start", "{what}");
    assert!(
        s["stderr_tail"].as_str().unwrap_or("").contains("binding"),
        "{what}"
    );
    assert_eq!(probe_log(t), "", "the server never ran");
}

/// Where the relay's port would be open to the host, the spec is refused.
#[test]
fn mcp_servers_need_the_namespaces_mode_and_a_closed_network() {
    let tr = tree();
    for (extra, says) in [
        ("[exec]\nisolation = \"landlock\"", "landlock"),
        ("", "open"),
    ] {
        let spec = shell_agent(&tr, 4, extra);
        let mut s = std::fs::read_to_string(&spec).unwrap();
        if says == "open" {
            s = s.replace("mode = \"none\"", "mode = \"open\"");
        }
        std::fs::write(&spec, s).unwrap();
        let out = sealc(&tr.t)
            .current_dir(&tr.t)
            .arg("compile")
            .arg(&spec)
            .args(["--out", "refused-seal"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("sealc::codex::mcp"), "{err}");
        assert!(err.contains(says), "{err}");
        assert!(!tr.t.join("refused-seal").exists(), "nothing written");
    }
}

/// What a killed `sealc exec` left of its servers (their reports'
/// directory, sockets) is swept by the next run, as its bridge is.
#[test]
#[cfg_attr(sealc_no_bwrap, ignore = "needs bubblewrap")]
fn a_killed_runs_server_reports_are_swept() {
    if !bwrap_works() {
        return;
    }
    if !rustix::process::geteuid().is_root() {
        return; // the parent is `$XDG_RUNTIME_DIR` or `/tmp` then; root's is fixed
    }
    let tr = tree();
    let spec = shell_agent(&tr, 1, "");
    let (out, _) = run_shell(&tr, &spec, "true");
    assert!(out.status.success(), "{}", text(&out));
    // No pid is this large (`pid_max` is at most 2^22).
    let stale = Path::new("/run/sealc/bridge/sealc-mcp-999999999-stale");
    std::fs::create_dir_all(stale).unwrap();
    std::fs::write(stale.join("probe-1.json"), "{}").unwrap();
    let (out, _) = run_shell(&tr, &spec, "true");
    assert!(out.status.success(), "{}", text(&out));
    assert!(!stale.exists(), "the stale reports' directory is swept");
}

/// Started by an unprivileged caller (no root anywhere): the bridge and the
/// servers' reports live in its own runtime directory or `/tmp`, and the
/// server's seal still holds against what the agent's command asks of it.
#[test]
#[cfg_attr(
    any(sealc_no_bwrap, sealc_not_root, sealc_cannot_become = "sealc-test"),
    ignore = "needs bubblewrap, root, setpriv and the user sealc-test"
)]
fn an_unprivileged_caller_starts_sealed_servers_too() {
    if !ready_as_root_with(&[USER]) || !bwrap_works() {
        return;
    }
    let mut tr = tree();
    let t = &tr.t.clone();
    let (uid, gid) = ids(USER);
    let chown = Command::new("chown")
        .arg("-R")
        .arg(format!("{uid}:{gid}"))
        .arg(t)
        .status()
        .unwrap();
    assert!(chown.success());
    let as_user = |args: &[&str]| {
        let mut argv = vec![env!("CARGO_BIN_EXE_sealc")];
        argv.extend_from_slice(args);
        let o = as_user(Some(USER), &argv)
            .current_dir(t)
            .env_clear()
            .env("HOME", t.join("op"))
            .env("PATH", "/usr/bin:/bin")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            text(&o),
        )
    };
    // The server's seal, compiled by the caller itself.
    let server = root().join("tests/codex/mcp-server.toml");
    let vars = [
        format!("--var=run={}", t.join("run").display()),
        format!("--var=secret={}", t.join("secret").display()),
        format!("--var=out={}", t.join("out").display()),
        format!("--var=port={}", tr.host_port),
    ];
    let mut args = vec![server.to_str().unwrap(), "--out", "seals/server", "--force"];
    args.extend(vars.iter().map(String::as_str));
    let (code, said, all) = as_user(&[&["compile"][..], &args].concat());
    assert_eq!(code, Some(0), "{all}");
    tr.binding = binding_of(said.as_bytes());
    let spec = shell_agent(&tr, 4, "");
    let spec = spec.to_str().unwrap();
    let (code, _, all) = as_user(&["compile", spec, "--out", "shell-seal", "-q"]);
    assert_eq!(code, Some(0), "{all}");
    let rep = t.join("user-report.json");
    let (code, said, all) = as_user(&[
        "exec",
        "shell-seal/seal.json",
        "--report",
        rep.to_str().unwrap(),
        "--",
        "/bin/sh",
        "-c",
        CALL,
    ]);
    let r = report(&rep);
    let what = format!("{all}\n{r:#}");
    assert_eq!(code, Some(0), "{what}");
    assert_eq!(said.matches("refused: ").count(), 2, "{what}");
    assert!(!said.contains("the server's secret"), "{what}");
    let s = &r["mcp"][0]["starts"][0];
    assert_eq!(s["exit_code"], 0, "{what}");
    assert_eq!(s["report"]["binding"], tr.binding.as_str(), "{what}");
    assert!(
        said.contains(&format!(r#"\"uid\": {uid}"#)),
        "the server ran as the caller: {what}"
    );
}
