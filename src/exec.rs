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
//! ([`stdio`]); the command's stdout and stderr are relayed, through the
//! [`terminal`] filter where the caller's descriptor is a terminal.
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

pub mod codex_home;
pub mod idmap;
pub mod inside;
pub mod report;
pub mod stdio;
pub mod terminal;
pub mod user;

use std::ffi::OsString;
use std::io;
use std::net::TcpStream;
use std::os::fd::{AsFd, OwnedFd};
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

pub use inside::{confine_main, init_main, landlock_abi, Confinement, StartFailure, Tcp};
pub use user::Ids;

/// Exit status when the recorded timeout ran out (as `timeout(1)`).
pub const TIMED_OUT: i32 = 124;
/// Exit status when the command ran but the Codex config in the seal's
/// `CODEX_HOME` drifted during the run.
pub const CODEX_CONFIG_DRIFT: i32 = 125;
/// Exit status when the sandbox could not be started (or its layers could
/// not be applied): nothing of the command ran.
pub const SANDBOX_FAILED: i32 = 122;
/// Exit status when the sandbox was built but the command is not in it (as
/// a shell's 127).
pub const CANNOT_START: i32 = 127;
/// Exit status when the sandbox was built and the command is there but
/// could not be executed (as a shell's 126).
pub const CANNOT_EXECUTE: i32 = 126;
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
    /// The run's limits.
    pub limits: crate::ir::LimitsIr,
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
    /// the option before it becomes its `-fd` form. `within`: the write
    /// root (its realpath) that holds it, for a protected root or a pin:
    /// where that write root is idmapped, it is opened again from the
    /// idmapped tree.
    Bind {
        path: String,
        kind: PathKind,
        within: Option<String>,
    },
    /// sealc's own binary.
    Exe,
    /// The bridge's private directory.
    BridgeDir,
    /// The read end of the pipe that carries the command's environment.
    Env,
    /// The write end of the pipe bubblewrap reports the sandbox on (`--info-fd`).
    Info,
    /// The write end of the pipe the inside reports the command's start and end on.
    Status,
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
    /// The ids that user has inside the sandbox (bubblewrap's `--uid` and
    /// `--gid`) when they differ: a uid of the run's own is seen inside as
    /// `nobody` ([`user::allocate`]).
    pub inside: Option<Ids>,
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
        .map(|(_, s)| *s)
        .or(ir.exec.limits.wall_seconds)
        .map(Duration::from_secs);
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
        limits: ir.exec.limits.clone(),
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
            linux(ir, command, rt, &mut plan)?;
            Ok(plan)
        }
    }
}

/// The command as it runs: a bare command name that is the recorded
/// launcher's file name (`codex` for `.../bin/codex`) becomes the launcher's
/// path, whose chain and digest `host_drift` has checked; anything else runs
/// as given.
pub fn resolve_launcher(ir: &Ir, command: &[OsString]) -> Vec<OsString> {
    let mut out = command.to_vec();
    let (Some(first), Some(launcher)) = (out.first_mut(), ir.launcher.first()) else {
        return out;
    };
    let name = launcher.path.rsplit('/').next().unwrap_or_default();
    let bare = first.to_str().is_some_and(|c| !c.contains('/'));
    if bare && !name.is_empty() && first.as_os_str() == name {
        *first = OsString::from(&launcher.path);
    }
    out
}

/// What the seal binds at `dest`, as recorded: a root's kind (a protected
/// root's object included), a directory for a pin, a file for a launcher
/// chain entry; and, for a protected root or a pin, the write root that
/// holds it. `None`: nothing the IR binds there.
fn kind_at(ir: &Ir, dest: &str) -> Option<(PathKind, Option<String>)> {
    let root = ir
        .roots
        .iter()
        .filter(|r| r.real.as_deref() == Some(dest))
        .find_map(|r| {
            let within = r.protect.as_ref().map(|p| p.within.clone());
            r.host_kind.map(|k| (k, within))
        });
    let pin = || {
        ir.pins
            .iter()
            .find(|p| p.path == dest)
            .map(|p| (PathKind::Dir, Some(p.within.clone())))
    };
    let launcher = || {
        ir.launcher
            .iter()
            .any(|l| l.path == dest && l.kind == crate::facts::LinkKind::File)
            .then_some((PathKind::File, None))
    };
    root.or_else(pin).or_else(launcher)
}

