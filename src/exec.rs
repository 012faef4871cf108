//! Stage 7, **run** (`sealc exec`): start a command under a verified seal.
//!
//! [`plan`] is pure: from the recompiled IR (never from the files on disk, so
//! nothing can change between verifying and running), the command and the
//! secret values, it builds the exact program, argv and environment. [`run`]
//! starts it in its own process group with exactly that environment (no
//! shell, no inherited variable), forwards the signals sealc receives,
//! enforces the recorded timeout and passes the exit status through. This is
//! the only module that reads sealc's own environment (for secrets) or starts
//! processes.
//!
//! On Linux in `proxy` mode the sandbox has its own network namespace. A
//! bridge carries the proxy port across it: sealc listens on a unix socket in
//! a private directory, bound into the sandbox; inside, `sealc __bridge`
//! listens on the proxy's loopback address and forwards each connection to
//! that socket; outside, each is forwarded to the host's proxy. Nothing else
//! crosses.
//!
//! On Linux the command always runs through `sealc __confine`, which installs
//! a seccomp filter and then `exec`s it: the [`bwrap::REFUSED`] calls fail
//! with `EPERM` (in `none` and `proxy` mode also [`bwrap::REFUSED_OFFLINE`],
//! so the command cannot reach a host service through a unix socket that the
//! read-only host tree still shows; the network namespace only covers
//! abstract sockets and TCP/UDP).

use std::ffi::OsString;
use std::io;
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::DirBuilderExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::sync::mpsc;
use std::time::Duration;

use crate::backend::bwrap;
use crate::diag::{quote, Diagnostic};
use crate::ir::Ir;
use crate::spec::{NetMode, Platform};

/// Exit status when the recorded timeout ran out (as `timeout(1)`).
pub const TIMED_OUT: i32 = 124;
/// Exit status when the sandbox could not be started.
pub const CANNOT_START: i32 = 127;
/// How long a stopped sandbox gets between `SIGTERM` and `SIGKILL`.
pub const GRACE: Duration = Duration::from_secs(2);
/// The signals sealc forwards to the sandbox.
pub const FORWARDED: [i32; 4] = [
    signal_hook::consts::SIGHUP,
    signal_hook::consts::SIGINT,
    signal_hook::consts::SIGQUIT,
    signal_hook::consts::SIGTERM,
];
/// The bridge's socket, inside its private directory.
pub const BRIDGE_SOCKET: &str = "proxy.sock";

/// What runs: the program, its arguments and its whole environment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    pub program: String,
    pub args: Vec<OsString>,
    /// Exactly the environment of the child, sorted by name.
    pub env: Vec<(String, OsString)>,
    /// Names in `env` whose values are secrets (never shown).
    pub secrets: Vec<String>,
    pub timeout: Option<Duration>,
    /// `host:port` of the host's proxy, to bridge to (Linux, `proxy` mode).
    pub bridge: Option<BridgePlan>,
    /// The program is bubblewrap: signals go to the processes inside it.
    pub bubblewrap: bool,
}

/// The bridge of a Linux `proxy` seal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BridgePlan {
    /// The private directory bound into the sandbox.
    pub dir: PathBuf,
    /// The host's proxy, as recorded.
    pub upstream: String,
}

/// What the plan needs from the running host.
pub struct Runtime<'a> {
    /// sealc's own binary, bound read-only into every Linux sandbox.
    pub exe: &'a Path,
    /// The private directory of the bridge.
    pub bridge_dir: &'a Path,
    /// The seatbelt profile's verified bytes (macOS).
    pub profile: &'a [u8],
}

