//! `network.mode = "allowlist"` under the real Linux seal: `sealc exec`
//! runs its own proxy on the host side of the bridge, and clients inside
//! (curl over HTTP, `CONNECT` and SOCKS5, Python's `urllib` and
//! `http.client`) reach only what the spec
//! lists; `--report` records each connection with its decision; hostile,
//! slow and many clients neither crash the proxy nor outlive the command.
//!
//! Everything stays on loopback: the allowed names are mapped to local test
//! servers with the test-only `--resolve NAME=ADDR`, and the name that
//! resolves to a private address is refused before anything connects.
//!
//! Without bubblewrap, curl or `/usr/bin/python3` these tests are ignored,
//! unless `SEALC_REQUIRE_BWRAP=1`, under which they fail.

mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::text;

/// A value a client sends in a header and in a URL: it must never reach
/// the report or sealc's stderr.
const CREDENTIAL: &str = "HEADER-SECRET-5f1e";

/// How long one sealed run may take.
const RUN_DEADLINE: Duration = Duration::from_secs(120);

/// Are bubblewrap (able to make namespaces), curl and Python here? Fails
/// when not (`common::not_run`; under `SEALC_REQUIRE_BWRAP=1`, saying so).
fn prerequisites() -> bool {
    let bwrap = common::bwrap_sandboxes();
    let curl = Path::new("/usr/bin/curl").exists();
    let python = Path::new("/usr/bin/python3").exists();
    let ok = bwrap && curl && python;
    if !ok {
        assert!(
            std::env::var_os("SEALC_REQUIRE_BWRAP").is_none_or(|v| v != "1"),
            "SEALC_REQUIRE_BWRAP=1 but bubblewrap ({bwrap}), /usr/bin/curl ({curl}) or /usr/bin/python3 ({python}) is missing"
        );
        common::not_run("bubblewrap, /usr/bin/curl or /usr/bin/python3 is missing here");
    }
    ok
}

/// Connections a test server has open now, and the most it had at once.
#[derive(Default)]
struct Count {
    open: AtomicUsize,
    most: AtomicUsize,
    total: AtomicUsize,
}

impl Count {
    fn enter(&self) {
        let n = self.open.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(n, Ordering::SeqCst);
        self.total.fetch_add(1, Ordering::SeqCst);
    }
    fn leave(&self) {
        self.open.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A loopback server; each connection is handled by `f` on its own thread.
fn server(f: fn(TcpStream)) -> (u16, Arc<Count>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let count = Arc::new(Count::default());
    let c = count.clone();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            let c = c.clone();
            c.enter();
            std::thread::spawn(move || {
                f(s);
                c.leave();
            });
        }
    });
    (port, count)
}

