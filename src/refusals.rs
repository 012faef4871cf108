//! What every Linux seal refuses inside its sandbox by seccomp, as one
//! table: each entry is the line the artifact records (`seal.bwrap.json`'s
//! `refused`, `--dry-run`'s `seccomp`) together with the parts the filter
//! `sealc __confine` installs is built from (a call, the condition on its
//! arguments, the answer). The renderer reads the text, `exec::inside`'s
//! seccomp policy reads the parts: what the record says and what the kernel
//! enforces come from the same entry, and a test holds each entry's text to
//! the calls of its parts.
//!
//! Pure data: no IO, no platform calls (the numbers of the calls are looked
//! up where the filter is built).

/// When an entry applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum When {
    /// In every Linux seal.
    Always,
    /// Network `none`, `proxy` or `allowlist`: no new unix sockets.
    Offline,
    /// `limits.file_size_mib` is set: nothing may fire the kernel's
    /// `SIGXFSZ` at a size the seal did not set.
    FileSize,
    /// `exec.isolation = "landlock"`: what an IPC namespace keeps apart in
    /// the namespaces mode.
    Landlock,
    /// `exec.isolation = "landlock"` and network `none` or `proxy`: what a
    /// network namespace keeps out in the namespaces mode and Landlock's
    /// TCP rules do not cover.
    LandlockOffline,
    /// `exec.isolation = "landlock"` and an agent's user that may own
    /// files outside the write roots (the caller's own, or a `--user`):
    /// what Landlock cannot confine to the write roots, and read-only
    /// mounts refuse in the namespaces mode.
    LandlockSharedUser,
}

/// What a refused call returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// `EPERM`.
    Eperm,
    /// `ENOSYS`, so that libc (or coreutils' `timeout`) falls back to a call
    /// whose arguments the filter can read, without a word.
    Enosys,
}

/// The condition on a call's arguments under which it is refused (argument
/// numbers from 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cond {
    /// Whatever the arguments.
    Always,
    /// `socket`: a family other than `AF_INET`, `AF_INET6`, `AF_NETLINK`
    /// and `AF_UNIX`.
    OtherFamily,
    /// `socket(AF_NETLINK, _, protocol)`: a protocol other than
    /// `NETLINK_ROUTE`.
    OtherNetlink,
    /// `clone`: any `CLONE_NEW*` flag.
    NewNamespace,
    /// `ioctl`: `TIOCSTI`, `TIOCSCTTY` or `TIOCLINUX`.
    TerminalIoctl,
    /// The mode in argument N has the setuid or setgid bit.
    SetIdMode(u8),
    /// The mode in argument N is a character or block device's.
    DeviceNode(u8),
    /// `SIGXCPU` or `SIGXFSZ` in argument N.
    LimitSignal(u8),
    /// `prctl(PR_SET_PDEATHSIG, SIGXCPU or SIGXFSZ)`.
    DeathSignal,
    /// `fcntl(fd, F_SETSIG, SIGXCPU or SIGXFSZ)`.
    SetSig,
    /// `ioctl(fd, TIOCSIG, SIGXCPU or SIGXFSZ)`.
    TermSignal,
    /// `clone` with `SIGXCPU` or `SIGXFSZ` as its exit signal.
    ExitSignal,
    /// `socket(AF_UNIX, ...)`.
    Unix,
    /// `socketpair(AF_UNIX, type)`: a datagram type (`SOCK_DGRAM`,
    /// `SOCK_RAW`, `SOCK_RDM`), whose `sendto` names any socket. A
    /// `SOCK_SEQPACKET` pair is connection-oriented like a stream pair: the
    /// kernel ignores an address given to its `sendto`, and it cannot be
    /// connected again (Codex starts its tools and MCP servers through one).
    UnixDatagram,
    /// `setrlimit(RLIMIT_FSIZE, ...)`.
    FileSizeLimit,
    /// `prlimit64(pid, RLIMIT_FSIZE, new, old)` with a new limit.
    NewFileSizeLimit,
    /// A `sigevent` in argument 1 (not `NULL`).
    Sigevent,
    /// `socket(AF_INET or AF_INET6, type, protocol)`: a type other than
    /// `SOCK_STREAM`, or a protocol other than TCP (SCTP, MPTCP), which
    /// Landlock's TCP rules do not cover.
    InetNotTcp,
}