/// Build the plan. `secret` gives a secret's value from sealc's environment.
pub fn plan(
    ir: &Ir,
    command: &[OsString],
    secret: &dyn Fn(&str) -> Option<OsString>,
    rt: &Runtime<'_>,
) -> Result<Plan, Diagnostic> {
    let Some(first) = command.first() else {
        return Err(
            Diagnostic::error("sealc::exec::command", "no command to run")
                .help("give it after the record: `sealc exec seal/seal.json -- codex exec ...`"),
        );
    };
    let mut env: Vec<(String, OsString)> = ir
        .env
        .vars
        .iter()
        .map(|(k, v)| (k.clone(), OsString::from(v)))
        .collect();
    let mut missing = Vec::new();
    for name in &ir.env.secrets {
        match secret(name) {
            Some(v) => env.push((name.clone(), v)),
            None => missing.push(name.as_str()),
        }
    }
    if !missing.is_empty() {
        let names = missing.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>();
        return Err(Diagnostic::error(
            "sealc::exec::secret",
            format!(
                "secret {} {} not set, so nothing was started",
                names.join(", "),
                if missing.len() == 1 { "is" } else { "are" }
            ),
        )
        .help("export each secret in the environment `sealc exec` runs in; its value is passed to the agent and never written"));
    }
    env.sort();
    let timeout = ir
        .exec
        .timeout
        .as_ref()
        .map(|(_, s)| Duration::from_secs(*s));
    let secrets = ir.env.secrets.iter().cloned().collect();
    match ir.platform {
        Platform::Macos => {
            // The verified bytes, not the file: nothing can swap the profile
            // between `verify` and `sandbox-exec` reading it.
            let mut args: Vec<OsString> = vec![
                "-p".into(),
                String::from_utf8_lossy(rt.profile).into_owned().into(),
            ];
            if let Some((bin, secs)) = &ir.exec.timeout {
                args.extend([bin.into(), "--foreground".into(), secs.to_string().into()]);
            }
            args.extend(command.iter().cloned());
            Ok(Plan {
                program: ir.exec.sandbox_exec.clone(),
                args,
                env,
                secrets,
                timeout,
                bridge: None,
                bubblewrap: false,
            })
        }
        Platform::Linux => {
            if first.as_encoded_bytes().contains(&b'=') {
                return Err(Diagnostic::error(
                    "sealc::exec::command",
                    format!(
                        "the command {} holds `=`, so `env` inside the sandbox would read it as a variable",
                        quote(&first.to_string_lossy())
                    ),
                )
                .help("rename the program or call it through a path without `=`"));
            }
            let bridge = match (&ir.network.mode, &ir.network.proxy) {
                (NetMode::Proxy, Some(p)) => Some(format!("{}:{}", p.host, p.port)),
                _ => None,
            };
            let offline = ir.network.mode != NetMode::Open;
            let steps = bwrap::steps(ir);
            let split = steps
                .iter()
                .position(|s| s.args.first().map(String::as_str) == Some("--remount-ro"))
                .unwrap_or(steps.len());
            let exe = rt.exe.as_os_str();
            let mut args: Vec<OsString> = Vec::new();
            for (i, s) in steps.iter().enumerate() {
                // sealc's own mounts, made before any hidden directory turns
                // read-only: its binary (read-only) and the bridge's directory.
                // The bridge's directory is read-only inside: the command may
                // connect to its socket, not put another in its place.
                if i == split {
                    args.extend(["--ro-bind".into(), exe.into(), exe.into()]);
                    if bridge.is_some() {
                        let dir = rt.bridge_dir.as_os_str();
                        args.extend(["--ro-bind".into(), dir.into(), dir.into()]);
                    }
                }
                args.extend(s.args.iter().map(OsString::from));
            }
            args.push("--".into());
            if let Some(listen) = &bridge {
                args.push(exe.into());
                args.extend(["__bridge".into(), "--listen".into(), listen.into()]);
                args.push("--socket".into());
                args.push(rt.bridge_dir.join(BRIDGE_SOCKET).into_os_string());
                args.push("--".into());
            }
            args.extend([exe.into(), "__confine".into()]);
            if offline {
                args.push("--offline".into());
            }
            args.push("--".into());
            args.extend(bwrap::command_prefix(ir).into_iter().map(OsString::from));
            args.extend(command.iter().cloned());
            Ok(Plan {
                program: ir.exec.bwrap.clone(),
                args,
                env,
                secrets,
                timeout,
                bridge: bridge.map(|listen| BridgePlan {
                    dir: rt.bridge_dir.to_path_buf(),
                    upstream: listen,
                }),
                bubblewrap: true,
            })
        }
    }
}

/// `host_drift` lives in its own module, `drift`, with the kinds of drift.
pub use crate::drift::host_drift;

/// Mark every descriptor from 3 up close-on-exec, so the sandbox inherits
/// stdin, stdout and stderr only: a descriptor the caller left open (a
/// file under a denied root, a directory outside the write roots) would
/// otherwise cross every mount.
#[allow(unsafe_code)]
pub fn cloexec_inherited() -> io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: `close_range` with `CLOSE_RANGE_CLOEXEC` closes nothing: it
        // only sets the close-on-exec flag of descriptors 3 and up, so no
        // descriptor owned anywhere in this process changes meaning.
        let r = unsafe {
            libc::syscall(
                libc::SYS_close_range,
                3u32,
                u32::MAX,
                libc::CLOSE_RANGE_CLOEXEC,
            )
        };
        if r == 0 {
            return Ok(());
        }
    }
    // Kernels before 5.11, and macOS: each descriptor listed.
    let dir = if Path::new("/proc/self/fd").is_dir() {
        "/proc/self/fd"
    } else {
        "/dev/fd"
    };
    let fds: Vec<i32> = std::fs::read_dir(dir)?
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .filter(|&fd| fd > 2)
        .collect();
    for fd in fds {
        // SAFETY: `F_SETFD` only sets the close-on-exec flag; the listing's
        // own descriptor, closed by now, fails with `EBADF`, which is fine.
        unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    }
    Ok(())
}

