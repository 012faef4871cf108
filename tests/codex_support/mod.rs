//! What the real-Codex tests share: where the pinned Codex releases are, and
//! a small local stand-in for the OpenAI Responses API.
//!
//! The releases are installed from npm by `.ci/install-codex` into a
//! directory of this checkout (`.codex-cli/<version>/`), or wherever
//! `SEALC_CODEX_DIR` says. A test whose release is not there is ignored
//! (build.rs finds it missing when the tests are built), except under CI
//! (`CI` set) or `SEALC_REQUIRE_CODEX=1`; one that runs without it fails.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// Must a missing Codex fail the test?
pub fn required() -> bool {
    std::env::var_os("CI").is_some_and(|v| !v.is_empty())
        || std::env::var_os("SEALC_REQUIRE_CODEX").is_some_and(|v| v == "1")
}

/// Where the releases are installed.
pub fn codex_dir() -> PathBuf {
    match std::env::var_os("SEALC_CODEX_DIR") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => Path::new(env!("CARGO_MANIFEST_DIR")).join(".codex-cli"),
    }
}

/// The native Codex binary of `version` (the npm package's platform
/// binary, so that the launcher's digest is the agent's own), if installed.
pub fn find(version: &str) -> Option<PathBuf> {
    let scope = codex_dir().join(version).join("node_modules/@openai");
    for pkg in std::fs::read_dir(&scope).ok()?.flatten() {
        let name = pkg.file_name().to_string_lossy().into_owned();
        if !name.starts_with("codex-") {
            continue;
        }
        for triple in std::fs::read_dir(pkg.path().join("vendor")).ok()?.flatten() {
            let bin = triple.path().join("bin/codex");
            if bin.is_file() {
                return Some(bin);
            }
        }
    }
    None
}

/// The binary of each release; fails when one is missing (see
/// [`not_installed`]), so never `None`.
pub fn releases(versions: &[&str]) -> Option<Vec<(String, PathBuf)>> {
    let mut out = Vec::new();
    for v in versions {
        match find(v) {
            Some(bin) => out.push((v.to_string(), bin)),
            None => {
                let how = format!(
                    "Codex {v} is not installed under {} (run `bash .ci/install-codex`, or set SEALC_CODEX_DIR)",
                    codex_dir().display()
                );
                not_installed(&how);
            }
        }
    }
    Some(out)
}

/// A test that needs what is not installed fails: under CI or
/// `SEALC_REQUIRE_CODEX=1` saying so, elsewhere saying why it ran at all
/// (build.rs marks it ignored when it finds the release missing).
pub fn not_installed(how: &str) -> ! {
    assert!(!required(), "{how}; CI needs it");
    panic!(
        "not run: {how}\n(the test was run with --ignored or --include-ignored, or this was there when build.rs probed at build time: `touch build.rs` to probe again)"
    )
}

/// The releases the sealed runs use: the oldest tested one and the newest.
pub fn sealed_run_versions() -> Vec<&'static str> {
    use sealc::backend::codex::TESTED;
    let oldest = TESTED[0];
    let newest = *TESTED.last().unwrap();
    let mut v = vec![oldest, newest];
    v.dedup();
    v
}

