//! The seccomp policy installed inside the sandbox: the calls refused, by
//! name, and the filters built from them.

use super::*;
use crate::failure::Failure;

pub(super) const CLONE_NEW: [u64; 7] = [
    libc::CLONE_NEWNS as u64,
    libc::CLONE_NEWCGROUP as u64,
    libc::CLONE_NEWUTS as u64,
    libc::CLONE_NEWIPC as u64,
    libc::CLONE_NEWUSER as u64,
    libc::CLONE_NEWPID as u64,
    libc::CLONE_NEWNET as u64,
];

pub(super) fn cond(arg: u8, len: Len, op: Op, value: u64) -> Result<Cond, Failure> {
    Cond::new(arg, len, op, value).map_err(Failure::of)
}

pub(super) fn rule(conds: Vec<Cond>) -> Result<SeccompRule, Failure> {
    SeccompRule::new(conds).map_err(Failure::of)
}

/// Which of the command's filter's conditional refusals apply.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Refusals {
    /// The `Offline` entries of [`crate::refusals::TABLE`]: no new unix
    /// sockets (network `none`, `proxy`, `allowlist`).
    pub offline: bool,
    /// The `FileSize` entries of [`crate::refusals::TABLE`]
    /// (`limits.file_size_mib` is set): nothing may make the kernel's
    /// `SIGXFSZ` fire at a size the seal did not set, nor deliver that
    /// signal by a number the filter cannot read.
    pub file_size: bool,
    /// The entries of the Landlock mode (`exec.isolation = "landlock"`).
    pub landlock: Option<crate::refusals::LandlockMode>,
}

/// The signals that name a limit in the run report (`SIGXCPU`, `SIGXFSZ`):
/// no process inside may send them, so the kernel is their only source.
pub(super) const LIMIT_SIGNALS: [i32; 2] = [libc::SIGXCPU, libc::SIGXFSZ];

/// `F_SETSIG` (`<linux/fcntl.h>`; the libc crate lacks it): the signal an
/// `O_ASYNC` descriptor, a lease or a dnotify watch delivers.
pub(super) const F_SETSIG: u64 = 10;

/// An ioctl request as the filter compares it: its low 32 bits (the
/// kernel's `unsigned int cmd`), whatever type the C library gives it
/// (`c_ulong` in glibc, `c_int` in musl).
const fn request(r: libc::Ioctl) -> u64 {
    r as u32 as u64
}

