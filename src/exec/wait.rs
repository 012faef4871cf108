//! Confine and wait: start the sandbox, relay its standard streams (with
//! [`stdio::relay`]), watch its limits (with [`super::watch`]) and signals,
//! and end it.

use super::*;

/// Why sealc itself stopped the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Stop {
    Signal,
    Wall,
    Memory,
    Output,
}

pub(super) enum Event {
    Exited(io::Result<ExitStatus>),
    Signal(i32),
    Stop(Stop),
}

/// Open `path` without following any link on the way (every component is
/// opened with `O_NOFOLLOW` from `/`), as an `O_PATH` descriptor that the
/// sandbox's builder may inherit, and check that it is `kind`.
pub(super) fn open_exact(path: &str, kind: PathKind) -> io::Result<OwnedFd> {
    use rustix::fs::{FileType, OFlags};
    let fd = user::open_nofollow(path, OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC)?;
    let ft = FileType::from_raw_mode(rustix::fs::fstat(&fd)?.st_mode);
    let ok = match kind {
        PathKind::Dir => ft == FileType::Directory,
        PathKind::File => ft == FileType::RegularFile,
        PathKind::Other => !matches!(
            ft,
            FileType::Directory | FileType::RegularFile | FileType::Symlink
        ),
    };
    if !ok {
        return Err(io::Error::other(format!(
            "{} is no longer a {} (a link or another object was put in its place)",
            quote(path),
            kind.as_str()
        )));
    }
    Ok(fd)
}

/// Let the sandbox's builder inherit `fd` (and return its number).
pub(super) fn inheritable(fd: &OwnedFd) -> io::Result<i32> {
    use std::os::fd::AsRawFd;
    rustix::io::fcntl_setfd(fd, rustix::io::FdFlags::empty())?;
    Ok(fd.as_raw_fd())
}

