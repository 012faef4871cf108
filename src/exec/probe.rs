//! Why bubblewrap could not build a sandbox here: the steps it takes, tried
//! one by one in a process of their own (`sealc __probe`), and what the host
//! says about itself (sysctls, a seccomp filter, a container, a masked
//! `/proc`, WSL). Nothing of the agent's runs; the steps make namespaces
//! that end with the probe.
//!
//! The probe runs as the user bubblewrap runs as (the agent's user when
//! root starts `sealc exec`), so it meets the same refusals.

use std::io::{self, Write};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

use rustix::io::Errno;

pub use crate::facts::layers::{Container, Environment};

/// One step of building a sandbox, in the order bubblewrap takes them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Step {
    /// `unshare(CLONE_NEWUSER)`.
    UserNs,
    /// `/proc/self/setgroups`, `uid_map` and `gid_map` of the new namespace.
    IdMaps,
    /// `unshare(CLONE_NEWNS)`.
    MountNs,
    /// `unshare(CLONE_NEWPID)`.
    PidNs,
    /// `unshare(CLONE_NEWNET)`.
    NetNs,
    /// `/` made a slave mount and a `tmpfs` mounted, as bubblewrap does
    /// for its new root.
    Mount,
    /// A fresh `proc` mounted by pid 1 of the new pid namespace.
    Proc,
}

impl Step {
    pub const ALL: [Step; 7] = [
        Step::UserNs,
        Step::IdMaps,
        Step::MountNs,
        Step::PidNs,
        Step::NetNs,
        Step::Mount,
        Step::Proc,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Step::UserNs => "user_namespace",
            Step::IdMaps => "id_maps",
            Step::MountNs => "mount_namespace",
            Step::PidNs => "pid_namespace",
            Step::NetNs => "net_namespace",
            Step::Mount => "mount",
            Step::Proc => "proc",
        }
    }

    fn parse(s: &str) -> Option<Step> {
        Step::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

/// What one probe found: the host's word, and each step tried with its
/// result (the steps after the first failure are not tried).
#[derive(Clone, Debug, Default)]
pub struct Probe {
    pub env: Environment,
    pub steps: Vec<(Step, Result<(), Errno>)>,
    /// The probe itself could not run (then `steps` is empty).
    pub not_run: Option<String>,
}

impl Probe {
    /// The first step that failed, and how.
    pub fn failed(&self) -> Option<(Step, Errno)> {
        self.steps
            .iter()
            .find_map(|(s, r)| r.err().map(|e| (*s, e)))
    }
}

/// Why a sandbox cannot be built here, as far as the probe can tell.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cause {
    /// WSL 1: no Linux namespaces at all.
    Wsl1,
    /// `user.max_user_namespaces` is 0 (or the count is used up).
    MaxUserNamespaces,
    /// `kernel.unprivileged_userns_clone` is 0.
    UnprivilegedUsernsClone,
    /// A seccomp filter on sealc refuses the namespace or mount calls.
    Seccomp { container: Option<Container> },
    /// AppArmor's restriction of unprivileged user namespaces.
    AppArmorUserns,
    /// `/proc` has masked paths, so no fresh `proc` can be mounted.
    MaskedProc {
        masks: Vec<String>,
        container: Option<Container>,
    },
    /// A step failed for a reason the host does not tell.
    Step(Step, Errno),
}

/// The cause of a failed probe, `None` when every step worked (bubblewrap
/// failed for a reason of its own; its message says which).
pub fn cause(p: &Probe) -> Option<Cause> {
    let env = &p.env;
    if env.wsl == Some(1) {
        return Some(Cause::Wsl1);
    }
    let (step, errno) = p.failed()?;
    let seccomp = || Cause::Seccomp {
        container: env.container.clone(),
    };
    Some(match step {
        Step::UserNs if errno == Errno::NOSPC || env.max_user_namespaces == Some(0) => {
            Cause::MaxUserNamespaces
        }
        Step::UserNs if env.unprivileged_userns_clone == Some(0) => Cause::UnprivilegedUsernsClone,
        Step::UserNs | Step::MountNs | Step::PidNs | Step::NetNs | Step::Mount
            if env.seccomp_filters > 0 =>
        {
            seccomp()
        }
        // The restriction lets the namespace be made, without capabilities
        // in it: what needs one fails next.
        Step::IdMaps | Step::MountNs | Step::PidNs | Step::NetNs | Step::Mount
            if env.apparmor_restrict_userns == Some(1) =>
        {
            Cause::AppArmorUserns
        }
        Step::Proc if !env.proc_masks.is_empty() => Cause::MaskedProc {
            masks: env.proc_masks.clone(),
            container: env.container.clone(),
        },
        _ => Cause::Step(step, errno),
    })
}

