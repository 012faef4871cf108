//! Sealed MCP servers (`codex.mcp_servers`): the host side. For each
//! server, a unix socket in the run's private bridge directory; the init
//! inside forwards the server's loopback port to it. Each connection starts
//! the server as a `sealc exec` of its own seal, pinned by its binding
//! (`--expect`), with the connection as its stdin and stdout: the server
//! runs with its seal's rights, never the agent's, and the agent reaches
//! only the servers the verified seal lists, each at most `starts` times.
//! What each start did is its own run report, kept in a private directory
//! and folded into this run's report.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::Ids;
use crate::hostfs::Dir;
use crate::ir::McpIr;

/// How long servers get to end by themselves once the agent's sandbox is
/// gone (their stdin is closed), and then after `SIGTERM`.
const END_GRACE: Duration = Duration::from_secs(3);
/// The most bytes of a server run's report read back.
const REPORT_MAX: u64 = 4 << 20;
/// The most bytes of sealc's and the server's stderr kept per start.
const STDERR_TAIL: usize = 2048;

/// The socket of server `name` in the bridge directory.
pub fn socket_name(name: &str) -> String {
    format!("mcp-{name}.sock")
}

/// One server in the run report.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ServerReport {
    pub binding: String,
    pub name: String,
    pub port: u16,
    /// Connections refused because `starts` were used up.
    pub refused: u64,
    pub seal: String,
    pub starts: Vec<Start>,
    pub starts_allowed: u32,
}

/// One start of a server: how its `sealc exec` ended and its own report.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Start {
    /// The exit status of its `sealc exec` (`null`: ended by a signal).
    pub exit_code: Option<i32>,
    /// That run's report (`null` if it wrote none).
    pub report: Option<serde_json::Value>,
    /// The last bytes it wrote to stderr (sealc's messages and the
    /// server's), escaped.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub stderr_tail: String,
    /// `SIGTERM` (or `SIGKILL`) was needed to end it after the run.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub stopped: bool,
}

/// The servers being served, until [`Broker::finish`].
pub struct Broker {
    stop: Arc<AtomicBool>,
    servers: Vec<Served>,
    reports_parent: Dir,
    reports_name: String,
    bridge: Dir,
}

struct Served {
    ir: McpIr,
    /// Ends when told to stop, after ending what it started (the thread
    /// that started a server is the one whose end it is tied to).
    thread: std::thread::JoinHandle<(u64, Vec<Start>)>,
}

/// Bind each server's socket in `bridge` (the agent's user may connect:
/// `user`) and serve it. The servers' reports go to a private directory of
/// their own, beside the bridge's (never in it: the agent can read that).
pub fn serve(
    servers: &[McpIr],
    bridge: &Dir,
    reports_parent: Dir,
    user: Option<Ids>,
) -> io::Result<Broker> {
    let (reports, reports_name) =
        reports_parent.make_unique(&format!("sealc-mcp-{}-", std::process::id()), 0o700)?;
    let stop = Arc::new(AtomicBool::new(false));
    let mut served = Vec::new();
    for m in servers {
        let name = socket_name(&m.name);
        // Bound through the directory's descriptor: the socket is made in
        // the directory checked, whatever its path means now.
        let at = format!("/proc/self/fd/{}/{name}", bridge.fd().as_raw_fd());
        let listener = UnixListener::bind(&at)?;
        if let Some(ids) = user {
            rustix::fs::chownat(
                bridge.fd(),
                name.as_str(),
                Some(rustix::fs::Uid::from_raw(ids.uid)),
                Some(rustix::fs::Gid::from_raw(ids.gid)),
                rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
            )?;
        }
        let dir = Dir::open(reports.path())?;
        let (ir, stop) = (m.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name(format!("sealc-mcp-{}", m.name))
            .spawn(move || serve_one(&ir, listener, &dir, &stop))?;
        served.push(Served {
            ir: m.clone(),
            thread,
        });
    }
    Ok(Broker {
        stop,
        servers: served,
        reports_parent,
        reports_name,
        bridge: Dir::open(bridge.path())?,
    })
}

/// Accept until told to stop, starting the server for each connection
/// (at most `starts` times); then end what was started.
fn serve_one(
    m: &McpIr,
    listener: UnixListener,
    reports: &Dir,
    stop: &AtomicBool,
) -> (u64, Vec<Start>) {
    let mut refused = 0u64;
    let mut children: Vec<(Child, String, Tail)> = Vec::new();
    let mut failed: Vec<Start> = Vec::new();
    for conn in listener.incoming() {
        if stop.load(Ordering::SeqCst) {
            break;
        }
        let Ok(conn) = conn else { continue };
        if children.len() + failed.len() >= m.starts as usize {
            refused += 1;
            continue; // dropped: the relay sees its connection closed
        }
        let report = format!("{}-{}.json", m.name, children.len() + failed.len() + 1);
        match start(m, conn, reports, &report) {
            Ok(mut child) => {
                let tail = tail(child.stderr.take());
                children.push((child, report, tail));
            }
            // Not a refusal: a start that failed, said as one.
            Err(e) => failed.push(Start {
                stderr_tail: crate::diag::visible(&format!("sealc: cannot start the server: {e}")),
                ..Start::default()
            }),
        }
    }
    let mut starts: Vec<Start> = children
        .into_iter()
        .map(|(child, report, tail)| end(reports, child, &report, tail))
        .collect();
    starts.extend(failed);
    (refused, starts)
}

/// Start one server: `sealc exec SEAL --expect BINDING --report R -- CMD`,
/// the connection as its stdin and stdout.
fn start(m: &McpIr, conn: UnixStream, reports: &Dir, report: &str) -> io::Result<Child> {
    let out = conn.try_clone()?;
    let mut cmd = Command::new("/proc/self/exe");
    cmd.arg("exec")
        .arg(&m.seal)
        .arg("--expect")
        .arg(&m.binding)
        .arg("--report")
        .arg(reports.path().join(report))
        .arg("--")
        .args(&m.command)
        .stdin(Stdio::from(OwnedFd::from(conn)))
        .stdout(Stdio::from(OwnedFd::from(out)))
        .stderr(Stdio::piped())
        .current_dir("/");
    // SAFETY: runs in the child between fork and exec; `prctl` with
    // `PR_SET_PDEATHSIG` is async-signal-safe and allocates nothing. The
    // server's sealc ends (and ends its sandbox) if the thread that started
    // it goes away without ending it (sealc killed).
    #[allow(unsafe_code)]
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut cmd, || {
            rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::TERM))
                .map_err(io::Error::from)
        });
    }
    cmd.spawn()
}

