//! What a seal allows, in plain words: [`describe`] turns a compiled seal
//! (its IR and facts) into a [`Policy`] grouped the way a reviewer reads it,
//! and [`diff`] says what two policies allow differently. `sealc show` and
//! `sealc diff` print them.
//!
//! Pure: no IO, no clock, no printing. Env *values* never appear in a
//! [`Policy`]'s serialized form, only names; the values it keeps (to tell a
//! changed value in [`diff`]) are skipped when serializing and never put
//! into a [`Change`].

mod diff;
pub use self::diff::{diff, only_vars_differ, Change, Effect, Section, VarChange};

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::facts::{Facts, LinkKind};
use crate::ir::{is_within, Ir, RootKind, Standing, PROXY_VARS};
use crate::spec::{Base, NetMode, Platform, CODEX_SYSTEM_DIR};

/// The schema name of `sealc show --format json`.
pub const SHOW_SCHEMA: &str = "sealc.show/v1";
/// The schema name of `sealc diff --format json`.
pub const DIFF_SCHEMA: &str = "sealc.diff/v1";

/// What a seal allows.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Policy {
    /// The seal's name.
    pub seal: String,
    pub description: Option<String>,
    /// `macos` or `linux`.
    pub platform: String,
    /// `allow-default` or `deny-default`.
    pub base: String,
    /// Linux: how the command is confined (`exec.isolation`), in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub isolation: Option<String>,
    /// Linux: the sandbox's `/proc` (`exec.proc`), in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proc: Option<String>,
    pub filesystem: Filesystem,
    pub network: Network,
    pub env: Env,
    /// Every limit that is set, by its spec name (`[limits]`, `exec.timeout`).
    pub limits: BTreeMap<String, u64>,
    /// The write roots `sealc exec` empties before each run (`exec.reset`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub reset: Vec<String>,
    /// The files a run's report and attestation name once the run wrote
    /// them (`exec.outputs`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub outputs: Vec<String>,
    pub codex: Codex,
    /// macOS: each capability of the sealed IPC table (docs/ipc.md) and
    /// whether the seal gives it (`no`, or `yes` when `ipc.allow`
    /// re-allows one of its entries, naming them); empty for Linux.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub ipc: BTreeMap<String, String>,
}

/// The filesystem, grouped by what may be done.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Filesystem {
    /// What may be read besides the roots listed, in words.
    pub base_reads: String,
    /// The system roots the `deny-default` base reads (empty under `allow-default`).
    pub system_base: Vec<String>,
    /// `allow_read` roots.
    pub can_read: Group,
    /// `deny_read` roots (and Codex's config layers, for a Codex seal).
    pub cannot_read: Group,
    /// `metadata_only` roots.
    pub stat_only: Group,
    /// `write` roots.
    pub can_write: Group,
    /// `write_devices`.
    pub devices: Group,
    /// `protect` roots (and a Codex seal's config): read-only inside a write root.
    #[serde(skip_serializing_if = "Group::is_empty")]
    pub read_only: Group,
    /// The launcher's symlink chain.
    pub launcher: Vec<LauncherItem>,
}

/// Roots of one kind, with what that kind means.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Group {
    pub meaning: String,
    pub paths: Vec<PathItem>,
}

impl Group {
    pub fn is_empty(&self) -> bool {
        self.paths.is_empty()
    }
}

/// One filesystem root.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PathItem {
    /// As written in the spec (`${var}`s and all).
    pub written: String,
    /// After `${var}` substitution: the path the seal names.
    pub path: String,
    /// The recorded realpath, when it differs from `path`.
    pub realpath: Option<String>,
    /// Anything else worth knowing about this root, in words.
    pub notes: Vec<String>,
}

/// One entry of the launcher chain.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LauncherItem {
    pub path: String,
    /// `symlink` or `file`.
    pub kind: String,
    /// For a symlink, the link text.
    pub target: Option<String>,
    /// Re-allowed by literal path (it lies under a hidden root, or outside the base).
    pub reallowed: bool,
}

/// The network.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Network {
    /// `none`, `proxy`, `allowlist` or `open`.
    pub mode: String,
    pub meaning: String,
    /// The loopback proxy's `host:port` (`proxy` and `allowlist`).
    pub proxy: Option<String>,
    /// Canonical entries: `name`, `.suffix` (every name below `suffix`), `a.b.c.d`, `[v6]`.
    pub hosts: Vec<String>,
    pub ports: Vec<u16>,
    /// Special address ranges a listed name may resolve into (`allowlist`).
    pub allow_ranges: Vec<String>,
}

