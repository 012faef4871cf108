//! What runs inside a Linux sandbox, before the command: `sealc __init`
//! (pid 1) and `sealc __confine` (the command's last step before `exec`).
//!
//! bubblewrap runs with `--as-pid-1`, so no bubblewrap process is inside.
//! `__init` is the sandbox's pid 1: it makes itself non-dumpable, reads the
//! command's exact environment from a pipe (so the environment never reaches
//! bubblewrap, which runs outside the seal, nor argv), closes every other
//! descriptor it inherited, installs its own seccomp filter, carries the
//! proxy port across the network namespace (mode `proxy`), starts the command
//! through `__confine`, reaps orphans and returns the command's status.
//! `__confine` adds the Landlock layer and the command's seccomp filter, then
//! becomes the command.

use crate::failure::Failure;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::{self, Read};
use std::net::{TcpListener, TcpStream};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;

use seccompiler::{
    SeccompAction, SeccompCmpArgLen as Len, SeccompCmpOp as Op, SeccompCondition as Cond,
    SeccompFilter, SeccompRule,
};

use super::{exit_code_of, SANDBOX_FAILED};

/// How the command may connect over TCP (the Landlock layer).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Tcp {
    /// Not restricted (network `open`).
    Any,
    /// Only to these ports (network `none`: none; `proxy`: the proxy's).
    Only(Vec<u16>),
}

/// What `__confine` applies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Confinement {
    /// Refuse new unix sockets and non-stream unix socket pairs.
    pub offline: bool,
    /// Resource limits (given as `NAME=VALUE`, the spec's `[limits]` names).
    pub limits: Vec<(crate::limit::Limit, u64)>,
    /// Landlock: writes only beneath these paths.
    pub write: Vec<OsString>,
    pub tcp: Tcp,
    /// Landlock must be enforced, not only applied as far as the kernel
    /// goes (`exec.proc = "host"`: it keeps the command out of other
    /// processes' `/proc` entries).
    pub require_landlock: bool,
    /// `exec.isolation = "landlock"`: Landlock holds reads too.
    pub reads: Option<Reads>,
}

/// The read rules of the Landlock mode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reads {
    /// The ABI the seal needs at the least.
    pub abi: i32,
    /// Read (and execute) beneath these paths.
    pub read: Vec<OsString>,
    /// List directories beneath these paths.
    pub list: Vec<OsString>,
    /// Kept out of the read rules that hold them: their siblings are
    /// granted instead, as the directories on the way are when the command
    /// starts.
    pub hide: Vec<OsString>,
    /// The agent's user may own files outside the write roots (no uid of
    /// the run's own): modes, owners and extended attributes are refused.
    pub shared_user: bool,
}

/// A system call's name (without `SYS_`) and its number on this
/// architecture: one token, so the name cannot drift from the number.
macro_rules! sys {
    ($nr:ident) => {
        (
            match stringify!($nr).strip_prefix("SYS_") {
                Some(name) => name,
                None => stringify!($nr),
            },
            libc::$nr,
        )
    };
}

// After `sys!`, which the seccomp policy uses.
#[path = "inside/landlock.rs"]
mod landlock_layer;
mod seccomp;
mod tree;
use self::landlock_layer::apply_landlock;
pub use self::landlock_layer::landlock_abi;
use self::seccomp::install;
pub use self::seccomp::{filters, Refusals};
#[cfg(test)]
use self::seccomp::{named, named_enosys, rules};
pub(crate) use self::tree::descendants;