/// Start the plan and wait for it: own process group, exact environment,
/// stdio as [`stdio::ways`] decided, stdout and stderr relayed to the
/// caller as [`stdio::deliveries`] decided, signals forwarded, the limits
/// enforced; returns how it ended. With `trees` (started by root, see
/// [`idmap`]) the write roots are bound from their idmapped trees; with
/// `bridge`, the proxy bridge is served from that directory.
pub fn run(
    plan: &Plan,
    streams: stdio::Streams,
    trees: &[idmap::Tree],
    bridge: Option<&Bridge>,
) -> io::Result<RunResult> {
    use std::process::Stdio;
    cloexec_inherited()?;
    // sealc's own proxy (mode `allowlist`) stops when this returns.
    let mut own_proxy = None;
    // The MCP servers' sockets (`codex.mcp_servers`), served until the end.
    let mut broker = None;
    if let Some(b) = &plan.bridge {
        let dir = bridge.ok_or_else(|| io::Error::other("the bridge's directory was not made"))?;
        own_proxy = serve_outer(b, &dir.dir, plan.user, plan.proxy.as_ref())?;
        if !b.mcp.is_empty() {
            broker = Some(super::mcp::serve(
                &b.mcp,
                &dir.dir,
                dir.parent()?,
                plan.user,
            )?);
        }
    } else if let Some(own) = &plan.proxy {
        own_proxy = Some(own.serve_tcp()?);
    }
    let mut args = plan.args.clone();
    let mut keep: Vec<OwnedFd> = Vec::new();
    let mut env_writer = None;
    let mut readers: Vec<(FdSource, std::io::PipeReader)> = Vec::new();
    let mut shared: Vec<(FdSource, i32)> = Vec::new();
    // The descriptor each root path is bound from.
    let mut binds: Vec<(String, i32)> = Vec::new();
    // Protected roots and pins: opened again from an idmapped tree.
    let mut inner: Vec<idmap::Inner> = Vec::new();
    for slot in &plan.fds {
        if let Some((_, n)) = shared.iter().find(|(s, _)| *s == slot.source) {
            // One pipe: `__init` keeps it open for `__confine`, under its number.
            args[slot.at] = n.to_string().into();
            continue;
        }
        let fd = match &slot.source {
            FdSource::Bind { path, kind, .. } => open_exact(path, *kind).map_err(|e| {
                io::Error::other(format!(
                    "cannot open the root {} to mount it: {e}",
                    quote(path)
                ))
            })?,
            // The binary that is running, whatever its path names now.
            FdSource::Exe => OwnedFd::from(std::fs::File::open("/proc/self/exe")?),
            FdSource::BridgeDir => bridge
                .ok_or_else(|| io::Error::other("the bridge's directory was not made"))?
                .dir
                .fd()
                .try_clone()?,
            FdSource::Env => {
                let (r, w) = std::io::pipe()?;
                env_writer = Some(w);
                OwnedFd::from(r)
            }
            FdSource::Info | FdSource::Status => {
                let (r, w) = std::io::pipe()?;
                readers.push((slot.source.clone(), r));
                OwnedFd::from(w)
            }
        };
        let n = inheritable(&fd)?;
        if let FdSource::Bind { path, within, .. } = &slot.source {
            binds.push((path.clone(), n));
            if let Some(w) = within {
                let st = rustix::fs::fstat(&fd)?;
                inner.push(idmap::Inner::new(path, w, n, (st.st_dev, st.st_ino))?);
            }
        }
        if matches!(slot.source, FdSource::Env | FdSource::Status) {
            shared.push((slot.source.clone(), n));
        }
        args[slot.at] = n.to_string().into();
        keep.push(fd);
    }
    let mut cmd = Command::new(&plan.program);
    cmd.args(&args).env_clear();
    if plan.mechanism != super::Mechanism::Landlock {
        cmd.process_group(0);
    } // (the Landlock mode's init starts a session of its own: its group)
    if plan.mechanism.has_init() {
        // bubblewrap starts in `/`, not in the caller's working directory:
        // its process is the agent's user's, and its `/proc/PID/cwd` would
        // lead that user into a directory it could not reach. The init
        // inside enters the caller's directory itself (`--cwd`).
        cmd.current_dir("/");
    }
    if !plan.mechanism.has_init() {
        cmd.envs(plan.env.iter().map(|(k, v)| (k, v)));
        // macOS: the resource limits are set in the child before
        // `sandbox-exec` (on Linux `__confine` sets them inside).
        let limits: Vec<(crate::limit::Limit, u64)> = plan
            .limits
            .set()
            .into_iter()
            .filter(|(k, _)| !k.outside())
            .collect();
        let rlimits = inside::rlimits(&limits).map_err(io::Error::other)?;
        if !rlimits.is_empty() {
            // SAFETY: the closure runs in the child between fork and exec; it
            // only calls `setrlimit` (async-signal-safe) on values computed
            // before the fork, and allocates nothing.
            #[allow(unsafe_code)]
            unsafe {
                cmd.pre_exec(move || {
                    for (res, lim) in &rlimits {
                        rustix::process::setrlimit(*res, *lim)?;
                    }
                    Ok(())
                });
            }
        }
    }
    match plan.user {
        Some(ids) if !trees.is_empty() => {
            let prepared = idmap::Prepared::new(trees, &binds, inner, ids)?;
            // SAFETY: the closure runs in the child between fork and exec,
            // and `apply` is made for that: async-signal-safe calls on
            // values prepared before the fork, no allocation. It changes
            // the user itself (std would change it before the closure runs,
            // and mounting needs root).
            #[allow(unsafe_code)]
            unsafe {
                cmd.pre_exec(move || prepared.apply());
            }
        }
        // std drops the supplementary groups when root changes uid.
        Some(ids) => {
            cmd.uid(ids.uid).gid(ids.gid);
        }
        None => {}
    }
    let way = |w: stdio::Way| match w {
        stdio::Way::Inherit => Stdio::inherit(),
        stdio::Way::Relay => Stdio::piped(),
        stdio::Way::Null => Stdio::null(),
    };
    // A stream kept in a file (`--stdout`, `--stderr`) is relayed there,
    // also when sealc's own descriptor is closed.
    let ways = streams.ways;
    let kept = |i: usize| streams.kept[i].is_some();
    cmd.stdin(way(ways[0]))
        .stdout(way(if kept(0) { stdio::Way::Relay } else { ways[1] }))
        .stderr(way(if kept(1) { stdio::Way::Relay } else { ways[2] }));
    if plan.mechanism == super::Mechanism::Landlock {
        // Whatever the init leaves (killed at a limit, or by a signal)
        // comes up to sealc, never to the host's init.
        rustix::process::set_child_subreaper(Some(rustix::process::getpid()))?;
    }
    let mut signals = signal_hook::iterator::Signals::new(FORWARDED)?;
    let mut child = cmd.spawn()?;
    drop(keep); // the builder has its own copies now
    if let Some(mut w) = env_writer {
        let bytes = inside::encode_env(&plan.env);
        std::thread::spawn(move || {
            let _ = io::Write::write_all(&mut w, &bytes);
        });
    }
    // What bubblewrap and the inside report, read to the end; as soon as
    // bubblewrap says the sandbox is built, a pidfd of its pid 1.
    type Read = (String, Option<OwnedFd>);
    let reports: Vec<(FdSource, std::thread::JoinHandle<Read>)> = readers
        .into_iter()
        .map(|(s, mut r)| {
            let info = s == FdSource::Info;
            let h = std::thread::spawn(move || {
                let mut text = String::new();
                let _ = io::Read::read_to_string(&mut r, &mut text);
                let init = if info { sandbox_init(&text) } else { None };
                (text, init)
            });
            (s, h)
        })
        .collect();
    let (tx, rx) = mpsc::channel();
    let cap = plan.limits.output_bytes;
    if let Some(mut to) = child.stdin.take() {
        std::thread::spawn(move || {
            if let Ok(from) = io::stdin()
                .as_fd()
                .try_clone_to_owned()
                .map(std::fs::File::from)
            {
                stdio::relay(from, &mut to, None, &|| {}, stdio::Delivery::Bytes);
            }
        });
    }
    // The caller's descriptors, duplicated: the CLI may hold the lock on
    // its own `Stdout` meanwhile.
    let caller = |fd: std::os::fd::BorrowedFd<'_>| -> io::Result<std::fs::File> {
        Ok(std::fs::File::from(fd.try_clone_to_owned()?))
    };
    let mut out_relay = None;
    let mut err_relay = None;
    let [kept_out, kept_err] = streams.kept;
    if let Some(from) = child.stdout.take() {
        let to = kept_out.map_or_else(|| caller(io::stdout().as_fd()), Ok)?;
        let tx = tx.clone();
        let delivery = streams.deliveries[0];
        out_relay = Some(std::thread::spawn(move || {
            let over = || {
                let _ = tx.send(Event::Stop(Stop::Output));
            };
            stdio::relay(from, to, cap, &over, delivery)
        }));
    }
    if let Some(from) = child.stderr.take() {
        let to = kept_err.map_or_else(|| caller(io::stderr().as_fd()), Ok)?;
        let tx = tx.clone();
        let delivery = streams.deliveries[1];
        err_relay = Some(std::thread::spawn(move || {
            let over = || {
                let _ = tx.send(Event::Stop(Stop::Output));
            };
            stdio::relay(from, to, cap, &over, delivery)
        }));
    }
    let group = rustix::process::Pid::from_child(&child);
    let inside = plan.mechanism.has_init();
    let bwrap_pid = child.id();
    let tree = plan.mechanism == super::Mechanism::Landlock;
    // The Landlock mode's processes: every descendant of sealc but its
    // init (sealc is their subreaper too, should the init be gone).
    let me = std::process::id() as i32;
    let members = move || {
        if tree {
            let init = bwrap_pid as i32;
            inside::descendants(me)
                .into_iter()
                .filter(|p| *p != init)
                .collect()
        } else if inside {
            sandbox_members(bwrap_pid)
        } else {
            Vec::new()
        }
    };
    // Deliver a signal to the command: inside a Linux sandbox, to each of its
    // processes; otherwise to the process group. `SIGKILL` goes to both.
    let deliver = move |sig: rustix::process::Signal| {
        let members = members();
        if members.is_empty() || sig == rustix::process::Signal::KILL {
            let _ = rustix::process::kill_process_group(group, sig);
        }
        for pid in members
            .into_iter()
            .filter_map(rustix::process::Pid::from_raw)
        {
            let _ = rustix::process::kill_process(pid, sig);
        }
    };
    // The watcher: resident memory, processes and CPU of the sandbox.
    let watch = inside.then(|| {
        let tx = tx.clone();
        super::watch::spawn(
            members,
            plan.limits.memory_mib.map(|m| m * 1024),
            move || {
                let _ = tx.send(Event::Stop(Stop::Memory));
            },
        )
    });
    let handle = signals.handle();
    let sig_tx = tx.clone();
    std::thread::spawn(move || {
        for sig in signals.forever() {
            if sig_tx.send(Event::Signal(sig)).is_err() {
                break;
            }
        }
    });
    std::thread::spawn(move || {
        let _ = tx.send(Event::Exited(child.wait()));
    });
    let deadline = plan.timeout.map(|t| std::time::Instant::now() + t);
    // Once stopping: why, and when everything inside gets `SIGKILL`
    // (stopped or traced processes included).
    let mut stop: Option<Stop> = None;
    let mut kill_at: Option<std::time::Instant> = None;
    let begin_stop =
        |why: Stop, stop: &mut Option<Stop>, kill_at: &mut Option<std::time::Instant>| {
            if stop.is_none() {
                *stop = Some(why);
            }
            if kill_at.is_none() {
                if why == Stop::Memory {
                    deliver(rustix::process::Signal::KILL); // memory does not wait
                } else {
                    deliver(rustix::process::Signal::TERM);
                }
                *kill_at = Some(std::time::Instant::now() + GRACE);
            }
        };
    let status = loop {
        let wake = match (kill_at, deadline) {
            (Some(k), _) => Some(k),
            (None, d) if stop.is_none() => d,
            _ => None,
        };
        let event = match wake {
            Some(t) => {
                match rx.recv_timeout(t.saturating_duration_since(std::time::Instant::now())) {
                    Ok(e) => e,
                    Err(mpsc::RecvTimeoutError::Timeout) => {
                        if kill_at.is_some() {
                            deliver(rustix::process::Signal::KILL);
                            kill_at = Some(std::time::Instant::now() + GRACE);
                        } else {
                            begin_stop(Stop::Wall, &mut stop, &mut kill_at);
                        }
                        continue;
                    }
                    Err(mpsc::RecvTimeoutError::Disconnected) => break None,
                }
            }
            None => match rx.recv() {
                Ok(e) => e,
                Err(_) => break None,
            },
        };
        match event {
            Event::Exited(s) => break Some(s),
            Event::Signal(sig) => {
                if let Some(s) = rustix::process::Signal::from_named_raw(sig) {
                    deliver(s);
                }
                kill_at.get_or_insert(std::time::Instant::now() + GRACE);
                stop.get_or_insert(Stop::Signal);
            }
            Event::Stop(why) => {
                // A flood of output or memory: stop the run, whatever it does.
                if why == Stop::Memory {
                    kill_at = None; // straight to SIGKILL
                }
                begin_stop(why, &mut stop, &mut kill_at);
            }
        }
    };
    let watched = watch.map(super::watch::Watch::finish).unwrap_or_default();
    handle.close();
    // Whatever is left does not outlive sealc.
    deliver(rustix::process::Signal::KILL);
    let stdout = out_relay.and_then(|r| r.join().ok()).unwrap_or_default();
    let stderr = err_relay.and_then(|r| r.join().ok()).unwrap_or_default();
    if let Some(p) = own_proxy.take() {
        p.stop();
    }
    // After the command's CPU time is read (their own is theirs): the MCP
    // servers it started end, and the bridge goes.
    let finish = move || {
        let mcp = broker.map(super::mcp::Broker::finish).unwrap_or_default();
        if let Some(b) = bridge {
            b.remove();
        }
        mcp
    };
    let mut info = String::new();
    let mut status_text = String::new();
    let mut init = None;
    for (s, h) in reports {
        let (text, fd) = h.join().unwrap_or_default();
        match s {
            FdSource::Info => (info, init) = (text, fd),
            _ => status_text = text,
        }
    }
    // bubblewrap may be gone before its pid 1 (killed at a limit): the
    // sandbox is over only when that has ended, which the kernel lets
    // happen only after every other process of its pid namespace.
    let survivors = if tree {
        !tree_ended(&members)
    } else {
        init.is_some_and(|fd| !sandbox_ended(&fd))
    };
    let status = match status {
        Some(Ok(s)) => s,
        Some(Err(e)) => {
            finish();
            return Err(e);
        }
        None => {
            return Ok(RunResult {
                mcp: finish(),
                outcome: Some(report::Outcome::CouldNotStart {
                    phase: report::Phase::SandboxStart,
                    message: "lost track of the sandbox".into(),
                }),
                ..Default::default()
            })
        }
    };
    let (peak_kib, most) = (watched.peak_rss_kib, watched.most_processes);
    let waited = children_cpu();
    let mcp = finish();
    let cpu = waited.max(seconds(watched.cpu_ticks));
    let mut limits_reached = Vec::new();
    if plan.limits.processes.is_some_and(|n| most >= n) {
        limits_reached.push(crate::limit::Limit::Processes);
    }
    // Output cut at the limit is the limit's outcome however the threads
    // were scheduled: a fast command's output waits in the pipe, and its
    // relay may cross the limit only after the command has exited.
    if stop.is_none() && (stdout.truncated || stderr.truncated) {
        stop = Some(Stop::Output);
    }
    let outcome = classify(plan, status, stop, &info, &status_text, waited);
    limits_reached.extend(outcome.limit());
    // By name, as the report has always listed them.
    limits_reached.sort_by_key(|l| l.key());
    Ok(RunResult {
        outcome: Some(outcome),
        stdout,
        stderr,
        cpu_seconds: Some(cpu),
        peak_memory_kib: inside.then_some(peak_kib),
        limits_reached,
        survivors,
        left_running: super::outcome::left_running(&status_text),
        mcp,
    })
}

