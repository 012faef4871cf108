//! The seccomp policy installed inside the sandbox: the calls refused, by
//! name, and the filters built from them.

use super::*;

pub(super) const CLONE_NEW: [u64; 7] = [
    libc::CLONE_NEWNS as u64,
    libc::CLONE_NEWCGROUP as u64,
    libc::CLONE_NEWUTS as u64,
    libc::CLONE_NEWIPC as u64,
    libc::CLONE_NEWUSER as u64,
    libc::CLONE_NEWPID as u64,
    libc::CLONE_NEWNET as u64,
];

pub(super) fn cond(arg: u8, len: Len, op: Op, value: u64) -> Result<Cond, String> {
    Cond::new(arg, len, op, value).map_err(|e| e.to_string())
}

pub(super) fn rule(conds: Vec<Cond>) -> Result<SeccompRule, String> {
    SeccompRule::new(conds).map_err(|e| e.to_string())
}

/// Which of the command's filter's conditional refusals apply.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Refusals {
    /// The unix-socket rules of [`crate::backend::bwrap::REFUSED_OFFLINE`]
    /// (network `none`, `proxy`, `allowlist`).
    pub offline: bool,
    /// The rules of [`crate::backend::bwrap::REFUSED_FILE_SIZE`]
    /// (`limits.file_size_mib` is set): nothing may make the kernel's
    /// `SIGXFSZ` fire at a size the seal did not set, nor deliver that
    /// signal by a number the filter cannot read.
    pub file_size: bool,
}

/// The signals that name a limit in the run report (`SIGXCPU`, `SIGXFSZ`):
/// no process inside may send them, so the kernel is their only source.
pub(super) const LIMIT_SIGNALS: [i32; 2] = [libc::SIGXCPU, libc::SIGXFSZ];

/// `F_SETSIG` (`<linux/fcntl.h>`; the libc crate lacks it): the signal an
/// `O_ASYNC` descriptor, a lease or a dnotify watch delivers.
pub(super) const F_SETSIG: u64 = 10;