/// The environment: names only.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Env {
    /// `pass` names that cross, with the value captured when compiled.
    pub passed: Vec<String>,
    /// `pass` names that were not set when compiled, and so do not cross.
    pub passed_unset: Vec<String>,
    /// `set` names.
    pub set: Vec<String>,
    /// Set by the network mode (`proxy`, `allowlist`).
    pub proxy_vars: Vec<String>,
    /// Supplied by the runner from its own environment at start; never recorded.
    pub secrets: Vec<String>,
    /// The recorded value of every name that crosses with one (not
    /// serialized; only [`diff`] looks at it, to say that a value changed).
    #[serde(skip)]
    values: BTreeMap<String, String>,
}

/// The Codex settings.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Codex {
    /// The spec has a `[codex]` table: `sealc exec` installs the config.
    pub sealed: bool,
    /// The tested Codex releases the config is for.
    pub versions: Vec<String>,
    /// Codex's own sandbox: `off` (`danger-full-access`: the seal is the
    /// sandbox) or `profile` (Codex also enforces the seal as its permission profile).
    pub sandbox: String,
    /// Where `sealc exec` installs the config (`CODEX_HOME/config.toml`).
    pub config: Option<String>,
    pub model: Option<String>,
    pub reasoning_effort: Option<String>,
    /// The workspace, as the seal names it.
    pub workspace: Option<String>,
    /// `allow_project_config`: the workspace is trusted (its `.codex/` is read).
    pub workspace_trusted: bool,
    pub provider: Option<Provider>,
    /// `[codex] credentials`: the file copied into each run's Codex home.
    pub credentials: Option<String>,
}

/// `[codex.provider]`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Provider {
    pub base_url: String,
    /// The secret's name Codex sends as the API key.
    pub env_key: Option<String>,
    /// `hold_key`: sealc's proxy adds the key on the host side (over TLS to
    /// `held_at`, `host:port` and the path); Codex never has it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held_at: Option<String>,
}

/// What a hidden root means on a platform, in words.
pub fn hidden(platform: Platform) -> &'static str {
    match platform {
        Platform::Macos => "hidden (contents and metadata are denied); nothing is linked or cloned out",
        Platform::Linux => "hidden (an empty stand-in covers it, only its own name can be stat'ed); nothing is linked or cloned out",
    }
}
/// What a stat-only root means on a platform, in words.
pub fn stat_only(platform: Platform) -> &'static str {
    match platform {
        Platform::Macos => "metadata can be read; contents cannot be read, listed, written, linked or cloned",
        Platform::Linux => "an empty stand-in covers it: its own name can be stat'ed (the stand-in's metadata), nothing in it can be read, listed or stat'ed",
    }
}
/// What a write root means, in words.
pub const WRITABLE: &str = "read and written beneath, except hidden roots inside; the root itself cannot be removed or renamed";
/// What a protected root means, in words.
pub const READ_ONLY: &str = "read-only inside a write root: read as the write root is, but nothing in it or at its name can be created, changed, removed, renamed or hard-linked, and the directories between the write root and it cannot be renamed or removed";
/// What a write device means, in words.
pub const DEVICES: &str = "devices that can be written";

/// Describe a compiled seal: its IR, and the facts it was compiled with (for
/// which names `pass` lists).
pub fn describe(ir: &Ir, facts: &Facts) -> Policy {
    Policy {
        seal: ir.name.clone(),
        description: ir.description.clone(),
        platform: ir.platform.as_str().to_string(),
        base: ir.base.as_str().to_string(),
        isolation: (ir.platform == Platform::Linux)
            .then(|| isolation_words(ir.exec.isolation).to_string()),
        proc: (ir.platform == Platform::Linux).then(|| proc_words(ir.exec.proc).to_string()),
        filesystem: filesystem(ir),
        network: network(ir),
        env: env(ir, facts),
        limits: limits(ir),
        reset: ir.exec.reset.clone(),
        outputs: ir.exec.outputs.iter().map(|o| o.path.clone()).collect(),
        codex: codex(ir),
        ipc: ipc(ir),
    }
}

/// [`Policy::isolation`].
pub fn isolation_words(i: crate::spec::Isolation) -> &'static str {
    match i {
        crate::spec::Isolation::Namespaces => "namespaces: bubblewrap's user, mount, pid, ipc and network namespaces, then Landlock and seccomp",
        crate::spec::Isolation::Landlock => "landlock: no namespace; the host's filesystem, network and processes under Landlock (reads, writes, TCP, signals), seccomp and rlimits; a hidden root's names and metadata stay readable (docs/isolation.md)",
    }
}