/// Remove the bridge directories (and their sockets) that a `sealc exec`
/// killed by `SIGKILL` left behind: those whose process is gone. Only what
/// this user may remove goes; anything else in them keeps the directory.
fn sweep_stale_bridges(parent: &Path) {
    if !Path::new("/proc/self").exists() {
        return; // no way to tell a live process
    }
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("sealc-bridge-"))
            .and_then(|rest| rest.split('-').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == std::process::id() || Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        let dir = e.path();
        let _ = std::fs::remove_file(dir.join(BRIDGE_SOCKET));
        let _ = std::fs::remove_dir(&dir);
    }
}

/// Make a private (0700) directory for the bridge under `parent`.
pub fn private_dir(parent: &Path) -> io::Result<PathBuf> {
    sweep_stale_bridges(parent);
    let mut n = 0u32;
    loop {
        let dir = parent.join(format!("sealc-bridge-{}-{n}", std::process::id()));
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && n < 1000 => n += 1,
            Err(e) => return Err(e),
        }
    }
}

/// Copy both ways between a TCP and a unix stream until both sides are done.
fn pump(tcp: TcpStream, unix: UnixStream) {
    let (Ok(mut from_tcp), Ok(mut to_unix)) = (tcp.try_clone(), unix.try_clone()) else {
        return;
    };
    std::thread::spawn(move || {
        let _ = io::copy(&mut from_tcp, &mut to_unix);
        let _ = to_unix.shutdown(std::net::Shutdown::Write);
    });
    let (mut tcp, mut unix) = (tcp, unix);
    let _ = io::copy(&mut unix, &mut tcp);
    let _ = tcp.shutdown(std::net::Shutdown::Write);
}

/// The outer half of the bridge: the unix socket in the private directory,
/// each connection forwarded to the host's proxy. Runs until sealc exits.
pub fn serve_outer(b: &BridgePlan) -> io::Result<()> {
    let listener = UnixListener::bind(b.dir.join(BRIDGE_SOCKET))?;
    let upstream = b.upstream.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let upstream = upstream.clone();
            std::thread::spawn(move || {
                if let Ok(up) = TcpStream::connect(&upstream) {
                    pump(up, conn);
                }
            });
        }
    });
    Ok(())
}

/// The inner half (`sealc __bridge`), inside the sandbox's network namespace:
/// listen on the proxy's address, forward each connection to the socket, run
/// the command and return its exit status.
pub fn bridge_main(listen: &str, socket: &Path, command: &[OsString]) -> io::Result<i32> {
    // `sealc exec` signals every process of the sandbox, this one included:
    // the command gets its own copy, the bridge outlives it to report its
    // status.
    let _caught = signal_hook::iterator::Signals::new(FORWARDED)?;
    // Not dumpable: the command (same uid) cannot ptrace it or read its
    // memory to use the unix socket it keeps.
    rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable)?;
    let listener = TcpListener::bind(listen)?;
    let socket = socket.to_path_buf();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let socket = socket.clone();
            std::thread::spawn(move || {
                if let Ok(out) = UnixStream::connect(&socket) {
                    pump(conn, out);
                }
            });
        }
    });
    let Some((program, args)) = command.split_first() else {
        return Ok(CANNOT_START);
    };
    let status = Command::new(program).args(args).status()?;
    Ok(exit_code(status))
}

