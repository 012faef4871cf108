//! The Landlock mode's process tree. Without a pid namespace, nothing ends
//! the command's processes with it: sealc's init is their child subreaper
//! (an orphan among them is handed to it, never to the host's init), and it
//! ends every descendant when the command ends, or as soon as sealc itself
//! goes away.

use crate::failure::Failure;

/// Make this process the subreaper of what it starts, in a session of its
/// own (no controlling terminal: `/dev/tty` opens nothing of the
/// caller's), and end everything below it if its parent, sealc, ends.
pub(super) fn take_charge() -> Result<(), Failure> {
    rustix::process::setsid().map_err(|e| Failure::os("cannot start a session of its own", e))?;
    rustix::process::set_child_subreaper(Some(rustix::process::getpid()))
        .map_err(|e| Failure::os("cannot become the subreaper of the command", e))?;
    // A pidfd of the parent, taken before checking it is still the parent
    // (else the number may be another process's by now).
    let parent = rustix::process::getppid()
        .ok_or_else(|| Failure::new("sealc ended before the command started"))?;
    let fd = rustix::process::pidfd_open(parent, rustix::process::PidfdFlags::empty())
        .map_err(|e| Failure::os("cannot watch sealc", e))?;
    if rustix::process::getppid() != Some(parent) {
        return Err(Failure::new("sealc ended before the command started"));
    }
    std::thread::spawn(move || {
        use rustix::event::{poll, PollFd, PollFlags};
        loop {
            let mut fds = [PollFd::new(&fd, PollFlags::IN)];
            match poll(&mut fds, None) {
                Err(rustix::io::Errno::INTR) | Ok(0) => continue,
                Ok(_) | Err(_) => break,
            }
        }
        end_all();
        std::process::exit(crate::exec::SANDBOX_FAILED);
    });
    Ok(())
}

/// The children of `pid` (from each process's parent in `/proc`).
fn children(pid: i32) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|p| parent_of(*p) == Some(pid))
        .collect()
}

/// The parent of `pid`, from `/proc/PID/stat` (after the command name,
/// which may hold anything: the last `)`).
pub(crate) fn parent_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read(format!("/proc/{pid}/stat")).ok()?;
    let close = stat.iter().rposition(|b| *b == b')')?;
    let rest = std::str::from_utf8(stat.get(close + 1..)?).ok()?;
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// Every descendant of `root` now (not `root` itself).
pub(crate) fn descendants(root: i32) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let parents: Vec<(i32, i32)> = dir
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|p| Some((p, parent_of(p)?)))
        .collect();
    let mut out = Vec::new();
    let mut frontier = vec![root];
    while let Some(p) = frontier.pop() {
        for (c, _) in parents.iter().filter(|(_, pp)| *pp == p) {
            if !out.contains(c) {
                out.push(*c);
                frontier.push(*c);
            }
        }
    }
    out
}