/// [`Policy::proc`].
pub fn proc_words(p: crate::spec::ProcMode) -> &'static str {
    match p {
        crate::spec::ProcMode::Fresh => "fresh: only the sandbox's own processes",
        crate::spec::ProcMode::None => "none: an empty /proc (programs that read it fail)",
        crate::spec::ProcMode::Host => "host: the host's /proc, read-only: every process of the host shows (names, command lines), Landlock keeps the agent out of their entries",
    }
}

/// [`Policy::ipc`].
fn ipc(ir: &Ir) -> BTreeMap<String, String> {
    if ir.platform != Platform::Macos {
        return BTreeMap::new();
    }
    crate::ipc::summary(&ir.ipc_allowed)
        .into_iter()
        .map(|(what, has)| (what.to_string(), has))
        .collect()
}

/// The limits that are set; the wall clock from `limits.wall_seconds` or
/// its older spelling, `exec.timeout`.
fn limits(ir: &Ir) -> BTreeMap<String, u64> {
    let mut m: BTreeMap<String, u64> = ir
        .exec
        .limits
        .set()
        .into_iter()
        .map(|(k, v)| (k.key().to_string(), v))
        .collect();
    if let Some((_, secs)) = &ir.exec.timeout {
        m.entry("wall_seconds".to_string()).or_insert(*secs);
    }
    m
}

fn system_base(platform: Platform) -> &'static [&'static str] {
    match platform {
        Platform::Macos => crate::backend::seatbelt::DENY_DEFAULT_READ_ROOTS,
        Platform::Linux => crate::backend::bwrap::SYSTEM_ROOTS,
    }
}

fn filesystem(ir: &Ir) -> Filesystem {
    let (base_reads, system) = match (ir.base, ir.platform) {
        (Base::AllowDefault, Platform::Macos) => (
            "everything on the host that is not hidden or stat only below".to_string(),
            Vec::new(),
        ),
        (Base::AllowDefault, Platform::Linux) => (
            "everything on the host that is not hidden or stat only below, but of /sys only the CPU, NUMA and transparent huge page entries"
                .to_string(),
            Vec::new(),
        ),
        (Base::DenyDefault, Platform::Macos) => (
            "only the macOS system base and the roots below".to_string(),
            system_base(Platform::Macos)
                .iter()
                .map(|s| s.to_string())
                .collect(),
        ),
        (Base::DenyDefault, Platform::Linux) => (
            "only the Linux system base (with a fresh /dev and /proc, and of /sys only the CPU, NUMA and transparent huge page entries) and the roots below"
                .to_string(),
            system_base(Platform::Linux)
                .iter()
                .map(|s| s.to_string())
                .collect(),
        ),
    };
    let codex_layers: BTreeSet<String> = if ir.codex.sealed {
        let mut s = BTreeSet::from([CODEX_SYSTEM_DIR.to_string()]);
        if !ir.codex.trust_workspace {
            s.extend(
                ir.codex
                    .workspaces
                    .iter()
                    .map(|w| format!("{}/.codex", w.trim_end_matches('/'))),
            );
        }
        s
    } else {
        BTreeSet::new()
    };
    let items = |kind: RootKind| -> Vec<PathItem> {
        ir.roots_of(kind)
            .map(|r| {
                let mut notes = Vec::new();
                if r.made {
                    notes.push("absent when compiled: `sealc exec` makes it".to_string());
                }
                let at = r.real.as_deref().unwrap_or(&r.path);
                match r.protect.as_ref().map(|p| p.standing) {
                    Some(Standing::StandIn) => notes.push(format!(
                        "absent when compiled: `sealc exec` makes an empty stand-in at `{at}` for the run (read-only inside) and removes it after"
                    )),
                    Some(Standing::InPlace) => notes.push(format!(
                        "`{at}` on the way is not a directory (a worktree's `.git` file): it is protected in its place"
                    )),
                    Some(Standing::CodexConfig) => notes.push(
                        "the Codex config `sealc exec` installs: a change during the run fails".to_string(),
                    ),
                    _ => {}
                }
                if r.launcher_package {
                    notes.push(
                        "not in the spec: the launcher's npm package, shown read-only with it so its bundled tools run".to_string(),
                    );
                }
                if kind == RootKind::DenyRead && codex_layers.contains(&r.path) {
                    notes.push(if r.path == CODEX_SYSTEM_DIR {
                        "Codex's system config layer, hidden for a Codex seal".to_string()
                    } else {
                        "the workspace's Codex config layer, hidden for a Codex seal".to_string()
                    });
                }
                PathItem {
                    written: r.origin.clone(),
                    path: r.path.clone(),
                    // A protected root held by another object says so in its notes.
                    realpath: r.real.clone().filter(|real| {
                        *real != r.path
                            && r.protect.as_ref().is_none_or(|p| p.standing == Standing::Here)
                    }),
                    notes,
                }
            })
            .collect()
    };
    let can_read = match ir.base {
        Base::AllowDefault => {
            "re-allowed for reading inside a hidden root (its ancestors can be stat'ed)"
        }
        Base::DenyDefault => "readable (its ancestors can be stat'ed)",
    };
    Filesystem {
        base_reads,
        system_base: system,
        can_read: Group {
            meaning: can_read.to_string(),
            paths: items(RootKind::AllowRead),
        },
        cannot_read: Group {
            meaning: hidden(ir.platform).to_string(),
            paths: items(RootKind::DenyRead),
        },
        stat_only: Group {
            meaning: stat_only(ir.platform).to_string(),
            paths: items(RootKind::MetadataOnly),
        },
        can_write: Group {
            meaning: WRITABLE.to_string(),
            paths: items(RootKind::Write),
        },
        devices: Group {
            meaning: DEVICES.to_string(),
            paths: items(RootKind::WriteDevice),
        },
        read_only: Group {
            meaning: READ_ONLY.to_string(),
            paths: items(RootKind::Protect),
        },
        launcher: ir
            .launcher
            .iter()
            .map(|l| LauncherItem {
                path: l.path.clone(),
                kind: match l.kind {
                    LinkKind::Symlink => "symlink",
                    LinkKind::File => "file",
                }
                .to_string(),
                target: l.target.clone(),
                reallowed: l.reallow,
            })
            .collect(),
    }
}