/// The sandbox's pid 1, from bubblewrap's `--info-fd` report: a pidfd,
/// checked after opening to be of a process in the reported pid namespace
/// (else that process has ended already and the number may be another's).
pub(super) fn sandbox_init(info: &str) -> Option<OwnedFd> {
    let v: serde_json::Value = serde_json::from_str(info).ok()?;
    let pid = i32::try_from(v.get("child-pid")?.as_u64()?).ok()?;
    let fd = rustix::process::pidfd_open(
        rustix::process::Pid::from_raw(pid)?,
        rustix::process::PidfdFlags::empty(),
    )
    .ok()?;
    let ns = std::fs::read_link(format!("/proc/{pid}/ns/pid")).ok()?;
    let same = match v.get("pid-namespace").and_then(|n| n.as_u64()) {
        Some(n) => ns == Path::new(&format!("pid:[{n}]")),
        None => std::fs::read_link("/proc/self/ns/pid").is_ok_and(|own| own != ns),
    };
    same.then_some(fd)
}

/// The Landlock mode's end: every process left below sealc killed and
/// reaped (sealc is their subreaper); `false` when some are still there
/// after ten seconds.
fn tree_ended(members: &dyn Fn() -> Vec<i32>) -> bool {
    let until = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let left = members();
        for p in left
            .iter()
            .filter_map(|p| rustix::process::Pid::from_raw(*p))
        {
            let _ = rustix::process::kill_process(p, rustix::process::Signal::KILL);
        }
        while let Ok(Some(_)) = rustix::process::wait(rustix::process::WaitOptions::NOHANG) {}
        if left.is_empty() {
            return true;
        }
        if std::time::Instant::now() > until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Wait until the sandbox's pid 1 has ended, with `SIGKILL` if it is still
/// there (after its pid namespace's other processes: the kernel ends them
/// first); `false` when it has not ended after ten seconds.
pub(super) fn sandbox_ended(init: &OwnedFd) -> bool {
    use rustix::event::{poll, PollFd, PollFlags, Timespec};
    let ended = |secs: u64| {
        let until = std::time::Instant::now() + Duration::from_secs(secs);
        loop {
            let left = until.saturating_duration_since(std::time::Instant::now());
            let t = Timespec {
                tv_sec: left.as_secs() as i64,
                tv_nsec: left.subsec_nanos() as i64,
            };
            let mut fds = [PollFd::new(init, PollFlags::IN)];
            match poll(&mut fds, Some(&t)) {
                Ok(n) => return n > 0,
                Err(rustix::io::Errno::INTR) => continue,
                Err(_) => return false,
            }
        }
    };
    if ended(0) {
        return true;
    }
    let _ = rustix::process::pidfd_send_signal(init, rustix::process::Signal::KILL);
    ended(10)
}