/// Each refused call with its name, its number, and its rules (any one
/// matching refuses it; none: always). A call may appear more than once
/// (`ioctl`, `clone`); [`merged`] joins them.
pub(super) type Named = Vec<(&'static str, i64, Vec<SeccompRule>)>;

/// The seccomp rules by call name: each fails with `EPERM`.
/// [`crate::backend::bwrap::refused_for`] lists them; a test holds the two
/// together.
pub(super) fn named(r: Refusals) -> Result<Named, String> {
    use Len::{Dword, Qword};
    let mut kept = vec![libc::AF_INET, libc::AF_INET6, libc::AF_NETLINK];
    if !r.offline {
        kept.push(libc::AF_UNIX);
    }
    let other_family = rule(
        kept.iter()
            .map(|d| cond(0, Dword, Op::Ne, *d as u64))
            .collect::<Result<_, _>>()?,
    )?;
    let other_netlink = rule(vec![
        cond(0, Dword, Op::Eq, libc::AF_NETLINK as u64)?,
        cond(2, Dword, Op::Ne, libc::NETLINK_ROUTE as u64)?,
    ])?;
    let mut socketpair = Vec::new();
    if r.offline {
        for ty in [
            libc::SOCK_DGRAM,
            libc::SOCK_RAW,
            libc::SOCK_RDM,
            libc::SOCK_SEQPACKET,
        ] {
            socketpair.push(rule(vec![
                cond(0, Dword, Op::Eq, libc::AF_UNIX as u64)?,
                cond(1, Dword, Op::MaskedEq(0xf), ty as u64)?,
            ])?);
        }
    }
    let new_ns = CLONE_NEW
        .iter()
        .map(|f| rule(vec![cond(0, Qword, Op::MaskedEq(*f), *f)?]))
        .collect::<Result<Vec<_>, _>>()?;
    let ioctls = [libc::TIOCSTI, libc::TIOCSCTTY, libc::TIOCLINUX]
        .iter()
        .map(|c| rule(vec![cond(1, Dword, Op::Eq, *c)?]))
        .collect::<Result<Vec<_>, _>>()?;
    let set_id_bits = |arg: u8| -> Result<Vec<SeccompRule>, String> {
        [libc::S_ISUID, libc::S_ISGID]
            .iter()
            .map(|b| rule(vec![cond(arg, Dword, Op::MaskedEq(*b as u64), *b as u64)?]))
            .collect()
    };
    let device = |arg: u8| -> Result<Vec<SeccompRule>, String> {
        [libc::S_IFCHR, libc::S_IFBLK]
            .iter()
            .map(|t| {
                rule(vec![cond(
                    arg,
                    Dword,
                    Op::MaskedEq(libc::S_IFMT as u64),
                    *t as u64,
                )?])
            })
            .collect()
    };
    // A setuid or setgid bit, by any call that takes a mode: chmod, a new
    // file's mode, a node's mode. A device node, by its type.
    let mode_rules = |arg: u8, nodes: bool| -> Result<Vec<SeccompRule>, String> {
        let mut r = set_id_bits(arg)?;
        if nodes {
            r.extend(device(arg)?);
        }
        Ok(r)
    };
    // `SIGXCPU` or `SIGXFSZ` in argument `arg`, after the conditions `pre`
    // (each signal number compared as the kernel reads it, an `int`).
    let limit_signal = |pre: &[Cond], arg: u8| -> Result<Vec<SeccompRule>, String> {
        LIMIT_SIGNALS
            .iter()
            .map(|s| {
                let mut c = pre.to_vec();
                c.push(cond(arg, Dword, Op::Eq, *s as u64)?);
                rule(c)
            })
            .collect()
    };
    // `clone`'s exit signal (the low byte of its flags) goes to the parent
    // when the child ends.
    let exit_signal = LIMIT_SIGNALS
        .iter()
        .map(|s| rule(vec![cond(0, Qword, Op::MaskedEq(0xff), *s as u64)?]))
        .collect::<Result<Vec<_>, _>>()?;
    let always = |(name, nr): (&'static str, i64)| (name, nr, Vec::new());
    let mut v: Named = [
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
        // fanotify on a readable host path shows the host's activity there.
        sys!(SYS_fanotify_init),
        sys!(SYS_fanotify_mark),
    ]
    .into_iter()
    .map(always)
    .collect();
    let with = |(name, nr): (&'static str, i64), rules: Vec<SeccompRule>| (name, nr, rules);
    v.extend([
        with(sys!(SYS_socket), vec![other_family, other_netlink]),
        with(sys!(SYS_clone), new_ns),
        with(sys!(SYS_ioctl), ioctls),
        with(sys!(SYS_fchmod), mode_rules(1, false)?),
        with(sys!(SYS_fchmodat), mode_rules(2, false)?),
        with(sys!(SYS_fchmodat2), mode_rules(2, false)?),
        with(sys!(SYS_openat), mode_rules(3, false)?),
        with(sys!(SYS_mknodat), mode_rules(2, true)?),
        // The signals of the limits, by every call that takes a signal
        // number in a register.
        with(sys!(SYS_kill), limit_signal(&[], 1)?),
        with(sys!(SYS_tkill), limit_signal(&[], 1)?),
        with(sys!(SYS_tgkill), limit_signal(&[], 2)?),
        with(sys!(SYS_rt_sigqueueinfo), limit_signal(&[], 1)?),
        with(sys!(SYS_rt_tgsigqueueinfo), limit_signal(&[], 2)?),
        with(sys!(SYS_pidfd_send_signal), limit_signal(&[], 1)?),
        with(
            sys!(SYS_prctl),
            limit_signal(&[cond(0, Dword, Op::Eq, libc::PR_SET_PDEATHSIG as u64)?], 1)?,
        ),
        with(
            sys!(SYS_fcntl),
            limit_signal(&[cond(1, Dword, Op::Eq, F_SETSIG)?], 2)?,
        ),
        with(
            sys!(SYS_ioctl),
            limit_signal(&[cond(1, Dword, Op::Eq, libc::TIOCSIG)?], 2)?,
        ),
        with(sys!(SYS_clone), exit_signal),
    ]);
    #[cfg(target_arch = "x86_64")]
    v.extend([
        with(sys!(SYS_chmod), mode_rules(1, false)?),
        with(sys!(SYS_open), mode_rules(2, false)?),
        with(sys!(SYS_creat), mode_rules(1, false)?),
        with(sys!(SYS_mknod), mode_rules(1, true)?),
    ]);
    if !socketpair.is_empty() {
        v.push(with(sys!(SYS_socketpair), socketpair));
    }
    if r.file_size {
        let fsize = libc::RLIMIT_FSIZE as u64;
        v.extend([
            // A lowered file size limit would fire the kernel's `SIGXFSZ`
            // at a size the seal never set.
            with(
                sys!(SYS_setrlimit),
                vec![rule(vec![cond(0, Dword, Op::Eq, fsize)?])?],
            ),
            with(
                sys!(SYS_prlimit64),
                vec![rule(vec![
                    cond(1, Dword, Op::Eq, fsize)?,
                    cond(2, Qword, Op::Ne, 0)?,
                ])?],
            ),
        ]);
    }
    Ok(v)
}

/// The calls the second filter answers with `ENOSYS`, by name, as
/// [`named`]: `clone3` and `openat2` take their flags and mode in memory,
/// which no filter reads, so libc falls back to `clone` and `openat`. With
/// `file_size`, `timer_create` and `mq_notify` given a `sigevent`: its
/// signal number lies in memory too (without one a timer signals
/// `SIGALRM`). `ENOSYS`, not `EPERM`: glibc fills in a `sigevent` even when
/// its caller passes none, and coreutils' `timeout` then falls back to
/// `setitimer` silently, where `EPERM` would make it warn.
pub(super) fn named_enosys(r: Refusals) -> Result<Named, String> {
    use Len::Qword;
    let mut v: Named = [sys!(SYS_clone3), sys!(SYS_openat2)]
        .into_iter()
        .map(|(name, nr)| (name, nr, Vec::new()))
        .collect();
    if r.file_size {
        for (name, nr) in [sys!(SYS_timer_create), sys!(SYS_mq_notify)] {
            v.push((name, nr, vec![rule(vec![cond(1, Qword, Op::Ne, 0)?])?]));
        }
    }
    Ok(v)
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
pub(super) fn rules(r: Refusals) -> Result<BTreeMap<i64, Vec<SeccompRule>>, String> {
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
pub fn filters(r: Refusals) -> Result<Vec<seccompiler::BpfProgram>, String> {
    let arch =
        seccompiler::TargetArch::try_from(std::env::consts::ARCH).map_err(|e| e.to_string())?;
    let build = |rules, errno: i32| -> Result<seccompiler::BpfProgram, String> {
        let f = SeccompFilter::new(
            rules,
            SeccompAction::Allow,
            SeccompAction::Errno(errno as u32),
            arch,
        )
        .map_err(|e| e.to_string())?;
        seccompiler::BpfProgram::try_from(f).map_err(|e| e.to_string())
    };
    Ok(vec![
        build(rules(r)?, libc::EPERM)?,
        build(merged(&named_enosys(r)?), libc::ENOSYS)?,
    ])
}

pub(super) fn install(r: Refusals) -> Result<(), String> {
    for f in filters(r)? {
        seccompiler::apply_filter(&f).map_err(|e| e.to_string())?;
    }
    Ok(())
}
