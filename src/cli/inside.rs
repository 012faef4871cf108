//! The hidden commands sealc runs inside its own Linux sandbox: `__init`
//! (pid 1) and `__confine` (Landlock, seccomp and limits, then the command);
//! and `__probe`, the steps of building one, tried when one could not be built.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;

/// Inside a Linux sandbox, pid 1: the command's environment, the proxy bridge, reaping.
#[derive(clap::Args, Debug)]
pub struct InitArgs {
    /// The pipe that carries the command's environment.
    #[arg(long)]
    env_fd: i32,
    /// The pipe the command's start and end are reported on.
    #[arg(long)]
    status_fd: Option<i32>,
    #[arg(long, requires = "socket")]
    listen: Option<String>,
    #[arg(long, requires = "listen")]
    socket: Option<PathBuf>,
    /// `ADDR:PORT=SOCKET`: another loopback port forwarded to a unix
    /// socket (an MCP server's), repeated.
    #[arg(long, value_parser = parse_forward)]
    forward: Vec<(String, PathBuf)>,
    /// Where the command starts, if it is there inside (else `/`).
    #[arg(long)]
    cwd: Option<PathBuf>,
    /// `exec.isolation = "landlock"`: no namespace around this init; it
    /// keeps every process the command starts as its descendant, and ends
    /// them all when the command ends or sealc goes away.
    #[arg(long)]
    landlock: bool,
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
    command: Vec<OsString>,
}

/// Try the steps of building a Linux sandbox, one line each (`sealc exec` runs it when one could not be built).
#[derive(clap::Args, Debug)]
pub struct ProbeArgs {}

pub(super) fn probe(out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    match crate::exec::probe::probe_main(out) {
        Ok(()) => crate::exit::OK,
        Err(e) => {
            let _ = writeln!(err, "sealc: the probe cannot report: {e}");
            crate::exec::SANDBOX_FAILED
        }
    }
}

/// Inside a Linux sandbox: Landlock and the seccomp filter, then become the command.
#[derive(clap::Args, Debug)]
pub struct ConfineArgs {
    /// Also refuse new unix sockets (network `none` and `proxy`).
    #[arg(long)]
    offline: bool,
    /// TCP connect is not restricted (network `open`).
    #[arg(long)]
    tcp_any: bool,
    /// Fail unless Landlock is enforced (`exec.proc = "host"`).
    #[arg(long)]
    require_landlock: bool,
    /// A port TCP connect may reach (otherwise none).
    #[arg(long)]
    tcp_port: Vec<u16>,
    /// A path beneath which writes are allowed.
    #[arg(long)]
    write: Vec<OsString>,
    /// `exec.isolation = "landlock"`: reads too are Landlock's, and these
    /// are the rules (each repeated as needed).
    #[arg(long)]
    landlock_abi: Option<i32>,
    /// A path beneath which reads are allowed.
    #[arg(long, requires = "landlock_abi")]
    read: Vec<OsString>,
    /// A path beneath which directories may be listed.
    #[arg(long, requires = "landlock_abi")]
    list: Vec<OsString>,
    /// A path kept out of the read rules that hold it.
    #[arg(long, requires = "landlock_abi")]
    hide: Vec<OsString>,
    /// The agent's user may own files outside the write roots.
    #[arg(long, requires = "landlock_abi")]
    shared_user: bool,
    /// The pipe that carries the command's environment.
    #[arg(long)]
    env_fd: Option<i32>,
    /// The pipe a failure to start the command is reported on.
    #[arg(long)]
    status_fd: Option<i32>,
    /// A resource limit, `NAME=VALUE` (`[limits]` names).
    #[arg(long, value_parser = parse_limit)]
    limit: Vec<(crate::limit::Limit, u64)>,
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
    command: Vec<OsString>,
}

/// `ADDR:PORT=SOCKET` of `__init --forward`.
fn parse_forward(s: &str) -> Result<(String, PathBuf), String> {
    let (listen, socket) = s
        .split_once('=')
        .ok_or_else(|| format!("`{s}` is not ADDR:PORT=SOCKET"))?;
    Ok((listen.to_string(), PathBuf::from(socket)))
}

/// Inside an agent's Linux seal: relay stdin and stdout to a sealed MCP
/// server's loopback port (what the generated Codex config starts for it).
#[derive(clap::Args, Debug)]
pub struct McpArgs {
    /// The server's port on the seal's loopback.
    #[arg(long)]
    port: u16,
}

pub(super) fn mcp(a: McpArgs, err: &mut dyn Write) -> i32 {
    match crate::exec::inside::relay_mcp(a.port) {
        Ok(()) => crate::exit::OK,
        Err(e) => {
            let _ = writeln!(
                err,
                "sealc: the MCP server at port {} cannot be reached: {e}",
                a.port
            );
            crate::exec::SANDBOX_FAILED
        }
    }
}

pub(super) fn init(a: InitArgs, err: &mut dyn Write) -> i32 {
    let mut forwards: Vec<(String, PathBuf)> =
        a.listen.clone().zip(a.socket.clone()).into_iter().collect();
    forwards.extend(a.forward);
    // As bubblewrap would without `--chdir`: the caller's directory if the
    // sandbox has it (and the agent may enter it), else `/`.
    if let Some(cwd) = &a.cwd {
        let _ = std::env::set_current_dir(cwd);
    }
    match crate::exec::init_main(a.env_fd, a.status_fd, &forwards, a.landlock, &a.command) {
        Ok(code) => code,
        Err(e) => {
            let _ = writeln!(err, "sealc: the sandbox cannot start: {e}");
            crate::exec::SANDBOX_FAILED
        }
    }
}

pub(super) fn confine(a: ConfineArgs, err: &mut dyn Write) -> i32 {
    let c = crate::exec::Confinement {
        offline: a.offline,
        limits: a.limit,
        write: a.write,
        tcp: if a.tcp_any {
            crate::exec::Tcp::Any
        } else {
            crate::exec::Tcp::Only(a.tcp_port)
        },
        require_landlock: a.require_landlock || a.landlock_abi.is_some(),
        reads: a.landlock_abi.map(|abi| crate::exec::Reads {
            abi,
            read: a.read,
            list: a.list,
            hide: a.hide,
            shared_user: a.shared_user,
        }),
    };
    use crate::exec::StartFailure;
    let (kind, e) = crate::exec::confine_main(&c, a.env_fd, a.status_fd, &a.command);
    // It names the command and `PATH` entries: escaped, as on the status pipe's way out.
    let e = crate::diag::visible(&e.to_string());
    match kind {
        StartFailure::Sandbox => {
            let _ = writeln!(err, "sealc: the sandbox cannot start: {e}");
            crate::exec::SANDBOX_FAILED
        }
        StartFailure::NotFound => {
            let _ = writeln!(err, "sealc: command not found in the sandbox: {e}");
            crate::exec::CANNOT_START
        }
        StartFailure::NotExecutable => {
            let _ = writeln!(err, "sealc: cannot execute the command: {e}");
            crate::exec::CANNOT_EXECUTE
        }
    }
}

/// Read the record and the artifact files beside it (or in `--artifacts`),
/// then verify; the live and Codex-config checks come after.
/// `NAME=VALUE` of `__confine --limit`.
fn parse_limit(s: &str) -> Result<(crate::limit::Limit, u64), String> {
    let (k, v) = s.split_once('=').ok_or("NAME=VALUE")?;
    let limit = crate::limit::Limit::from_key(k).ok_or(format!("no limit is named `{k}`"))?;
    Ok((limit, v.parse().map_err(|_| "a number")?))
}
