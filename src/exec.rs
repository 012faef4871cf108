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

mod bridge;
mod mechanism;
mod outcome;
mod plan;
mod wait;
mod watch;

pub use self::bridge::{cloexec_inherited, private_dir, serve_outer, Bridge};
pub use self::mechanism::Mechanism;
use self::outcome::{children_cpu, classify, sandbox_members, seconds};
#[cfg(test)]
use self::outcome::{classify_signal, signaled_line};
pub use self::outcome::{exit_code, exit_code_of, RunResult};
pub use self::plan::{
    plan, resolve_launcher, shared_user, write_root_reaching, BridgePlan, FdSlot, FdSource, Plan,
    Runtime,
};
#[cfg(test)]
use self::stdio::relay;
#[cfg(test)]
use self::wait::open_exact;
pub use self::wait::run;
use self::wait::Stop;

pub mod codex_home;
pub mod idmap;
pub mod inside;
pub mod mcp;
pub mod probe;
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
use crate::spec::NetMode;

pub use inside::{confine_main, init_main, landlock_abi, Confinement, Reads, StartFailure, Tcp};
pub use user::Ids;

pub use crate::exit::{
    CANNOT_EXECUTE, CANNOT_START, CODEX_CONFIG_DRIFT, SANDBOX_FAILED, TIMED_OUT,
};
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

/// `host_drift` lives in its own module, `drift`, with the kinds of drift.
pub use crate::drift::host_drift;

#[cfg(test)]
mod tests;