/// Answers one HTTP request with its request line and `Host`.
fn http(mut s: TcpStream) {
    let _ = s.set_read_timeout(Some(Duration::from_secs(20)));
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        match s.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    let head = String::from_utf8_lossy(&buf).into_owned();
    let line = head.lines().next().unwrap_or_default().to_string();
    let host = head
        .lines()
        .find_map(|l| l.strip_prefix("Host: "))
        .unwrap_or_default()
        .to_string();
    let body = format!("HELLO {line} host={host}\n");
    let _ = write!(
        s,
        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}

/// Echoes until the other side is done.
fn echo(mut s: TcpStream) {
    let mut buf = [0u8; 4096];
    while let Ok(n) = s.read(&mut buf) {
        if n == 0 || s.write_all(&buf[..n]).is_err() {
            return;
        }
    }
}

/// A service that must never be reached.
fn never(mut s: TcpStream) {
    let _ = s.write_all(b"NOT-ALLOWED\n");
}

/// A compiled allowlist seal over a private layout, and its servers.
struct Lab {
    _tmp: tempfile::TempDir,
    t: PathBuf,
    /// The allowed HTTP server's port.
    web: u16,
    /// The allowed echo server's port.
    echo: u16,
    echo_count: Arc<Count>,
    /// A server on a port the seal does not list.
    other: u16,
    other_count: Arc<Count>,
}

impl Lab {
    fn new() -> Lab {
        let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let t = tmp.path().canonicalize().unwrap();
        // Started by root, the agent runs as `nobody`: it must reach the lab.
        std::fs::set_permissions(&t, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        std::fs::create_dir_all(t.join("ws")).unwrap();
        let (web, _) = server(http);
        let (echo_port, echo_count) = server(echo);
        let (other, other_count) = server(never);
        let spec = format!(
            r#"version = 1
name = "allowlist-lab"
[target]
platform = "linux"
[vars]
ws = {{ required = true }}
[filesystem]
write = ["${{ws}}"]
[network]
mode = "allowlist"
hosts = ["allowed.test", "private.test", "*.suffix.test", "192.0.2.7"]
ports = [{web}, {echo_port}]
allow_ranges = ["127.0.0.1/32"]
[env]
pass = ["PATH"]
set = {{ HOME = "${{ws}}" }}
"#
        );
        std::fs::write(t.join("spec.toml"), spec).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_sealc"))
            .current_dir(&t)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .args(["compile", "spec.toml", "--out", "seal"])
            .arg(format!("--var=ws={}", t.join("ws").display()))
            .output()
            .unwrap();
        assert!(out.status.success(), "compile failed:\n{}", text(&out));
        Lab {
            _tmp: tmp,
            t,
            web,
            echo: echo_port,
            echo_count,
            other,
            other_count,
        }
    }

    fn report(&self) -> PathBuf {
        self.t.join("run.json")
    }

    /// `sealc exec --report` with the test resolver, running `argv`.
    fn exec(&self, argv: &[&str]) -> Output {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_sealc"));
        cmd.current_dir(self.t.join("ws"))
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .arg("exec")
            .arg(self.t.join("seal/seal.json"))
            .arg("--report")
            .arg(self.report())
            .args([
                "--resolve=allowed.test=127.0.0.1",
                "--resolve=x.suffix.test=127.0.0.1",
                "--resolve=private.test=10.0.0.1",
            ])
            .arg("--")
            .args(argv)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let child = cmd.spawn().unwrap();
        // A deadline: a hung run fails the test instead of hanging the suite.
        let pid = child.id();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(child.wait_with_output());
        });
        match rx.recv_timeout(RUN_DEADLINE) {
            Ok(out) => out.unwrap(),
            Err(_) => {
                let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
                let out = rx.recv().unwrap().unwrap();
                panic!(
                    "sealc exec still ran after {RUN_DEADLINE:?}:\n{}",
                    text(&out)
                );
            }
        }
    }

    fn read_report(&self) -> serde_json::Value {
        let bytes = std::fs::read(self.report()).expect("the report is written");
        serde_json::from_slice(&bytes).unwrap()
    }

    fn binding(&self) -> String {
        let rec: serde_json::Value =
            serde_json::from_slice(&std::fs::read(self.t.join("seal/seal.json")).unwrap()).unwrap();
        rec["binding"].as_str().unwrap().to_string()
    }
}

/// The lines of `out` that start with `tag `, without it.
fn tagged<'a>(out: &'a str, tag: &str) -> Vec<&'a str> {
    out.lines()
        .filter_map(|l| l.strip_prefix(tag).and_then(|r| r.strip_prefix(' ')))
        .collect()
}

const CLIENTS_PY: &str = r#"
import http.client, os, sys, urllib.error, urllib.request
web = int(sys.argv[1])
print("py-plain", urllib.request.urlopen(f"http://allowed.test:{web}/py", timeout=10).read().decode().strip())
try:
    urllib.request.urlopen(f"http://evil.test:{web}/py", timeout=10)
    print("py-evil reached")
except urllib.error.HTTPError as e:
    print("py-evil", e.code, e.read().decode().strip())
proxy = os.environ["HTTPS_PROXY"].split("//")[1]
host, port = proxy.rsplit(":", 1)
c = http.client.HTTPConnection(host, int(port), timeout=10)
c.set_tunnel("allowed.test", web)
c.request("GET", "/py-tunnel")
r = c.getresponse()
print("py-tunnel", r.status, r.read().decode().strip())
c = http.client.HTTPConnection(host, int(port), timeout=10)
c.set_tunnel("private.test", web)
try:
    c.request("GET", "/")
    print("py-private reached")
