//! Stage 7, **run** (`sealc exec`): start a command under a verified seal.
//!
//! [`plan`] is pure: from the recompiled IR (never from the files on disk, so
//! nothing can change between verifying and running), the command and the
//! secret values, it builds the exact program, argv and environment. [`run`]
//! starts it in its own process group, forwards the signals sealc receives,
//! enforces the recorded timeout and passes the exit status through. This is
//! the only module that reads sealc's own environment (for secrets) or starts
//! processes.
//!
//! On Linux bubblewrap gets a fixed, empty environment and never runs as
//! root ([`user`]); the command's environment travels down a pipe to sealc's
//! own init inside the sandbox ([`inside`]), which is pid 1. Roots are bound
//! through descriptors opened once, without following a link, and checked,
//! so a host process swapping a root for a symlink while the sandbox starts
//! cannot redirect a mount. stdin, stdout and stderr are checked first
//! ([`stdio`]).
//!
//! In `proxy` mode the sandbox has its own network namespace. A bridge
//! carries the proxy port across it: sealc listens on a unix socket in a
//! private directory, bound read-only into the sandbox; inside, the init
//! listens on the proxy's loopback address and forwards each connection to
//! that socket; outside, each is forwarded to the host's proxy. Nothing else
//! crosses. In `allowlist` mode the bridge is the same, and outside each
//! connection goes to sealc's own proxy ([`crate::proxy`]) instead, which
//! lets through only the listed hosts and ports (on macOS that proxy
//! listens on the loopback proxy address itself).

pub mod inside;
pub mod stdio;
pub mod user;

use std::ffi::OsString;
use std::io;
use std::net::TcpStream;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::DirBuilderExt;
use std::os::unix::net::UnixListener;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::sync::mpsc;
use std::time::Duration;

use crate::backend::bwrap;
use crate::diag::{quote, Diagnostic};
use crate::facts::PathKind;
use crate::ir::Ir;
use crate::spec::{NetMode, Platform};

pub use inside::{confine_main, init_main, landlock_abi, Confinement, Tcp};
pub use user::Ids;

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

/// What runs: the program, its arguments and the command's whole environment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    pub program: String,
    /// The arguments; on Linux a descriptor's number is filled in by [`run`]
    /// at each of [`Plan::fds`] (shown as `<fd:...>` until then).
    pub args: Vec<OsString>,
    /// Exactly the environment of the command, sorted by name.
    pub env: Vec<(String, OsString)>,
    /// Names in `env` whose values are secrets (never shown).
    pub secrets: Vec<String>,
    pub timeout: Option<Duration>,
    /// `host:port` of the host's proxy, to bridge to (Linux, `proxy` and
    /// `allowlist` mode).
    pub bridge: Option<BridgePlan>,
    /// `allowlist` mode: sealc's own proxy, which serves the bridge (Linux)
    /// or the loopback proxy address (macOS) while the command runs.
    pub proxy: Option<crate::proxy::Own>,
    /// The program is bubblewrap: signals go to the processes inside it, and
    /// the environment goes to sealc's init, not to the program.
    pub bubblewrap: bool,
    /// Descriptors [`run`] opens and names in `args`.
    pub fds: Vec<FdSlot>,
    /// Started by root: the unprivileged user the sandbox runs as.
    pub user: Option<Ids>,
    /// Steps left out because this kernel's `/proc` lacks their entry.
    pub skipped: Vec<String>,
}

/// One descriptor named in argv.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FdSlot {
    /// Index in `args` of the number.
    pub at: usize,
    pub source: FdSource,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FdSource {
    /// A root, opened without following any link and checked to be `kind`;
    /// the option before it becomes its `-fd` form.
    Bind { path: String, kind: PathKind },
    /// sealc's own binary.
    Exe,
    /// The bridge's private directory.
    BridgeDir,
    /// The read end of the pipe that carries the command's environment.
    Env,
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
    /// Started by root: the user to run as.
    pub user: Option<Ids>,
    /// Does this kernel's `/proc` have the entry (see [`bwrap::kernel_entry`])?
    pub has_proc_entry: &'a dyn Fn(&str) -> bool,
}

fn placeholder(what: &str) -> OsString {
    format!("<fd:{what}>").into()
}