fn linux(
    ir: &Ir,
    command: &[OsString],
    rt: &Runtime<'_>,
    plan: &mut Plan,
) -> Result<(), Diagnostic> {
    let bridge = match (&ir.network.mode, &ir.network.proxy) {
        (NetMode::Proxy | NetMode::Allowlist, Some(p)) => Some(format!("{}:{}", p.host, p.port)),
        _ => None,
    };
    let mut args: Vec<OsString> = Vec::new();
    let mut fds = Vec::new();
    let mut slot = |args: &mut Vec<OsString>, source: FdSource, what: &str| {
        fds.push(FdSlot {
            at: args.len(),
            source,
        });
        args.push(placeholder(what));
    };
    // bubblewrap says when the sandbox is built: a run that ends before
    // that could not start.
    args.push("--info-fd".into());
    slot(&mut args, FdSource::Info, "info");
    if let Some(ids) = rt.inside {
        args.extend(
            [
                "--uid".to_string(),
                ids.uid.to_string(),
                "--gid".to_string(),
                ids.gid.to_string(),
            ]
            .map(OsString::from),
        );
    }
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
                let Some((kind, within)) = kind_at(ir, &a[1]) else {
                    return Err(Diagnostic::error(
                        "sealc::linux::kind",
                        format!(
                            "the seal binds {} but does not record what it is",
                            quote(&a[1])
                        ),
                    )
                    .help("compile the spec again on the host instead of editing the record"));
                };
                let source = FdSource::Bind {
                    path: a[1].clone(),
                    kind,
                    within,
                };
                slot(&mut args, source, &a[1]);
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
            slot(&mut args, FdSource::Exe, "sealc");
            args.push(bwrap::INIT_PATH.into());
            if bridge.is_some() {
                args.push("--ro-bind-fd".into());
                slot(&mut args, FdSource::BridgeDir, "bridge");
                args.push(bwrap::BRIDGE_PATH.into());
            }
        }
    }
    args.push("--".into());
    // The init keeps the two pipes open for `__confine`, and reports the
    // command's end on the status pipe.
    args.extend([bwrap::INIT_PATH.into(), "__init".into(), "--env-fd".into()]);
    slot(&mut args, FdSource::Env, "env");
    args.push("--status-fd".into());
    slot(&mut args, FdSource::Status, "status");
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
    slot(&mut args, FdSource::Env, "env");
    args.push("--status-fd".into());
    slot(&mut args, FdSource::Status, "status");
    for (k, v) in ir.exec.limits.set() {
        if matches!(k, "wall_seconds" | "output_bytes") {
            continue; // sealc's own, outside
        }
        args.extend(["--limit".into(), format!("{k}={v}").into()]);
    }
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
    Ok(())
}

/// The write root (as written in the spec) that reaches the directory
/// `dir`, or the file `name` in it: by the realpath it was opened at, or by
/// identity (`dir` or a directory above it is a write root's object, as
/// where a bind mount gives a root a second path). What lies there the
/// agent may have put there, or may change after: sealc neither reads
/// evidence nor credentials from there, nor writes a report there.
pub fn write_root_reaching<'a>(
    ir: &'a Ir,
    dir: &crate::hostfs::Dir,
    name: Option<&std::ffi::OsStr>,
) -> Option<&'a str> {
    use std::os::unix::fs::MetadataExt;
    let path = match name {
        Some(n) => dir.path().join(n),
        None => dir.path().to_path_buf(),
    };
    let path = path.to_string_lossy();
    let above = dir.ancestry().unwrap_or_default();
    ir.roots
        .iter()
        .filter(|r| r.kind == crate::ir::RootKind::Write)
        .find(|r| {
            r.real.as_deref().is_some_and(|real| {
                crate::ir::is_within(&path, real)
                    || std::fs::symlink_metadata(real)
                        .is_ok_and(|m| above.contains(&(m.dev(), m.ino())))
            })
        })
        .map(|r| r.origin.as_str())
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