/// What to do when bubblewrap could not build a sandbox, by the cause the
/// probe found: the fix for this host or container.
pub fn fix(p: &Probe) -> String {
    let in_container = |c: &Option<Container>| {
        c.as_ref()
            .map(|c| format!("; this is a {} container", c.name()))
            .unwrap_or_default()
    };
    let first = match cause(p) {
        Some(Cause::Wsl1) => "this is WSL 1, which has no Linux namespaces: convert the distribution to WSL 2 (`wsl --set-version DISTRO 2` in Windows), then run again".to_string(),
        Some(Cause::MaxUserNamespaces) => "user namespaces are switched off here (`user.max_user_namespaces` is 0, or their count is used up): as root on the host, `sysctl -w user.max_user_namespaces=15000`; inside a sandbox or container that set it to 0, run sealc outside it".to_string(),
        Some(Cause::UnprivilegedUsernsClone) => "unprivileged user namespaces are switched off (`kernel.unprivileged_userns_clone` is 0): as root, `sysctl -w kernel.unprivileged_userns_clone=1`".to_string(),
        Some(Cause::Seccomp { container }) => format!(
            "a seccomp filter on sealc refuses the calls that make namespaces or mounts (as Docker's default profile does{}): start the container with `--security-opt seccomp=unconfined` (or a profile that allows `unshare`, `clone` with namespace flags, `clone3`, `setns` and `mount`); in Kubernetes, `securityContext.seccompProfile.type: Unconfined`",
            in_container(&container)
        ),
        Some(Cause::AppArmorUserns) => "AppArmor restricts unprivileged user namespaces (`kernel.apparmor_restrict_unprivileged_userns` is 1, as on Ubuntu 24.04): give bubblewrap a profile that allows them (`/etc/apparmor.d/bwrap` holding `abi <abi/4.0>, include <tunables/global> profile bwrap /usr/bin/bwrap flags=(unconfined) { userns, }`, loaded with `apparmor_parser -r /etc/apparmor.d/bwrap`), or as root `sysctl -w kernel.apparmor_restrict_unprivileged_userns=0`".to_string(),
        Some(Cause::MaskedProc { masks, container }) => format!(
            "this /proc has paths masked over it (`{}`{}{}), as container runtimes do, and the kernel refuses a fresh /proc in a new namespace under it: in Kubernetes, run the pod with `securityContext.procMount: Unmasked` (with `hostUsers: false`); in Docker, `--security-opt systempaths=unconfined`; or compile the seal with `exec.proc = \"none\"` (no /proc) or `\"host\"` (this /proc, read-only)",
            masks.first().map(String::as_str).unwrap_or_default(),
            match masks.len() {
                0 | 1 => String::new(),
                n => format!(" and {} more", n - 1),
            },
            in_container(&container)
        ),
        Some(Cause::Step(step, errno)) => format!(
            "bubblewrap's own message is above; tried again step by step, `{}` failed here: {}",
            step.as_str(),
            std::io::Error::from(errno)
        ),
        None => match &p.not_run {
            Some(why) => format!("bubblewrap's own message is above ({why})"),
            None => "bubblewrap's own message is above; each step of building a sandbox worked when tried again alone".to_string(),
        },
    };
    // Where user namespaces or mounts cannot be had, the mode without them.
    let userns = matches!(
        cause(p),
        Some(
            Cause::MaxUserNamespaces
                | Cause::UnprivilegedUsernsClone
                | Cause::Seccomp { .. }
                | Cause::AppArmorUserns
                | Cause::MaskedProc { .. }
                | Cause::Step(..)
        )
    );
    if userns {
        format!("{first}; or, where that cannot be changed, compile the seal with `exec.isolation = \"landlock\"` (no namespaces: Landlock, seccomp and rlimits; docs/isolation.md says what it keeps)")
    } else {
        first
    }
}

