//! sealc's own proxy, for `network.mode = "allowlist"`.
//!
//! `sealc exec` starts it on the host side of the bridge (Linux: the bridge's
//! unix socket, which sealc's init inside forwards the agent's loopback
//! connections to; macOS: the loopback proxy address itself, the only one
//! the seatbelt profile lets the agent reach), and stops it when the command
//! ends, cutting every connection still open.
//!
//! Per connection: read one request head (at most [`http::MAX_HEAD`] bytes
//! and [`http::MAX_HEADERS`] fields, within [`HEAD_TIMEOUT`] in all, so a
//! slow or silent client cannot hold a slot), parse it with `httparse`, and take its
//! target: `CONNECT host:port`, or an absolute `http://` URL (or, when the
//! first byte is 5, a SOCKS5 `CONNECT`: [`socks`]). The host is
//! normalized and checked against the [`policy::Policy`] with the port; a
//! name is resolved here, on the host, every answer checked (no rebinding
//! into the host's network), and the proxy connects to an address it
//! checked, never resolving again. Then bytes are relayed both ways until
//! both sides are done, or until no byte has moved either way for
//! [`IDLE_TIMEOUT`] (a tunnel left open, or half closed and silent), when
//! sealc cuts it and records why. A plain-HTTP request is sent on as one request
//! (`Connection: close`); redirects and everything else in a response go
//! back to the client, which would have to ask again, through the same
//! checks: the proxy itself never follows anything.
//!
//! A refusal is answered with an HTTP error status and a one-line reason
//! (SOCKS5: a reply code),
//! told to sealc's stderr (through the [`Audit`]'s log), and recorded. At
//! most [`MAX_CONNECTIONS`] connections are served at once; more are
//! answered `503` at once.

pub mod http;
/// The decisions themselves live below the IR and the proxy both
/// ([`crate::netpolicy`]); here they keep their old name.
pub use crate::netpolicy as policy;
pub mod socks;

use std::collections::BTreeMap;
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::Poll;
use std::time::{Duration, Instant, SystemTime};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::report::{self, Connection, Decision};
use policy::{Host, Policy};

/// How long a client has to send its whole request head.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a relay may go with no byte either way before sealc cuts it.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(300);
/// How long resolving a name may take.
pub const RESOLVE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long connecting to one address may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Most connections served at once (tunnels and requests being read).
pub const MAX_CONNECTIONS: usize = 1024;
/// The soft descriptor limit sealc asks for when its proxy starts.
const NOFILE: u64 = 16384;
/// The relay's pipe (or buffer), per direction.
const BUF: usize = 256 * 1024;

/// The proxy of one run: the allowlist from the verified seal, the address
/// the agent reaches it at, the run's [`Audit`], and its timeouts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Own {
    pub policy: Policy,
    /// The loopback `host:port` of the seal (`network.proxy`).
    pub listen: String,
    pub audit: Audit,
    pub timeouts: Timeouts,
}

/// How long the proxy waits for a client (tests shorten them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeouts {
    /// For the whole request head (or SOCKS5 greeting and request), from
    /// the moment the client connected: [`HEAD_TIMEOUT`].
    pub head: Duration,
    /// With no byte either way, before a relay is cut: [`IDLE_TIMEOUT`].
    pub idle: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            head: HEAD_TIMEOUT,
            idle: IDLE_TIMEOUT,
        }
    }
}

/// What `sealc exec --dry-run` (and the run report's `layers`) says of the
/// network: the mode, what decides where connections go, and in
/// `allowlist` mode what the run's own proxy (`own`, the one the run
/// starts) lets through, with its limits.
pub fn layer(net: &crate::ir::NetIr, own: Option<&Own>) -> serde_json::Value {
    use crate::spec::NetMode;
    let mode = net.mode.as_str();
    let listen = net.proxy.as_ref().map(|p| format!("{}:{}", p.host, p.port));
    let built;
    let own = match own {
        Some(o) => o,
        None => {
            built = Own::new(net);
            &built
        }
    };
    match net.mode {
        NetMode::Allowlist => serde_json::json!({
            "mode": mode,
            "enforced_by": "sealc exec: its own proxy, the only way out of the seal",
            "proxy": listen,
            "allowlist": own.policy.describe(),
            "limits": {
                "head_timeout_s": own.timeouts.head.as_secs_f64(),
                "idle_timeout_s": own.timeouts.idle.as_secs_f64(),
                "max_connections": MAX_CONNECTIONS,
                "max_head_bytes": http::MAX_HEAD,
            },
        }),
        NetMode::Proxy => serde_json::json!({
            "mode": mode,
            "enforced_by": "the proxy at `network.proxy`, not sealc: `hosts` and `ports` are only recorded",
            "proxy": listen,
            "hosts": net.hosts,
            "ports": net.ports,
        }),
        NetMode::None => serde_json::json!({
            "mode": mode,
            "enforced_by": "the seal: nothing gets out",
        }),
        NetMode::Open => serde_json::json!({
            "mode": mode,
            "enforced_by": "nothing: no network rule",
        }),
    }
}

/// A refusal line for sealc's stderr.
pub type Log = Box<dyn Fn(&str) + Send + Sync>;

/// What a run's proxy is told from outside (where refusal lines go, the
/// test resolver) and what it records (each connection). Clones share it.
#[derive(Clone, Default)]
pub struct Audit(Arc<AuditInner>);

#[derive(Default)]
struct AuditInner {
    log: Option<Log>,
    resolve: BTreeMap<String, IpAddr>,
    conns: Mutex<Vec<Arc<Conn>>>,
    omitted: AtomicU64,
}

impl std::fmt::Debug for Audit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Audit")
            .field("resolve", &self.0.resolve)
            .finish_non_exhaustive()
    }
}