/// Where the bridges' directories are made: started by root,
/// `/run/sealc/bridge` (root's alone, checked); otherwise the caller's
/// `$XDG_RUNTIME_DIR` when it is the caller's alone, else `/tmp` (never
/// `$TMPDIR`, which a harness may point into a write root). Each bridge
/// has a directory of a random name there ([`private_dir`]).
fn bridge_parent() -> io::Result<crate::hostfs::Dir> {
    let me = rustix::process::geteuid();
    if me.is_root() {
        // Passed through by the agent's user (bubblewrap, as that user,
        // binds the bridge from its path); listed by no one but root.
        return crate::hostfs::run_dir("bridge", 0o711);
    }
    let own = std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|d| d.is_absolute())
        .and_then(|d| crate::hostfs::Dir::open(&d).ok())
        .filter(|d| {
            d.stat()
                .is_ok_and(|st| st.st_uid == me.as_raw() && st.st_mode & 0o077 == 0)
        });
    match own {
        Some(d) => Ok(d),
        None => crate::hostfs::Dir::open(Path::new("/tmp")),
    }
}

/// Remove the bridge directories (and their sockets) that a `sealc exec`
/// killed by `SIGKILL` left in `parent`: those whose process is gone, and
/// only this user's own (in a shared `/tmp`, another user's directory of
/// that name is theirs), each through its descriptor, no link followed.
fn sweep_stale_bridges(parent: &crate::hostfs::Dir) {
    use std::os::unix::fs::MetadataExt;
    if !Path::new("/proc/self").exists() {
        return; // no way to tell a live process
    }
    let Ok(entries) = std::fs::read_dir(parent.path()) else {
        return;
    };
    let me = rustix::process::geteuid();
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
        let Ok(dir) = parent.subdir(&name, None) else {
            continue; // a link, a file: not a bridge of sealc's
        };
        // Root's parent is root's alone: everything in it is sealc's (its
        // bridges belong to the agent's user while they last).
        let mine = me.is_root()
            || std::fs::symlink_metadata(e.path()).is_ok_and(|m| m.uid() == me.as_raw());
        if mine {
            let _ = dir.remove(BRIDGE_SOCKET.as_ref(), false);
            let _ = parent.remove(&name, true);
        }
    }
}

/// Make the private (0700) directory of a bridge, of a name no one can
/// guess: `sealc-bridge-PID-RANDOM` in [`bridge_parent`], after sweeping
/// the stale ones there. The directory and its parent are returned.
pub fn private_dir() -> io::Result<Bridge> {
    let parent = bridge_parent()?;
    sweep_stale_bridges(&parent);
    let (dir, name) =
        parent.make_unique(&format!("sealc-bridge-{}-", std::process::id()), 0o700)?;
    Ok(Bridge { parent, dir, name })
}

/// A bridge's directory on the host, while the run lasts.
#[derive(Debug)]
pub struct Bridge {
    parent: crate::hostfs::Dir,
    pub dir: crate::hostfs::Dir,
    name: String,
}

impl Bridge {
    /// Remove the socket and the directory.
    pub fn remove(&self) {
        let _ = self.dir.remove(BRIDGE_SOCKET.as_ref(), false);
        let _ = self.parent.remove(self.name.as_ref(), true);
    }
}