/// Probe this host: its word, then the steps, tried by `sealc __probe` run
/// from this very binary (`/proc/self/exe`) as `ids` (uid, gid) when given.
pub fn probe(ids: Option<(u32, u32)>) -> Probe {
    let env = crate::facts::layers::environment(&crate::facts::RealHost);
    let mut cmd = Command::new("/proc/self/exe");
    // In `/`: the caller's working directory may be one the agent's user
    // could not reach, and would through this process's `/proc/PID/cwd`.
    cmd.arg("__probe")
        .current_dir("/")
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if let Some((uid, gid)) = ids {
        // std drops the supplementary groups when root changes uid.
        cmd.uid(uid).gid(gid);
    }
    let out = match cmd.output() {
        Ok(o) => o,
        Err(e) => {
            return Probe {
                env,
                steps: Vec::new(),
                not_run: Some(format!("cannot run the probe: {e}")),
            }
        }
    };
    let steps = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let (step, errno) = l.split_once(' ')?;
            let errno: i32 = errno.parse().ok()?;
            let r = if errno == 0 {
                Ok(())
            } else {
                Err(Errno::from_raw_os_error(errno))
            };
            Some((Step::parse(step)?, r))
        })
        .collect::<Vec<_>>();
    let not_run = steps
        .is_empty()
        .then(|| format!("the probe said nothing ({})", out.status));
    Probe {
        env,
        steps,
        not_run,
    }
}

/// `sealc __probe`: each step in turn, one line each (`STEP ERRNO`, 0 when
/// it worked), until one fails. A process of its own, single-threaded, so
/// that `unshare` applies to all of it.
pub fn probe_main(out: &mut dyn Write) -> io::Result<()> {
    use rustix::thread::UnshareFlags as U;
    let mut say = |step: Step, r: Result<(), Errno>| -> io::Result<bool> {
        let n = r.err().map_or(0, |e| e.raw_os_error());
        writeln!(out, "{} {n}", step.as_str())?;
        out.flush()?;
        Ok(r.is_ok())
    };
    let unshare = |f: U| {
        // SAFETY: this process is single-threaded (the hidden command starts
        // no thread) and unshares no descriptor table (`CLONE_FILES`).
        #[allow(unsafe_code)]
        unsafe {
            rustix::thread::unshare_unsafe(f)
        }
    };
    let uid = rustix::process::getuid().as_raw();
    let gid = rustix::process::getgid().as_raw();
    if !say(Step::UserNs, unshare(U::NEWUSER))? {
        return Ok(());
    }
    let write = |p: &str, s: String| {
        std::fs::write(p, s).map_err(|e| Errno::from_io_error(&e).unwrap_or(Errno::IO))
    };
    let maps = write("/proc/self/setgroups", "deny".into())
        .and_then(|()| write("/proc/self/uid_map", format!("{uid} {uid} 1")))
        .and_then(|()| write("/proc/self/gid_map", format!("{gid} {gid} 1")));
    if !say(Step::IdMaps, maps)? {
        return Ok(());
    }
    for (step, flag) in [
        (Step::MountNs, U::NEWNS),
        (Step::PidNs, U::NEWPID),
        (Step::NetNs, U::NEWNET),
    ] {
        if !say(step, unshare(flag))? {
            return Ok(());
        }
    }
    use rustix::mount::{MountFlags, MountPropagationFlags};
    let mounted = rustix::mount::mount_change(
        "/",
        MountPropagationFlags::DOWNSTREAM | MountPropagationFlags::REC,
    )
    .and_then(|()| {
        rustix::mount::mount(
            "tmpfs",
            "/tmp",
            "tmpfs",
            MountFlags::NODEV | MountFlags::NOSUID,
            None,
        )
    })
    .and_then(|()| rustix::fs::mkdir("/tmp/proc", rustix::fs::Mode::from_raw_mode(0o700)));
    if !say(Step::Mount, mounted)? {
        return Ok(());
    }
    say(Step::Proc, proc_in_new_pid_namespace())?;
    Ok(())
}