impl PartialEq for Audit {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}
impl Eq for Audit {}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Parse `--resolve NAME=ADDR` (a test's resolver: NAME, normalized,
/// resolves to ADDR alone; the answer is still checked like any other).
pub fn parse_resolve(s: &str) -> Result<(String, IpAddr), String> {
    let (name, addr) = s
        .split_once('=')
        .ok_or_else(|| format!("`{s}` is not NAME=ADDR"))?;
    let name = match policy::parse_host(name) {
        Ok(Host::Name(n)) => n,
        _ => return Err(format!("`{name}` is not a host name")),
    };
    let bare = addr
        .strip_prefix('[')
        .and_then(|a| a.strip_suffix(']'))
        .unwrap_or(addr);
    let ip: IpAddr = bare
        .parse()
        .map_err(|_| format!("`{addr}` is not an IP address"))?;
    Ok((name, ip))
}

impl Audit {
    /// `log` gets each refusal line; `resolve` answers for names before the
    /// system's resolver is asked (tests).
    pub fn new(log: Option<Log>, resolve: BTreeMap<String, IpAddr>) -> Audit {
        Audit(Arc::new(AuditInner {
            log,
            resolve,
            ..AuditInner::default()
        }))
    }

    fn say(&self, line: &str) {
        if let Some(log) = &self.0.log {
            log(line);
        }
    }

    fn open(&self) -> Arc<Conn> {
        let c = Arc::new(Conn {
            time: SystemTime::now(),
            start: Instant::now(),
            up: AtomicU64::new(0),
            down: AtomicU64::new(0),
            last: AtomicU64::new(0),
            state: Mutex::new(State::default()),
        });
        let mut all = lock(&self.0.conns);
        if all.len() < report::MAX_CONNECTIONS {
            all.push(c.clone());
        } else {
            self.0.omitted.fetch_add(1, Ordering::Relaxed);
        }
        c
    }

    /// Every connection so far, in the order opened; one still open counts
    /// up to now.
    pub fn connections(&self) -> Vec<Connection> {
        lock(&self.0.conns).iter().map(|c| c.snapshot()).collect()
    }

    /// Connections past the report's cap.
    pub fn omitted(&self) -> u64 {
        self.0.omitted.load(Ordering::Relaxed)
    }

    /// The resolver overrides, as `name=addr`.
    pub fn overrides(&self) -> Vec<String> {
        self.0
            .resolve
            .iter()
            .map(|(n, a)| format!("{n}={a}"))
            .collect()
    }

    /// Fill the network part of a run report.
    pub fn fill(&self, r: &mut report::Report) {
        r.network = self.connections();
        r.network_omitted = self.omitted();
        r.resolve_overrides = self.overrides();
    }
}

/// One connection, live.
struct Conn {
    time: SystemTime,
    start: Instant,
    up: AtomicU64,
    down: AtomicU64,
    /// When a byte last moved either way, in nanoseconds after `start`.
    last: AtomicU64,
    state: Mutex<State>,
}

struct State {
    protocol: &'static str,
    host: Option<String>,
    port: Option<u16>,
    address: Option<SocketAddr>,
    decision: Decision,
    reason: Option<String>,
    ended: Option<Instant>,
    /// Relaying now: if the task is dropped, the run ended under it.
    relaying: bool,
    cut: Option<&'static str>,
}

impl Default for State {
    fn default() -> Self {
        State {
            protocol: "unknown",
            host: None,
            port: None,
            address: None,
            // Until a decision: a connection cut before one was refused.
            decision: Decision::Refused,
            reason: Some("no request before the connection ended".into()),
            ended: None,
            relaying: false,
            cut: None,
        }
    }
}

impl Conn {
    fn snapshot(&self) -> Connection {
        let s = lock(&self.state);
        let end = s.ended.unwrap_or_else(Instant::now);
        let ms = end.duration_since(self.start).as_micros() as f64 / 1000.0;
        Connection {
            time: report::rfc3339(self.time),
            protocol: s.protocol,
            host: s.host.clone(),
            port: s.port,
            address: s.address.map(|a| a.to_string()),
            decision: s.decision,
            reason: s.reason.clone(),
            bytes_up: self.up.load(Ordering::Relaxed),
            bytes_down: self.down.load(Ordering::Relaxed),
            duration_ms: ms,
            cut: s.cut,
        }
    }

    /// Count `k` bytes that went one way (`n`: `up` or `down`), now.
    fn moved(&self, n: &AtomicU64, k: usize) {
        n.fetch_add(k as u64, Ordering::Relaxed);
        let at = self.start.elapsed().as_nanos() as u64;
        self.last.fetch_max(at, Ordering::Relaxed);
    }

    fn set(&self, f: impl FnOnce(&mut State)) {
        f(&mut lock(&self.state));
    }
}

/// Marks its connection ended when dropped: also when the runtime stops
/// and drops the task in the middle of a tunnel.
struct Ending(Arc<Conn>);

impl Drop for Ending {
    fn drop(&mut self) {
        self.0.set(|s| {
            s.ended.get_or_insert_with(Instant::now);
            if s.relaying {
                s.relaying = false;
                s.cut.get_or_insert("run_ended");
            }
        });
    }
}

/// One of [`MAX_CONNECTIONS`] slots, given back when dropped.
struct Slot(Arc<AtomicUsize>);

impl Slot {
    fn take(n: &Arc<AtomicUsize>) -> Option<Slot> {
        n.fetch_update(Ordering::AcqRel, Ordering::Acquire, |v| {
            (v < MAX_CONNECTIONS).then_some(v + 1)
        })
        .ok()
        .map(|_| Slot(n.clone()))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A running proxy. Stopping it (or dropping it) ends every connection.
pub struct Running {
    stop: Option<std::os::unix::net::UnixStream>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Running {
    /// Stop accepting, cut every connection, and wait until that is done.
    pub fn stop(mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        // Closing our end wakes the proxy's thread, which then drops its
        // runtime: every task and socket goes with it.
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.halt();
    }
}

enum Listener {
    Unix(std::os::unix::net::UnixListener),
    Tcp(Vec<std::net::TcpListener>),
}

impl Own {
    /// The proxy of a verified seal's network policy.
    pub fn new(net: &crate::ir::NetIr) -> Own {
        Own {
            timeouts: Timeouts::default(),
            policy: Policy::new(
                &net.hosts,
                net.ports.iter().copied(),
                net.allow_ranges.iter().copied(),
            ),
            listen: net
                .proxy
                .as_ref()
                .map(|p| format!("{}:{}", p.host, p.port))
                .unwrap_or_default(),
            audit: Audit::default(),
        }
    }

    /// Serve each connection to the bridge's unix socket (Linux).
    pub fn serve_unix(&self, l: std::os::unix::net::UnixListener) -> io::Result<Running> {
        self.start(Listener::Unix(l))
    }

    /// Listen on the seal's loopback proxy address itself (macOS; both
    /// `127.0.0.1` and `::1` for `localhost`).
    pub fn serve_tcp(&self) -> io::Result<Running> {
        let (host, port) = self
            .listen
            .rsplit_once(':')
            .and_then(|(h, p)| Some((h, p.parse::<u16>().ok()?)))
            .ok_or_else(|| io::Error::other(format!("{} is not host:port", self.listen)))?;
        let mut ls = Vec::new();
        match host {
            "localhost" => {
                ls.push(std::net::TcpListener::bind(("127.0.0.1", port))?);
                if let Ok(l) = std::net::TcpListener::bind(("::1", port)) {
                    ls.push(l);
                }
            }
            h => ls.push(std::net::TcpListener::bind((
                h.trim_start_matches('[').trim_end_matches(']'),
                port,
            ))?),
        }
        self.start(Listener::Tcp(ls))
    }

    /// Serve each connection to a TCP listener the caller bound (tests and
    /// benchmarks).
    pub fn serve_on(&self, l: std::net::TcpListener) -> io::Result<Running> {
        self.start(Listener::Tcp(vec![l]))
    }

    fn start(&self, listener: Listener) -> io::Result<Running> {
        raise_nofile();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()?;
        let (stop, stop_inner) = std::os::unix::net::UnixStream::pair()?;
        stop_inner.set_nonblocking(true)?;
        match &listener {
            Listener::Unix(l) => l.set_nonblocking(true)?,
            Listener::Tcp(ls) => {
                for l in ls {
                    l.set_nonblocking(true)?;
                }
            }
        }
        let shared = Arc::new(Shared {
            policy: self.policy.clone(),
            audit: self.audit.clone(),
            timeouts: self.timeouts,
            active: Arc::new(AtomicUsize::new(0)),
        });
        let thread = std::thread::Builder::new()
            .name("sealc-proxy".into())
            .spawn(move || {
                rt.block_on(async move {
                    let Ok(stop) = tokio::net::UnixStream::from_std(stop_inner) else {
                        return;
                    };
                    match listener {
                        Listener::Unix(l) => {
                            if let Ok(l) = tokio::net::UnixListener::from_std(l) {
                                tokio::spawn(accept_unix(l, shared.clone()));
                            }
                        }
                        Listener::Tcp(ls) => {
                            for l in ls {
                                if let Ok(l) = tokio::net::TcpListener::from_std(l) {
                                    tokio::spawn(accept_tcp(l, shared.clone()));
                                }
                            }
                        }
                    }
                    // Until `Running` closes its end.
                    let mut byte = [0u8; 1];
                    loop {
                        let _ = stop.readable().await;
                        match stop.try_read(&mut byte) {
                            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                            _ => break,
                        }
                    }
                });
                // Every task (each connection) is dropped, its sockets closed.
                rt.shutdown_timeout(Duration::from_millis(100));
            })?;
        Ok(Running {
            stop: Some(stop),
            thread: Some(thread),
        })
    }
}

/// A tunnel costs six descriptors on this side (two sockets, two pipes):
/// let the soft limit rise toward the hard one (at most 16384), so
/// [`MAX_CONNECTIONS`] fit. Past it, a tunnel falls back to a buffer (no
/// pipes), and an accept that fails waits.
fn raise_nofile() {
    use rustix::process::{getrlimit, setrlimit, Resource};
    let mut l = getrlimit(Resource::Nofile);
    let want = l.maximum.map_or(NOFILE, |m| m.min(NOFILE));
    if l.current.is_some_and(|c| c < want) {
        l.current = Some(want);
        let _ = setrlimit(Resource::Nofile, l);
    }
}

struct Shared {
    policy: Policy,
    audit: Audit,
    timeouts: Timeouts,
    active: Arc<AtomicUsize>,
}

async fn accept_unix(l: tokio::net::UnixListener, shared: Arc<Shared>) {
    loop {
        match l.accept().await {
            Ok((s, _)) => {
                tokio::spawn(serve(s, shared.clone()));
            }
            // Out of descriptors, most likely: wait instead of spinning.
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

async fn accept_tcp(l: tokio::net::TcpListener, shared: Arc<Shared>) {
    loop {
        match l.accept().await {
            Ok((s, _)) => {
                let _ = s.set_nodelay(true);
                tokio::spawn(serve(s, shared.clone()));
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

/// Why a connection goes no further, and what the client is told.
struct Refused {
    status: u16,
    reason: String,
    /// `Refused` (the allowlist, a limit, a bad request) or `Failed` (an
    /// allowed host that cannot be resolved or reached).
    decision: Decision,
    /// What to answer instead of the protocol's usual refusal.
    reply: Option<Vec<u8>>,
}

fn refused(status: u16, reason: impl Into<String>) -> Refused {
    Refused {
        status,
        reason: reason.into(),
        decision: Decision::Refused,
        reply: None,
    }
}

fn failed(status: u16, reason: impl Into<String>) -> Refused {
    Refused {
        decision: Decision::Failed,
        ..refused(status, reason)
    }
}

/// Serve one connection from the agent.
async fn serve<S>(mut client: S, shared: Arc<Shared>)
where
    S: AsyncRead + AsyncWrite + Socket + Unpin + Send + 'static,
{
    let conn = shared.audit.open();
    let _ending = Ending(conn.clone());
    let Some(_slot) = Slot::take(&shared.active) else {
        let r = refused(
            503,
            format!("more than {MAX_CONNECTIONS} connections at once"),
        );
        return answer(&mut client, &shared, &conn, r).await;
    };
    let mut buf = Vec::with_capacity(1024);
    // The whole request (an HTTP head, or a SOCKS5 greeting and request)
    // within one deadline.
    let deadline = tokio::time::Instant::now() + shared.timeouts.head;
    let late = || {
        refused(
            408,
            format!(
                "no complete request head within {}",
                seconds(shared.timeouts.head)
            ),
        )
    };
    let opened = match tokio::time::timeout_at(deadline, first_bytes(&mut client, &mut buf)).await {
        Err(_) => Err(late()),
        Ok(Err(r)) => Err(r),
        Ok(Ok(())) if buf[0] == socks::VERSION => {
            conn.set(|s| s.protocol = "socks5");
            match tokio::time::timeout_at(deadline, socks::handshake(&mut client, &mut buf)).await {
                Err(_) => Err(late()),
                Ok(Err(r)) => Err(r),
                Ok(Ok((host, port))) => open(&host, port, &shared, &conn)
                    .await
                    .map(|(up, _)| (up, socks::reply(0), buf.clone())),
            }
        }
        Ok(Ok(())) => {
            match tokio::time::timeout_at(deadline, read_head(&mut client, &mut buf)).await {
                Err(_) => Err(late()),
                Ok(Err(r)) => Err(r),
                Ok(Ok(head)) => open_http(&head, &buf, &shared, &conn).await,
            }
        }
    };
    match opened {
        Ok((mut upstream, to_client, to_upstream)) => {
            if client.write_all(&to_client).await.is_ok()
                && upstream.write_all(&to_upstream).await.is_ok()
            {
                conn.moved(&conn.up, to_upstream.len());
                conn.set(|s| s.relaying = true);
                relay(client, upstream, &conn, shared.timeouts.idle).await;
                conn.set(|s| s.relaying = false);
            }
        }
        Err(r) => answer(&mut client, &shared, &conn, r).await,
    }
}

/// `10s`, or `0.2s`.
fn seconds(d: Duration) -> String {
    format!("{}s", d.as_secs_f64())
}

/// Read the first bytes of a request.
async fn first_bytes<S: AsyncRead + Unpin>(s: &mut S, buf: &mut Vec<u8>) -> Result<(), Refused> {
    let mut chunk = [0u8; 4096];
    match s.read(&mut chunk).await {
        Ok(0) => Err(refused(400, "the connection closed before a request")),
        Ok(n) => {
            buf.extend_from_slice(&chunk[..n]);
            Ok(())
        }
        Err(e) => Err(refused(400, format!("cannot read the request: {e}"))),
    }
}

/// An HTTP request: its host connected to, what to answer the client
/// (`200` for `CONNECT`, nothing for plain HTTP) and the first bytes to
/// send on (what followed a `CONNECT`'s head, or the plain-HTTP head
/// rewritten and what followed it).
async fn open_http(
    head: &http::Head,
    buf: &[u8],
    shared: &Shared,
    conn: &Conn,
) -> Result<(tokio::net::TcpStream, Vec<u8>, Vec<u8>), Refused> {
    let connect = head.method == "CONNECT";
    conn.set(|s| s.protocol = if connect { "connect" } else { "http" });
    let target = http::target(head).map_err(|b| refused(b.status, b.reason))?;
    let (upstream, host) = open(target.host, target.port, shared, conn).await?;
    let rest = &buf[head.len..];
    if connect {
        let ok = b"HTTP/1.1 200 Connection established\r\n\r\n".to_vec();
        return Ok((upstream, ok, rest.to_vec()));
    }
    let authority = match target.port {
        80 => host.to_string(),
        p => format!("{host}:{p}"),
    };
    let mut out = http::forward_head(head, &authority, target.path.as_deref().unwrap_or("/"));
    out.extend_from_slice(rest);
    Ok((upstream, Vec::new(), out))
}

/// Check a target and connect to it: the upstream connection and the host,
/// normalized.
async fn open(
    raw_host: &str,
    port: u16,
    shared: &Shared,
    conn: &Conn,
) -> Result<(tokio::net::TcpStream, Host), Refused> {
    let host = policy::parse_host(raw_host)
        .map_err(|why| refused(400, format!("the request's host: {why}")))?;
    conn.set(|s| {
        s.host = Some(host.to_string());
        s.port = Some(port);
    });
    shared
        .policy
        .check_target(&host, port)
        .map_err(|r| refused(403, r.0))?;
    let addrs = resolve(shared, &host, port, conn).await?;
    let mut last_err = String::new();
    for a in &addrs {
        conn.set(|s| s.address = Some(*a));
        match tokio::time::timeout(CONNECT_TIMEOUT, tokio::net::TcpStream::connect(a)).await {
            Ok(Ok(upstream)) => {
                let _ = upstream.set_nodelay(true);
                conn.set(|s| {
                    s.decision = Decision::Allowed;
                    s.reason = None;
                });
                return Ok((upstream, host));
            }
            Ok(Err(e)) => last_err = e.to_string(),
            Err(_) => last_err = "timed out".into(),
        }
    }
    Err(failed(
        502,
        format!("cannot reach {host}:{port}: {last_err}"),
    ))
}

/// Read until a whole head is in `buf`; parse it.
async fn read_head<S: AsyncRead + Unpin>(
    s: &mut S,
    buf: &mut Vec<u8>,
) -> Result<http::Head, Refused> {
    let mut chunk = [0u8; 4096];
    // `buf` may hold the first bytes already.
    let mut from = 0;
    loop {
        if let Some(end) = http::head_end(buf, from) {
            if end > http::MAX_HEAD {
                return Err(refused(
                    431,
                    format!("the request head is over {} bytes", http::MAX_HEAD),
                ));
            }
            return http::parse(&buf[..end]).map_err(|b| refused(b.status, b.reason));
        }
        if buf.len() > http::MAX_HEAD {
            return Err(refused(
                431,
                format!("the request head is over {} bytes", http::MAX_HEAD),
            ));
        }
        from = buf.len();
        let n = s
            .read(&mut chunk)
            .await
            .map_err(|e| refused(400, format!("cannot read the request: {e}")))?;
        if n == 0 {
            return Err(refused(
                400,
                "the connection closed before a whole request head",
            ));
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// The checked addresses to try for `host:port`: a listed IP literal as it
/// is; a name resolved here (the test override first), every answer
/// checked, refused if any is in a special range not allowed.
async fn resolve(
    shared: &Shared,
    host: &Host,
    port: u16,
    conn: &Conn,
) -> Result<Vec<SocketAddr>, Refused> {
    let name = match host {
        Host::Ip(ip) => return Ok(vec![SocketAddr::new(*ip, port)]),
        Host::Name(n) => n,
    };
    let answers: Vec<IpAddr> = match shared.audit.0.resolve.get(name) {
        Some(ip) => vec![*ip],
        None => {
            let looked = tokio::time::timeout(
                RESOLVE_TIMEOUT,
                tokio::net::lookup_host((name.as_str(), port)),
            )
            .await;
            match looked {
                Ok(Ok(it)) => it.map(|a| a.ip()).collect(),
                Ok(Err(e)) => return Err(failed(502, format!("cannot resolve {name}: {e}"))),
                Err(_) => return Err(failed(504, format!("resolving {name} timed out"))),
            }
        }
    };
    if answers.is_empty() {
        return Err(failed(502, format!("{name} has no address")));
    }
    let mut out = Vec::new();
    for ip in answers {
        let a = SocketAddr::new(ip.to_canonical(), port);
        if let Err(r) = shared.policy.check_answer(host, ip) {
            conn.set(|s| s.address = Some(a));
            return Err(refused(403, r.0));
        }
        if !out.contains(&a) {
            out.push(a);
        }
    }
    Ok(out)
}

/// Record a refusal or failure, tell sealc's stderr, and answer the client
/// with the status and the one-line reason.
async fn answer<S: AsyncRead + AsyncWrite + Unpin>(
    client: &mut S,
    shared: &Shared,
    conn: &Conn,
    r: Refused,
) {
    let reason = http::one_line(&r.reason);
    let mut said = String::new();
    let mut socks = false;
    conn.set(|s| {
        socks = s.protocol == "socks5";
        s.decision = r.decision;
        s.reason = Some(reason.clone());
        let what = match r.decision {
            Decision::Failed => "failed",
            _ => "refused",
        };
        said = match (&s.host, s.port) {
            (Some(h), Some(p)) => format!("proxy {what} {} {h}:{p}: {reason}", s.protocol),
            _ => format!("proxy {what} a connection: {reason}"),
        };
    });
    shared.audit.say(&said);
    // Best effort, and bounded: a client that does not read is not waited
    // for. What it still sends is read and dropped for a moment (a lingering
    // close): closing with unread bytes would reset the connection, and the
    // client could lose the answer.
    let _ = tokio::time::timeout(LINGER, async {
        let bytes = match (r.reply, socks) {
            (Some(b), _) => b,
            (None, true) => socks::reply(socks::code(r.status)),
            (None, false) => http::answer(r.status, &reason),
        };
        let _ = client.write_all(&bytes).await;
        let _ = client.shutdown().await;
        let mut sink = [0u8; 4096];
        let mut left = LINGER_BYTES;
        while left > 0 {
            match client.read(&mut sink).await {
                Ok(0) | Err(_) => break,
                Ok(n) => left = left.saturating_sub(n),
            }
        }
    })
    .await;
}

/// How long a refused client is given to read its answer.
const LINGER: Duration = Duration::from_secs(1);
/// Most bytes read and dropped from a refused client meanwhile.
const LINGER_BYTES: usize = 1 << 20;

/// Relay both ways until both directions end, or until no byte has moved
/// either way for `idle`: then the cut is recorded first, and both sockets
/// are closed (so whoever sees the end finds it recorded). When one side is
/// done sending, the other is told (a half close), and the other direction
/// goes on.
async fn relay<A, B>(client: A, upstream: B, conn: &Conn, idle: Duration)
where
    A: Socket + AsyncRead + AsyncWrite + Unpin,
    B: Socket + AsyncRead + AsyncWrite + Unpin,
{
    either(copy_both(client, upstream, conn), async {
        quiet_for(conn, idle).await;
        conn.set(|s| s.cut = Some("idle"));
    })
    .await
}

/// Returns once no byte has moved either way for `idle`.
async fn quiet_for(conn: &Conn, idle: Duration) {
    loop {
        let last = conn.start + Duration::from_nanos(conn.last.load(Ordering::Relaxed));
        let due = last + idle;
        if Instant::now() >= due {
            return;
        }
        tokio::time::sleep_until(tokio::time::Instant::from_std(due)).await;
    }
}

/// Both directions, counting bytes: on Linux through pipes with `splice`,
/// or, when no pipe can be had (out of descriptors), through a buffer.
async fn copy_both<A, B>(client: A, upstream: B, conn: &Conn)
where
    A: Socket + AsyncRead + AsyncWrite + Unpin,
    B: Socket + AsyncRead + AsyncWrite + Unpin,
{
    #[cfg(target_os = "linux")]
    if let (Ok(up), Ok(down)) = (splice::Pipe::new(), splice::Pipe::new()) {
        both(
            async {
                let _ = up.copy(&client, &upstream, conn, &conn.up).await;
                let _ = rustix::net::shutdown(&upstream, rustix::net::Shutdown::Write);
            },
            async {
                let _ = down.copy(&upstream, &client, conn, &conn.down).await;
                let _ = rustix::net::shutdown(&client, rustix::net::Shutdown::Write);
            },
        )
        .await;
        return;
    }
    let (cr, cw) = tokio::io::split(client);
    let (ur, uw) = tokio::io::split(upstream);
    both(copy(cr, uw, conn, &conn.up), copy(ur, cw, conn, &conn.down)).await;
}

async fn copy<R: AsyncRead + Unpin, W: AsyncWrite + Unpin>(
    mut r: R,
    mut w: W,
    conn: &Conn,
    n: &AtomicU64,
) {
    let mut buf = vec![0u8; BUF];
    loop {
        match r.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(k) => {
                if w.write_all(&buf[..k]).await.is_err() {
                    break;
                }
                conn.moved(n, k);
            }
        }
    }
    let _ = w.shutdown().await;
}

/// A socket whose readiness the relay waits on (the agent's side: a unix
/// stream from the bridge, or TCP; the host's side: TCP).
trait Socket: std::os::fd::AsFd {
    fn readable(&self) -> impl Future<Output = io::Result<()>>;
    fn writable(&self) -> impl Future<Output = io::Result<()>>;
    fn try_io<R>(
        &self,
        interest: tokio::io::Interest,
        f: impl FnOnce() -> io::Result<R>,
    ) -> io::Result<R>;
}

impl Socket for tokio::net::TcpStream {
    fn readable(&self) -> impl Future<Output = io::Result<()>> {
        tokio::net::TcpStream::readable(self)
    }
    fn writable(&self) -> impl Future<Output = io::Result<()>> {
        tokio::net::TcpStream::writable(self)
    }
    fn try_io<R>(
        &self,
        interest: tokio::io::Interest,
        f: impl FnOnce() -> io::Result<R>,
    ) -> io::Result<R> {
        tokio::net::TcpStream::try_io(self, interest, f)
    }
}

impl Socket for tokio::net::UnixStream {
    fn readable(&self) -> impl Future<Output = io::Result<()>> {
        tokio::net::UnixStream::readable(self)
    }
    fn writable(&self) -> impl Future<Output = io::Result<()>> {
        tokio::net::UnixStream::writable(self)
    }
    fn try_io<R>(
        &self,
        interest: tokio::io::Interest,
        f: impl FnOnce() -> io::Result<R>,
    ) -> io::Result<R> {
        tokio::net::UnixStream::try_io(self, interest, f)
    }
}

/// Linux: bytes move from one socket to the other through a pipe with
/// `splice`, never copied into sealc's memory, so a tunnel costs little more
/// than the direct connection.
#[cfg(target_os = "linux")]
mod splice {
    use std::io;
    use std::sync::atomic::AtomicU64;

    use rustix::pipe::{PipeFlags, SpliceFlags};
    use tokio::io::Interest;

    use super::{Conn, Socket, BUF};

    /// A pipe the bytes of one direction go through.
    pub(super) struct Pipe {
        r: std::os::fd::OwnedFd,
        w: std::os::fd::OwnedFd,
        cap: usize,
    }

    impl Pipe {
        pub(super) fn new() -> io::Result<Pipe> {
            let (r, w) = rustix::pipe::pipe_with(PipeFlags::CLOEXEC | PipeFlags::NONBLOCK)?;
            let cap = rustix::pipe::fcntl_setpipe_size(&w, BUF).unwrap_or(64 * 1024);
            Ok(Pipe { r, w, cap })
        }

        /// Until `src` ends, or either side fails.
        pub(super) async fn copy(
            &self,
            src: &impl Socket,
            dst: &impl Socket,
            conn: &Conn,
            n: &AtomicU64,
        ) -> io::Result<()> {
            let Pipe { r, w, cap } = self;
            let cap = *cap;
            let flags = SpliceFlags::MOVE | SpliceFlags::NONBLOCK;
            loop {
                // The pipe is empty here, so "would block" is the socket's.
                src.readable().await?;
                let got = match src.try_io(Interest::READABLE, || {
                    Ok(rustix::pipe::splice(src, None, w, None, cap, flags)?)
                }) {
                    Ok(0) => return Ok(()),
                    Ok(k) => k,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                    Err(e) => return Err(e),
                };
                // Here the pipe holds `left` bytes: "would block" is the socket's.
                let mut left = got;
                while left > 0 {
                    dst.writable().await?;
                    match dst.try_io(Interest::WRITABLE, || {
                        Ok(rustix::pipe::splice(r, None, dst, None, left, flags)?)
                    }) {
                        Ok(k) => {
                            left -= k;
                            conn.moved(n, k);
                        }
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                        Err(e) => return Err(e),
                    }
                }
            }
        }
    }
}

/// The first of two futures to finish (without tokio's macros); the other
/// is dropped.
async fn either<T>(a: impl Future<Output = T>, b: impl Future<Output = T>) -> T {
    let (mut a, mut b) = (pin!(a), pin!(b));
    std::future::poll_fn(|cx| {
        if let Poll::Ready(v) = a.as_mut().poll(cx) {
            return Poll::Ready(v);
        }
        b.as_mut().poll(cx)
    })
    .await
}

/// Run two futures to completion together (without tokio's macros).
async fn both(a: impl Future<Output = ()>, b: impl Future<Output = ()>) {
    let (mut a, mut b) = (pin!(a), pin!(b));
    let (mut a_done, mut b_done) = (false, false);
    std::future::poll_fn(|cx| {
        if !a_done {
            a_done = a.as_mut().poll(cx).is_ready();
        }
        if !b_done {
            b_done = b.as_mut().poll(cx).is_ready();
        }
        if a_done && b_done {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};

    /// An upstream that echoes, or answers a GET with its head's first line.
    fn upstream() -> (u16, Arc<AtomicUsize>) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let open = Arc::new(AtomicUsize::new(0));
        let o = open.clone();
        std::thread::spawn(move || {
            for mut c in l.incoming().flatten() {
                let o = o.clone();
                o.fetch_add(1, Ordering::SeqCst);
                std::thread::spawn(move || {
                    let mut buf = [0u8; 4096];
                    while let Ok(n) = c.read(&mut buf) {
                        if n == 0 {
                            break;
                        }
                        if buf.starts_with(b"GET ") {
                            let line = String::from_utf8_lossy(&buf[..n]).replace("\r\n", "|");
                            let _ = write!(c, "HTTP/1.0 200 OK\r\n\r\n{line}");
                            break;
                        }
                        if c.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                    o.fetch_sub(1, Ordering::SeqCst);
                });
            }
        });
        (port, open)
    }

    fn proxy(port: u16) -> (Running, u16, Audit) {
        proxy_with(&[port], Timeouts::default())
    }

    fn proxy_with(ports: &[u16], timeouts: Timeouts) -> (Running, u16, Audit) {
        let hosts = vec!["allowed.test".to_string(), "private.test".to_string()];
        let mut own = Own {
            policy: Policy::new(
                &hosts,
                ports.iter().copied(),
                [policy::Cidr::parse("127.0.0.1/32").unwrap()],
            ),
            timeouts,
            ..Own::default()
        };
        let resolve = [
            ("allowed.test".to_string(), "127.0.0.1".parse().unwrap()),
            ("private.test".to_string(), "10.0.0.1".parse().unwrap()),
        ];
        own.audit = Audit::new(None, resolve.into_iter().collect());
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let at = l.local_addr().unwrap().port();
        (own.serve_on(l).unwrap(), at, own.audit.clone())
    }

    fn ask(at: u16, req: &str) -> (TcpStream, String) {
        let mut c = TcpStream::connect(("127.0.0.1", at)).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        c.write_all(req.as_bytes()).unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 1024];
        // Read the answer's head (and what came with it).
        while !got.windows(4).any(|w| w == b"\r\n\r\n") {
            match c.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
        }
        (c, String::from_utf8_lossy(&got).into_owned())
    }

    /// A SOCKS5 exchange: greeting (methods), then CONNECT to `target`
    /// (address type and bytes); the two replies.
    fn socks(
        at: u16,
        methods: &[u8],
        atyp: u8,
        addr: &[u8],
        port: u16,
    ) -> (TcpStream, Vec<u8>, Vec<u8>) {
        let mut c = TcpStream::connect(("127.0.0.1", at)).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut hello = vec![5, methods.len() as u8];
        hello.extend_from_slice(methods);
        c.write_all(&hello).unwrap();
        let mut greeting = vec![0u8; 2];
        c.read_exact(&mut greeting).unwrap();
        if greeting[1] != 0 {
            return (c, greeting, Vec::new());
        }
        let mut req = vec![5, 1, 0, atyp];
        req.extend_from_slice(addr);
        req.extend_from_slice(&port.to_be_bytes());
        c.write_all(&req).unwrap();
        let mut rep = vec![0u8; 10];
        let _ = c.read_exact(&mut rep);
        (c, greeting, rep)
    }

    /// Every refusal line the proxy gives its log (sealc prints them on its
    /// stderr, maybe a terminal) is one line of visible text, whatever
    /// controls the agent put in its request.
    #[test]
    fn refusal_lines_hold_no_control_character_from_the_request() {
        let lines = Arc::new(Mutex::new(Vec::<String>::new()));
        let kept = lines.clone();
        let mut own = Own {
            policy: Policy::new(&["allowed.test".to_string()], [443], []),
            ..Own::default()
        };
        own.audit = Audit::new(
            Some(Box::new(move |l: &str| lock(&kept).push(l.to_string()))),
            BTreeMap::new(),
        );
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let at = l.local_addr().unwrap().port();
        let running = own.serve_on(l).unwrap();
        let send = |req: &[u8]| {
            let mut c = TcpStream::connect(("127.0.0.1", at)).unwrap();
            c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            c.write_all(req).unwrap();
            let mut sink = Vec::new();
            let _ = c.read_to_end(&mut sink);
        };
        let socks = |name: &[u8]| {
            let mut req = vec![5, 1, 0, 5, 1, 0, 3, name.len() as u8];
            req.extend_from_slice(name);
            req.extend_from_slice(&443u16.to_be_bytes());
            req
        };
        let hostile: Vec<Vec<u8>> = vec![
            b"CONNECT \x1b]52;c;eA==\x07.test:443 HTTP/1.1\r\n\r\n".to_vec(),
            b"CONNECT evil\x9b2J.test:443 HTTP/1.1\r\n\r\n".to_vec(),
            "CONNECT evil\u{9b}2J.test:443 HTTP/1.1\r\n\r\n".into(),
            b"GET http://x\x1b[2J.test/ HTTP/1.1\r\n\r\n".to_vec(),
            b"\x1b[2J\x07garbage\x1bM\r\n\r\n".to_vec(),
            socks(b"\x1b]0;title\x07.test"),
            socks("evil\u{9b}6n.test".as_bytes()),
            socks(b"evil\r\nsealc: fake.test"),
        ];
        for req in &hostile {
            send(req);
        }
        running.stop();
        let lines = lock(&lines).clone();
        assert_eq!(lines.len(), hostile.len(), "{lines:?}");
        for l in &lines {
            assert!(!l.chars().any(char::is_control), "{l:?}");
        }
    }

    #[test]
    fn socks5_clients_get_the_same_checks() {
        let (port, open) = upstream();
        let (running, at, audit) = proxy(port);
        let name = |n: &str| [&[n.len() as u8][..], n.as_bytes()].concat();
        let (mut c, greeting, rep) = socks(at, &[0], 3, &name("allowed.test"), port);
        assert_eq!((greeting, rep), (vec![5, 0], socks::reply(0)));
        c.write_all(b"ping").unwrap();
        let mut echo = [0u8; 4];
        c.read_exact(&mut echo).unwrap();
        assert_eq!(&echo, b"ping");
        drop(c);
        // Refused: another name (ruleset), an unlisted literal, another port.
        assert_eq!(socks(at, &[0], 3, &name("evil.test"), port).2[1], 2);
        assert_eq!(socks(at, &[0], 1, &[127, 0, 0, 1], port).2[1], 2);
        assert_eq!(
            socks(
                at,
                &[0],
                3,
                &name("allowed.test"),
                port.wrapping_add(1).max(1)
            )
            .2[1],
            2
        );
        // Only "no authentication" is spoken; only CONNECT.
        assert_eq!(
            socks(at, &[2], 3, &name("allowed.test"), port).1,
            vec![5, 0xff]
        );
        let conns = audit.connections();
        assert_eq!(conns.len(), 5);
        assert!(conns.iter().all(|c| c.protocol == "socks5"));
        assert_eq!(conns[0].decision, Decision::Allowed);
        assert_eq!((conns[0].bytes_up, conns[0].bytes_down), (4, 4));
        assert_eq!(
            conns[1].reason.as_deref(),
            Some("evil.test is not in `network.hosts`")
        );
        assert!(conns[1..].iter().all(|c| c.decision == Decision::Refused));
        running.stop();
        let t0 = Instant::now();
        while open.load(Ordering::SeqCst) > 0 && t0.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(open.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn tunnels_and_requests_go_through_checks_first_and_end_with_the_proxy() {
        let (port, open) = upstream();
        let (running, at, audit) = proxy(port);
        // A tunnel, with bytes sent along with the CONNECT.
        let (mut t, head) = ask(
            at,
            &format!("CONNECT Allowed.Test:{port} HTTP/1.1\r\n\r\nping"),
        );
        assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
        // The echo may have come with the head (a client that reads late
        // finds both waiting), or after it.
        let (_, echoed) = head.split_once("\r\n\r\n").unwrap();
        let mut echoed = echoed.as_bytes().to_vec();
        let mut buf = [0u8; 4];
        while echoed.len() < 4 {
            let n = t.read(&mut buf).unwrap();
            assert!(n > 0, "the tunnel closed before the echo");
            echoed.extend_from_slice(&buf[..n]);
        }
        assert_eq!(echoed, b"ping");
        // Plain HTTP: origin form, Host from the target, no proxy fields.
        let (mut c, head) = ask(at, &format!("GET http://allowed.test:{port}/p?q HTTP/1.1\r\nHost: evil\r\nProxy-Authorization: Basic eA==\r\n\r\n"));
        let mut rest = String::new();
        let _ = c.read_to_string(&mut rest);
        assert_eq!(
            format!("{head}{rest}"),
            format!("HTTP/1.0 200 OK\r\n\r\nGET /p?q HTTP/1.1|Host: allowed.test:{port}|Connection: close||")
        );
        for (req, status, why) in [
            (
                format!("CONNECT evil.test:{port} HTTP/1.1\r\n\r\n"),
                403,
                "evil.test is not in `network.hosts`",
            ),
            (
                format!(
                    "CONNECT allowed.test:{} HTTP/1.1\r\n\r\n",
                    port.wrapping_add(1).max(1)
                ),
                403,
                "is not in `network.ports`",
            ),
            (
                format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n"),
                403,
                "IP literal",
            ),
            (
                format!("CONNECT private.test:{port} HTTP/1.1\r\n\r\n"),
                403,
                "10.0.0.1, a private address",
            ),
            (
                format!("GET https://allowed.test:{port}/ HTTP/1.1\r\n\r\n"),
                400,
                "use CONNECT",
            ),
            ("\u{0}\u{1}garbage\r\n\r\n".to_string(), 400, "malformed"),
            (
                format!(
                    "GET http://a/ HTTP/1.1\r\nX: {}\r\n\r\n",
                    "x".repeat(20_000)
                ),
                431,
                "over 16384 bytes",
            ),
        ] {
            let (_, head) = ask(at, &req);
            assert!(
                head.starts_with(&format!("HTTP/1.1 {status} ")),
                "{req:.60}: {head}"
            );
            assert!(head.contains(why), "{req:.60}: {head}");
        }
        assert_eq!(
            open.load(Ordering::SeqCst),
            1,
            "only the tunnel reached the upstream"
        );
        running.stop();
        // The tunnel is cut: the upstream sees its end, the client too.
        let t0 = Instant::now();
        while open.load(Ordering::SeqCst) > 0 && t0.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(open.load(Ordering::SeqCst), 0);
        assert!(matches!(t.read(&mut buf), Ok(0) | Err(_)));
        let conns = audit.connections();
        let decisions: Vec<(Option<&str>, Decision)> = conns
            .iter()
            .map(|c| (c.host.as_deref(), c.decision))
            .collect();
        assert_eq!(decisions[0], (Some("allowed.test"), Decision::Allowed));
        assert_eq!(decisions[1], (Some("allowed.test"), Decision::Allowed));
        assert_eq!(conns[0].bytes_up, 4);
        assert_eq!(conns[0].bytes_down, 4);
        assert_eq!(conns[0].protocol, "connect");
        // Still open when the proxy stopped: cut by the end of the run.
        assert_eq!(conns[0].cut, Some("run_ended"));
        assert_eq!(conns[1].protocol, "http");
        assert!(conns[1].bytes_down > 0);
        assert_eq!(
            conns[0].address.as_deref(),
            Some(format!("127.0.0.1:{port}").as_str())
        );
        // The refused answer is what the report shows; nothing connected to it.
        assert_eq!(
            conns[5].address.as_deref(),
            Some(format!("10.0.0.1:{port}").as_str())
        );
        assert_eq!(
            conns[4].address.as_deref(),
            None,
            "refused before resolving"
        );
        assert!(conns[2..]
            .iter()
            .all(|c| c.decision == Decision::Refused && c.bytes_up == 0));
    }

    /// An upstream that reads until the client is done sending, then
    /// neither answers nor closes until the test ends (a half-open peer).
    fn silent_upstream() -> u16 {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        std::thread::spawn(move || {
            let mut held = Vec::new();
            for mut c in l.incoming().flatten() {
                let mut buf = [0u8; 4096];
                while matches!(c.read(&mut buf), Ok(n) if n > 0) {}
                held.push(c);
            }
        });
        port
    }

    fn open_tunnel(at: u16, port: u16) -> TcpStream {
        let (c, head) = ask(at, &format!("CONNECT allowed.test:{port} HTTP/1.1\r\n\r\n"));
        assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
        c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        c
    }

    fn ping(c: &mut TcpStream) {
        c.write_all(b"ping").unwrap();
        let mut echo = [0u8; 4];
        c.read_exact(&mut echo).unwrap();
        assert_eq!(&echo, b"ping");
    }

    /// Reads until the proxy closes (not until the read timeout): what came
    /// before the end.
    fn until_closed(c: &mut TcpStream) -> Vec<u8> {
        let mut got = Vec::new();
        if let Err(e) = c.read_to_end(&mut got) {
            assert!(
                !matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ),
                "still open: {e}"
            );
        }
        got
    }

    #[test]
    fn idle_and_half_open_tunnels_are_cut_and_recorded_busy_ones_are_not() {
        let (echo, open) = upstream();
        let silent = silent_upstream();
        let idle = Duration::from_millis(1500);
        let (running, at, audit) = proxy_with(
            &[echo, silent],
            Timeouts {
                head: HEAD_TIMEOUT,
                idle,
            },
        );
        // 0: used, then left open and silent both ways.
        let mut quiet = open_tunnel(at, echo);
        ping(&mut quiet);
        // 1: the client is done sending (a half close); the host never
        // answers nor closes.
        let mut half = open_tunnel(at, silent);
        half.write_all(b"last words").unwrap();
        half.shutdown(std::net::Shutdown::Write).unwrap();
        // 2: bytes keep moving, in gaps well under the idle timeout, for
        // longer than it.
        let mut busy = open_tunnel(at, echo);
        let t0 = Instant::now();
        while t0.elapsed() < idle * 3 {
            ping(&mut busy);
            std::thread::sleep(idle / 15);
        }
        // The two idle ones were cut: each client sees the end, and so
        // does the echoing host behind the first.
        assert_eq!(until_closed(&mut quiet), b"");
        assert_eq!(until_closed(&mut half), b"");
        ping(&mut busy);
        drop(busy);
        let t1 = Instant::now();
        while open.load(Ordering::SeqCst) > 0 && t1.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(open.load(Ordering::SeqCst), 0, "the upstreams saw the end");
        let conns = audit.connections();
        assert_eq!(conns.len(), 3);
        let cut: Vec<Option<&str>> = conns.iter().map(|c| c.cut).collect();
        assert_eq!(cut, [Some("idle"), Some("idle"), None]);
        assert!(conns.iter().all(|c| c.decision == Decision::Allowed));
        assert_eq!((conns[0].bytes_up, conns[0].bytes_down), (4, 4));
        assert_eq!((conns[1].bytes_up, conns[1].bytes_down), (10, 0));
        assert!(conns[2].bytes_up > 4 * 15);
        // Cut after the idle timeout, not before.
        assert!(conns[0].duration_ms >= idle.as_millis() as f64);
        running.stop();
    }

    #[test]
    fn a_client_that_never_finishes_its_request_is_answered_408() {
        let (port, _) = upstream();
        let (running, at, audit) = proxy_with(
            &[port],
            Timeouts {
                head: Duration::from_millis(300),
                idle: IDLE_TIMEOUT,
            },
        );
        // Silent from the start, and a head that never ends.
        let mut silent = TcpStream::connect(("127.0.0.1", at)).unwrap();
        silent
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        let mut partial = TcpStream::connect(("127.0.0.1", at)).unwrap();
        partial
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        partial
            .write_all(format!("CONNECT allowed.test:{port} HTTP/1.1\r\nX: ").as_bytes())
            .unwrap();
        for c in [&mut silent, &mut partial] {
            let got = String::from_utf8(until_closed(c)).unwrap();
            assert!(got.starts_with("HTTP/1.1 408 "), "{got}");
            assert!(
                got.ends_with("no complete request head within 0.3s\n"),
                "{got}"
            );
        }
        let conns = audit.connections();
        assert_eq!(conns.len(), 2);
        assert!(conns.iter().all(|c| c.decision == Decision::Refused
            && c.reason.as_deref() == Some("no complete request head within 0.3s")));
        running.stop();
    }

    #[test]
    fn an_idle_tunnel_from_the_bridge_socket_is_cut_too() {
        use std::os::unix::net::{UnixListener, UnixStream};
        let (echo, open) = upstream();
        let dir = std::env::temp_dir().join(format!("sealc-proxy-idle-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("bridge.sock");
        let own = Own {
            policy: Policy::new(
                &["allowed.test".to_string()],
                [echo],
                [policy::Cidr::parse("127.0.0.1/32").unwrap()],
            ),
            audit: Audit::new(
                None,
                [("allowed.test".to_string(), "127.0.0.1".parse().unwrap())].into(),
            ),
            timeouts: Timeouts {
                head: HEAD_TIMEOUT,
                idle: Duration::from_millis(500),
            },
            ..Own::default()
        };
        let running = own.serve_unix(UnixListener::bind(&path).unwrap()).unwrap();
        let mut c = UnixStream::connect(&path).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        write!(c, "CONNECT allowed.test:{echo} HTTP/1.1\r\n\r\nping").unwrap();
        let mut got = Vec::new();
        let mut b = [0u8; 256];
        while !got.ends_with(b"ping") {
            let n = c.read(&mut b).unwrap();
            assert!(n > 0, "{got:?}");
            got.extend_from_slice(&b[..n]);
        }
        assert!(got.starts_with(b"HTTP/1.1 200 "));
        // Then nothing either way: the proxy ends it.
        let mut rest = Vec::new();
        let end = c.read_to_end(&mut rest);
        assert!(end.is_ok() && rest.is_empty(), "{end:?} {rest:?}");
        let t0 = Instant::now();
        while open.load(Ordering::SeqCst) > 0 && t0.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(open.load(Ordering::SeqCst), 0, "the upstream saw the end");
        let conns = own.audit.connections();
        assert_eq!(conns.len(), 1);
        assert_eq!(conns[0].cut, Some("idle"));
        assert_eq!((conns[0].bytes_up, conns[0].bytes_down), (4, 4));
        running.stop();
        let _ = std::fs::remove_dir_all(&dir);
    }
}