/// The outer half of the bridge: the unix socket in the private directory,
/// each connection forwarded to the host's proxy, or served by sealc's own
/// (`own`, `allowlist` mode: it runs until the returned handle is stopped
/// or dropped). Otherwise runs until sealc exits.
pub fn serve_outer(
    b: &BridgePlan,
    dir: &crate::hostfs::Dir,
    user: Option<Ids>,
    own: Option<&crate::proxy::Own>,
) -> io::Result<Option<crate::proxy::Running>> {
    use std::os::fd::AsRawFd;
    // Bound through the directory's descriptor: the socket is made in the
    // directory checked, whatever its path means now.
    let socket = format!("/proc/self/fd/{}/{BRIDGE_SOCKET}", dir.fd().as_raw_fd());
    let listener = UnixListener::bind(&socket)?;
    if let Some(ids) = user {
        // The sandbox's user connects through the read-only bind.
        let (uid, gid) = (
            Some(rustix::fs::Uid::from_raw(ids.uid)),
            Some(rustix::fs::Gid::from_raw(ids.gid)),
        );
        rustix::fs::chownat(dir.fd(), "", uid, gid, rustix::fs::AtFlags::EMPTY_PATH)?;
        rustix::fs::chownat(
            dir.fd(),
            BRIDGE_SOCKET,
            uid,
            gid,
            rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
        )?;
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
        .unwrap_or(SANDBOX_FAILED)
}

/// [`exit_code`] of a status from `wait`.
pub fn exit_code_of(status: rustix::process::WaitStatus) -> i32 {
    status
        .exit_status()
        .or_else(|| status.terminating_signal().map(|s| 128 + s))
        .unwrap_or(SANDBOX_FAILED)
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
/// can race on the position, and hold a pipe's lock while it waits). Past
/// `cap` bytes the rest is read and dropped, and `over` is called once.
/// To a terminal (`Delivery::Filtered`) what is read goes through the
/// [`terminal::Filter`] (the cap still counts the bytes read), and a reset
/// of the text attributes follows if the command's last SGR left them set.
fn relay(
    mut from: impl io::Read,
    mut to: impl io::Write,
    cap: Option<u64>,
    over: &dyn Fn(),
    delivery: stdio::Delivery,
) -> report::Stream {
    let mut buf = vec![0u8; 64 * 1024];
    let mut out = report::Stream {
        terminal: delivery.as_report(),
        ..Default::default()
    };
    let mut filter = (delivery == stdio::Delivery::Filtered).then(terminal::Filter::new);
    let mut shown = Vec::new();
    let mut open = true;
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        let room = cap
            .map_or(n as u64, |c| c.saturating_sub(out.bytes))
            .min(n as u64) as usize;
        if room < n && !out.truncated {
            out.truncated = true;
            over();
        }
        if open && room > 0 {
            let bytes = match &mut filter {
                None => &buf[..room],
                Some(f) => {
                    shown.clear();
                    f.feed(&buf[..room], &mut shown);
                    &shown[..]
                }
            };
            if !bytes.is_empty() && to.write_all(bytes).is_err() {
                open = false; // the caller stopped reading: drain, so nothing inside blocks
            } else {
                out.bytes += room as u64;
            }
        }
    }
    if let Some(mut f) = filter {
        f.finish();
        if open && f.styled() {
            let _ = to.write_all(terminal::RESET);
        }
        out.controls_dropped = f.dropped();
    }
    out
}

/// Let the sandbox's builder inherit `fd` (and return its number).
fn inheritable(fd: &OwnedFd) -> io::Result<i32> {
    use std::os::fd::AsRawFd;
    rustix::io::fcntl_setfd(fd, rustix::io::FdFlags::empty())?;
    Ok(fd.as_raw_fd())
}

/// How a run went, for the exit status and the report.
#[derive(Clone, Debug, Default)]
pub struct RunResult {
    pub outcome: Option<report::Outcome>,
    pub stdout: report::Stream,
    pub stderr: report::Stream,
    pub cpu_seconds: Option<f64>,
    pub peak_memory_kib: Option<u64>,
    pub limits_reached: Vec<&'static str>,
    /// A process of the sandbox was still there when `run` returned (its
    /// pid 1 did not end after `SIGKILL`): nothing may be handed back.
    pub survivors: bool,
}

impl RunResult {
    pub fn exit_code(&self) -> i32 {
        self.outcome
            .as_ref()
            .map_or(SANDBOX_FAILED, report::Outcome::exit_code)
    }
}

/// Why sealc itself stopped the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stop {
    Signal,
    Wall,
    Memory,
    Output,
}

