//! The limits watcher: every 50 ms, the resident memory, the number and the
//! CPU ticks of the sandbox's processes (as sealc's init sees them inside a
//! Linux sandbox); past the memory limit it asks the run to stop. What it
//! saw is the run report's peak memory and part of its CPU time.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::outcome::{cpu_ticks, usage};

/// What the watcher saw, once it has stopped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Watched {
    /// The most resident memory of the sandbox's processes together, KiB.
    pub peak_rss_kib: u64,
    /// The most processes seen at once.
    pub most_processes: u64,
    /// CPU ticks of every process seen, each at the most it was seen with (a
    /// process killed at a limit is never waited for by sealc, so its time
    /// would be lost otherwise).
    pub cpu_ticks: u64,
}

/// A running watcher.
pub(super) struct Watch {
    peak: Arc<Mutex<(u64, u64)>>,
    ticks: Arc<Mutex<std::collections::BTreeMap<i32, u64>>>,
    done: Arc<AtomicBool>,
}

/// Start watching the processes `members` names; past `memory_kib` (if
/// set), `over` is called once and the watcher ends.
pub(super) fn spawn(
    members: impl Fn() -> Vec<i32> + Send + 'static,
    memory_kib: Option<u64>,
    over: impl FnOnce() + Send + 'static,
) -> Watch {
    let w = Watch {
        peak: Arc::new(Mutex::new((0, 0))),
        ticks: Arc::new(Mutex::new(std::collections::BTreeMap::new())),
        done: Arc::new(AtomicBool::new(false)),
    };
    let (peak, ticks, done) = (w.peak.clone(), w.ticks.clone(), w.done.clone());
    std::thread::spawn(move || loop {
        // First sleep: a short run costs the watcher nothing.
        std::thread::sleep(Duration::from_millis(50));
        if done.load(Ordering::Relaxed) {
            return;
        }
        let pids = members();
        if let Ok(mut t) = ticks.lock() {
            for p in &pids {
                let (own, _) = cpu_ticks(&p.to_string());
                let e = t.entry(*p).or_default();
                *e = (*e).max(own);
            }
        }
        let (rss, n) = usage(&pids);
        if let Ok(mut p) = peak.lock() {
            p.0 = p.0.max(rss);
            p.1 = p.1.max(n);
        }
        if memory_kib.is_some_and(|m| rss > m) {
            over();
            return;
        }
    });
    w
}

impl Watch {
    /// Stop watching, and say what was seen.
    pub(super) fn finish(self) -> Watched {
        self.done.store(true, Ordering::Relaxed);
        let (peak_rss_kib, most_processes) = self.peak.lock().map(|p| *p).unwrap_or_default();
        let cpu_ticks = self.ticks.lock().map(|t| t.values().sum()).unwrap_or(0);
        Watched {
            peak_rss_kib,
            most_processes,
            cpu_ticks,
        }
    }
}
