//! One connection's state and its slot among the proxy's connections, and
//! the running proxy that ends them all when dropped.

use super::*;

/// One connection, live.
pub(super) struct Conn {
    pub(super) time: SystemTime,
    pub(super) start: Instant,
    pub(super) up: AtomicU64,
    pub(super) down: AtomicU64,
    /// When a byte last moved either way, in nanoseconds after `start`.
    pub(super) last: AtomicU64,
    pub(super) state: Mutex<State>,
}

pub(super) struct State {
    pub(super) protocol: &'static str,
    pub(super) host: Option<String>,
    pub(super) port: Option<u16>,
    pub(super) address: Option<SocketAddr>,
    pub(super) decision: Decision,
    pub(super) reason: Option<String>,
    pub(super) ended: Option<Instant>,
    /// Relaying now: if the task is dropped, the run ended under it.
    pub(super) relaying: bool,
    pub(super) cut: Option<&'static str>,
    pub(super) held_key: Option<String>,
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
            held_key: None,
        }
    }
}

impl Conn {
    pub(super) fn snapshot(&self) -> Connection {
        let s = lock(&self.state);
        let end = s.ended.unwrap_or_else(Instant::now);
        let ms = end.duration_since(self.start).as_micros() as f64 / 1000.0;
        Connection {
            time: crate::audit::rfc3339(self.time, true),
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
            held_key: s.held_key.clone(),
        }
    }

    /// Count `k` bytes that went one way (`n`: `up` or `down`), now.
    pub(super) fn moved(&self, n: &AtomicU64, k: usize) {
        n.fetch_add(k as u64, Ordering::Relaxed);
        let at = self.start.elapsed().as_nanos() as u64;
        self.last.fetch_max(at, Ordering::Relaxed);
    }

    pub(super) fn set(&self, f: impl FnOnce(&mut State)) {
        f(&mut lock(&self.state));
    }
}

/// Marks its connection ended when dropped: also when the runtime stops
/// and drops the task in the middle of a tunnel.
pub(super) struct Ending(pub(super) Arc<Conn>);

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
pub(super) struct Slot(pub(super) Arc<AtomicUsize>);

impl Slot {
    pub(super) fn take(n: &Arc<AtomicUsize>) -> Option<Slot> {
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
    pub(super) stop: Option<std::os::unix::net::UnixStream>,
    pub(super) thread: Option<std::thread::JoinHandle<()>>,
}

impl Running {
    /// Stop accepting, cut every connection, and wait until that is done.
    pub fn stop(mut self) {
        self.halt();
    }

    pub(super) fn halt(&mut self) {
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

pub(super) enum Listener {
    Unix(std::os::unix::net::UnixListener),
    Tcp(Vec<std::net::TcpListener>),
}