/// `sealc __confine`: read the command's environment from `env_fd` (when
/// given), apply Landlock, then the filter, then become the command with
/// exactly that environment. It starts with an empty environment itself, so
/// no loader variable of the command's (`LD_PRELOAD` into a write root, left
/// by an earlier run) is honoured before it confines. Returns only when one
/// of these fails.
pub fn confine_main(
    c: &Confinement,
    env_fd: Option<i32>,
    status_fd: Option<i32>,
    command: &[OsString],
) -> (StartFailure, io::Error) {
    let (kind, e) = confine_and_exec(c, env_fd, status_fd, command);
    if let Some(fd) = status_fd {
        // SAFETY: `fd` is the status pipe `sealc exec` made and named on this
        // process's command line; nothing else in this process owns it.
        #[allow(unsafe_code)]
        let pipe = unsafe { OwnedFd::from_raw_fd(fd) };
        let line = format!(
            "start-failed {} {}\n",
            kind.as_str(),
            e.to_string().replace('\n', " ")
        );
        let _ = io::Write::write_all(&mut std::fs::File::from(pipe), line.as_bytes());
    }
    (kind, e)
}

/// Why `__confine` could not become the command: its own layers failed (the
/// sandbox is not whole), or the command itself was not found or could not
/// be executed. Each has its own exit status, as a shell's 127 and 126.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StartFailure {
    /// The environment pipe, a limit, Landlock or seccomp failed.
    Sandbox,
    /// No such command (`ENOENT`): exit 127.
    NotFound,
    /// The command is there but could not be executed: exit 126.
    NotExecutable,
}

impl StartFailure {
    pub fn as_str(self) -> &'static str {
        match self {
            StartFailure::Sandbox => "sandbox",
            StartFailure::NotFound => "not-found",
            StartFailure::NotExecutable => "not-executable",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [Self::Sandbox, Self::NotFound, Self::NotExecutable]
            .into_iter()
            .find(|k| k.as_str() == s)
    }

    /// The phase of the run report this failure belongs to.
    pub fn phase(self) -> super::report::Phase {
        match self {
            StartFailure::Sandbox => super::report::Phase::SandboxStart,
            StartFailure::NotFound => super::report::Phase::CommandNotFound,
            StartFailure::NotExecutable => super::report::Phase::CommandStart,
        }
    }
}