except OSError as e:
    print("py-private", e)
"#;

#[test]
#[cfg_attr(
    any(sealc_no_bwrap, sealc_no_tool = "curl", sealc_no_tool = "python3"),
    ignore = "needs bubblewrap, /usr/bin/curl and /usr/bin/python3"
)]
fn clients_inside_reach_only_the_allowlist_and_the_report_says_so() {
    if !prerequisites() {
        return;
    }
    let lab = Lab::new();
    let (web, other) = (lab.web, lab.other);
    let curl = "curl -sS --max-time 10";
    let script = format!(
        r#"
echo "plain $({curl} -H 'X-Api-Key: {CREDENTIAL}' http://allowed.test:{web}/plain)"
echo "tunnel $({curl} -p http://allowed.test:{web}/tunnel)"
echo "suffix $({curl} http://X.Suffix.Test:{web}/suffix)"
echo "creds $({curl} http://user:{CREDENTIAL}@allowed.test:{web}/creds)"
echo "evil $({curl} -w 'status=%{{http_code}}' http://evil.test:{web}/ | tr '\n' ' ')"
{curl} -p http://evil.test:{web}/ 2>/dev/null; echo "evil-tunnel exit=$?"
echo "apex $({curl} -w 'status=%{{http_code}}' http://suffix.test:{web}/ | tr '\n' ' ')"
echo "port $({curl} -w 'status=%{{http_code}}' http://allowed.test:{other}/ | tr '\n' ' ')"
echo "literal $({curl} -w 'status=%{{http_code}}' http://127.0.0.1:{web}/ | tr '\n' ' ')"
echo "private $({curl} -w 'status=%{{http_code}}' http://private.test:{web}/ | tr '\n' ' ')"
P=${{HTTPS_PROXY#http://}}
echo "socks $({curl} --socks5-hostname $P http://allowed.test:{web}/socks)"
{curl} --socks5-hostname $P http://evil.test:{web}/ 2>/dev/null; echo "socks-evil exit=$?"
/usr/bin/python3 -c '{CLIENTS_PY}' {web}
echo "lower $(env -u ALL_PROXY -u all_proxy -u HTTP_PROXY {curl} http://allowed.test:{web}/lower)"
echo "proxy-vars $(for v in http_proxy https_proxy all_proxy; do [ "${{!v}}" = "$HTTPS_PROXY" ] && echo -n "$v "; done)[${{NO_PROXY-unset}}][${{no_proxy-unset}}]"
{curl} --noproxy '*' http://127.0.0.1:{web}/direct >/dev/null 2>&1; echo "direct exit=$?"
exit 7
"#
    );
    let out = lab.exec(&["/bin/bash", "-c", &script]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let all = text(&out);
    // The command's status passes through; the report is written anyway.
    assert_eq!(out.status.code(), Some(7), "{all}");
    let one = |tag: &str| -> String {
        let v = tagged(&stdout, tag);
        assert_eq!(v.len(), 1, "{tag}: {all}");
        v[0].to_string()
    };
    // Allowed: plain HTTP (absolute form, sent on in origin form with the
    // target's Host), a CONNECT tunnel, a name below a `*.` entry.
    assert_eq!(
        one("plain"),
        format!("HELLO GET /plain HTTP/1.1 host=allowed.test:{web}")
    );
    assert_eq!(
        one("tunnel"),
        format!("HELLO GET /tunnel HTTP/1.1 host=allowed.test:{web}")
    );
    assert_eq!(
        one("suffix"),
        format!("HELLO GET /suffix HTTP/1.1 host=x.suffix.test:{web}")
    );
    assert!(one("creds").starts_with("HELLO GET /creds"), "{all}");
    // Refused, each with a 403 and a one-line reason.
    assert_eq!(
        one("evil"),
        "sealc: evil.test is not in `network.hosts` status=403"
    );
    assert_eq!(one("evil-tunnel"), "exit=56", "curl: CONNECT refused");
    assert_eq!(
        one("apex"),
        "sealc: suffix.test is not in `network.hosts` status=403"
    );
    assert_eq!(
        one("port"),
        format!("sealc: port {other} is not in `network.ports` status=403")
    );
    assert_eq!(
        one("literal"),
        "sealc: 127.0.0.1 is an IP literal that `network.hosts` does not list status=403"
    );
    assert_eq!(
        one("private"),
        "sealc: private.test resolves to 10.0.0.1, a private address that `network.allow_ranges` does not cover status=403"
    );
    assert_eq!(
        one("socks"),
        format!("HELLO GET /socks HTTP/1.1 host=allowed.test:{web}")
    );
    assert_ne!(one("socks-evil"), "exit=0", "SOCKS5 to an unlisted host");
    assert_eq!(
        one("py-plain"),
        format!("HELLO GET /py HTTP/1.1 host=allowed.test:{web}")
    );
    assert_eq!(
        one("py-evil"),
        "403 sealc: evil.test is not in `network.hosts`"
    );
    assert_eq!(
        one("py-tunnel"),
        format!("200 HELLO GET /py-tunnel HTTP/1.1 host=allowed.test:{web}")
    );
    assert_eq!(one("py-private"), "Tunnel connection failed: 403 Forbidden");
    // curl takes a proxy for `http://` from `http_proxy` (or `all_proxy`)
    // in lowercase only: with every other form gone it still goes through.
    assert_eq!(
        one("lower"),
        format!("HELLO GET /lower HTTP/1.1 host=allowed.test:{web}")
    );
    // Each variable also in lowercase; the bypass lists set, and empty.
    assert_eq!(one("proxy-vars"), "http_proxy https_proxy all_proxy [][]");
    // Past the proxy, straight to the host's server: the sandbox's own
    // loopback has nothing there (curl: could not connect), and the report
    // lists nothing of it (docs/network.md: what the entries cannot list;
    // the list below is exact).
    assert_eq!(one("direct"), "exit=7", "{all}");
    assert_eq!(
        lab.other_count.total.load(Ordering::SeqCst),
        0,
        "the unlisted port was reached"
    );
    // Each refusal is told on sealc's stderr, in one line.
    for line in [
        format!("sealc: proxy refused http evil.test:{web}: evil.test is not in `network.hosts`"),
        format!("sealc: proxy refused connect evil.test:{web}: evil.test is not in `network.hosts`"),
        format!("sealc: proxy refused http allowed.test:{other}: port {other} is not in `network.ports`"),
        format!("sealc: proxy refused http 127.0.0.1:{web}: 127.0.0.1 is an IP literal that `network.hosts` does not list"),
        format!("sealc: proxy refused connect private.test:{web}: private.test resolves to 10.0.0.1, a private address that `network.allow_ranges` does not cover"),
        format!("sealc: proxy refused socks5 evil.test:{web}: evil.test is not in `network.hosts`"),
    ] {
        assert!(stderr.lines().any(|l| l == line), "no `{line}` in:\n{all}");
    }
    // The report: bound to the seal, one entry per connection, in order.
    let report = lab.read_report();
    let raw = std::fs::read_to_string(lab.report()).unwrap();
    assert_eq!(report["schema"], "sealc.run/v1");
    assert_eq!(report["binding"], lab.binding());
    // The network log and stderr never hold a header value or a URL's
    // credentials. (The report's `argv` is the caller's own command line,
    // which here carries them, byte for byte.)
    let network = report["network"].to_string();
    assert!(
        !network.contains(CREDENTIAL) && !stderr.contains(CREDENTIAL),
        "a credential was logged"
    );
    assert!(
        !network.contains("X-Api-Key") && !network.contains("/plain"),
        "{raw}"
    );
    let entries: Vec<(String, String, String, String)> = report["network"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let s = |k: &str| match &e[k] {
                serde_json::Value::String(s) => s.clone(),
                serde_json::Value::Number(n) => n.to_string(),
                _ => "-".into(),
            };
            (s("protocol"), s("host"), s("port"), s("decision"))
        })
        .collect();
    let w = web.to_string();
    let o = lab.other.to_string();
    let want: Vec<(&str, &str, &str, &str)> = vec![
        ("http", "allowed.test", &w, "allowed"),
        ("connect", "allowed.test", &w, "allowed"),
        ("http", "x.suffix.test", &w, "allowed"),
        ("http", "allowed.test", &w, "allowed"),
        ("http", "evil.test", &w, "refused"),
        ("connect", "evil.test", &w, "refused"),
        ("http", "suffix.test", &w, "refused"),
        ("http", "allowed.test", &o, "refused"),
        ("http", "127.0.0.1", &w, "refused"),
        ("http", "private.test", &w, "refused"),
        ("socks5", "allowed.test", &w, "allowed"),
        ("socks5", "evil.test", &w, "refused"),
        ("http", "allowed.test", &w, "allowed"),
        ("http", "evil.test", &w, "refused"),
        ("connect", "allowed.test", &w, "allowed"),
        ("connect", "private.test", &w, "refused"),
        ("http", "allowed.test", &w, "allowed"),
    ];
    let got: Vec<(&str, &str, &str, &str)> = entries
        .iter()
        .map(|(a, b, c, d)| (a.as_str(), b.as_str(), c.as_str(), d.as_str()))
        .collect();
    assert_eq!(got, want, "{raw}");
    for e in report["network"].as_array().unwrap() {
        let allowed = e["decision"] == "allowed";
        assert_eq!(
            e["bytes_up"].as_u64().unwrap() > 0,
            allowed,
            "bytes sent on only when allowed: {e}"
        );
        assert_eq!(e["bytes_down"].as_u64().unwrap() > 0, allowed, "{e}");
        assert!(e["duration_ms"].as_f64().unwrap() >= 0.0);
        let time = e["time"].as_str().unwrap();
        assert!(
            time.len() == 24 && time.ends_with('Z') && time.as_bytes()[10] == b'T',
            "{time}"
        );
        match e["host"].as_str().unwrap() {
            "allowed.test" | "x.suffix.test" if allowed => {
                assert_eq!(e["address"], format!("127.0.0.1:{web}"))
            }
            "private.test" => assert_eq!(e["address"], format!("10.0.0.1:{web}")),
            _ => assert!(e["address"].is_null(), "{e}"),
        }
        assert_eq!(e["reason"].is_null(), allowed, "{e}");
    }
    assert_eq!(
        report["resolve_overrides"],
        serde_json::json!([
            "allowed.test=127.0.0.1",
            "private.test=10.0.0.1",
            "x.suffix.test=127.0.0.1"
        ])
    );
}

const STRESS_PY: &str = r#"
import os, socket, sys, threading, time
web, echo = int(sys.argv[1]), int(sys.argv[2])
host, port = os.environ["HTTPS_PROXY"].split("//")[1].rsplit(":", 1)
PROXY = (host, int(port))

def first_line(data):
    return data.split(b"\r\n", 1)[0].decode(errors="replace")

def talk(data):
    s = socket.create_connection(PROXY, timeout=15)
    try:
        s.sendall(data)
    except OSError as e:
        pass
    out = b""
    try:
        while True:
            d = s.recv(65536)
            if not d:
                break
            out += d
    except OSError as e:
        out += b"<" + str(e).encode() + b">"
    s.close()
    return first_line(out)

def tunnel(timeout=15):
    s = socket.create_connection(PROXY, timeout=timeout)
    s.sendall(b"CONNECT allowed.test:%d HTTP/1.1\r\n\r\n" % echo)
    head = b""
    while b"\r\n\r\n" not in head:
        d = s.recv(1)
        if not d:
            break
        head += d
    return s, first_line(head)

def ping(s):
    s.sendall(b"ping")
    got = b""
    while len(got) < 4:
        d = s.recv(4 - len(got))
        if not d:
            break
        got += d
    return got == b"ping"

print("hostile-line", talk(b"\x00\xff\xfe GARBAGE \x01\r\n\r\n"))
print("origin-form", talk(b"GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n"))
print("long-line", talk(b"GET http://allowed.test/" + b"a" * 65536 + b" HTTP/1.1\r\n\r\n"))
print("long-header", talk(b"CONNECT allowed.test:%d HTTP/1.1\r\nX-Long: " % echo + b"x" * 20000 + b"\r\n\r\n"))
print("many-headers", talk(b"CONNECT allowed.test:%d HTTP/1.1\r\n" % echo + b"".join(b"H%d: v\r\n" % i for i in range(200)) + b"\r\n"))
print("http2", talk(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"))
print("bad-port", talk(b"CONNECT allowed.test:99999 HTTP/1.1\r\n\r\n"))
s, head = tunnel()
print("after-hostile", head, ping(s))
s.close()

# Slow-loris: 20 clients that never finish their head, one byte a second.
slow = []
for i in range(20):
    c = socket.create_connection(PROXY, timeout=30)
    c.sendall(b"CONNECT allowed.test:%d HTTP/1.1\r\nX: " % echo)
    slow.append(c)
t0 = time.time()
stop = False
def dribble():
    while not stop:
        for c in slow:
            try:
                c.send(b"x")
            except OSError:
                pass
        time.sleep(1)
threading.Thread(target=dribble, daemon=True).start()
s, head = tunnel(timeout=5)
print("during-slowloris", head, ping(s), time.time() - t0 < 5)
s.close()
answers = set()
for c in slow:
    c.settimeout(25)
    out = b""
    try:
        while True:
            d = c.recv(65536)
            if not d:
                break
            out += d
    except OSError as e:
        out += b"<" + str(e).encode() + b">"
    answers.add(first_line(out))
stop = True
print("slowloris", sorted(answers), 8 <= time.time() - t0 <= 20)

# 1,000 tunnels at once, each used, all left open when the command ends.
tunnels, ok = [], 0
for i in range(1000):
    s, head = tunnel(timeout=30)
    tunnels.append(s)
    ok += head.startswith("HTTP/1.1 200")
echoed = sum(ping(s) for s in tunnels)
print("tunnels", ok, echoed)
s, head = tunnel()
print("after-flood", head, ping(s))
sys.stdout.flush()
os._exit(0)
"#;

#[test]
#[cfg_attr(
    any(sealc_no_bwrap, sealc_no_tool = "curl", sealc_no_tool = "python3"),
    ignore = "needs bubblewrap, /usr/bin/curl and /usr/bin/python3"
)]
fn hostile_slow_and_many_clients_neither_crash_the_proxy_nor_outlive_the_command() {
    if !prerequisites() {
        return;
    }
    let lab = Lab::new();
    let web = lab.web.to_string();
    let echo = lab.echo.to_string();
    let started = Instant::now();
    let out = lab.exec(&["/usr/bin/python3", "-c", STRESS_PY, &web, &echo]);
    let took = started.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    let one = |tag: &str| -> String {
        let v = tagged(&stdout, tag);
        assert_eq!(v.len(), 1, "{tag}: {all}");
        v[0].to_string()
    };
    assert_eq!(one("hostile-line"), "HTTP/1.1 400 Bad Request");
    assert_eq!(one("origin-form"), "HTTP/1.1 400 Bad Request");
    assert_eq!(
        one("long-line"),
        "HTTP/1.1 431 Request Header Fields Too Large"
    );
    assert_eq!(
        one("long-header"),
        "HTTP/1.1 431 Request Header Fields Too Large"
    );
    assert_eq!(
        one("many-headers"),
        "HTTP/1.1 431 Request Header Fields Too Large"
    );
    assert_eq!(one("http2"), "HTTP/1.1 505 HTTP Version Not Supported");
    assert_eq!(one("bad-port"), "HTTP/1.1 400 Bad Request");
    assert_eq!(
        one("after-hostile"),
        "HTTP/1.1 200 Connection established True"
    );
    assert_eq!(
        one("during-slowloris"),
        "HTTP/1.1 200 Connection established True True",
        "a slow client holds nobody else up"
    );
    assert_eq!(
        one("slowloris"),
        "['HTTP/1.1 408 Request Timeout'] True",
        "each slow client is cut at the head deadline"
    );
    assert_eq!(one("tunnels"), "1000 1000");
    assert_eq!(
        one("after-flood"),
        "HTTP/1.1 200 Connection established True"
    );
    // Every tunnel was open at once, upstream too...
    assert!(
        lab.echo_count.most.load(Ordering::SeqCst) >= 1000,
        "at most {} at once",
        lab.echo_count.most.load(Ordering::SeqCst)
    );
    // ...and none outlives the command: the command left them all open.
    let t0 = Instant::now();
    while lab.echo_count.open.load(Ordering::SeqCst) > 0 && t0.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        lab.echo_count.open.load(Ordering::SeqCst),
        0,
        "upstream connections left open after the command ended"
    );
    assert!(took < Duration::from_secs(60), "{took:?}");
    // The report lists them all: the hostile ones refused with their reason.
    let report = lab.read_report();
    let net = report["network"].as_array().unwrap();
    let count = |decision: &str| net.iter().filter(|e| e["decision"] == decision).count();
    assert_eq!(count("allowed"), 1 + 1 + 1000 + 1, "{}", net.len());
    assert_eq!(count("refused"), 7 + 20);
    let slow: Vec<&serde_json::Value> = net
        .iter()
        .filter(|e| e["reason"] == "no complete request head within 10s")
        .collect();
    assert_eq!(slow.len(), 20);
    assert!(slow
        .iter()
        .all(|e| e["host"].is_null() && e["protocol"] == "unknown"));
    assert!(
        net.iter()
            .filter(|e| e["decision"] == "allowed")
            .all(|e| e["bytes_up"] == 4 && e["bytes_down"] == 4),
        "each tunnel carried its ping"
    );
}

#[test]
fn a_report_that_cannot_be_written_starts_nothing() {
    let t = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_sealc"))
        .current_dir(t.path())
        .env_clear()
        .args([
            "exec",
            "seal.json",
            "--report",
            "no/such/dir/run.json",
            "--",
            "true",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(125), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("cannot write the run report"),
        "{}",
        text(&out)
    );
}

#[test]
fn a_record_that_does_not_verify_gets_a_report_without_a_binding() {
    let t = tempfile::tempdir().unwrap();
    std::fs::write(t.path().join("seal.json"), "{}").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_sealc"))
        .current_dir(t.path())
        .env_clear()
        .args(["exec", "seal.json", "--report", "run.json", "--", "true"])
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(0), "{}", text(&out));
    let r: serde_json::Value =
        serde_json::from_slice(&std::fs::read(t.path().join("run.json")).unwrap()).unwrap();
    assert_eq!(r["schema"], "sealc.run/v1");
    assert!(r["binding"].is_null());
    assert_eq!(r["network"], serde_json::json!([]));
}

#[test]
#[cfg_attr(
    any(sealc_no_bwrap, sealc_no_tool = "curl", sealc_no_tool = "python3"),
    ignore = "needs bubblewrap, /usr/bin/curl and /usr/bin/python3"
)]
fn dry_run_shows_the_allowlist_the_proxy_will_enforce() {
    if !prerequisites() {
        return;
    }
    let lab = Lab::new();
    let out = Command::new(env!("CARGO_BIN_EXE_sealc"))
        .current_dir(lab.t.join("ws"))
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .args(["exec", "--dry-run"])
        .arg(lab.t.join("seal/seal.json"))
        .args(["--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut ports = [lab.web, lab.echo];
    ports.sort();
    assert_eq!(
        plan["layers"]["network"],
        serde_json::json!({
            "mode": "allowlist",
            "enforced_by": "sealc exec: its own proxy, the only way out of the seal",
            "proxy": "127.0.0.1:3128",
            "allowlist": {
                "hosts": ["allowed.test", "private.test"],
                "suffixes": ["*.suffix.test"],
                "ip_literals": ["192.0.2.7"],
                "ports": ports,
                "allow_ranges": ["127.0.0.1/32"],
            },
            "limits": {
                "head_timeout_s": 10.0,
                "idle_timeout_s": 300.0,
                "max_connections": 1024,
                "max_head_bytes": 16384,
            },
        })
    );
    // Nothing ran: no report, no connection.
    assert!(!lab.report().exists());
    assert_eq!(lab.echo_count.total.load(Ordering::SeqCst), 0);
}
