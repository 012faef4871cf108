//! `sealc doctor`: what this host gives a Linux seal, layer by layer, and
//! what the seal keeps here. It starts nothing of an agent's: it runs
//! `bwrap --version`, tries bubblewrap's steps in a process of its own
//! (`exec::probe`, as the user bubblewrap would run as), asks the kernel for
//! Landlock's ABI, tries an idmapped clone of an empty private directory
//! (root only), and reads `/proc` and `/sys/fs/cgroup`.

use serde::Serialize;

use crate::exec::probe::{self, Probe, Step};

/// The JSON document's schema tag.
pub const SCHEMA: &str = "sealc.doctor/v1";

/// One layer a Linux seal may use, and whether this host has it.
#[derive(Clone, Debug, Serialize)]
pub struct Layer {
    pub name: &'static str,
    pub state: State,
    /// What was found (a version, an ABI, the error a step met).
    pub detail: String,
    /// What to do about it, where something is missing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// Here, and used.
    Yes,
    /// Missing: the seal runs without it, or cannot run (see the mode).
    No,
    /// Not tried: an earlier step failed.
    Untried,
    /// Not used by this caller (idmapped mounts are root's).
    NotUsed,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Yes => "yes",
            State::No => "no",
            State::Untried => "not tried",
            State::NotUsed => "not used",
        }
    }
}