fn confine_and_exec(
    c: &Confinement,
    env_fd: Option<i32>,
    status_fd: Option<i32>,
    command: &[OsString],
) -> (StartFailure, io::Error) {
    let sandbox = |e: io::Error| (StartFailure::Sandbox, e);
    let env = match env_fd.map(read_env).transpose() {
        Ok(env) => env,
        Err(e) => return sandbox(io::Error::other(e)),
    };
    if let Err(e) = set_limits(&c.limits) {
        return sandbox(io::Error::other(e));
    }
    if let Err(e) = apply_landlock(c) {
        return sandbox(io::Error::other(format!(
            "cannot apply the Landlock layer: {e}"
        )));
    }
    let refusals = Refusals {
        landlock: c.reads.as_ref().map(|r| crate::refusals::LandlockMode {
            shared_user: r.shared_user,
        }),
        offline: c.offline,
        file_size: c
            .limits
            .iter()
            .any(|(k, _)| *k == crate::limit::Limit::FileSizeMib),
    };
    if let Err(e) = install(refusals) {
        return sandbox(io::Error::other(format!(
            "cannot install the seccomp filter: {e}"
        )));
    }
    let Some((first, rest)) = command.split_first() else {
        return sandbox(io::Error::other("no command to run"));
    };
    if let Some(fd) = status_fd {
        // SAFETY: the status pipe named on the command line, borrowed to set
        // close-on-exec: the command must not inherit it (it could forge how
        // its run ended).
        #[allow(unsafe_code)]
        let pipe = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
        if let Err(e) = rustix::io::fcntl_setfd(pipe, rustix::io::FdFlags::CLOEXEC) {
            return sandbox(io::Error::other(format!(
                "cannot close the status pipe: {e}"
            )));
        }
    }
    let exec = |program: &Path| {
        let mut cmd = Command::new(program);
        cmd.arg0(first).args(rest);
        if let Some(env) = &env {
            cmd.env_clear().envs(env.iter().map(|(k, v)| (k, v)));
        }
        cmd.exec()
    };
    let shown = |e: io::Error| {
        let kind = if e.kind() == io::ErrorKind::NotFound {
            StartFailure::NotFound
        } else {
            StartFailure::NotExecutable
        };
        let msg = format!("`{}`: {e}", first.to_string_lossy());
        (kind, io::Error::new(e.kind(), msg))
    };
    if first.as_bytes().contains(&b'/') {
        return shown(exec(Path::new(first)));
    }
    // A bare name: searched over the command's `PATH` as `execvp` does (the
    // first entry with a file that runs wins), except that entries the
    // command's user cannot search make it not found (127) and are named,
    // rather than a bare "permission denied" (126); a file found there but
    // not executable stays 126.
    let path = env
        .as_ref()
        .and_then(|e| e.iter().find(|(k, _)| k == "PATH"))
        .map_or_else(|| OsString::from("/bin:/usr/bin"), |(_, v)| v.clone());
    let mut denied: Vec<String> = Vec::new();
    let mut refused = None;
    for dir in path.as_bytes().split(|b| *b == b':') {
        let dir = if dir.is_empty() { b".".as_slice() } else { dir };
        let dir = Path::new(std::ffi::OsStr::from_bytes(dir));
        let candidate = dir.join(first);
        match std::fs::metadata(&candidate) {
            Ok(m) if !m.is_dir() => {
                let e = exec(&candidate);
                if e.kind() != io::ErrorKind::PermissionDenied {
                    return shown(e);
                }
                refused.get_or_insert(e);
            }
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
                denied.push(format!("`{}`", dir.display()));
            }
            Err(_) => {}
        }
    }
    if let Some(e) = refused {
        return shown(e);
    }
    if denied.is_empty() {
        return shown(io::Error::from_raw_os_error(libc::ENOENT));
    }
    let msg = format!(
        "`{}`: not found in `PATH`, and the command's user cannot search {} there",
        first.to_string_lossy(),
        denied.join(", ")
    );
    (
        StartFailure::NotFound,
        io::Error::new(io::ErrorKind::NotFound, msg),
    )
}

/// The `[limits]` that are resource limits, as `setrlimit` values, soft and
/// hard (the CPU limit's hard one a second later, so `SIGXCPU` comes first;
/// memory's `RLIMIT_DATA` a backstop at twice the limit, which sealc's
/// watcher enforces itself and names).
pub fn rlimits(
    limits: &[(crate::limit::Limit, u64)],
) -> Result<Vec<(rustix::process::Resource, rustix::process::Rlimit)>, Failure> {
    use crate::limit::Limit;
    use rustix::process::{Resource, Rlimit};
    limits
        .iter()
        .map(|(k, v)| {
            let (res, soft, hard) = match k {
                Limit::CpuSeconds => (Resource::Cpu, *v, v + 1),
                Limit::MemoryMib => (Resource::Data, v << 21, v << 21),
                Limit::Processes => (Resource::Nproc, *v, *v),
                Limit::OpenFiles => (Resource::Nofile, *v, *v),
                Limit::FileSizeMib => (Resource::Fsize, v << 20, v << 20),
                Limit::WallSeconds | Limit::OutputBytes => {
                    return Err(Failure::new(format!(
                        "`{}` is not a resource limit",
                        k.key()
                    )))
                }
            };
            Ok((
                res,
                Rlimit {
                    current: Some(soft),
                    maximum: Some(hard),
                },
            ))
        })
        .collect()
}

fn set_limits(limits: &[(crate::limit::Limit, u64)]) -> Result<(), Failure> {
    for (res, lim) in rlimits(limits)? {
        rustix::process::setrlimit(res, lim)
            .map_err(|e| Failure::os(format!("cannot set the limit {res:?}"), e))?;
    }
    Ok(())
}