/// Build the plan. `secret` gives a secret's value from sealc's environment.
pub fn plan(
    ir: &Ir,
    command: &[OsString],
    secret: &dyn Fn(&str) -> Option<OsString>,
    rt: &Runtime<'_>,
) -> Result<Plan, Diagnostic> {
    if command.is_empty() {
        return Err(
            Diagnostic::error("sealc::exec::command", "no command to run")
                .help("give it after the record: `sealc exec seal/seal.json -- codex exec ...`"),
        );
    }
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
    let mut plan = Plan {
        program: String::new(),
        args: Vec::new(),
        env,
        secrets,
        timeout,
        bridge: None,
        proxy: (ir.network.mode == NetMode::Allowlist).then(|| crate::proxy::Own::new(&ir.network)),
        bubblewrap: false,
        fds: Vec::new(),
        user: rt.user,
        skipped: Vec::new(),
    };
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
            plan.program = ir.exec.sandbox_exec.clone();
            plan.args = args;
            Ok(plan)
        }
        Platform::Linux => {
            linux(ir, command, rt, &mut plan);
            Ok(plan)
        }
    }
}

/// The recorded kind of a root mounted at `dest`.
fn kind_at(ir: &Ir, dest: &str) -> PathKind {
    ir.roots
        .iter()
        .filter(|r| r.real.as_deref() == Some(dest))
        .find_map(|r| r.host_kind)
        .unwrap_or(PathKind::File) // launcher chain entries are files
}

fn linux(ir: &Ir, command: &[OsString], rt: &Runtime<'_>, plan: &mut Plan) {
    let bridge = match (&ir.network.mode, &ir.network.proxy) {
        (NetMode::Proxy | NetMode::Allowlist, Some(p)) => Some(format!("{}:{}", p.host, p.port)),
        _ => None,
    };
    let mut args: Vec<OsString> = Vec::new();
    let mut fds = Vec::new();
    for s in bwrap::steps(ir) {
        if let Some(entry) = bwrap::kernel_entry(&s) {
            if !(rt.has_proc_entry)(entry) {
                plan.skipped.push(s.args.join(" "));
                continue;
            }
        }
        let a = &s.args;
        let by_fd = match a.first().map(String::as_str) {
            Some("--bind") => Some("--bind-fd"),
            Some("--ro-bind") => Some("--ro-bind-fd"),
            _ => None,
        };
        match by_fd {
            // A root bound onto itself: through a descriptor.
            Some(opt) if a.len() == 3 && a[1] == a[2] && a[1] != "/" => {
                args.push(opt.into());
                fds.push(FdSlot {
                    at: args.len(),
                    source: FdSource::Bind {
                        path: a[1].clone(),
                        kind: kind_at(ir, &a[1]),
                    },
                });
                args.push(placeholder(&a[1]));
                args.push(a[2].clone().into());
            }
            _ => args.extend(a.iter().map(OsString::from)),
        }
        // sealc's own mounts, in the sandbox's fresh /dev: its binary and
        // the bridge's directory, both read-only (the command may connect
        // to the bridge's socket, not put another in its place).
        if a.first().map(String::as_str) == Some("--tmpfs")
            && a.get(1).map(String::as_str) == Some("/dev/shm")
        {
            args.push("--ro-bind-fd".into());
            fds.push(FdSlot {
                at: args.len(),
                source: FdSource::Exe,
            });
            args.push(placeholder("sealc"));
            args.push(bwrap::INIT_PATH.into());
            if bridge.is_some() {
                args.push("--ro-bind-fd".into());
                fds.push(FdSlot {
                    at: args.len(),
                    source: FdSource::BridgeDir,
                });
                args.push(placeholder("bridge"));
                args.push(bwrap::BRIDGE_PATH.into());
            }
        }
    }
    args.push("--".into());
    args.extend([bwrap::INIT_PATH.into(), "__init".into(), "--env-fd".into()]);
    fds.push(FdSlot {
        at: args.len(),
        source: FdSource::Env,
    });
    args.push(placeholder("env"));
    if let Some(listen) = &bridge {
        args.extend(["--listen".into(), listen.into(), "--socket".into()]);
        args.push(format!("{}/{BRIDGE_SOCKET}", bwrap::BRIDGE_PATH).into());
    }
    args.push("--".into());
    args.extend([
        bwrap::INIT_PATH.into(),
        "__confine".into(),
        "--env-fd".into(),
    ]);
    fds.push(FdSlot {
        at: args.len(),
        source: FdSource::Env,
    });
    args.push(placeholder("env"));
    if ir.network.mode != NetMode::Open {
        args.push("--offline".into());
    }
    let ll = bwrap::landlock(ir);
    match &ll.tcp_connect {
        None => args.push("--tcp-any".into()),
        Some(ports) => {
            for p in ports {
                args.extend(["--tcp-port".into(), p.to_string().into()]);
            }
        }
    }
    for w in &ll.write {
        args.extend(["--write".into(), w.into()]);
    }
    args.push("--".into());
    args.extend(command.iter().cloned());
    plan.program = ir.exec.bwrap.clone();
    plan.args = args;
    plan.fds = fds;
    plan.bubblewrap = true;
    plan.bridge = bridge.map(|listen| BridgePlan {
        dir: rt.bridge_dir.to_path_buf(),
        upstream: listen,
    });
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
        // Through the directory itself, never a link put in its place.
        let dir = e.path();
        if let Ok(fd) = user::open_nofollow(
            &dir.to_string_lossy(),
            rustix::fs::OFlags::RDONLY
                | rustix::fs::OFlags::DIRECTORY
                | rustix::fs::OFlags::NOFOLLOW
                | rustix::fs::OFlags::CLOEXEC,
        ) {
            let _ = rustix::fs::unlinkat(&fd, BRIDGE_SOCKET, rustix::fs::AtFlags::empty());
            let _ = std::fs::remove_dir(&dir);
        }
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

/// The outer half of the bridge: the unix socket in the private directory,
/// each connection forwarded to the host's proxy, or served by sealc's own
/// (`own`, `allowlist` mode: it runs until the returned handle is stopped
/// or dropped). Otherwise runs until sealc exits.
pub fn serve_outer(
    b: &BridgePlan,
    user: Option<Ids>,
    own: Option<&crate::proxy::Own>,
) -> io::Result<Option<crate::proxy::Running>> {
    let socket = b.dir.join(BRIDGE_SOCKET);
    let listener = UnixListener::bind(&socket)?;
    if let Some(ids) = user {
        // The sandbox's user connects through the read-only bind.
        std::os::unix::fs::chown(&b.dir, Some(ids.uid), Some(ids.gid))?;
        std::os::unix::fs::chown(&socket, Some(ids.uid), Some(ids.gid))?;
    }
    if let Some(own) = own {
        return own.serve_unix(listener).map(Some);
    }
    let upstream = b.upstream.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let upstream = upstream.clone();
            std::thread::spawn(move || {
                if let Ok(up) = TcpStream::connect(&upstream) {
                    inside::pump(up, conn);
                }
            });
        }
    });
    Ok(None)
}