enum Event {
    Exited(io::Result<ExitStatus>),
    Signal(i32),
    Stop(Stop),
}

/// Resident memory (KiB) and number of the processes `pids`.
fn usage(pids: &[i32]) -> (u64, u64) {
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
fn cpu_ticks(pid: &str) -> (u64, u64) {
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
fn children_cpu() -> f64 {
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

fn seconds(ticks: u64) -> f64 {
    ticks as f64 / rustix::param::clock_ticks_per_second() as f64
}

/// Start the plan and wait for it: own process group, exact environment,
/// stdio as [`stdio::ways`] decided, stdout and stderr relayed to the
/// caller as [`stdio::deliveries`] decided, signals forwarded, the limits
/// enforced; returns how it ended. With `trees` (started by root, see
/// [`idmap`]) the write roots are bound from their idmapped trees; with
/// `bridge`, the proxy bridge is served from that directory.
pub fn run(
    plan: &Plan,
    ways: [stdio::Way; 3],
    deliveries: [stdio::Delivery; 2],
    trees: &[idmap::Tree],
    bridge: Option<&Bridge>,
) -> io::Result<RunResult> {
    use std::process::Stdio;
    use std::sync::{Arc, Mutex};
    cloexec_inherited()?;
    // sealc's own proxy (mode `allowlist`) stops when this returns.
    let mut own_proxy = None;
    if let Some(b) = &plan.bridge {
        let dir = bridge.ok_or_else(|| io::Error::other("the bridge's directory was not made"))?;
        own_proxy = serve_outer(b, &dir.dir, plan.user, plan.proxy.as_ref())?;
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
    cmd.args(&args).env_clear().process_group(0);
    if !plan.bubblewrap {
        cmd.envs(plan.env.iter().map(|(k, v)| (k, v)));
        // macOS: the resource limits are set in the child before
        // `sandbox-exec` (on Linux `__confine` sets them inside).
        let limits: Vec<(String, u64)> = plan
            .limits
            .set()
            .into_iter()
            .filter(|(k, _)| !matches!(*k, "wall_seconds" | "output_bytes"))
            .map(|(k, v)| (k.to_string(), v))
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
                relay(from, &mut to, None, &|| {}, stdio::Delivery::Bytes);
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
    if let Some(from) = child.stdout.take() {
        let to = caller(io::stdout().as_fd())?;
        let tx = tx.clone();
        let delivery = deliveries[0];
        out_relay = Some(std::thread::spawn(move || {
            let over = || {
                let _ = tx.send(Event::Stop(Stop::Output));
            };
            relay(from, to, cap, &over, delivery)
        }));
    }
    if let Some(from) = child.stderr.take() {
        let to = caller(io::stderr().as_fd())?;
        let tx = tx.clone();
        let delivery = deliveries[1];
        err_relay = Some(std::thread::spawn(move || {
            let over = || {
                let _ = tx.send(Event::Stop(Stop::Output));
            };
            relay(from, to, cap, &over, delivery)
        }));
    }
    let group = rustix::process::Pid::from_child(&child);
    let inside = plan.bubblewrap;
    let bwrap_pid = child.id();
    let members = move || {
        if inside {
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
    // The watcher: resident memory and processes of the sandbox.
    let peak = Arc::new(Mutex::new((0u64, 0u64)));
    // CPU ticks last seen per process of the sandbox (a process killed at a
    // limit is never waited for by sealc, so its time would be lost).
    let ticks = Arc::new(Mutex::new(std::collections::BTreeMap::<i32, u64>::new()));
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    if inside {
        let (peak, done, tx, ticks) = (peak.clone(), done.clone(), tx.clone(), ticks.clone());
        let memory_kib = plan.limits.memory_mib.map(|m| m * 1024);
        std::thread::spawn(move || {
            loop {
                // First sleep: a short run costs the watcher nothing.
                std::thread::sleep(Duration::from_millis(50));
                if done.load(std::sync::atomic::Ordering::Relaxed) {
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
                    let _ = tx.send(Event::Stop(Stop::Memory));
                    return;
                }
            }
        });
    }
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
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    handle.close();
    // Whatever is left does not outlive sealc.
    deliver(rustix::process::Signal::KILL);
    let stdout = out_relay.and_then(|r| r.join().ok()).unwrap_or_default();
    let stderr = err_relay.and_then(|r| r.join().ok()).unwrap_or_default();
    if let Some(p) = own_proxy.take() {
        p.stop();
    }
    if let Some(b) = bridge {
        b.remove();
    }
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
    let survivors = init.is_some_and(|fd| !sandbox_ended(&fd));
    let status = match status {
        Some(Ok(s)) => s,
        Some(Err(e)) => return Err(e),
        None => {
            return Ok(RunResult {
                outcome: Some(report::Outcome::CouldNotStart {
                    phase: report::Phase::SandboxStart,
                    message: "lost track of the sandbox".into(),
                }),
                ..Default::default()
            })
        }
    };
    let (peak_kib, most) = peak.lock().map(|p| *p).unwrap_or_default();
    let waited = children_cpu();
    let watched = seconds(ticks.lock().map(|t| t.values().sum()).unwrap_or(0));
    let cpu = waited.max(watched);
    let mut limits_reached = Vec::new();
    if plan.limits.processes.is_some_and(|n| most >= n) {
        limits_reached.push("processes");
    }
    let outcome = classify(plan, status, stop, &info, &status_text, waited);
    match &outcome {
        report::Outcome::WallTimeout => limits_reached.push("wall_seconds"),
        report::Outcome::CpuLimit => limits_reached.push("cpu_seconds"),
        report::Outcome::MemoryLimit => limits_reached.push("memory_mib"),
        report::Outcome::OutputLimit => limits_reached.push("output_bytes"),
        report::Outcome::FileSizeLimit => limits_reached.push("file_size_mib"),
        _ => {}
    }
    limits_reached.sort();
    Ok(RunResult {
        outcome: Some(outcome),
        stdout,
        stderr,
        cpu_seconds: Some(cpu),
        peak_memory_kib: inside.then_some(peak_kib),
        limits_reached,
        survivors,
    })
}

/// The sandbox's pid 1, from bubblewrap's `--info-fd` report: a pidfd,
/// checked after opening to be of a process in the reported pid namespace
/// (else that process has ended already and the number may be another's).
fn sandbox_init(info: &str) -> Option<OwnedFd> {
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

/// Wait until the sandbox's pid 1 has ended, with `SIGKILL` if it is still
/// there (after its pid namespace's other processes: the kernel ends them
/// first); `false` when it has not ended after ten seconds.
fn sandbox_ended(init: &OwnedFd) -> bool {
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

/// How the run ended, from what sealc saw and what the inside reported:
/// bubblewrap's `--info-fd` (the sandbox was built), then the status pipe
/// (`start-failed <why>` from `__confine`, `exited <code>` or
/// `signaled <n> [cpu_ns <t>]` from the init, `t` the command's own CPU
/// time). Without a sandbox (macOS), the command's own CPU time is taken
/// from `children_cpu`, what sealc's waited-for children used.
fn classify(
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
    if plan.bubblewrap {
        if !info.contains("child-pid") {
            return O::CouldNotStart {
                phase: report::Phase::SandboxStart,
                message: format!("bubblewrap ended ({code}) before the sandbox was built"),
            };
        }
        for line in status_text.lines() {
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
fn signaled_line(rest: &str) -> Option<(i32, Option<f64>)> {
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
const RUSAGE_TOLERANCE: f64 = 0.05;

/// The outcome of a command killed by `signal`, having used `own` CPU
/// seconds itself (`None`: unknown). A limit is blamed only where it
/// fired: `SIGXCPU` once the command's own CPU time reached `cpu_seconds`
/// (the soft limit), `SIGKILL` once it reached the hard limit a second
/// later; `SIGXFSZ` under the Linux sandbox, whose filter leaves the
/// kernel's `RLIMIT_FSIZE` its only source. Anything else is the signal
/// the command got.
fn classify_signal(plan: &Plan, signal: i32, own: Option<f64>) -> report::Outcome {
    use report::Outcome as O;
    let tolerance = if plan.bubblewrap {
        0.0
    } else {
        RUSAGE_TOLERANCE
    };
    let reached = |limit: u64| own.is_some_and(|c| c + tolerance >= limit as f64);
    let cpu = plan.limits.cpu_seconds;
    match signal {
        libc::SIGXCPU if cpu.is_some_and(reached) => O::CpuLimit,
        libc::SIGKILL if cpu.is_some_and(|c| reached(c.saturating_add(1))) => O::CpuLimit,
        libc::SIGXFSZ if plan.bubblewrap && plan.limits.file_size_mib.is_some() => O::FileSizeLimit,
        n => O::Signaled { signal: n },
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
            inside: None,
            has_proc_entry: &|p| p != "/proc/kcore",
        }
    }

    fn strs(v: &[OsString]) -> Vec<String> {
        v.iter().map(|a| a.to_string_lossy().into_owned()).collect()
    }

    /// Issue 22: a limit is blamed only where it fired.
    #[test]
    fn a_signal_names_a_limit_only_where_the_limit_sent_it() {
        use report::Outcome as O;
        let plan_for = |p: Platform| {
            let mut plan = plan(&ir(p), &["cmd".into()], &|_| Some("k".into()), &rt()).unwrap();
            plan.limits.cpu_seconds = Some(2);
            plan.limits.file_size_mib = Some(8);
            plan
        };
        let (linux, macos) = (plan_for(Platform::Linux), plan_for(Platform::Macos));
        let (xcpu, xfsz, kill) = (libc::SIGXCPU, libc::SIGXFSZ, libc::SIGKILL);
        let signaled = |signal| O::Signaled { signal };
        for (plan, sig, own, want) in [
            // The soft limit's SIGXCPU, the hard limit's SIGKILL.
            (&linux, xcpu, Some(2.004), O::CpuLimit),
            (&linux, kill, Some(3.001), O::CpuLimit),
            // Sent, or caused by a lower limit of its own: not the seal's.
            (&linux, xcpu, Some(0.0), signaled(xcpu)),
            (&linux, xcpu, Some(1.99), signaled(xcpu)),
            (&linux, xcpu, None, signaled(xcpu)),
            (&linux, kill, Some(2.5), signaled(kill)),
            // Only the kernel sends SIGXFSZ inside the Linux sandbox.
            (&linux, xfsz, Some(0.0), O::FileSizeLimit),
            (&macos, xfsz, Some(0.0), signaled(xfsz)),
            // macOS reads rusage: 50 ms of tolerance.
            (&macos, xcpu, Some(1.96), O::CpuLimit),
            (&macos, xcpu, Some(0.3), signaled(xcpu)),
        ] {
            assert_eq!(
                classify_signal(plan, sig, own),
                want,
                "{sig} {own:?} bubblewrap={}",
                plan.bubblewrap
            );
        }
        let mut unlimited = linux.clone();
        unlimited.limits = Default::default();
        assert_eq!(classify_signal(&unlimited, xfsz, None), signaled(xfsz));
        assert_eq!(classify_signal(&unlimited, xcpu, Some(9.0)), signaled(xcpu));
        assert_eq!(
            signaled_line("24 cpu_ns 2004000000"),
            Some((24, Some(2.004)))
        );
        assert_eq!(signaled_line("9"), Some((9, None)));
        assert_eq!(signaled_line("9 cpu_ns x"), Some((9, None)));
        assert_eq!(signaled_line("x"), None);
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
        // bubblewrap reports the built sandbox on a pipe.
        assert_eq!(a[..2], ["--info-fd", "<fd:info>"]);
        let sep = a.iter().position(|x| x == "--").unwrap();
        assert_eq!(
            &a[sep..sep + 11],
            [
                "--",
                bwrap::INIT_PATH,
                "__init",
                "--env-fd",
                "<fd:env>",
                "--status-fd",
                "<fd:status>",
                "--listen",
                "127.0.0.1:3128",
                "--socket",
                "/dev/.sealc-bridge/proxy.sock",
            ]
        );
        let tail = &a[sep + 11..];
        assert_eq!(
            &tail[..9],
            [
                "--",
                bwrap::INIT_PATH,
                "__confine",
                "--env-fd",
                "<fd:env>",
                "--status-fd",
                "<fd:status>",
                "--offline",
                "--tcp-port"
            ]
        );
        assert_eq!(tail[9], "3128");
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
    fn the_launcher_runs_by_its_name() {
        let host = crate::facts::FakeHost::new()
            .dir("/d")
            .dir("/w")
            .file("/opt/codex/bin/codex", b"#!/bin/sh\n");
        let spec = format!("{SPEC}[launcher]\npath = \"/opt/codex/bin/codex\"\n");
        let with = crate::compile_for("p.toml", &spec, &Vec::new(), Some(Platform::Linux), &host)
            .unwrap()
            .ir;
        let run = |cmd: &[&str]| {
            let c: Vec<OsString> = cmd.iter().map(OsString::from).collect();
            strs(&resolve_launcher(&with, &c))
        };
        assert_eq!(
            run(&["codex", "exec", "hi"]),
            ["/opt/codex/bin/codex", "exec", "hi"]
        );
        assert_eq!(run(&["./codex", "exec"]), ["./codex", "exec"]);
        assert_eq!(run(&["/usr/bin/codex"]), ["/usr/bin/codex"]);
        assert_eq!(run(&["ls", "codex"]), ["ls", "codex"]);
        assert!(run(&[]).is_empty());
        // Without a launcher, nothing changes.
        assert_eq!(
            strs(&resolve_launcher(&ir(Platform::Linux), &["codex".into()])),
            ["codex"]
        );
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
    fn the_relay_filters_for_a_terminal_only_and_the_cap_counts_what_was_read() {
        let input: &[u8] = b"\x1b]52;c;AAAA\x07\x1b[31mred\x1b[2J\x9b6n\n";
        let run = |d: stdio::Delivery, cap: Option<u64>| {
            let mut to = Vec::new();
            let over = std::cell::Cell::new(0);
            let s = relay(input, &mut to, cap, &|| over.set(over.get() + 1), d);
            (to, s, over.get())
        };
        // Not a terminal, or `--raw-terminal`: byte for byte.
        for d in [stdio::Delivery::Bytes, stdio::Delivery::Raw] {
            let (to, s, over) = run(d, None);
            assert_eq!(to, input);
            assert_eq!(
                (s.bytes, s.controls_dropped, over),
                (input.len() as u64, 0, 0)
            );
            assert_eq!(s.terminal, d.as_report());
        }
        // A terminal: text and colours, then a reset of the colour left set.
        let (to, s, _) = run(stdio::Delivery::Filtered, None);
        assert_eq!(to, b"\x1b[31mred\n\x1b[0m");
        assert_eq!(s.bytes, input.len() as u64);
        assert_eq!(s.controls_dropped, input.len() as u64 - 9);
        assert_eq!(s.terminal, Some("filtered"));
        // The cap counts bytes read from the command, filtered or not.
        let (to, s, over) = run(stdio::Delivery::Filtered, Some(20));
        assert_eq!((s.bytes, s.truncated, over), (20, true, 1));
        assert_eq!(to, b"\x1b[31mred\x1b[0m");
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