fn network(ir: &Ir) -> Network {
    let n = &ir.network;
    let proxy = n.proxy.as_ref().map(|p| format!("{}:{}", p.host, p.port));
    let at = proxy.as_deref().unwrap_or("?");
    let meaning = match n.mode {
        NetMode::None => "no network at all".to_string(),
        NetMode::Proxy => format!(
            "only outbound TCP to the loopback proxy at {at}, which someone else runs; the hosts and ports below are handed to it (env.json), sealc does not enforce them"
        ),
        NetMode::Allowlist => format!(
            "only outbound TCP to sealc's own proxy at {at}, which lets through only the hosts and ports below, and refuses a name that resolves to a special address outside the allowed ranges"
        ),
        NetMode::Open => "open: no network restriction".to_string(),
    };
    Network {
        mode: n.mode.as_str().to_string(),
        meaning,
        proxy,
        hosts: n.hosts.iter().cloned().collect(),
        ports: n.ports.iter().copied().collect(),
        allow_ranges: n.allow_ranges.iter().map(|c| c.to_string()).collect(),
    }
}

fn env(ir: &Ir, facts: &Facts) -> Env {
    let e = &ir.env;
    let proxied = ir.network.mode.proxied();
    let mut passed = Vec::new();
    let mut passed_unset = Vec::new();
    for name in facts.env.keys() {
        if e.vars.contains_key(name) {
            passed.push(name.clone());
        } else {
            passed_unset.push(name.clone());
        }
    }
    let proxy_vars: Vec<String> = if proxied {
        PROXY_VARS.iter().map(|v| v.to_string()).collect()
    } else {
        Vec::new()
    };
    let set = e
        .vars
        .keys()
        .filter(|k| !facts.env.contains_key(*k) && !proxy_vars.contains(k))
        .cloned()
        .collect();
    Env {
        passed,
        passed_unset,
        set,
        proxy_vars,
        secrets: e.secrets.iter().cloned().collect(),
        values: e.vars.clone(),
    }
}

fn codex(ir: &Ir) -> Codex {
    let c = &ir.codex;
    Codex {
        sealed: c.sealed,
        versions: c.versions.clone(),
        sandbox: if c.profile { "profile" } else { "off" }.to_string(),
        config: c
            .home
            .as_ref()
            .filter(|_| c.sealed)
            .map(|h| format!("{}/config.toml", h.trim_end_matches('/'))),
        model: c.model.clone(),
        reasoning_effort: c.reasoning_effort.clone(),
        // The workspace is a write root; its path as the seal names it.
        workspace: ir
            .roots_of(RootKind::Write)
            .find(|r| c.workspaces.contains(&r.path))
            .map(|r| r.path.clone())
            .or_else(|| c.workspaces.first().cloned()),
        workspace_trusted: c.trust_workspace,
        provider: c.provider.as_ref().map(|p| Provider {
            base_url: p.base_url.clone(),
            env_key: p.env_key.clone(),
            held_at: p
                .held
                .as_ref()
                .map(|h| format!("{}:{}{}", h.host, h.port, h.path)),
        }),
        credentials: c.credentials.clone().filter(|_| c.sealed),
    }
}

// ---------------------------------------------------------------- diff

#[cfg(test)]
mod tests;