/// A way to run a seal, and what it gets here.
#[derive(Clone, Debug, Serialize)]
pub struct Mode {
    pub name: &'static str,
    pub default: bool,
    /// Whether `sealc exec` of a seal in this mode can start here.
    pub runs: bool,
    /// The layers it would have here.
    pub gets: Vec<String>,
    /// The layers it would run without here (it still runs).
    pub lacks: Vec<String>,
    /// Why it cannot run, and what to do.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

/// The host itself.
#[derive(Clone, Debug, Serialize)]
pub struct Host {
    pub kernel: String,
    pub uid: u32,
    /// The user bubblewrap runs as, and the probe ran as.
    pub probed_as: (u32, u32),
    #[serde(skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wsl: Option<u8>,
    /// A CI runner, from its variables (`GITHUB_ACTIONS`, `GITLAB_CI`, `CI`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ci: Option<String>,
    /// `kernel.apparmor_restrict_unprivileged_userns` (absent: no such sysctl).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub apparmor_restrict_unprivileged_userns: Option<u64>,
    pub max_user_namespaces: Option<u64>,
    /// Seccomp filters already on sealc (a container runtime's).
    pub seccomp_filters: u64,
    /// Mount points inside `/proc` (a container runtime's masks).
    pub proc_masks: Vec<String>,
}

/// What `sealc doctor` found.
#[derive(Clone, Debug, Serialize)]
pub struct Checkup {
    pub schema: &'static str,
    pub sealc_version: &'static str,
    pub host: Host,
    pub layers: Vec<Layer>,
    pub modes: Vec<Mode>,
}

impl Checkup {
    /// Whether the default mode can run here.
    pub fn default_runs(&self) -> bool {
        self.modes.iter().any(|m| m.default && m.runs)
    }
}

/// Check this host for seals run by the caller; `agent` is who bubblewrap
/// runs as (the caller, or the agent's user when the caller is root), and
/// `bwrap` the bubblewrap a seal would use.
pub fn checkup(bwrap: &str, agent: crate::exec::Ids) -> Checkup {
    let uid = rustix::process::getuid().as_raw();
    let p = probe::probe((uid == 0).then_some((agent.uid, agent.gid)));
    let mut layers = vec![bubblewrap(bwrap)];
    layers.extend(steps(&p));
    layers.push(idmapped(uid, agent));
    layers.push(landlock());
    layers.push(seccomp(&p));
    layers.push(cgroup());
    let modes = vec![
        namespaces(&p, &layers),
        other_proc(&p, &layers, crate::spec::ProcMode::None),
        other_proc(&p, &layers, crate::spec::ProcMode::Host),
        landlock_mode(),
    ];
    let env = p.env;
    Checkup {
        schema: SCHEMA,
        sealc_version: env!("CARGO_PKG_VERSION"),
        host: Host {
            kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .map(|s| s.trim().to_string())
                .unwrap_or_default(),
            uid,
            probed_as: (agent.uid, agent.gid),
            container: env.container.as_ref().map(|c| c.name().to_string()),
            wsl: env.wsl,
            ci: ci(),
            apparmor_restrict_unprivileged_userns: env.apparmor_restrict_userns,
            max_user_namespaces: env.max_user_namespaces,
            seccomp_filters: env.seccomp_filters,
            proc_masks: env.proc_masks,
        },
        layers,
        modes,
    }
}

fn ci() -> Option<String> {
    let set = |v: &str| std::env::var_os(v).is_some_and(|x| !x.is_empty());
    if set("GITHUB_ACTIONS") {
        Some("GitHub Actions".into())
    } else if set("GITLAB_CI") {
        Some("GitLab CI".into())
    } else if set("CI") {
        Some("a CI runner".into())
    } else {
        None
    }
}

fn bubblewrap(path: &str) -> Layer {
    let out = std::process::Command::new(path)
        .arg("--version")
        .env_clear()
        .stdin(std::process::Stdio::null())
        .output();
    let setuid = std::fs::metadata(path)
        .map(|m| std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o4000 != 0)
        .unwrap_or(false);
    match out {
        Ok(o) if o.status.success() => {
            let v = String::from_utf8_lossy(&o.stdout).trim().to_string();
            let old = v
                .strip_prefix("bubblewrap ")
                .and_then(|v| semver::Version::parse(v).ok())
                .is_some_and(|v| v < semver::Version::new(0, 8, 0));
            Layer {
                name: "bubblewrap",
                state: if old { State::No } else { State::Yes },
                detail: format!(
                    "`{path}`: {v}{}",
                    if setuid { " (set-uid root)" } else { "" }
                ),
                fix: old.then(|| "install bubblewrap 0.8 or newer".to_string()),
            }
        }
        Ok(o) => Layer {
            name: "bubblewrap",
            state: State::No,
            detail: format!("`{path} --version` failed ({})", o.status),
            fix: Some("install bubblewrap 0.8 or newer (`apt-get install bubblewrap`)".into()),
        },
        Err(e) => Layer {
            name: "bubblewrap",
            state: State::No,
            detail: format!("`{path}`: {e}"),
            fix: Some(
                "install bubblewrap 0.8 or newer (`apt-get install bubblewrap`), or name it with `--bwrap`"
                    .into(),
            ),
        },
    }
}

/// The probe's steps as layers; after the first failure, not tried.
fn steps(p: &Probe) -> Vec<Layer> {
    let name = |s: Step| match s {
        Step::UserNs => "user namespace",
        Step::IdMaps => "id maps",
        Step::MountNs => "mount namespace",
        Step::PidNs => "pid namespace",
        Step::NetNs => "network namespace",
        Step::Mount => "mounts in the namespace",
        Step::Proc => "a fresh /proc",
    };
    Step::ALL
        .into_iter()
        .map(|s| {
            let (state, detail, fix) = match p.steps.iter().find(|(t, _)| *t == s) {
                Some((_, Ok(()))) => (State::Yes, "made".to_string(), None),
                Some((_, Err(e))) => (
                    State::No,
                    format!("refused: {}", std::io::Error::from(*e)),
                    Some(probe::fix(p)),
                ),
                None => (
                    State::Untried,
                    p.not_run
                        .clone()
                        .unwrap_or_else(|| "an earlier step failed".into()),
                    None,
                ),
            };
            Layer {
                name: name(s),
                state,
                detail,
                fix,
            }
        })
        .collect()
}

/// Root's runs hand the write roots to the agent's user through idmapped
/// mounts, or by `chown` where they cannot be made.
fn idmapped(uid: u32, agent: crate::exec::Ids) -> Layer {
    let name = "idmapped mounts";
    if uid != 0 {
        return Layer {
            name,
            state: State::NotUsed,
            detail: "only root's runs hand write roots to another user".into(),
            fix: None,
        };
    }
    let tried = crate::exec::private_dir()
        .map_err(|e| crate::failure::Failure::os("cannot make a private directory", e))
        .and_then(|b| {
            let path = b.dir.path().to_string_lossy().into_owned();
            let r = crate::exec::user::owners(std::slice::from_ref(&path)).and_then(|o| {
                let mut o = o;
                // An owner other than the agent, as a write root has.
                for x in &mut o {
                    if x.ids == agent {
                        x.ids = crate::exec::Ids { uid: 0, gid: 0 };
                    }
                }
                crate::exec::idmap::trees(&o, agent)
            });
            b.remove();
            r
        });
    match tried {
        Ok(_) => Layer {
            name,
            state: State::Yes,
            detail: "an idmapped clone of a private directory was made".into(),
            fix: None,
        },
        Err(e) => Layer {
            name,
            state: State::No,
            detail: format!("{e}"),
            fix: Some("without them, root's runs hand each write root to the agent's user by `chown` for the run and back after it; idmapped mounts need Linux 5.12 or newer, `CAP_SYS_ADMIN` in the host's user namespace (a container without it cannot), and a filesystem that supports them".into()),
        },
    }
}

fn landlock() -> Layer {
    let abi = crate::exec::landlock_abi();
    if abi > 0 {
        Layer {
            name: "Landlock",
            state: State::Yes,
            detail: format!("ABI {abi}"),
            fix: None,
        }
    } else {
        Layer {
            name: "Landlock",
            state: State::No,
            detail: "this kernel offers none".into(),
            fix: Some("the seal runs without this second layer (its mounts and seccomp filter still hold); Landlock needs Linux 5.13 or newer with `landlock` in the `lsm=` list".into()),
        }
    }
}

fn seccomp(p: &Probe) -> Layer {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let has = status.lines().any(|l| l.starts_with("Seccomp:"));
    let n = p.env.seccomp_filters;
    Layer {
        name: "seccomp",
        state: if has { State::Yes } else { State::No },
        detail: if !has {
            "this kernel has no seccomp".into()
        } else if n > 0 {
            format!("{n} filter(s) already on sealc (a container runtime's, kept under the seal's)")
        } else {
            "no filter on sealc yet".into()
        },
        fix: (!has).then(|| "a kernel built with `CONFIG_SECCOMP_FILTER`".to_string()),
    }
}

/// cgroup v2: mounted, this process's group, and whether it may make
/// groups below it (delegated).
fn cgroup() -> Layer {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let mount = mountinfo.lines().find_map(|l| {
        let (left, right) = l.split_once(" - ")?;
        (right.split(' ').next()? == "cgroup2").then(|| left.split(' ').nth(4).map(String::from))?
    });
    let Some(mount) = mount else {
        return Layer {
            name: "cgroup v2",
            state: State::No,
            detail: "not mounted".into(),
            fix: Some("sealc's limits use rlimits and its own watcher; a cgroup v2 mount (`/sys/fs/cgroup`) is what the kernel's own accounting needs".into()),
        };
    };
    let own = std::fs::read_to_string("/proc/self/cgroup")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("0::").map(String::from))
        .unwrap_or_default();
    let dir = format!("{mount}{}", own.trim_end_matches('/'));
    let controllers = std::fs::read_to_string(format!("{dir}/cgroup.controllers"))
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    let writable = rustix::fs::access(dir.as_str(), rustix::fs::Access::WRITE_OK).is_ok();
    Layer {
        name: "cgroup v2",
        state: State::Yes,
        detail: format!(
            "at `{mount}`; this process in `{own}` (controllers: {}); {}",
            if controllers.is_empty() {
                "none"
            } else {
                &controllers
            },
            if writable {
                "groups can be made below it"
            } else {
                "not delegated to this user"
            }
        ),
        fix: None,
    }
}