/// The seccomp filter of [`bwrap::REFUSED`] (and, `offline`, of
/// [`bwrap::REFUSED_OFFLINE`]), for the architecture sealc runs on.
pub fn filter(offline: bool) -> Result<seccompiler::BpfProgram, String> {
    use seccompiler::{
        SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
    };
    let err = |e: seccompiler::BackendError| e.to_string();
    let arch =
        seccompiler::TargetArch::try_from(std::env::consts::ARCH).map_err(|e| e.to_string())?;
    // `socket(domain, ...)` is refused when the domain is none of these.
    let mut kept = vec![libc::AF_INET, libc::AF_INET6, libc::AF_NETLINK];
    if !offline {
        kept.push(libc::AF_UNIX);
    }
    let other_family = kept
        .iter()
        .map(|d| SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Ne, *d as u64))
        .collect::<Result<Vec<_>, _>>()
        .and_then(SeccompRule::new)
        .map_err(err)?;
    let always = [
        libc::SYS_io_uring_setup,
        libc::SYS_add_key,
        libc::SYS_keyctl,
        libc::SYS_request_key,
        libc::SYS_mount,
        libc::SYS_umount2,
        libc::SYS_setns,
        libc::SYS_unshare,
    ];
    let mut rules = std::collections::BTreeMap::new();
    // x32 shares x86_64's audit architecture with its own call numbers;
    // 32-bit (i386) calls fail the filter's architecture check and are killed.
    let x32: &[i64] = if cfg!(target_arch = "x86_64") {
        &[0, 0x4000_0000]
    } else {
        &[0]
    };
    for bit in x32 {
        rules.insert(libc::SYS_socket | bit, vec![other_family.clone()]);
        for nr in always {
            rules.insert(nr | bit, vec![]);
        }
    }
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(err)?;
    seccompiler::BpfProgram::try_from(filter).map_err(err)
}

/// `sealc __confine`: install the filter on this process, then become the
/// command. Returns only if either fails.
pub fn confine_main(offline: bool, command: &[OsString]) -> io::Error {
    let program = match filter(offline) {
        Ok(p) => p,
        Err(e) => return io::Error::other(format!("cannot build the seccomp filter: {e}")),
    };
    if let Err(e) = seccompiler::apply_filter(&program) {
        return io::Error::other(format!("cannot install the seccomp filter: {e}"));
    }
    let Some((first, rest)) = command.split_first() else {
        return io::Error::other("no command to run");
    };
    Command::new(first).args(rest).exec()
}

/// The exit status a shell would report: the code, or 128 + the signal.
pub fn exit_code(status: ExitStatus) -> i32 {
    status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(CANNOT_START)
}

enum Event {
    Exited(io::Result<ExitStatus>),
    Signal(i32),
}

