//! How a run ended: the exit status read back, the signal that ended it
//! and whether sealc sent it, and the CPU the sandbox used.

use super::*;

/// How a run went, for the exit status and the report.
#[derive(Clone, Debug, Default)]
pub struct RunResult {
    pub outcome: Option<report::Outcome>,
    pub stdout: report::Stream,
    pub stderr: report::Stream,
    pub cpu_seconds: Option<f64>,
    pub peak_memory_kib: Option<u64>,
    pub limits_reached: Vec<crate::limit::Limit>,
    /// A process of the sandbox was still there when `run` returned (its
    /// pid 1 did not end after `SIGKILL`): nothing may be handed back.
    pub survivors: bool,
    /// What the command left running when it ended, as the init counted
    /// them before ending them.
    pub left_running: Option<report::LeftRunning>,
    /// `codex.mcp_servers`: each server and what its starts did.
    pub mcp: Vec<super::mcp::ServerReport>,
}

/// The init's `left` line on the status pipe (`left {"count":N,"names":[...]}`).
pub(super) fn left_running(status_text: &str) -> Option<report::LeftRunning> {
    status_text
        .lines()
        .find_map(|l| l.strip_prefix(super::inside::LEFT_LINE))
        .and_then(|json| serde_json::from_str(json).ok())
}

impl RunResult {
    pub fn exit_code(&self) -> i32 {
        self.outcome
            .as_ref()
            .map_or(SANDBOX_FAILED, report::Outcome::exit_code)
    }
}

/// The exit status a shell would report: the code, or 128 + the signal.
pub fn exit_code(status: ExitStatus) -> i32 {
    status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(SANDBOX_FAILED)
}

/// [`exit_code`] of a status from `wait`.
pub fn exit_code_of(status: rustix::process::WaitStatus) -> i32 {
    status
        .exit_status()
        .or_else(|| status.terminating_signal().map(|s| 128 + s))
        .unwrap_or(SANDBOX_FAILED)
}

/// Resident memory (KiB) and number of the processes `pids`.
pub(super) fn usage(pids: &[i32]) -> (u64, u64) {
    let page_kib = rustix::param::page_size() as u64 / 1024;
    let rss: u64 = pids
        .iter()
        .filter_map(|p| std::fs::read_to_string(format!("/proc/{p}/statm")).ok())
        .filter_map(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .sum();
    (rss * page_kib, pids.len() as u64)
}

/// CPU ticks in `/proc/<pid>/stat`: `utime + stime` (fields 14, 15), and
/// `cutime + cstime` (16, 17) of its waited-for children.
pub(super) fn cpu_ticks(pid: &str) -> (u64, u64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // After the command name, which is in parentheses and may hold spaces,
    // the fields from 3 (the state) on.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let n = |i: usize| {
        f.get(i - 3)
            .and_then(|x| x.parse::<u64>().ok())
            .unwrap_or(0)
    };
    (n(14) + n(15), n(16) + n(17))
}

/// CPU seconds (user + system) of this process's waited-for children and
/// theirs (`RUSAGE_CHILDREN`).
#[allow(unsafe_code)]
pub(super) fn children_cpu() -> f64 {
    // SAFETY: `rusage` is plain data, for which all zeroes is a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, writable `rusage` for the duration of the
    // call, which writes nothing else.
    if unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) } != 0 {
        return 0.0;
    }
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    t(ru.ru_utime) + t(ru.ru_stime)
}

pub(super) fn seconds(ticks: u64) -> f64 {
    ticks as f64 / rustix::param::clock_ticks_per_second() as f64
}

/// The host pids of every process inside the bubblewrap sandbox whose
/// `bwrap` is `bwrap`: those in the pid namespace of its child. Bubblewrap
/// does not forward signals, and a signal to it kills the sandbox outright;
/// sent to the processes themselves, a signal reaches the command, which may
/// handle it (the init, pid 1, ignores it). Empty when `/proc` does not tell.
pub(super) fn sandbox_members(bwrap: u32) -> Vec<i32> {
    let read_ns = |pid: &str| std::fs::read_link(format!("/proc/{pid}/ns/pid")).ok();
    let children =
        std::fs::read_to_string(format!("/proc/{bwrap}/task/{bwrap}/children")).unwrap_or_default();
    let Some(ns) = children.split_whitespace().find_map(|c| {
        let ns = read_ns(c)?;
        (Some(&ns) != read_ns(&bwrap.to_string()).as_ref()).then_some(ns)
    }) else {
        return Vec::new();
    };
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()))
        .filter(|pid| read_ns(&pid.to_string()).as_ref() == Some(&ns))
        .collect()
}