/// The exit status a shell would report: the code, or 128 + the signal.
pub fn exit_code(status: ExitStatus) -> i32 {
    status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(CANNOT_START)
}

/// [`exit_code`] of a status from `wait`.
pub fn exit_code_of(status: rustix::process::WaitStatus) -> i32 {
    status
        .exit_status()
        .or_else(|| status.terminating_signal().map(|s| 128 + s))
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
/// handle it (the init, pid 1, ignores it). Empty when `/proc` does not tell.
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

/// Open `path` without following any link on the way (every component is
/// opened with `O_NOFOLLOW` from `/`), as an `O_PATH` descriptor that the
/// sandbox's builder may inherit, and check that it is `kind`.
fn open_exact(path: &str, kind: PathKind) -> io::Result<OwnedFd> {
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

/// Copy until the end with plain `read` and `write`: each `write` moves a
/// shared file position under the kernel's lock, so stdout and stderr sent
/// to one file (`> log 2>&1`) keep every byte (`io::copy` would splice, which
/// can race on the position).
fn relay(mut from: impl io::Read, mut to: impl io::Write) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match from.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => {
                if to.write_all(&buf[..n]).is_err() {
                    return;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}

/// Let the sandbox's builder inherit `fd` (and return its number).
fn inheritable(fd: &OwnedFd) -> io::Result<i32> {
    use std::os::fd::AsRawFd;
    rustix::io::fcntl_setfd(fd, rustix::io::FdFlags::empty())?;
    Ok(fd.as_raw_fd())
}

/// Start the plan and wait for it: own process group, exact environment,
/// stdio as [`stdio::ways`] decided, signals forwarded, the timeout
/// enforced, the exit status returned.
pub fn run(plan: &Plan, ways: [stdio::Way; 3]) -> io::Result<i32> {
    use std::process::Stdio;
    cloexec_inherited()?;
    // sealc's own proxy (mode `allowlist`) stops when this returns.
    let mut own_proxy = None;
    if let Some(b) = &plan.bridge {
        own_proxy = serve_outer(b, plan.user, plan.proxy.as_ref())?;
    } else if let Some(own) = &plan.proxy {
        own_proxy = Some(own.serve_tcp()?);
    }
    let mut args = plan.args.clone();
    let mut keep: Vec<OwnedFd> = Vec::new();
    let mut env_writer = None;
    let mut env_fd = None;
    for slot in &plan.fds {
        if let (FdSource::Env, Some(n)) = (&slot.source, env_fd) {
            // One pipe: `__init` hands it on to `__confine`, under its number.
            args[slot.at] = i32::to_string(&n).into();
            continue;
        }
        let fd = match &slot.source {
            FdSource::Bind { path, kind } => open_exact(path, *kind).map_err(|e| {
                io::Error::other(format!(
                    "cannot open the root {} to mount it: {e}",
                    quote(path)
                ))
            })?,
            // The binary that is running, whatever its path names now.
            FdSource::Exe => OwnedFd::from(std::fs::File::open("/proc/self/exe")?),
            FdSource::BridgeDir => {
                let dir = plan
                    .bridge
                    .as_ref()
                    .map(|b| b.dir.clone())
                    .unwrap_or_default();
                OwnedFd::from(std::fs::File::open(dir)?)
            }
            FdSource::Env => {
                let (r, w) = std::io::pipe()?;
                env_writer = Some(w);
                OwnedFd::from(r)
            }
        };
        let n = inheritable(&fd)?;
        if slot.source == FdSource::Env {
            env_fd = Some(n);
        }
        args[slot.at] = n.to_string().into();
        keep.push(fd);
    }
    let mut cmd = Command::new(&plan.program);
    cmd.args(&args).env_clear().process_group(0);
    if !plan.bubblewrap {
        cmd.envs(plan.env.iter().map(|(k, v)| (k, v)));
    }
    if let Some(ids) = plan.user {
        // std drops the supplementary groups when root changes uid.
        cmd.uid(ids.uid).gid(ids.gid);
    }
    let way = |w: stdio::Way| match w {
        stdio::Way::Inherit => Stdio::inherit(),
        stdio::Way::Relay => Stdio::piped(),
        stdio::Way::Null => Stdio::null(),
    };
    cmd.stdin(way(ways[0]))
        .stdout(way(ways[1]))
        .stderr(way(ways[2]));
    let mut signals = signal_hook::iterator::Signals::new(FORWARDED)?;
    let mut child = cmd.spawn()?;
    drop(keep); // the builder has its own copies now
    if let Some(mut w) = env_writer {
        let bytes = inside::encode_env(&plan.env);
        std::thread::spawn(move || {
            let _ = io::Write::write_all(&mut w, &bytes);
        });
    }
    let mut relays = Vec::new();
    if let Some(mut to) = child.stdin.take() {
        std::thread::spawn(move || {
            // Never `io::copy`: a splice into the pipe would hold the pipe's
            // lock while it waits for input, and the sandbox could not exit.
            if let Ok(from) = io::stdin()
                .as_fd()
                .try_clone_to_owned()
                .map(std::fs::File::from)
            {
                relay(from, &mut to);
            }
        });
    }
    // The caller's descriptors, duplicated: the CLI may hold the lock on
    // its own `Stdout` meanwhile.
    let caller = |fd: std::os::fd::BorrowedFd<'_>| -> io::Result<std::fs::File> {
        Ok(std::fs::File::from(fd.try_clone_to_owned()?))
    };
    if let Some(from) = child.stdout.take() {
        let to = caller(io::stdout().as_fd())?;
        relays.push(std::thread::spawn(move || relay(from, to)));
    }
    if let Some(from) = child.stderr.take() {
        let to = caller(io::stderr().as_fd())?;
        relays.push(std::thread::spawn(move || relay(from, to)));
    }
    let group = rustix::process::Pid::from_child(&child);
    let inside = plan.bubblewrap;
    let bwrap_pid = child.id();
    // Deliver a signal to the command: inside a Linux sandbox, to each of its
    // processes; otherwise to the process group. `SIGKILL` goes to both.
    let deliver = move |sig: rustix::process::Signal| {
        let members = if inside {
            sandbox_members(bwrap_pid)
        } else {
            Vec::new()
        };
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
    // Once stopping (a forwarded signal or the timeout): when everything
    // inside gets `SIGKILL`, stopped or traced processes included.
    let mut kill_at: Option<std::time::Instant> = None;
    let status = loop {
        let wake = match (kill_at, deadline) {
            (Some(k), _) => Some(k),
            (None, d) if !timed_out => d,
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
                kill_at.get_or_insert(std::time::Instant::now() + GRACE);
            }
        }
    };
    handle.close();
    // Whatever is left does not outlive sealc.
    deliver(rustix::process::Signal::KILL);
    for r in relays {
        let _ = r.join();
    }
    if let Some(p) = own_proxy.take() {
        p.stop();
    }
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
            user: None,
            has_proc_entry: &|p| p != "/proc/kcore",
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
    fn linux_binds_roots_and_sealc_through_descriptors_and_runs_its_init() {
        let plan = plan(
            &ir(Platform::Linux),
            &["cmd".into()],
            &|_| Some("v".into()),
            &rt(),
        )
        .unwrap();
        let a = strs(&plan.args);
        // The write root is bound through a descriptor, never by path.
        let w = a.iter().position(|x| x == "<fd:/w>").unwrap();
        assert_eq!(a[w - 1], "--bind-fd");
        assert!(!a.windows(3).any(|x| x == ["--bind", "/w", "/w"]), "{a:?}");
        // sealc's own binary and the bridge, in the fresh /dev, before it turns read-only.
        let exe = a.iter().position(|x| x == "<fd:sealc>").unwrap();
        let dev_ro = a
            .windows(2)
            .position(|x| x == ["--remount-ro", "/dev"])
            .unwrap();
        assert!(exe < dev_ro && a[exe + 1] == bwrap::INIT_PATH, "{a:?}");
        assert!(a.contains(&"<fd:bridge>".to_string()));
        // /proc entries this kernel lacks are left out, and said so.
        assert!(!a.contains(&"/proc/kcore".to_string()));
        assert!(plan.skipped.iter().any(|s| s.ends_with("/proc/kcore")));
        assert!(a.contains(&"/proc/keys".to_string()));
        let sep = a.iter().position(|x| x == "--").unwrap();
        assert_eq!(
            &a[sep..sep + 9],
            [
                "--",
                bwrap::INIT_PATH,
                "__init",
                "--env-fd",
                "<fd:env>",
                "--listen",
                "127.0.0.1:3128",
                "--socket",
                "/dev/.sealc-bridge/proxy.sock",
            ]
        );
        let tail = &a[sep + 9..];
        assert_eq!(
            &tail[..7],
            [
                "--",
                bwrap::INIT_PATH,
                "__confine",
                "--env-fd",
                "<fd:env>",
                "--offline",
                "--tcp-port"
            ]
        );
        assert_eq!(tail[7], "3128");
        assert!(tail.windows(2).any(|x| x == ["--write", "/w"]));
        assert_eq!(tail[tail.len() - 2..], ["--", "cmd"]);
        // Each descriptor slot names its placeholder.
        for slot in &plan.fds {
            assert!(a[slot.at].starts_with("<fd:"), "{:?}", slot);
        }
        assert!(plan.bubblewrap);
        assert_eq!(plan.bridge.unwrap().upstream, "127.0.0.1:3128");
    }

    #[test]
    fn refusals_name_what_is_wrong() {
        let i = ir(Platform::Linux);
        let e = plan(&i, &["cmd".into()], &|_| None, &rt()).unwrap_err();
        assert!(e.message.contains("`K`"), "{}", e.message);
        let e = plan(&i, &[], &|_| Some("v".into()), &rt()).unwrap_err();
        assert_eq!(e.code, "sealc::exec::command");
        // No `env` runs in between any more, so `=` in a name is fine.
        assert!(plan(&i, &["A=1".into()], &|_| Some("v".into()), &rt()).is_ok());
    }

    #[test]
    fn a_root_is_opened_exactly_or_not_at_all() {
        let t = tempfile::tempdir().unwrap();
        let real = t.path().canonicalize().unwrap();
        std::fs::create_dir(real.join("d")).unwrap();
        std::os::unix::fs::symlink(real.join("d"), real.join("l")).unwrap();
        let s = |p: &str| real.join(p).display().to_string();
        assert!(open_exact(&s("d"), PathKind::Dir).is_ok());
        assert!(
            open_exact(&s("l"), PathKind::Dir).is_err(),
            "a link is not followed"
        );
        assert!(open_exact(&s("l/x"), PathKind::Dir).is_err());
        assert!(
            open_exact(&s("d"), PathKind::File).is_err(),
            "the kind is checked"
        );
    }
}