/// Whether `kill(-1)` from this process reaches exactly the run's
/// processes: set once this init holds a Landlock domain that scopes
/// signals (ABI 6), in which `__confine`'s domain nests.
static SCOPED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Put this init (and so everything it starts) in a Landlock domain that
/// scopes signals alone, where the kernel has it (ABI 6): a signal from
/// inside then reaches no process outside the run, and the init's own
/// `kill(-1)` reaches every process of the run and nothing else.
pub(super) fn scope_signals() {
    use landlock::{CompatLevel, Compatible, Ruleset, RulesetAttr, Scope};
    if super::landlock_abi() < 6 {
        return;
    }
    let status = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .scope(Scope::Signal)
        .and_then(|r| r.create())
        .and_then(|r| r.restrict_self());
    if status.is_ok_and(|s| s.ruleset == landlock::RulesetStatus::FullyEnforced) {
        SCOPED.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

/// End every process below this one. With signals scoped (ABI 6): one
/// `kill(-1, SIGKILL)` reaches every process of the run at once (the
/// kernel lets no `fork` through while it runs, nor after, since each
/// forking process has a fatal signal pending), then everything is reaped.
/// Without: `SIGKILL` to each child in turn (an orphan below comes up to
/// this subreaper when its parent dies, and is ended in the next round),
/// every zombie reaped before the next look at `/proc`.
pub(super) fn end_all() -> u64 {
    use rustix::process::{kill_process, wait, Pid, Signal, WaitOptions};
    let me = rustix::process::getpid().as_raw_nonzero().get();
    let mut reaped = 0;
    loop {
        if SCOPED.load(std::sync::atomic::Ordering::SeqCst) {
            // SAFETY: `kill(-1, SIGKILL)` takes no pointer; the Landlock
            // domain this process holds keeps it to the run's processes
            // (its answer says nothing: it is 0 when every one was EPERM).
            #[allow(unsafe_code)]
            unsafe {
                libc::kill(-1, libc::SIGKILL);
            }
        } else {
            for c in children(me) {
                if let Some(pid) = Pid::from_raw(c) {
                    let _ = kill_process(pid, Signal::KILL);
                }
            }
        }
        // Reap what has ended; with children left but none ended yet,
        // wait for one; with none at all (ECHILD), the run is over.
        let mut left = false;
        loop {
            match wait(WaitOptions::NOHANG) {
                Ok(Some(_)) => reaped += 1,
                Err(rustix::io::Errno::INTR) => continue,
                Ok(None) => {
                    left = true;
                    break;
                }
                Err(_) => break,
            }
        }
        if !left {
            break;
        }
        match wait(WaitOptions::empty()) {
            Ok(Some(_)) => reaped += 1,
            Err(rustix::io::Errno::INTR) => continue,
            Ok(None) | Err(_) => break,
        }
    }
    reaped
}

/// As pid 1 of the run's pid namespace (the namespaces mode): end every
/// other process of it with one `kill(-1, SIGKILL)` and reap them,
/// counting. `None` when this init is not pid 1 of a namespace of its own,
/// where `kill(-1)` would reach further (the kernel ends the rest when the
/// init exits, as before).
pub(super) fn end_namespace() -> Option<u64> {
    use rustix::process::{wait, WaitOptions};
    if rustix::process::getpid().as_raw_nonzero().get() != 1 {
        return None;
    }
    // SAFETY: `kill(-1, SIGKILL)` takes no pointer; from pid 1 of a pid
    // namespace it reaches the processes of that namespace only.
    #[allow(unsafe_code)]
    unsafe {
        libc::kill(-1, libc::SIGKILL);
    }
    let mut reaped = 0;
    loop {
        match wait(WaitOptions::empty()) {
            Ok(Some(_)) => reaped += 1,
            Err(rustix::io::Errno::INTR) => continue,
            Ok(None) | Err(_) => return Some(reaped),
        }
    }
}

/// The names (`comm`) of the first few processes left below this init, for
/// the report: its descendants in the Landlock mode; in a pid namespace,
/// every other process of it, where `/proc` is the namespace's own (this
/// init is `/proc/self` = 1 there). Sorted; none where they cannot be read.
pub(super) fn left_names(landlock: bool) -> Vec<String> {
    const SHOWN: usize = 16;
    let me = rustix::process::getpid().as_raw_nonzero().get();
    let pids: Vec<i32> = if landlock {
        descendants(me)
    } else if std::fs::read_link("/proc/self").is_ok_and(|l| l.as_os_str() == "1") {
        std::fs::read_dir("/proc")
            .map(|d| {
                d.flatten()
                    .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
                    .filter(|p| *p != me)
                    .collect()
            })
            .unwrap_or_default()
    } else {
        Vec::new()
    };
    let mut names: Vec<String> = pids
        .iter()
        .filter_map(|p| std::fs::read_to_string(format!("/proc/{p}/comm")).ok())
        .map(|c| c.trim_end_matches('\n').to_string())
        .collect();
    names.sort();
    names.truncate(SHOWN);
    names
}