/// Mount a fresh `proc` on `/tmp/proc` from pid 1 of the pid namespace
/// this process unshared (only its children enter it).
fn proc_in_new_pid_namespace() -> Result<(), Errno> {
    // SAFETY: this process is single-threaded, so the child may do anything;
    // it mounts, and leaves with `_exit` (no destructor, no flush of the
    // parent's buffers).
    #[allow(unsafe_code)]
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(Errno::from_raw_os_error(
            io::Error::last_os_error().raw_os_error().unwrap_or(0),
        ));
    }
    if pid == 0 {
        let r = rustix::mount::mount(
            "proc",
            "/tmp/proc",
            "proc",
            rustix::mount::MountFlags::NOSUID
                | rustix::mount::MountFlags::NODEV
                | rustix::mount::MountFlags::NOEXEC,
            None,
        );
        let code = r.err().map_or(0, |e| e.raw_os_error().clamp(1, 255));
        // SAFETY: `_exit` ends the forked child at once, as it must.
        #[allow(unsafe_code)]
        unsafe {
            libc::_exit(code)
        }
    }
    let pid = rustix::process::Pid::from_raw(pid).ok_or(Errno::CHILD)?;
    match rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::empty()) {
        Ok(Some((_, status))) => match status.exit_status() {
            Some(0) => Ok(()),
            Some(n) => Err(Errno::from_raw_os_error(n)),
            None => Err(Errno::CHILD),
        },
        Ok(None) => Err(Errno::CHILD),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed(step: Step, errno: Errno, env: Environment) -> Option<Cause> {
        let mut steps: Vec<_> = Step::ALL
            .into_iter()
            .take_while(|s| *s != step)
            .map(|s| (s, Ok(())))
            .collect();
        steps.push((step, Err(errno)));
        cause(&Probe {
            env,
            steps,
            not_run: None,
        })
    }

    #[test]
    fn each_refusal_is_told_by_what_the_host_says() {
        let env = Environment::default();
        let filtered = Environment {
            seccomp_filters: 1,
            container: Some(Container::Docker),
            ..Default::default()
        };
        let apparmor = Environment {
            apparmor_restrict_userns: Some(1),
            ..Default::default()
        };
        let masked = Environment {
            proc_masks: vec!["/proc/kcore".into()],
            ..Default::default()
        };
        let off = Environment {
            max_user_namespaces: Some(0),
            ..Default::default()
        };
        let debian = Environment {
            unprivileged_userns_clone: Some(0),
            ..Default::default()
        };
        let wsl1 = Environment {
            wsl: Some(1),
            ..Default::default()
        };
        use Step::*;
        let (perm, acces, nospc) = (Errno::PERM, Errno::ACCESS, Errno::NOSPC);
        assert_eq!(
            failed(UserNs, nospc, env.clone()),
            Some(Cause::MaxUserNamespaces)
        );
        assert_eq!(failed(UserNs, perm, off), Some(Cause::MaxUserNamespaces));
        assert_eq!(
            failed(UserNs, perm, debian),
            Some(Cause::UnprivilegedUsernsClone)
        );
        assert_eq!(
            failed(UserNs, perm, filtered.clone()),
            Some(Cause::Seccomp {
                container: Some(Container::Docker)
            })
        );
        assert!(matches!(
            failed(Mount, acces, filtered),
            Some(Cause::Seccomp { .. })
        ));
        assert_eq!(
            failed(IdMaps, acces, apparmor.clone()),
            Some(Cause::AppArmorUserns)
        );
        assert_eq!(failed(Mount, acces, apparmor), Some(Cause::AppArmorUserns));
        assert!(matches!(
            failed(Proc, perm, masked),
            Some(Cause::MaskedProc { .. })
        ));
        assert_eq!(
            failed(Proc, perm, env.clone()),
            Some(Cause::Step(Proc, perm))
        );
        assert_eq!(failed(UserNs, perm, wsl1), Some(Cause::Wsl1));
        // Every step worked: bubblewrap's own message is all there is.
        let ok = Probe {
            env,
            steps: Step::ALL.into_iter().map(|s| (s, Ok(()))).collect(),
            not_run: None,
        };
        assert_eq!(cause(&ok), None);
    }
}
