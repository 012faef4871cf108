//! The proxy's audit: every connection it let through or refused, in the
//! order they ended, for the run report; and `--resolve` overrides.

use super::*;

/// A refusal line for sealc's stderr.
pub type Log = Box<dyn Fn(&str) + Send + Sync>;

/// What a run's proxy is told from outside (where refusal lines go, the
/// test resolver) and what it records (each connection). Clones share it.
#[derive(Clone, Default)]
pub struct Audit(pub(super) Arc<AuditInner>);

#[derive(Default)]
pub(super) struct AuditInner {
    pub(super) log: Option<Log>,
    pub(super) resolve: BTreeMap<String, IpAddr>,
    pub(super) conns: Mutex<Vec<Arc<Conn>>>,
    pub(super) omitted: AtomicU64,
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

    pub(super) fn say(&self, line: &str) {
        if let Some(log) = &self.0.log {
            log(line);
        }
    }

    pub(super) fn open(&self) -> Arc<Conn> {
        let c = Arc::new(Conn {
            time: SystemTime::now(),
            start: Instant::now(),
            up: AtomicU64::new(0),
            down: AtomicU64::new(0),
            last: AtomicU64::new(0),
            state: Mutex::new(State::default()),
        });
        let mut all = lock(&self.0.conns);
        if all.len() < crate::audit::MAX_CONNECTIONS {
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
    pub fn fill(&self, r: &mut crate::audit::NetworkAudit) {
        r.network = self.connections();
        r.network_omitted = self.omitted();
        r.resolve_overrides = self.overrides();
    }
}

pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
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