/// The reader of a start's stderr, keeping its last [`STDERR_TAIL`] bytes
/// (whatever the server writes, nothing more is held or stored).
type Tail = Option<std::thread::JoinHandle<Vec<u8>>>;

fn tail(from: Option<std::process::ChildStderr>) -> Tail {
    let mut from = from?;
    std::thread::Builder::new()
        .name("sealc-mcp-stderr".into())
        .spawn(move || {
            let mut kept: Vec<u8> = Vec::new();
            let mut buf = [0u8; 4096];
            loop {
                match io::Read::read(&mut from, &mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        kept.extend_from_slice(&buf[..n]);
                        if kept.len() > 2 * STDERR_TAIL {
                            kept.drain(..kept.len() - STDERR_TAIL);
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(_) => break,
                }
            }
            let from = kept.len().saturating_sub(STDERR_TAIL);
            kept.split_off(from)
        })
        .ok()
}

impl Broker {
    /// The agent's run is over: no more starts; each server gets
    /// [`END_GRACE`] to end by itself (its stdin is closed), then
    /// `SIGTERM`, then `SIGKILL`; their reports are read, and the sockets
    /// and reports removed.
    pub fn finish(self) -> Vec<ServerReport> {
        self.stop.store(true, Ordering::SeqCst);
        for s in &self.servers {
            // Wake the accept loop (it sees `stop` and ends).
            let at = format!(
                "/proc/self/fd/{}/{}",
                self.bridge.fd().as_raw_fd(),
                socket_name(&s.ir.name)
            );
            drop(UnixStream::connect(&at));
        }
        let mut out = Vec::new();
        for s in self.servers {
            let (refused, starts) = s.thread.join().unwrap_or_default();
            let _ = self.bridge.remove(socket_name(&s.ir.name).as_ref(), false);
            out.push(ServerReport {
                binding: s.ir.binding.clone(),
                name: s.ir.name.clone(),
                port: s.ir.port,
                refused,
                seal: s.ir.seal.clone(),
                starts,
                starts_allowed: s.ir.starts,
            });
        }
        let _ = self.reports_parent.remove(self.reports_name.as_ref(), true);
        out
    }
}

/// End one start (see [`Broker::finish`]) and read what it said.
fn end(reports: &Dir, mut child: Child, report: &str, tail: Tail) -> Start {
    let mut stopped = false;
    let mut status = wait_until(&mut child, Instant::now() + END_GRACE);
    if status.is_none() {
        stopped = true;
        if let Some(pid) = rustix::process::Pid::from_raw(child.id() as i32) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        }
        status = wait_until(&mut child, Instant::now() + END_GRACE);
    }
    if status.is_none() {
        let _ = child.kill();
        status = child.wait().ok();
    }
    let exit_code = status.and_then(|s| s.code());
    let report_json = reports
        .read(report.as_ref(), REPORT_MAX)
        .ok()
        .flatten()
        .and_then(|b| serde_json::from_slice(&b).ok());
    let tail = tail
        .and_then(|t| t.join().ok())
        .map(|b| crate::diag::visible(&String::from_utf8_lossy(&b)))
        .unwrap_or_default();
    let _ = reports.remove(report.as_ref(), false);
    Start {
        exit_code,
        report: report_json,
        stderr_tail: tail,
        stopped,
    }
}

fn wait_until(child: &mut Child, until: Instant) -> Option<std::process::ExitStatus> {
    loop {
        match child.try_wait() {
            Ok(Some(s)) => return Some(s),
            Ok(None) if Instant::now() < until => std::thread::sleep(Duration::from_millis(10)),
            _ => return None,
        }
    }
}