/// How the run ended, from what sealc saw and what the inside reported on
/// the status pipe: `init` first (the sandbox was built and sealc's init
/// runs in it; bubblewrap's `--info-fd` only says how far it got when it
/// is missing), then `start-failed <why>` from the init or `__confine`, `exited <code>` or
/// `signaled <n> [cpu_ns <t>]` from the init, `t` the command's own CPU
/// time). Without a sandbox (macOS), the command's own CPU time is taken
/// from `children_cpu`, what sealc's waited-for children used.
pub(super) fn classify(
    plan: &Plan,
    status: ExitStatus,
    stop: Option<Stop>,
    info: &str,
    status_text: &str,
    children_cpu: f64,
) -> report::Outcome {
    use report::Outcome as O;
    match stop {
        Some(Stop::Wall) => return O::WallTimeout,
        Some(Stop::Memory) => return O::MemoryLimit,
        Some(Stop::Output) => return O::OutputLimit,
        _ => {}
    }
    let mut code = exit_code(status);
    if plan.mechanism.has_init() {
        // Built only once sealc's own init ran inside and said so: bubblewrap
        // reports its child on `--info-fd` before that child has set up
        // anything, and whatever it exits with after a failure (1 for a
        // mount it was refused) is no outcome of the command's.
        let mut lines = status_text.lines();
        if lines.next() != Some(inside::INIT_LINE) {
            let message = if plan.mechanism == super::Mechanism::Landlock {
                format!("sealc's init ended (exit {code}) before it started: nothing of the command ran")
            } else {
                let when = if info.contains("child-pid") {
                    "while it was building the sandbox"
                } else {
                    "before it made the sandbox's namespaces"
                };
                format!("bubblewrap ended (exit {code}) {when}: nothing of the command ran")
            };
            return O::CouldNotStart {
                phase: report::Phase::SandboxStart,
                message,
            };
        }
        for line in lines {
            if let Some(rest) = line.strip_prefix("start-failed ") {
                let (kind, why) = rest.split_once(' ').unwrap_or((rest, ""));
                let kind =
                    inside::StartFailure::parse(kind).unwrap_or(inside::StartFailure::Sandbox);
                return O::CouldNotStart {
                    phase: kind.phase(),
                    message: why.to_string(),
                };
            }
            if let Some((n, own)) = line.strip_prefix("signaled ").and_then(signaled_line) {
                return classify_signal(plan, n, own);
            }
            if let Some(c) = line.strip_prefix("exited ").and_then(|c| c.parse().ok()) {
                code = c;
            }
        }
        return O::Exited { code };
    }
    match status.signal() {
        Some(n) => classify_signal(plan, n, Some(children_cpu)),
        None => O::Exited { code },
    }
}

/// `<n> [cpu_ns <t>]` of the init's `signaled` line: the signal, and the
/// command's own CPU seconds when the init could read them.
pub(super) fn signaled_line(rest: &str) -> Option<(i32, Option<f64>)> {
    let mut words = rest.split_whitespace();
    let n = words.next()?.parse().ok()?;
    let own = match (words.next(), words.next()) {
        (Some("cpu_ns"), Some(t)) => t.parse::<u64>().ok().map(|ns| ns as f64 / 1e9),
        _ => None,
    };
    Some((n, own))
}

/// How far below a limit the CPU time sealc reads back on macOS may lie
/// and still count as reaching it (rusage scales user and system time to
/// the scheduler's runtime). On Linux the init reads the clock the limit
/// itself counts, which has reached the limit when the kernel fires it.
pub(super) const RUSAGE_TOLERANCE: f64 = 0.05;

/// The outcome of a command killed by `signal`, having used `own` CPU
/// seconds itself (`None`: unknown). A limit is blamed only where it
/// fired: `SIGXCPU` once the command's own CPU time reached `cpu_seconds`
/// (the soft limit), `SIGKILL` once it reached the hard limit a second
/// later; `SIGXFSZ` under the Linux sandbox, whose filter leaves the
/// kernel's `RLIMIT_FSIZE` its only source. Anything else is the signal
/// the command got.
pub(super) fn classify_signal(plan: &Plan, signal: i32, own: Option<f64>) -> report::Outcome {
    use report::Outcome as O;
    let tolerance = if plan.mechanism.has_init() {
        0.0
    } else {
        RUSAGE_TOLERANCE
    };
    let reached = |limit: u64| own.is_some_and(|c| c + tolerance >= limit as f64);
    let cpu = plan.limits.cpu_seconds;
    match signal {
        libc::SIGXCPU if cpu.is_some_and(reached) => O::CpuLimit,
        libc::SIGKILL if cpu.is_some_and(|c| reached(c.saturating_add(1))) => O::CpuLimit,
        libc::SIGXFSZ if plan.mechanism.has_init() && plan.limits.file_size_mib.is_some() => {
            O::FileSizeLimit
        }
        n => O::Signaled { signal: n },
    }
}