/// Each refused call with its name, its number, and its rules (any one
/// matching refuses it; none: always). A call may appear more than once
/// (`ioctl`, `clone`); [`merged`] joins them.
pub(super) type Named = Vec<(&'static str, i64, Vec<SeccompRule>)>;

/// The number of each call [`crate::refusals::TABLE`] names, on this
/// architecture (`sys!`: the name and the number are one token).
pub(super) fn number_of(call: &str) -> Option<i64> {
    let known = [
        sys!(SYS_socket),
        sys!(SYS_socketpair),
        sys!(SYS_clone),
        sys!(SYS_clone3),
        sys!(SYS_openat2),
        sys!(SYS_unshare),
        sys!(SYS_setns),
        sys!(SYS_mount),
        sys!(SYS_umount2),
        sys!(SYS_fsopen),
        sys!(SYS_fsconfig),
        sys!(SYS_fsmount),
        sys!(SYS_fspick),
        sys!(SYS_open_tree),
        sys!(SYS_move_mount),
        sys!(SYS_mount_setattr),
        sys!(SYS_ptrace),
        sys!(SYS_process_vm_readv),
        sys!(SYS_process_vm_writev),
        sys!(SYS_pidfd_getfd),
        sys!(SYS_bpf),
        sys!(SYS_perf_event_open),
        sys!(SYS_userfaultfd),
        sys!(SYS_io_uring_setup),
        sys!(SYS_add_key),
        sys!(SYS_keyctl),
        sys!(SYS_request_key),
        sys!(SYS_fanotify_init),
        sys!(SYS_fanotify_mark),
        sys!(SYS_ioctl),
        sys!(SYS_fchmod),
        sys!(SYS_fchmodat),
        sys!(SYS_fchmodat2),
        sys!(SYS_openat),
        sys!(SYS_mknodat),
        sys!(SYS_kill),
        sys!(SYS_tkill),
        sys!(SYS_tgkill),
        sys!(SYS_rt_sigqueueinfo),
        sys!(SYS_rt_tgsigqueueinfo),
        sys!(SYS_pidfd_send_signal),
        sys!(SYS_prctl),
        sys!(SYS_fcntl),
        sys!(SYS_setrlimit),
        sys!(SYS_prlimit64),
        sys!(SYS_timer_create),
        sys!(SYS_mq_notify),
        sys!(SYS_mq_open),
        sys!(SYS_mq_unlink),
        sys!(SYS_mq_timedsend),
        sys!(SYS_mq_timedreceive),
        sys!(SYS_mq_getsetattr),
        sys!(SYS_listen),
        #[cfg(target_arch = "x86_64")]
        sys!(SYS_chown),
        sys!(SYS_fchown),
        #[cfg(target_arch = "x86_64")]
        sys!(SYS_lchown),
        sys!(SYS_fchownat),
        sys!(SYS_setxattr),
        sys!(SYS_lsetxattr),
        sys!(SYS_fsetxattr),
        sys!(SYS_removexattr),
        sys!(SYS_lremovexattr),
        sys!(SYS_fremovexattr),
        sys!(SYS_shmget),
        sys!(SYS_shmat),
        sys!(SYS_shmctl),
        sys!(SYS_msgget),
        sys!(SYS_msgsnd),
        sys!(SYS_msgrcv),
        sys!(SYS_msgctl),
        sys!(SYS_semget),
        sys!(SYS_semop),
        sys!(SYS_semtimedop),
        sys!(SYS_semctl),
        #[cfg(target_arch = "x86_64")]
        sys!(SYS_chmod),
        #[cfg(target_arch = "x86_64")]
        sys!(SYS_open),
        #[cfg(target_arch = "x86_64")]
        sys!(SYS_creat),
        #[cfg(target_arch = "x86_64")]
        sys!(SYS_mknod),
    ];
    known.iter().find(|(n, _)| *n == call).map(|(_, nr)| *nr)
}

/// Calls x86_64 has and newer architectures do not (they have only the
/// `*at` forms, which the table names too).
pub(super) const X86_64_ONLY: [&str; 6] = ["chmod", "open", "creat", "mknod", "chown", "lchown"];

/// The rules of one part of an entry: its condition on the arguments (no
/// rule: refused whatever they are).
fn rules_of(c: crate::refusals::Cond) -> Result<Vec<SeccompRule>, Failure> {
    use crate::refusals::Cond;
    use Len::{Dword, Qword};
    // `SIGXCPU` or `SIGXFSZ` in argument `arg`, after the conditions `pre`
    // (each signal number compared as the kernel reads it, an `int`).
    let limit_signal = |pre: &[Cond2], arg: u8| -> Result<Vec<SeccompRule>, Failure> {
        LIMIT_SIGNALS
            .iter()
            .map(|s| {
                let mut c = pre
                    .iter()
                    .map(|(a, v)| cond(*a, Dword, Op::Eq, *v))
                    .collect::<Result<Vec<_>, _>>()?;
                c.push(cond(arg, Dword, Op::Eq, *s as u64)?);
                rule(c)
            })
            .collect()
    };
    Ok(match c {
        Cond::Always => Vec::new(),
        Cond::OtherFamily => vec![rule(
            [
                libc::AF_INET,
                libc::AF_INET6,
                libc::AF_NETLINK,
                libc::AF_UNIX,
            ]
            .iter()
            .map(|d| cond(0, Dword, Op::Ne, *d as u64))
            .collect::<Result<_, _>>()?,
        )?],
        Cond::OtherNetlink => vec![rule(vec![
            cond(0, Dword, Op::Eq, libc::AF_NETLINK as u64)?,
            cond(2, Dword, Op::Ne, libc::NETLINK_ROUTE as u64)?,
        ])?],
        Cond::NewNamespace => CLONE_NEW
            .iter()
            .map(|f| rule(vec![cond(0, Qword, Op::MaskedEq(*f), *f)?]))
            .collect::<Result<_, _>>()?,
        Cond::TerminalIoctl => [libc::TIOCSTI, libc::TIOCSCTTY, libc::TIOCLINUX]
            .iter()
            .map(|c| rule(vec![cond(1, Dword, Op::Eq, request(*c))?]))
            .collect::<Result<_, _>>()?,
        Cond::SetIdMode(arg) => [libc::S_ISUID, libc::S_ISGID]
            .iter()
            .map(|b| rule(vec![cond(arg, Dword, Op::MaskedEq(*b as u64), *b as u64)?]))
            .collect::<Result<_, _>>()?,
        Cond::DeviceNode(arg) => [libc::S_IFCHR, libc::S_IFBLK]
            .iter()
            .map(|t| {
                rule(vec![cond(
                    arg,
                    Dword,
                    Op::MaskedEq(libc::S_IFMT as u64),
                    *t as u64,
                )?])
            })
            .collect::<Result<_, _>>()?,
        Cond::LimitSignal(arg) => limit_signal(&[], arg)?,
        Cond::DeathSignal => limit_signal(&[(0, libc::PR_SET_PDEATHSIG as u64)], 1)?,
        Cond::SetSig => limit_signal(&[(1, F_SETSIG)], 2)?,
        Cond::TermSignal => limit_signal(&[(1, request(libc::TIOCSIG))], 2)?,
        // `clone`'s exit signal (the low byte of its flags) goes to the
        // parent when the child ends.
        Cond::ExitSignal => LIMIT_SIGNALS
            .iter()
            .map(|s| rule(vec![cond(0, Qword, Op::MaskedEq(0xff), *s as u64)?]))
            .collect::<Result<_, _>>()?,
        Cond::Unix => vec![rule(vec![cond(0, Dword, Op::Eq, libc::AF_UNIX as u64)?])?],
        Cond::UnixDatagram => [libc::SOCK_DGRAM, libc::SOCK_RAW, libc::SOCK_RDM]
            .iter()
            .map(|ty| {
                rule(vec![
                    cond(0, Dword, Op::Eq, libc::AF_UNIX as u64)?,
                    cond(1, Dword, Op::MaskedEq(0xf), *ty as u64)?,
                ])
            })
            .collect::<Result<_, _>>()?,
        Cond::FileSizeLimit => vec![rule(vec![cond(
            0,
            Dword,
            Op::Eq,
            libc::RLIMIT_FSIZE as u64,
        )?])?],
        Cond::NewFileSizeLimit => vec![rule(vec![
            cond(1, Dword, Op::Eq, libc::RLIMIT_FSIZE as u64)?,
            cond(2, Qword, Op::Ne, 0)?,
        ])?],
        Cond::Sigevent => vec![rule(vec![cond(1, Qword, Op::Ne, 0)?])?],
        Cond::InetNotTcp => {
            let mut out = Vec::new();
            for family in [libc::AF_INET, libc::AF_INET6] {
                let fam = || cond(0, Dword, Op::Eq, family as u64);
                // Any type but a stream (the low bits; the high ones are
                // SOCK_NONBLOCK and SOCK_CLOEXEC).
                for ty in [
                    libc::SOCK_DGRAM,
                    libc::SOCK_RAW,
                    libc::SOCK_RDM,
                    libc::SOCK_SEQPACKET,
                    libc::SOCK_DCCP,
                    10, // SOCK_PACKET (obsolete, and deprecated in the libc crate)
                ] {
                    out.push(rule(vec![
                        fam()?,
                        cond(1, Dword, Op::MaskedEq(0xf), ty as u64)?,
                    ])?);
                }
                // A stream of another protocol than TCP (0 is TCP's default).
                out.push(rule(vec![
                    fam()?,
                    cond(2, Dword, Op::Ne, 0)?,
                    cond(2, Dword, Op::Ne, libc::IPPROTO_TCP as u64)?,
                ])?);
            }
            out
        }
    })
}

/// An argument's number and the value it must equal.
type Cond2 = (u8, u64);

/// The calls of the entries that apply to this seal and are answered
/// `answer`, each with its number and rules.
fn named_as(r: Refusals, answer: crate::refusals::Answer) -> Result<Named, Failure> {
    let mut v = Named::new();
    for entry in crate::refusals::applying_in(r.offline, r.file_size, r.landlock) {
        for part in entry.parts.iter().filter(|p| p.answer == answer) {
            let Some(nr) = number_of(part.call) else {
                if X86_64_ONLY.contains(&part.call) && !cfg!(target_arch = "x86_64") {
                    continue;
                }
                return Err(Failure::new(format!(
                    "the seccomp policy names `{}`, which has no number here",
                    part.call
                )));
            };
            v.push((part.call, nr, rules_of(part.cond)?));
        }
    }
    Ok(v)
}

/// The calls refused with `EPERM`: the parts of [`crate::refusals::TABLE`]
/// that apply. [`crate::backend::bwrap::refused_for`] lists the same
/// entries' text.
pub(super) fn named(r: Refusals) -> Result<Named, Failure> {
    named_as(r, crate::refusals::Answer::Eperm)
}

/// The calls answered `ENOSYS` (see [`crate::refusals::Answer::Enosys`]):
/// `clone3` and `openat2` take their flags and mode in memory, which no
/// filter reads, so libc falls back to `clone` and `openat`; with
/// `file_size`, `timer_create` and `mq_notify` given a `sigevent`.
pub(super) fn named_enosys(r: Refusals) -> Result<Named, Failure> {
    named_as(r, crate::refusals::Answer::Enosys)
}

/// The rules of a filter from its [`Named`] calls, for both x86_64's and
/// x32's numbers.
pub(super) fn merged(named: &Named) -> BTreeMap<i64, Vec<SeccompRule>> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for bit in x32_bits() {
        for (_, nr, r) in named {
            match rules.entry(nr | bit) {
                std::collections::btree_map::Entry::Vacant(e) => {
                    e.insert(r.clone());
                }
                // No rules: refused whatever the arguments, and it stays so.
                std::collections::btree_map::Entry::Occupied(mut e) => {
                    if e.get().is_empty() || r.is_empty() {
                        e.get_mut().clear();
                    } else {
                        e.get_mut().extend(r.iter().cloned());
                    }
                }
            }
        }
    }
    rules
}

