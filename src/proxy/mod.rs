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

mod audit;
mod conn;
mod held;
mod relay;
mod serve;

use self::audit::lock;
pub use self::audit::{parse_resolve, Audit, Log};
pub use self::conn::Running;
use self::conn::{Conn, Ending, Listener, Slot, State};
pub use self::held::HeldKey;
use self::relay::{relay, relay_streams, Socket, LINGER, LINGER_BYTES};
use self::serve::{accept_tcp, accept_unix, refused, Refused, Shared};

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

use crate::audit::{Connection, Decision};
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
    /// Keys sealc holds, and where it adds them (`codex.provider.hold_key`).
    pub held: Vec<HeldKey>,
    /// The certificate authorities the held keys' APIs are checked against:
    /// `None`, the host's own store (tests give theirs).
    pub trust: Option<Vec<rustls::pki_types::CertificateDer<'static>>>,
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
        NetMode::Allowlist => {
            let mut layer = serde_json::json!({
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
            });
            if !own.held.is_empty() {
                layer["held_keys"] = own
                    .held
                    .iter()
                    .map(|k| {
                        serde_json::json!({
                            "secret": k.secret,
                            "host": k.host.to_string(),
                            "port": k.port,
                            "path": k.path,
                            "header": "authorization",
                            "tls": "checked against the host's trust store",
                        })
                    })
                    .collect::<serde_json::Value>();
            }
            layer
        }
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
            held: Vec::new(),
            trust: None,
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
        // Before anything is served: a held key with no way to check its
        // API's certificate stops the run here.
        let tls = if self.held.is_empty() {
            None
        } else {
            Some(held::client(self.trust.as_deref())?)
        };
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
            held: self.held.clone(),
            tls,
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

#[cfg(test)]
mod tests;