/// Read the environment from the pipe `sealc exec` made, and close it.
fn read_env(fd: i32) -> Result<Vec<(OsString, OsString)>, Failure> {
    let mut bytes = Vec::new();
    // SAFETY: `fd` is the read end of the pipe `sealc exec` made and named
    // on this process's command line; nothing else in this process owns it,
    // and it is closed when `pipe` drops.
    #[allow(unsafe_code)]
    let pipe = unsafe { OwnedFd::from_raw_fd(fd) };
    std::fs::File::from(pipe)
        .read_to_end(&mut bytes)
        .map_err(|e| Failure::os("cannot read the environment", e))?;
    Ok(decode_env(&bytes))
}

/// Copy both ways between a TCP and a unix stream until both sides are done.
pub fn pump(tcp: TcpStream, unix: UnixStream) {
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

/// The environment `sealc exec` sends down the pipe: `NAME=VALUE\0`...
pub fn encode_env(env: &[(String, OsString)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (k, v) in env {
        out.extend_from_slice(k.as_bytes());
        out.push(b'=');
        out.extend_from_slice(v.as_encoded_bytes());
        out.push(0);
    }
    out
}

fn decode_env(bytes: &[u8]) -> Vec<(OsString, OsString)> {
    use std::os::unix::ffi::OsStringExt;
    bytes
        .split(|&b| b == 0)
        .filter(|e| !e.is_empty())
        .filter_map(|e| {
            let at = e.iter().position(|&b| b == b'=')?;
            Some((
                OsString::from_vec(e[..at].to_vec()),
                OsString::from_vec(e[at + 1..].to_vec()),
            ))
        })
        .collect()
}

/// `sealc __init`, pid 1 of the sandbox. Returns the exit status. It never
/// reads the command's environment: it hands the pipe `env_fd` on to
/// `__confine` (named in `command`) and runs with an empty environment.
pub fn init_main(
    env_fd: i32,
    status_fd: Option<i32>,
    forwards: &[(String, std::path::PathBuf)],
    landlock: bool,
    command: &[OsString],
) -> Result<i32, Failure> {
    // The first line on the status pipe: bubblewrap built the sandbox and
    // ran this init in it. Until sealc reads it, the sandbox does not count
    // as built (bubblewrap reports its child on `--info-fd` before the
    // child has mounted anything, and may still fail after).
    say(status_fd, &format!("{INIT_LINE}\n"));
    let r = init_run(env_fd, status_fd, forwards, landlock, command);
    if let Err(e) = &r {
        say(
            status_fd,
            &format!(
                "start-failed {} {}\n",
                StartFailure::Sandbox.as_str(),
                e.to_string().replace('\n', " ")
            ),
        );
    }
    r
}

/// `sealc __mcp --port N`: stdin to the loopback port, and what comes back
/// to stdout, until both ends are done (what Codex starts as a sealed MCP
/// server; the init forwards the port to the server sealc started for it).
pub fn relay_mcp(port: u16) -> io::Result<()> {
    use std::os::fd::AsFd;
    let conn = std::net::TcpStream::connect(("127.0.0.1", port))?;
    let _ = conn.set_nodelay(true);
    let mut to = conn.try_clone()?;
    // Descriptors 0 and 1 themselves, unbuffered (the CLI holds the lock
    // of its own `Stdout` while a command runs).
    let mut stdin = std::fs::File::from(io::stdin().as_fd().try_clone_to_owned()?);
    let mut stdout = std::fs::File::from(io::stdout().as_fd().try_clone_to_owned()?);
    std::thread::spawn(move || {
        let _ = copy_plain(&mut stdin, &mut to);
        let _ = to.shutdown(std::net::Shutdown::Write);
    });
    let mut from = conn;
    // Stdin may never end: the server's end is the relay's.
    copy_plain(&mut from, &mut stdout)
}

/// Copy until the end, each read written out at once (`io::copy` would
/// splice, which stalled a socket's replies on their way into a pipe).
fn copy_plain(from: &mut impl io::Read, to: &mut impl io::Write) -> io::Result<()> {
    let mut buf = [0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        to.write_all(&buf[..n])?;
    }
}

/// What the init writes first on the status pipe.
pub const INIT_LINE: &str = "init";

/// What starts the init's last line on the status pipe, after the
/// command's end: what the command left running, as JSON
/// (`left {"count":N,"names":[...]}`).
pub const LEFT_LINE: &str = "left ";

/// A line on the status pipe `fd`, while the pipe is still this process's
/// (lines are shorter than `PIPE_BUF`, so whole on the pipe, whoever else
/// writes to it).
fn say(fd: Option<i32>, line: &str) {
    if let Some(fd) = fd {
        // SAFETY: the status pipe named on the command line; borrowed for
        // one write, before the init hands it on or closes it.
        #[allow(unsafe_code)]
        let pipe = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
        let _ = rustix::io::write(pipe, line.as_bytes());
    }
}

fn init_run(
    env_fd: i32,
    status_fd: Option<i32>,
    forwards: &[(String, std::path::PathBuf)],
    landlock: bool,
    command: &[OsString],
) -> Result<i32, Failure> {
    // Not dumpable: nothing inside (same uid) can ptrace it or read its
    // memory, e.g. to use the unix sockets it keeps for the bridge.
    rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable)
        .map_err(|e| Failure::os("cannot make itself non-dumpable", e))?;
    // Whatever else crossed (bubblewrap's descriptors) does not reach the
    // command; the environment's pipe goes on to `__confine`.
    super::cloexec_inherited().map_err(|e| Failure::os("cannot close inherited descriptors", e))?;
    for fd in std::iter::once(env_fd).chain(status_fd) {
        // SAFETY: `fd` is a pipe `sealc exec` made and named on this
        // process's command line; it is only borrowed to clear its
        // close-on-exec flag, so that `__confine` gets it.
        #[allow(unsafe_code)]
        let pipe = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
        rustix::io::fcntl_setfd(pipe, rustix::io::FdFlags::empty())
            .map_err(|e| Failure::os(format!("cannot hand on descriptor {fd}"), e))?;
    }
    // The init's own filter: the rules every process inside has (the
    // command's file size rules come with `__confine`, after it has set the
    // limit, which they would refuse).
    // (The refusals for a user shared with the host come with
    // `__confine`, which knows whether the agent has a uid of its own.)
    install(Refusals {
        landlock: landlock.then_some(crate::refusals::LandlockMode { shared_user: false }),
        ..Refusals::default()
    })?;
    if landlock {
        tree::take_charge()?;
        tree::scope_signals();
    }
    for (listen, socket) in forwards {
        let listener = TcpListener::bind(listen)
            .map_err(|e| Failure::os(format!("cannot listen on {listen}"), e))?;
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
    }
    let Some((program, args)) = command.split_first() else {
        return Ok(SANDBOX_FAILED);
    };
    let child = Command::new(program)
        .args(args)
        .env_clear()
        .spawn()
        .map_err(|e| Failure::os(format!("cannot start {}", program.to_string_lossy()), e))?;
    let main = rustix::process::Pid::from_child(&child);
    // Reap every orphan until the command itself ends; then pid 1 exits and
    // the kernel ends whatever is left in the namespace. The command is
    // seen exited before it is reaped, so that its own CPU time can be read.
    let (status, own_ns) = loop {
        let pid = match next_exited() {
            Ok(pid) => pid,
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
            Err(e) => return Err(Failure::os("cannot wait for the command", e)),
        };
        let Some(pid) = rustix::process::Pid::from_raw(pid) else {
            // No pid said (never on Linux): reap whichever it is.
            match rustix::process::wait(rustix::process::WaitOptions::empty()) {
                Ok(Some((p, status))) if p == main => break (status, None),
                Ok(_) | Err(rustix::io::Errno::INTR) => continue,
                Err(e) => return Err(Failure::os("cannot wait for the command", e)),
            }
        };
        if pid != main {
            let _ = rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::NOHANG);
            continue;
        }
        // Its own CPU time, while it is still a zombie: all its threads',
        // none of its children's, as `RLIMIT_CPU` counts it.
        let own = prof_clock_ns(pid.as_raw_nonzero().get());
        match reap(main) {
            Ok(status) => break (status, own),
            Err(e) => return Err(Failure::os("cannot wait for the command", e)),
        }
    };
    // SAFETY: the status pipe named on the command line; this process owns
    // it from here to its end (its last uses).
    #[allow(unsafe_code)]
    let mut pipe = status_fd.map(|fd| std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) }));
    if let Some(p) = pipe.as_mut() {
        let line = match (status.terminating_signal(), own_ns) {
            (Some(n), Some(t)) => format!("signaled {n} cpu_ns {t}\n"),
            (Some(n), None) => format!("signaled {n}\n"),
            (None, _) => format!("exited {}\n", status.exit_status().unwrap_or(0)),
        };
        let _ = io::Write::write_all(p, line.as_bytes());
    }
    // What the command left running ends with it, as a pid namespace ends
    // with its pid 1 (after its end is said: the outcome is the command's,
    // however long this takes), counted and named for the report.
    let names = tree::left_names(landlock);
    let count = if landlock {
        Some(tree::end_all())
    } else {
        tree::end_namespace()
    };
    if let (Some(p), Some(count)) = (pipe.as_mut(), count) {
        let left = super::report::LeftRunning { count, names };
        if let Ok(json) = serde_json::to_string(&left) {
            let _ = io::Write::write_all(p, format!("{LEFT_LINE}{json}\n").as_bytes());
        }
    }
    Ok(exit_code_of(status))
}