/// One call of an entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Part {
    pub call: &'static str,
    pub cond: Cond,
    pub answer: Answer,
}

/// One line of the record, and what enforces it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    /// As recorded: the calls, then what of them, in parentheses.
    pub text: &'static str,
    pub when: When,
    pub parts: &'static [Part],
    /// x32's own call numbers (512 to 547), refused outright on x86_64:
    /// numbers, not names.
    pub x32_own: bool,
}

const fn p(call: &'static str, cond: Cond) -> Part {
    Part {
        call,
        cond,
        answer: Answer::Eperm,
    }
}

const fn enosys(call: &'static str, cond: Cond) -> Part {
    Part {
        call,
        cond,
        answer: Answer::Enosys,
    }
}

const fn always(text: &'static str, parts: &'static [Part]) -> Entry {
    Entry {
        text,
        when: When::Always,
        parts,
        x32_own: false,
    }
}

const fn only(when: When, text: &'static str, parts: &'static [Part]) -> Entry {
    Entry {
        text,
        when,
        parts,
        x32_own: false,
    }
}

use Cond::*;

/// Every entry, in the order the record lists them.
pub const TABLE: &[Entry] = &[
    always(
        "socket(other than AF_INET, AF_INET6, AF_NETLINK, AF_UNIX)",
        &[p("socket", OtherFamily)],
    ),
    always(
        "socket(AF_NETLINK, other than NETLINK_ROUTE)",
        &[p("socket", OtherNetlink)],
    ),
    always(
        "clone(CLONE_NEW*), clone3 and openat2 (ENOSYS)",
        &[
            p("clone", NewNamespace),
            // Their flags and mode lie in memory, which no filter reads:
            // libc falls back to `clone` and `openat`.
            enosys("clone3", Always),
            enosys("openat2", Always),
        ],
    ),
    always("unshare", &[p("unshare", Always)]),
    always("setns", &[p("setns", Always)]),
    always("mount", &[p("mount", Always)]),
    always("umount2", &[p("umount2", Always)]),
    always(
        "fsopen, fsconfig, fsmount, fspick, open_tree, move_mount, mount_setattr",
        &[
            p("fsopen", Always),
            p("fsconfig", Always),
            p("fsmount", Always),
            p("fspick", Always),
            p("open_tree", Always),
            p("move_mount", Always),
            p("mount_setattr", Always),
        ],
    ),
    always("ptrace", &[p("ptrace", Always)]),
    always(
        "process_vm_readv, process_vm_writev",
        &[p("process_vm_readv", Always), p("process_vm_writev", Always)],
    ),
    always("pidfd_getfd", &[p("pidfd_getfd", Always)]),
    always("bpf", &[p("bpf", Always)]),
    always("perf_event_open", &[p("perf_event_open", Always)]),
    always("userfaultfd", &[p("userfaultfd", Always)]),
    always("io_uring_setup", &[p("io_uring_setup", Always)]),
    always(
        "add_key, keyctl, request_key",
        &[
            p("add_key", Always),
            p("keyctl", Always),
            p("request_key", Always),
        ],
    ),
    // fanotify on a readable host path shows the host's activity there.
    always(
        "fanotify_init, fanotify_mark",
        &[p("fanotify_init", Always), p("fanotify_mark", Always)],
    ),
    always(
        "ioctl(TIOCSTI, TIOCSCTTY, TIOCLINUX)",
        &[p("ioctl", TerminalIoctl)],
    ),
    // A setuid or setgid bit, by any call that takes a mode: chmod, a new
    // file's mode, a node's mode.
    always(
        "chmod, fchmod, fchmodat, fchmodat2, open, openat, creat, mknod, mknodat (setuid or setgid bit)",
        &[
            p("chmod", SetIdMode(1)),
            p("fchmod", SetIdMode(1)),
            p("fchmodat", SetIdMode(2)),
            p("fchmodat2", SetIdMode(2)),
            p("open", SetIdMode(2)),
            p("openat", SetIdMode(3)),
            p("creat", SetIdMode(1)),
            p("mknod", SetIdMode(1)),
            p("mknodat", SetIdMode(2)),
        ],
    ),
    always(
        "mknod, mknodat (character or block device)",
        &[p("mknod", DeviceNode(1)), p("mknodat", DeviceNode(2))],
    ),
    // The signals of the limits, by every call that takes a signal number
    // in a register: the kernel is then their only source.
    always(
        "kill, tkill, tgkill, rt_sigqueueinfo, rt_tgsigqueueinfo, pidfd_send_signal (SIGXCPU, SIGXFSZ)",
        &[
            p("kill", LimitSignal(1)),
            p("tkill", LimitSignal(1)),
            p("tgkill", LimitSignal(2)),
            p("rt_sigqueueinfo", LimitSignal(1)),
            p("rt_tgsigqueueinfo", LimitSignal(2)),
            p("pidfd_send_signal", LimitSignal(1)),
        ],
    ),
    always(
        "prctl(PR_SET_PDEATHSIG, SIGXCPU or SIGXFSZ)",
        &[p("prctl", DeathSignal)],
    ),
    always(
        "fcntl(F_SETSIG, SIGXCPU or SIGXFSZ)",
        &[p("fcntl", SetSig)],
    ),
    always(
        "ioctl(TIOCSIG, SIGXCPU or SIGXFSZ)",
        &[p("ioctl", TermSignal)],
    ),
    always(
        "clone(exit signal SIGXCPU or SIGXFSZ)",
        &[p("clone", ExitSignal)],
    ),
    Entry {
        text: "x32 system calls of their own (512 to 547)",
        when: When::Always,
        parts: &[],
        x32_own: true,
    },
    // A host service's socket is still visible in the read-only host tree;
    // a datagram pair could `sendto` it (tests/attacks.rs, escape 4, sends
    // through each kind of pair).
    only(When::Offline, "socket(AF_UNIX)", &[p("socket", Unix)]),
    only(
        When::Offline,
        "socketpair(AF_UNIX, SOCK_DGRAM, SOCK_RAW or SOCK_RDM)",
        &[p("socketpair", UnixDatagram)],
    ),
    // A lowered file size limit would fire the kernel's `SIGXFSZ` at a size
    // the seal never set; a `sigevent`'s signal number lies in memory, which
    // no filter reads (without one a timer signals `SIGALRM`), so it is
    // answered `ENOSYS`: coreutils' `timeout` then falls back to
    // `setitimer` without a word, where `EPERM` would make it warn.
    only(
        When::FileSize,
        "setrlimit, prlimit64 (RLIMIT_FSIZE, a new limit)",
        &[
            p("setrlimit", FileSizeLimit),
            p("prlimit64", NewFileSizeLimit),
        ],
    ),
    only(
        When::FileSize,
        "timer_create, mq_notify (a sigevent: ENOSYS)",
        &[enosys("timer_create", Sigevent), enosys("mq_notify", Sigevent)],
    ),
    // Without an IPC namespace, System V objects are the host's: a key or
    // an id is all it takes to read or write another process's memory.
    only(
        When::Landlock,
        "shmget, shmat, shmctl, msgget, msgsnd, msgrcv, msgctl, semget, semop, semtimedop, semctl (System V IPC, the host's own)",
        &[
            p("shmget", Always),
            p("shmat", Always),
            p("shmctl", Always),
            p("msgget", Always),
            p("msgsnd", Always),
            p("msgrcv", Always),
            p("msgctl", Always),
            p("semget", Always),
            p("semop", Always),
            p("semtimedop", Always),
            p("semctl", Always),
        ],
    ),
    // POSIX message queues live in the host's mqueue namespace: a queue
    // made here outlives the run, and fills the host's `queues_max`.
    only(
        When::Landlock,
        "mq_open, mq_unlink, mq_timedsend, mq_timedreceive, mq_getsetattr, mq_notify (POSIX message queues, the host's own)",
        &[
            p("mq_open", Always),
            p("mq_unlink", Always),
            p("mq_timedsend", Always),
            p("mq_timedreceive", Always),
            p("mq_getsetattr", Always),
            p("mq_notify", Always),
        ],
    ),
    only(
        When::LandlockOffline,
        "socket(AF_INET, AF_INET6, other than SOCK_STREAM over TCP: UDP, ICMP, raw, SCTP, MPTCP)",
        &[p("socket", InetNotTcp)],
    ),
    // A socket never bound is bound by `listen` to a free port on every
    // address: Landlock checks `bind` and `connect`, never `listen`.
    only(When::LandlockOffline, "listen", &[p("listen", Always)]),
    // Landlock confines neither modes, owners nor extended attributes:
    // an agent of the caller's user could open a denied file to every
    // local user (`chmod 666`) or tag the caller's files.
    only(
        When::LandlockSharedUser,
        "chmod, fchmod, fchmodat, fchmodat2, chown, fchown, lchown, fchownat, setxattr, lsetxattr, fsetxattr, removexattr, lremovexattr, fremovexattr (modes, owners, extended attributes: the agent's user owns files outside the write roots)",
        &[
            p("chmod", Always),
            p("fchmod", Always),
            p("fchmodat", Always),
            p("fchmodat2", Always),
            p("chown", Always),
            p("fchown", Always),
            p("lchown", Always),
            p("fchownat", Always),
            p("setxattr", Always),
            p("lsetxattr", Always),
            p("fsetxattr", Always),
            p("removexattr", Always),
            p("lremovexattr", Always),
            p("fremovexattr", Always),
        ],
    ),
];