/// The namespaces mode (bubblewrap; today's only mode on Linux).
fn namespaces(p: &Probe, layers: &[Layer]) -> Mode {
    let state = |n: &str| layers.iter().find(|l| l.name == n).map(|l| l.state);
    let bwrap = layers.iter().find(|l| l.name == "bubblewrap");
    let steps_ok = p.failed().is_none() && p.not_run.is_none() && p.env.wsl != Some(1);
    let bwrap_ok = bwrap.is_some_and(|l| l.state == State::Yes);
    let mut gets = Vec::new();
    let mut lacks = Vec::new();
    if steps_ok {
        gets.push("user, mount, pid and network namespaces".to_string());
        gets.push("a fresh /proc".to_string());
    }
    match state("seccomp") {
        Some(State::Yes) => gets.push("seccomp filter".to_string()),
        _ => lacks.push("seccomp filter".to_string()),
    }
    match layers.iter().find(|l| l.name == "Landlock") {
        Some(l) if l.state == State::Yes => gets.push(format!("Landlock ({})", l.detail)),
        _ => lacks.push("Landlock".to_string()),
    }
    match state("idmapped mounts") {
        Some(State::Yes) => gets.push("write roots handed over by idmapped mounts".to_string()),
        Some(State::No) => {
            lacks.push("idmapped mounts (write roots handed over by chown instead)".to_string())
        }
        _ => {}
    }
    gets.push("rlimits and sealc's watcher for [limits]".to_string());
    let fix = if !bwrap_ok {
        bwrap.and_then(|l| l.fix.clone())
    } else if !steps_ok {
        Some(probe::fix(p))
    } else {
        None
    };
    Mode {
        name: "namespaces",
        default: true,
        runs: bwrap_ok && steps_ok,
        gets,
        lacks,
        fix,
    }
}