/// The rules of the first filter: each listed call (with its conditions)
/// fails with `EPERM`. See [`named`].
pub(super) fn rules(r: Refusals) -> Result<BTreeMap<i64, Vec<SeccompRule>>, Failure> {
    let mut rules = merged(&named(r)?);
    // x32's own numbers (512 to 547: its compat `ioctl`, `ptrace`,
    // `process_vm_readv`, `rt_sigqueueinfo`, `timer_create`, `mq_notify`,
    // ...) would pass the rules above: refused outright.
    if cfg!(target_arch = "x86_64") {
        for nr in 512..=547 {
            rules.insert(0x4000_0000 | nr, vec![]);
        }
    }
    Ok(rules)
}

/// x32 shares x86_64's audit architecture with its own call numbers; 32-bit
/// (i386) calls fail the filter's architecture check and are killed.
pub(super) fn x32_bits() -> &'static [i64] {
    if cfg!(target_arch = "x86_64") {
        &[0, 0x4000_0000]
    } else {
        &[0]
    }
}

/// The seccomp filters for the architecture sealc runs on: the refused calls
/// (`EPERM`, [`named`]), and those answered `ENOSYS` ([`named_enosys`]).
pub fn filters(r: Refusals) -> Result<Vec<seccompiler::BpfProgram>, Failure> {
    let arch = seccompiler::TargetArch::try_from(std::env::consts::ARCH).map_err(Failure::of)?;
    let build = |rules, errno: i32| -> Result<seccompiler::BpfProgram, Failure> {
        let f = SeccompFilter::new(
            rules,
            SeccompAction::Allow,
            SeccompAction::Errno(errno as u32),
            arch,
        )
        .map_err(Failure::of)?;
        seccompiler::BpfProgram::try_from(f).map_err(Failure::of)
    };
    Ok(vec![
        build(rules(r)?, libc::EPERM)?,
        build(merged(&named_enosys(r)?), libc::ENOSYS)?,
    ])
}

pub(super) fn install(r: Refusals) -> Result<(), Failure> {
    for f in filters(r)? {
        seccompiler::apply_filter(&f).map_err(Failure::of)?;
    }
    Ok(())
}