/// The pid of a child that has exited, left unreaped (`waitid` with
/// `WEXITED | WNOWAIT`; rustix's `waitid` does not say which child).
#[allow(unsafe_code)]
fn next_exited() -> io::Result<i32> {
    // SAFETY: `siginfo_t` is plain data, for which all zeroes is a valid
    // value (and what `waitid` expects to find when no child is ready).
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: `info` is a valid, writable `siginfo_t` for the duration of
    // the call, which writes nothing else.
    let r = unsafe { libc::waitid(libc::P_ALL, 0, &mut info, libc::WEXITED | libc::WNOWAIT) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a successful `waitid` with `WEXITED` (and no `WNOHANG`) filled
    // in a `SIGCHLD` siginfo, whose `si_pid` is the child's.
    Ok(unsafe { info.si_pid() })
}

/// The CPU time of process `pid`, all its threads (not its children), in
/// nanoseconds, as the kernel's CPU timers and `RLIMIT_CPU` sample it: its
/// `CPUCLOCK_PROF` process clock (user + system). `/proc/<pid>/stat` and
/// `getrusage` scale user and system time to the scheduler's runtime, which
/// can lie a few percent below what the limit counted.
#[allow(unsafe_code)]
fn prof_clock_ns(pid: i32) -> Option<u64> {
    // `MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_PROF)` of the kernel's
    // posix-timers: the encoding glibc's `clock_getcpuclockid` uses (with
    // `CPUCLOCK_SCHED`, 2).
    let clock: libc::clockid_t = (!pid) << 3;
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable `timespec` for the duration of the
    // call, which writes nothing else.
    let r = unsafe { libc::clock_gettime(clock, &mut ts) };
    if r != 0 {
        return None;
    }
    let secs = u64::try_from(ts.tv_sec).ok()?;
    let nanos = u64::try_from(ts.tv_nsec).ok()?;
    Some(secs.saturating_mul(1_000_000_000).saturating_add(nanos))
}

/// Reap `pid`, which has exited.
fn reap(pid: rustix::process::Pid) -> io::Result<rustix::process::WaitStatus> {
    loop {
        match rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::empty()) {
            Ok(Some((_, status))) => return Ok(status),
            Ok(None) | Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

#[cfg(test)]
mod tests;
