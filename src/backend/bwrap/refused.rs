//! What every Linux seal refuses inside the sandbox, as the artifact records
//! it: the system calls the seccomp policy refuses, and the Landlock layer.

use super::*;

/// What `sealc __confine` refuses inside every Linux sandbox, through a
/// seccomp filter (`EPERM`, or `ENOSYS` for `clone3` so that libc falls back
/// to `clone`, whose flags the filter can read). Each entry names its
/// system calls before any parenthesis (`exec::inside`'s rules are checked
/// against these names).
pub const REFUSED: &[&str] = &[
    "socket(other than AF_INET, AF_INET6, AF_NETLINK, AF_UNIX)",
    "socket(AF_NETLINK, other than NETLINK_ROUTE)",
    "clone(CLONE_NEW*), clone3 and openat2 (ENOSYS)",
    "unshare",
    "setns",
    "mount",
    "umount2",
    "fsopen, fsconfig, fsmount, fspick, open_tree, move_mount, mount_setattr",
    "ptrace",
    "process_vm_readv, process_vm_writev",
    "pidfd_getfd",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "io_uring_setup",
    "add_key, keyctl, request_key",
    "fanotify_init, fanotify_mark",
    "ioctl(TIOCSTI, TIOCSCTTY, TIOCLINUX)",
    "chmod, fchmod, fchmodat, fchmodat2, open, openat, creat, mknod, mknodat (setuid or setgid bit)",
    "mknod, mknodat (character or block device)",
    "kill, tkill, tgkill, rt_sigqueueinfo, rt_tgsigqueueinfo, pidfd_send_signal (SIGXCPU, SIGXFSZ)",
    "prctl(PR_SET_PDEATHSIG, SIGXCPU or SIGXFSZ)",
    "fcntl(F_SETSIG, SIGXCPU or SIGXFSZ)",
    "ioctl(TIOCSIG, SIGXCPU or SIGXFSZ)",
    "clone(exit signal SIGXCPU or SIGXFSZ)",
    "x32 system calls of their own (512 to 547)",
];

/// Also refused in `none` and `proxy` mode: new unix sockets, and unix
/// socket pairs other than streams (a host service's socket is still visible
/// in the read-only host tree; a datagram pair could `sendto` it).
pub const REFUSED_OFFLINE: &[&str] = &[
    "socket(AF_UNIX)",
    "socketpair(AF_UNIX, other than SOCK_STREAM)",
];

/// Also refused when `limits.file_size_mib` is set, so that a `SIGXFSZ`
/// can only be the kernel's, at the seal's size: a lowered file size
/// limit, and a `sigevent` (whose signal number lies in memory, which no
/// filter reads; without one a timer signals `SIGALRM`), answered `ENOSYS`
/// so that coreutils' `timeout` falls back to `setitimer` without a word.
pub const REFUSED_FILE_SIZE: &[&str] = &[
    "setrlimit, prlimit64 (RLIMIT_FSIZE, a new limit)",
    "timer_create, mq_notify (a sigevent: ENOSYS)",
];

/// What `sealc __confine` refuses: always [`REFUSED`], with
/// [`REFUSED_OFFLINE`] when the network is not open and
/// [`REFUSED_FILE_SIZE`] when the file size is limited.
pub fn refused_for(offline: bool, file_size: bool) -> Vec<&'static str> {
    let mut v = REFUSED.to_vec();
    if offline {
        v.extend(REFUSED_OFFLINE);
    }
    if file_size {
        v.extend(REFUSED_FILE_SIZE);
    }
    v
}

/// What `sealc __confine` refuses for this seal.
pub fn refused(ir: &Ir) -> Vec<&'static str> {
    refused_for(
        ir.network.mode != NetMode::Open,
        ir.exec.limits.file_size_mib.is_some(),
    )
}

/// The Landlock layer `sealc __confine` applies, as far as the kernel's ABI
/// goes: writes only beneath these paths; TCP connect only to these ports
/// (`None`: not restricted, network `open`); no abstract unix socket or
/// signal outside the command's own domain.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Landlock {
    pub scopes: Vec<&'static str>,
    pub tcp_connect: Option<Vec<u16>>,
    pub write: Vec<String>,
}

/// Devices and scratch the command may always write (Landlock).
pub const LANDLOCK_DEVICES: &[&str] = &[
    "/dev/full",
    "/dev/null",
    "/dev/ptmx",
    "/dev/pts",
    "/dev/random",
    "/dev/shm",
    "/dev/tty",
    "/dev/urandom",
    "/dev/zero",
];

/// The Landlock policy of this seal.
pub fn landlock(ir: &Ir) -> Landlock {
    let mut write: Vec<String> = LANDLOCK_DEVICES.iter().map(|d| d.to_string()).collect();
    for r in &ir.roots {
        if matches!(r.kind, RootKind::Write | RootKind::WriteDevice) {
            if let Some(real) = &r.real {
                write.push(real.clone());
            }
        }
    }
    write.sort();
    write.dedup();
    let tcp_connect = match ir.network.mode {
        NetMode::Open => None,
        NetMode::None => Some(Vec::new()),
        NetMode::Proxy | NetMode::Allowlist => {
            Some(ir.network.proxy.iter().map(|p| p.port).collect())
        }
    };
    Landlock {
        scopes: vec!["abstract-unix-socket", "signal"],
        tcp_connect,
        write,
    }
}