/// `exec.isolation = "landlock"`: no namespace, so neither bubblewrap nor
/// any step of the probe matters; Landlock's ABI decides (1 with the
/// network open, 4 where TCP is restricted), and 6 adds the scopes.
fn landlock_mode() -> Mode {
    let abi = crate::exec::landlock_abi();
    let mut gets = Vec::new();
    let mut lacks = vec![
        "namespaces: the host's processes, network interfaces and /proc are seen; a hidden root's names and metadata stay readable; no private /tmp, /dev/shm or ptys; an unprivileged caller's agent may not chmod (docs/isolation.md)".to_string(),
    ];
    if abi >= 1 {
        gets.push(format!(
            "Landlock ABI {abi}: reads only beneath the read rules, writes only beneath the write roots"
        ));
        gets.push("seccomp: the namespaces mode's refusals, System V IPC, and (network `none`, `proxy`) UDP and every socket but TCP".to_string());
        gets.push(
            "sealc's init as the command's subreaper: nothing it starts outlives the run"
                .to_string(),
        );
    }
    if abi >= 4 {
        gets.push(
            "TCP connect only to the proxy's port (any address) or nowhere, and no TCP bind"
                .to_string(),
        );
    } else if abi >= 1 {
        lacks.push("TCP rules (ABI 4): only a seal with network `open` runs".to_string());
    }
    if abi >= 6 {
        gets.push("abstract unix sockets and signals scoped to the command".to_string());
    } else if abi >= 1 {
        lacks.push("the signal and abstract socket scopes (ABI 6): the command can signal the agent user's other processes and reach abstract sockets (in network `open`)".to_string());
    }
    Mode {
        name: "landlock (exec.isolation = \"landlock\")",
        default: false,
        runs: abi >= 4,
        gets,
        lacks,
        fix: (abi < 4).then(|| {
            if abi < 1 {
                "this kernel has no Landlock: the mode needs ABI 3 (Linux 6.2), and 4 (Linux 6.7) for network `none` or `proxy`, with `landlock` in the `lsm=` list".to_string()
            } else if abi < 3 {
                format!("this kernel's Landlock ABI is {abi}: the mode needs ABI 3 (Linux 6.2), and 4 (Linux 6.7) for network `none` or `proxy`")
            } else {
                format!("this kernel's Landlock ABI is {abi}: a seal with network `none` or `proxy` needs ABI 4 (Linux 6.7); network `open` runs")
            }
        }),
    }
}

/// The namespaces mode with a `/proc` other than a fresh one
/// (`exec.proc`): it needs every step but the fresh `/proc`; `host` also
/// needs Landlock.
fn other_proc(p: &Probe, layers: &[Layer], proc: crate::spec::ProcMode) -> Mode {
    let fresh = namespaces(p, layers);
    let bwrap_ok = layers
        .iter()
        .any(|l| l.name == "bubblewrap" && l.state == State::Yes);
    let failed = p.failed().map(|(s, _)| s);
    let steps_ok =
        p.not_run.is_none() && p.env.wsl != Some(1) && matches!(failed, None | Some(Step::Proc));
    let landlock = layers
        .iter()
        .any(|l| l.name == "Landlock" && l.state == State::Yes);
    let needs_landlock = proc == crate::spec::ProcMode::Host;
    let runs = bwrap_ok && steps_ok && (landlock || !needs_landlock);
    let mut gets = Vec::new();
    if steps_ok {
        gets.push("user, mount, pid and network namespaces".to_string());
        gets.push(crate::describe::proc_words(proc).to_string());
    }
    gets.extend(
        fresh
            .gets
            .iter()
            .filter(|g| !g.contains("namespaces") && g.as_str() != "a fresh /proc")
            .cloned(),
    );
    let mut lacks = fresh.lacks.clone();
    if proc != crate::spec::ProcMode::Fresh {
        lacks.push("bubblewrap's switch-off of nested user namespaces (the seccomp filter still refuses them)".to_string());
    }
    let fix = if runs {
        None
    } else if !landlock && needs_landlock && bwrap_ok && steps_ok {
        Some("`exec.proc = \"host\"` needs Landlock, which keeps the agent out of other processes' /proc entries".to_string())
    } else {
        fresh.fix.clone()
    };
    Mode {
        name: match proc {
            crate::spec::ProcMode::None => "namespaces, exec.proc = \"none\"",
            crate::spec::ProcMode::Host => "namespaces, exec.proc = \"host\"",
            crate::spec::ProcMode::Fresh => "namespaces",
        },
        default: false,
        runs,
        gets,
        lacks,
        fix,
    }
}
