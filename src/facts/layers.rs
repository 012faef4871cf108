//! What the host says about the layers a Linux seal needs: the sysctls
//! that switch user namespaces off or restrict them, seccomp filters on
//! sealc (a container runtime's), a `/proc` with paths masked over it, the
//! marks a container runtime leaves, WSL. Read through [`Host`], so that
//! compile can warn of them and `exec::probe` tell why a sandbox failed.

use super::Host;
use crate::diag::{Diagnostic, Diagnostics};

/// The most of a `/proc` text read (a mount table of many thousand lines).
const MAX_PROC_TEXT: u64 = 4 << 20;

/// The container or VM sealc finds itself in, from the marks each leaves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Container {
    Docker,
    Podman,
    Kubernetes,
    /// The `container` variable systemd-nspawn and LXC set.
    Other(String),
}

impl Container {
    pub fn name(&self) -> &str {
        match self {
            Container::Docker => "Docker",
            Container::Podman => "Podman",
            Container::Kubernetes => "Kubernetes",
            Container::Other(s) => s,
        }
    }
}

/// What the host says about the layers a Linux seal needs.
#[derive(Clone, Debug, Default)]
pub struct Environment {
    /// `/proc/sys/user/max_user_namespaces`.
    pub max_user_namespaces: Option<u64>,
    /// `/proc/sys/kernel/unprivileged_userns_clone` (Debian's older kernels).
    pub unprivileged_userns_clone: Option<u64>,
    /// `/proc/sys/kernel/apparmor_restrict_unprivileged_userns` (Ubuntu
    /// 23.10 and later).
    pub apparmor_restrict_userns: Option<u64>,
    /// Seccomp filters on sealc itself (`Seccomp_filters` of
    /// `/proc/self/status`; a container runtime's profile is one).
    pub seccomp_filters: u64,
    pub container: Option<Container>,
    /// Mount points inside `/proc` (a container runtime masks paths such as
    /// `/proc/kcore` so): with any, the kernel refuses a fresh `proc` in a
    /// new user namespace.
    pub proc_masks: Vec<String>,
    /// WSL 1 (`Microsoft` in the kernel release), WSL 2 (`microsoft`).
    pub wsl: Option<u8>,
}

/// What the host says, read from `/proc` and the marks containers leave.
pub fn environment(host: &dyn Host) -> Environment {
    let text = |p: &str| {
        host.read_at_most(p, MAX_PROC_TEXT)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
    };
    let number = |p: &str| -> Option<u64> { text(p)?.trim().parse().ok() };
    let status = text("/proc/self/status").unwrap_or_default();
    let seccomp_filters = status
        .lines()
        .find_map(|l| l.strip_prefix("Seccomp_filters:"))
        .and_then(|v| v.trim().parse().ok())
        // Kernels before 5.9 say only the mode (2: filtered).
        .or_else(|| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("Seccomp:"))
                .map(|v| u64::from(v.trim() == "2"))
        })
        .unwrap_or(0);
    let exists = |p: &str| host.lstat(p).is_some();
    let container = if exists("/var/run/secrets/kubernetes.io")
        || host.env("KUBERNETES_SERVICE_HOST").is_some()
    {
        Some(Container::Kubernetes)
    } else if exists("/.dockerenv") {
        Some(Container::Docker)
    } else if exists("/run/.containerenv") {
        Some(Container::Podman)
    } else {
        host.env("container")
            .and_then(Result::ok)
            .filter(|v| !v.is_empty())
            // The caller's own variable: shown escaped, never as controls.
            .map(|v| Container::Other(crate::diag::visible(&v)))
    };
    let mountinfo = text("/proc/self/mountinfo").unwrap_or_default();
    let mut proc_masks: Vec<String> = mountinfo
        .lines()
        .filter_map(|l| l.split(' ').nth(4))
        .filter(|m| m.starts_with("/proc/") && !m.starts_with("/proc/sys/fs/binfmt_misc"))
        // The mount table escapes only space, tab, newline and backslash.
        .map(crate::diag::visible)
        .collect();
    proc_masks.sort();
    proc_masks.dedup();
    let release = text("/proc/sys/kernel/osrelease").unwrap_or_default();
    let wsl = if release.contains("Microsoft") {
        Some(1)
    } else if release.contains("microsoft") {
        Some(2)
    } else {
        None
    };
    Environment {
        max_user_namespaces: number("/proc/sys/user/max_user_namespaces"),
        unprivileged_userns_clone: number("/proc/sys/kernel/unprivileged_userns_clone"),
        apparmor_restrict_userns: number("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"),
        seccomp_filters,
        container,
        proc_masks,
        wsl,
    }
}

/// What on this host may keep bubblewrap from building a sandbox, in
/// words; empty when nothing the host says stands in its way.
pub fn obstacles(env: &Environment) -> Vec<String> {
    let mut out = Vec::new();
    if env.wsl == Some(1) {
        out.push("this is WSL 1, which has no Linux namespaces".to_string());
    }
    if env.max_user_namespaces == Some(0) {
        out.push("`user.max_user_namespaces` is 0".to_string());
    }
    if env.unprivileged_userns_clone == Some(0) {
        out.push("`kernel.unprivileged_userns_clone` is 0".to_string());
    }
    if env.apparmor_restrict_userns == Some(1) {
        out.push("AppArmor restricts unprivileged user namespaces".to_string());
    }
    if env.seccomp_filters > 0 {
        out.push(format!(
            "a seccomp filter is on sealc{}",
            env.container
                .as_ref()
                .map(|c| format!(" (a {} container's)", c.name()))
                .unwrap_or_default()
        ));
    }
    if !env.proc_masks.is_empty() {
        out.push(format!(
            "`/proc` has {} path(s) masked over it",
            env.proc_masks.len()
        ));
    }
    out
}

/// A Linux seal compiled where the host says something may keep bubblewrap
/// from building its sandbox: a warning that points to `sealc doctor`.
pub(super) fn warn_obstacles(
    host: &dyn Host,
    proc: crate::spec::ProcMode,
    diags: &mut Diagnostics,
) {
    let mut env = environment(host);
    if proc != crate::spec::ProcMode::Fresh {
        // The seal mounts no fresh /proc: a masked one is in nobody's way.
        env.proc_masks.clear();
    }
    let masked = !env.proc_masks.is_empty();
    let found = obstacles(&env);
    if found.is_empty() {
        return;
    }
    diags.push(
        Diagnostic::warning(
            crate::diag::code::EXEC_HOST_LAYERS,
            format!(
                "this host may refuse the sandbox a Linux seal needs: {}",
                found.join("; ")
            ),
        )
        .help(if masked {
            "`sealc doctor` tries every layer on this host and says how to get what is missing; where a masked /proc is all that is in the way, `exec.proc = \"none\"` or `\"host\"` needs no fresh one; the seal compiles all the same"
        } else {
            "`sealc doctor` tries every layer on this host and says how to get what is missing; the seal compiles all the same"
        }),
    );
}