/// The entries that apply to a seal: every `Always` one, the `Offline`
/// ones when the network is not open, the `FileSize` ones when the file
/// size is limited.
pub fn applying(offline: bool, file_size: bool) -> impl Iterator<Item = &'static Entry> {
    applying_in(offline, file_size, None)
}

/// The Landlock mode (`exec.isolation = "landlock"`): whether the agent's
/// user may own files outside the write roots (it has no uid of the run's
/// own).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LandlockMode {
    pub shared_user: bool,
}

/// [`applying`], and in the Landlock mode its own entries too.
pub fn applying_in(
    offline: bool,
    file_size: bool,
    landlock: Option<LandlockMode>,
) -> impl Iterator<Item = &'static Entry> {
    TABLE.iter().filter(move |e| match e.when {
        When::Always => true,
        When::Offline => offline,
        When::FileSize => file_size,
        When::Landlock => landlock.is_some(),
        When::LandlockOffline => landlock.is_some() && offline,
        When::LandlockSharedUser => landlock.is_some_and(|l| l.shared_user),
    })
}

/// The text of the Landlock mode's own entries (a seal lists those for a
/// shared user: whether the agent gets a uid of its own is decided at
/// exec, and the filter then leaves them out).
pub fn landlock_mode(offline: bool, shared_user: bool) -> impl Iterator<Item = &'static str> {
    TABLE
        .iter()
        .filter(move |e| match e.when {
            When::Landlock => true,
            When::LandlockOffline => offline,
            When::LandlockSharedUser => shared_user,
            _ => false,
        })
        .map(|e| e.text)
}