/// One request the stand-in received.
#[derive(Clone, Debug)]
pub struct Request {
    pub method: String,
    pub target: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
    /// The outputs of the tool calls this request carries back, by call id.
    pub fn tool_outputs(&self) -> Vec<(String, String)> {
        self.body["input"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|i| i["type"] == "function_call_output")
            .map(|i| {
                let out = match &i["output"] {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                (i["call_id"].as_str().unwrap_or_default().to_string(), out)
            })
            .collect()
    }
}

/// A stand-in for the Responses API on a loopback port: each `POST
/// .../responses` is answered with a streamed (SSE) response that makes the
/// next scripted shell call, or, once every call's output has come back,
/// a final message. Every request is recorded. It stops when dropped, after
/// `LIFETIME`, or after `MAX_CONNECTIONS` connections.
pub struct StandIn {
    pub port: u16,
    requests: Arc<Mutex<Vec<Request>>>,
    stop: Arc<AtomicBool>,
}

const LIFETIME: Duration = Duration::from_secs(300);
const MAX_CONNECTIONS: usize = 256;
/// The final message the stand-in sends.
pub const FINAL: &str = "sealed run: all done";

impl StandIn {
    pub fn start(script: Vec<String>) -> StandIn {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (r, s) = (requests.clone(), stop.clone());
        let script = Arc::new(script);
        std::thread::spawn(move || {
            let until = Instant::now() + LIFETIME;
            let mut served = 0;
            while !s.load(Ordering::Relaxed) && Instant::now() < until && served < MAX_CONNECTIONS {
                match listener.accept() {
                    Ok((conn, _)) => {
                        served += 1;
                        let (r, script) = (r.clone(), script.clone());
                        std::thread::spawn(move || serve(conn, &r, &script));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        StandIn {
            port,
            requests,
            stop,
        }
    }

    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }
}

impl Drop for StandIn {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn serve(conn: TcpStream, log: &Mutex<Vec<Request>>, script: &[String]) {
    let _ = conn.set_nonblocking(false);
    let _ = conn.set_read_timeout(Some(Duration::from_secs(60)));
    let mut writer = match conn.try_clone() {
        Ok(w) => w,
        Err(_) => return,
    };
    let mut reader = BufReader::new(conn);
    // Keep-alive: one request after another until the client closes.
    for _ in 0..64 {
        let Some(req) = read_request(&mut reader) else {
            return;
        };
        let reply = if req.method == "POST" && req.target.ends_with("/responses") {
            let body = sse(&respond(&req.body, script));
            log.lock().unwrap().push(req);
            format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            )
        } else {
            log.lock().unwrap().push(req);
            "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n".to_string()
        };
        if writer.write_all(reply.as_bytes()).is_err() {
            return;
        }
    }
}

fn read_request(r: &mut BufReader<TcpStream>) -> Option<Request> {
    let mut line = String::new();
    if r.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_string();
    // Through a proxy the target is absolute (`http://host:port/v1/...`).
    let target = parts.next()?.to_string();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        r.read_line(&mut h).ok()?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        let (k, v) = h.split_once(':')?;
        headers.push((k.trim().to_string(), v.trim().to_string()));
    }
    let get = |name: &str| {
        headers
            .iter()
            .find(|(k, _): &&(String, String)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
    };
    let mut body = Vec::new();
    if let Some(n) = get("content-length").and_then(|n| n.parse::<usize>().ok()) {
        body.resize(n, 0);
        r.read_exact(&mut body).ok()?;
    } else if get("transfer-encoding").is_some_and(|t| t.eq_ignore_ascii_case("chunked")) {
        loop {
            let mut size = String::new();
            r.read_line(&mut size).ok()?;
            let n = usize::from_str_radix(size.trim().split(';').next()?, 16).ok()?;
            let mut chunk = vec![0; n + 2];
            r.read_exact(&mut chunk).ok()?;
            if n == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..n]);
        }
    }
    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    Some(Request {
        method,
        target,
        headers,
        body,
    })
}

/// The events that answer one request: the next scripted shell call, in the
/// form of the shell tool this Codex offers, or the final message.
fn respond(body: &Value, script: &[String]) -> Vec<Value> {
    let done = body["input"].as_array().map_or(0, |a| {
        a.iter()
            .filter(|i| i["type"] == "function_call_output")
            .count()
    });
    let id = format!("resp_{done}");
    let tools: Vec<&str> = body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str())
        .collect();
    let item = match script.get(done) {
        // `tool:NAME`: a call of the tool NAME (an MCP server's), no
        // arguments; `tool:NAMESPACE/NAME`, of NAME in a namespace tool
        // (as Codex offers an MCP server's tools: `mcp__SERVER`).
        Some(cmd) if cmd.starts_with("tool:") => {
            let tool = &cmd["tool:".len()..];
            let mut call = json!({
                "type": "function_call",
                "id": format!("fc_{done}"),
                "call_id": format!("call_{done}"),
                "name": tool,
                "arguments": "{}",
            });
            if let Some((namespace, name)) = tool.split_once('/') {
                call["namespace"] = json!(namespace);
                call["name"] = json!(name);
            }
            call
        }
        Some(cmd) => {
            let (name, args) = if tools.contains(&"exec_command") {
                ("exec_command", json!({ "cmd": cmd, "yield_time_ms": 5000 }))
            } else if tools.contains(&"shell_command") {
                ("shell_command", json!({ "command": cmd }))
            } else {
                ("shell", json!({ "command": ["bash", "-c", cmd] }))
            };
            json!({
                "type": "function_call",
                "id": format!("fc_{done}"),
                "call_id": format!("call_{done}"),
                "name": name,
                "arguments": args.to_string(),
            })
        }
        None => json!({
            "type": "message",
            "role": "assistant",
            "id": "msg_final",
            "content": [{ "type": "output_text", "text": FINAL }],
        }),
    };
    vec![
        json!({ "type": "response.created", "response": { "id": id } }),
        json!({ "type": "response.output_item.done", "output_index": 0, "item": item }),
        json!({
            "type": "response.completed",
            "response": {
                "id": id,
                "usage": {
                    "input_tokens": 1, "input_tokens_details": null,
                    "output_tokens": 1, "output_tokens_details": null,
                    "total_tokens": 2
                }
            }
        }),
    ]
}

fn sse(events: &[Value]) -> String {
    events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap_or("")))
        .collect()
}

/// The lines of Codex output that say a config key is deprecated, ignored,
/// removed or unknown.
pub fn config_complaints(output: &str) -> Vec<String> {
    const SAYS: &[&str] = &[
        "deprecated",
        "ignoring",
        "ignored",
        "unknown configuration",
        "unknown field",
        "unknown feature",
        "unknown variant",
        "unknown key",
        "has been removed",
        "was removed",
        "is removed",
    ];
    output
        .lines()
        .filter(|l| {
            let l = l.to_ascii_lowercase();
            SAYS.iter().any(|w| l.contains(w))
        })
        .map(str::to_string)
        .collect()
}

/// The built sealc as an operator runs it in a Codex test's lab `t`: an
/// empty environment but `HOME` (`t/op`, the operator's home) and `PATH`,
/// stdin closed.
pub fn operator_sealc(t: &std::path::Path) -> std::process::Command {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_sealc"));
    c.env_clear()
        .env("HOME", t.join("op"))
        .env("PATH", "/usr/bin:/bin")
        .stdin(std::process::Stdio::null());
    c
}