/// The host pids of every process inside the bubblewrap sandbox whose
/// `bwrap` is `bwrap`: those in the pid namespace of its child. Bubblewrap
/// does not forward signals, and a signal to it kills the sandbox outright;
/// sent to the processes themselves, a signal reaches the command, which may
/// handle it. Empty when `/proc` does not tell (the caller falls back to the
/// process group).
fn sandbox_members(bwrap: u32) -> Vec<i32> {
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

/// Start the plan and wait for it: own process group, exact environment,
/// signals forwarded, the timeout enforced, the exit status returned.
pub fn run(plan: &Plan) -> io::Result<i32> {
    cloexec_inherited()?;
    if let Some(b) = &plan.bridge {
        serve_outer(b)?;
    }
    let mut cmd = Command::new(&plan.program);
    cmd.args(&plan.args)
        .env_clear()
        .envs(plan.env.iter().map(|(k, v)| (k, v)))
        .process_group(0);
    let mut signals = signal_hook::iterator::Signals::new(FORWARDED)?;
    let mut child = cmd.spawn()?;
    let group = rustix::process::Pid::from_child(&child);
    let kill_group = move |sig: rustix::process::Signal| {
        let _ = rustix::process::kill_process_group(group, sig);
    };
    // Deliver a signal to the command: inside a Linux sandbox, to each of its
    // processes; otherwise to the process group.
    let inside = plan.bubblewrap;
    let bwrap_pid = child.id();
    let deliver = move |sig: rustix::process::Signal| {
        let members = if inside {
            sandbox_members(bwrap_pid)
        } else {
            Vec::new()
        };
        if members.is_empty() {
            kill_group(sig);
        }
        for pid in members
            .into_iter()
            .filter_map(rustix::process::Pid::from_raw)
        {
            let _ = rustix::process::kill_process(pid, sig);
        }
    };
    let (tx, rx) = mpsc::channel();
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
    let mut timed_out = false;
    // Once timed out: when the group gets `SIGKILL`, whatever arrives meanwhile.
    let mut kill_at = None;
    let status = loop {
        let wake = if timed_out { kill_at } else { deadline };
        let event = match wake {
            Some(t) => {
                match rx.recv_timeout(t.saturating_duration_since(std::time::Instant::now())) {
                    Ok(e) => e,
                    Err(mpsc::RecvTimeoutError::Timeout) => {
                        if timed_out {
                            kill_group(rustix::process::Signal::KILL);
                            kill_at = None;
                        } else {
                            timed_out = true;
                            deliver(rustix::process::Signal::TERM);
                            kill_at = Some(std::time::Instant::now() + GRACE);
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
            }
        }
    };
    handle.close();
    // Whatever is left of the group does not outlive sealc.
    kill_group(rustix::process::Signal::KILL);
    if let Some(b) = &plan.bridge {
        let _ = std::fs::remove_file(b.dir.join(BRIDGE_SOCKET));
        let _ = std::fs::remove_dir(&b.dir);
    }
    match status {
        Some(Ok(_)) if timed_out => Ok(TIMED_OUT),
        Some(Ok(s)) => Ok(exit_code(s)),
        Some(Err(e)) => Err(e),
        None => Ok(CANNOT_START),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: &str = "version = 1\nname = \"p\"\n[filesystem]\ndeny_read = [\"/d\"]\nwrite = [\"/w\"]\n[network]\nmode = \"proxy\"\nproxy = \"127.0.0.1:3128\"\n[env]\nset = { A = \"1\" }\nsecret = [\"K\"]\n[exec]\ntimeout = { bin = \"/usr/bin/timeout\", seconds = 9 }\n";

    fn ir(platform: Platform) -> Ir {
        let host = crate::facts::FakeHost::new().dir("/d").dir("/w");
        crate::compile_for("p.toml", SPEC, &Vec::new(), Some(platform), &host)
            .unwrap()
            .ir
    }

    fn rt() -> Runtime<'static> {
        Runtime {
            exe: Path::new("/opt/sealc"),
            bridge_dir: Path::new("/tmp/b"),
            profile: b"(version 1)",
        }
    }

    fn strs(v: &[OsString]) -> Vec<String> {
        v.iter().map(|a| a.to_string_lossy().into_owned()).collect()
    }

    #[test]
    fn secrets_cross_in_the_environment_never_in_argv() {
        for p in [Platform::Macos, Platform::Linux] {
            let plan = plan(&ir(p), &["cmd".into()], &|_| Some("s3cret".into()), &rt()).unwrap();
            assert!(!strs(&plan.args).iter().any(|a| a.contains("s3cret")));
            assert!(plan.env.contains(&("K".into(), "s3cret".into())));
            assert!(plan.env.contains(&("A".into(), "1".into())));
            assert_eq!(plan.timeout, Some(Duration::from_secs(9)));
        }
    }

    #[test]
    fn macos_runs_the_verified_profile_bytes() {
        let plan = plan(
            &ir(Platform::Macos),
            &["cmd".into()],
            &|_| Some("v".into()),
            &rt(),
        )
        .unwrap();
        assert_eq!(plan.program, "/usr/bin/sandbox-exec");
        assert_eq!(
            strs(&plan.args),
            [
                "-p",
                "(version 1)",
                "/usr/bin/timeout",
                "--foreground",
                "9",
                "cmd"
            ]
        );
    }

    #[test]
    fn linux_mounts_sealc_before_any_directory_turns_read_only() {
        let plan = plan(
            &ir(Platform::Linux),
            &["cmd".into()],
            &|_| Some("v".into()),
            &rt(),
        )
        .unwrap();
        let a = strs(&plan.args);
        let first_ro = a.iter().position(|x| x == "--remount-ro").unwrap();
        let exe = a.iter().position(|x| x == "/opt/sealc").unwrap();
        let dir = a.iter().position(|x| x == "/tmp/b").unwrap();
        assert!(exe < first_ro && dir < first_ro, "{a:?}");
        let sep = a.iter().position(|x| x == "--").unwrap();
        assert_eq!(
            &a[sep..],
            [
                "--",
                "/opt/sealc",
                "__bridge",
                "--listen",
                "127.0.0.1:3128",
                "--socket",
                "/tmp/b/proxy.sock",
                "--",
                "/opt/sealc",
                "__confine",
                "--offline",
                "--",
                "/usr/bin/env",
                "-u",
                "PWD",
                "--",
                "cmd"
            ]
        );
        assert_eq!(plan.bridge.unwrap().upstream, "127.0.0.1:3128");
    }

    #[test]
    fn refusals_name_what_is_wrong() {
        let i = ir(Platform::Linux);
        let e = plan(&i, &["cmd".into()], &|_| None, &rt()).unwrap_err();
        assert!(e.message.contains("`K`"), "{}", e.message);
        let e = plan(&i, &[], &|_| Some("v".into()), &rt()).unwrap_err();
        assert_eq!(e.code, "sealc::exec::command");
        let e = plan(&i, &["A=1".into()], &|_| Some("v".into()), &rt()).unwrap_err();
        assert!(e.message.contains("`A=1`"), "{}", e.message);
    }

    #[test]
    fn the_filter_builds_for_this_machine() {
        assert!(!filter(true).unwrap().is_empty());
        assert!(!filter(false).unwrap().is_empty());
    }
}
