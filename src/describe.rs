//! What a seal allows, in plain words: [`describe`] turns a compiled seal
//! (its IR and facts) into a [`Policy`] grouped the way a reviewer reads it,
//! and [`diff`] says what two policies allow differently. `sealc show` and
//! `sealc diff` print them.
//!
//! Pure: no IO, no clock, no printing. Env *values* never appear in a
//! [`Policy`]'s serialized form, only names; the values it keeps (to tell a
//! changed value in [`diff`]) are skipped when serializing and never put
//! into a [`Change`].

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
    pub filesystem: Filesystem,
    pub network: Network,
    pub env: Env,
    /// Every limit that is set, by its spec name (`[limits]`, `exec.timeout`).
    pub limits: BTreeMap<String, u64>,
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
}

/// `[codex.provider]`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Provider {
    pub base_url: String,
    /// The secret's name Codex sends as the API key.
    pub env_key: Option<String>,
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
        filesystem: filesystem(ir),
        network: network(ir),
        env: env(ir, facts),
        limits: limits(ir),
        codex: codex(ir),
        ipc: ipc(ir),
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
        .map(|(k, v)| (k.to_string(), v))
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
        }),
    }
}

// ---------------------------------------------------------------- diff

/// Which way a change goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Effect {
    /// The new seal allows more (`+`).
    More,
    /// The new seal allows less (`-`).
    Less,
    /// Different, neither more nor less (`~`).
    Changed,
}

impl Effect {
    pub fn sign(self) -> char {
        match self {
            Effect::More => '+',
            Effect::Less => '-',
            Effect::Changed => '~',
        }
    }
    pub fn heading(self) -> &'static str {
        match self {
            Effect::More => "allows more",
            Effect::Less => "allows less",
            Effect::Changed => "changed",
        }
    }
}

/// The part of the policy a change is in, in the order they are shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Section {
    Seal,
    Filesystem,
    Network,
    Env,
    Limits,
    Codex,
    Ipc,
}

impl Section {
    pub fn as_str(self) -> &'static str {
        match self {
            Section::Seal => "seal",
            Section::Filesystem => "filesystem",
            Section::Network => "network",
            Section::Env => "env",
            Section::Limits => "limits",
            Section::Codex => "codex",
            Section::Ipc => "ipc",
        }
    }
}

/// One difference between two seals, in policy terms.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Change {
    pub effect: Effect,
    pub section: Section,
    /// What changed: a path, a host, a name, a setting.
    pub subject: String,
    /// The change in words, the subject included.
    pub text: String,
}

/// What `new` allows differently from `old`: sorted by effect (more, less,
/// changed), then section, then subject. Empty when they allow the same.
pub fn diff(old: &Policy, new: &Policy) -> Vec<Change> {
    let mut out = Vec::new();
    diff_seal(old, new, &mut out);
    diff_filesystem(old, new, &mut out);
    diff_network(&old.network, &new.network, &mut out);
    diff_env(&old.env, &new.env, &mut out);
    diff_limits(&old.limits, &new.limits, &mut out);
    diff_codex(&old.codex, &new.codex, &mut out);
    for (what, has) in &new.ipc {
        let was = old.ipc.get(what);
        if was.is_some_and(|w| w != has) || (was.is_none() && !old.ipc.is_empty()) {
            let effect = if has.starts_with("yes") {
                Effect::More
            } else {
                Effect::Less
            };
            push(
                &mut out,
                effect,
                Section::Ipc,
                what,
                format!(
                    "can {what}: {has} (was {})",
                    was.map_or("not listed", String::as_str)
                ),
            );
        }
    }
    // A stable sort keeps each section's own order within a subject.
    out.sort_by_key(|c| (c.effect, c.section));
    out
}

fn push(out: &mut Vec<Change>, effect: Effect, section: Section, subject: &str, text: String) {
    out.push(Change {
        effect,
        section,
        subject: subject.to_string(),
        text,
    });
}

fn diff_seal(old: &Policy, new: &Policy, out: &mut Vec<Change>) {
    if old.platform != new.platform {
        push(
            out,
            Effect::Changed,
            Section::Seal,
            "platform",
            format!("platform {} (was {})", new.platform, old.platform),
        );
    }
    if old.base != new.base {
        let effect = if new.base == Base::DenyDefault.as_str() {
            Effect::Less
        } else {
            Effect::More
        };
        push(
            out,
            effect,
            Section::Seal,
            "base",
            format!(
                "base {} (was {}): reads {}",
                new.base, old.base, new.filesystem.base_reads
            ),
        );
    }
}

/// What a path gets, from the deepest root that holds it (or the base).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Access {
    Hidden,
    Stat,
    Read,
    /// Read-only inside a write root (`protect`).
    ReadOnly,
    Write,
}

impl Access {
    fn words(self) -> &'static str {
        match self {
            Access::Hidden => "hidden",
            Access::Stat => "stat only",
            Access::Read => "readable",
            Access::ReadOnly => "read-only inside a write root",
            Access::Write => "writable",
        }
    }
}

/// The roots of a policy by path, with the access each gives.
fn listed(p: &Policy) -> BTreeMap<&str, (Access, &PathItem)> {
    let fs = &p.filesystem;
    let mut m = BTreeMap::new();
    for (access, group) in [
        (Access::Read, &fs.can_read),
        (Access::Stat, &fs.stat_only),
        (Access::Write, &fs.can_write),
        (Access::ReadOnly, &fs.read_only),
        // Hidden last: a path listed twice is refused when compiling, but
        // if it were not, denying wins.
        (Access::Hidden, &fs.cannot_read),
    ] {
        for item in &group.paths {
            m.insert(item.path.as_str(), (access, item));
        }
    }
    m
}

/// The access `path` gets under a policy: the deepest listed root holding
/// it decides, else the base.
fn access(p: &Policy, roots: &BTreeMap<&str, (Access, &PathItem)>, path: &str) -> Access {
    let deepest = roots
        .iter()
        .filter(|(root, _)| is_within(path, root))
        .max_by_key(|(root, _)| root.len());
    if let Some((_, (a, _))) = deepest {
        return *a;
    }
    if p.base == Base::AllowDefault.as_str() {
        return Access::Read;
    }
    if p.filesystem.system_base.iter().any(|s| is_within(path, s)) {
        Access::Read
    } else {
        Access::Hidden
    }
}

fn shown(item: &PathItem) -> String {
    if item.written == item.path {
        format!("`{}`", item.path)
    } else {
        format!("`{}` ({})", item.written, item.path)
    }
}

fn diff_filesystem(old: &Policy, new: &Policy, out: &mut Vec<Change>) {
    let (o, n) = (listed(old), listed(new));
    let paths: BTreeSet<&str> = o.keys().chain(n.keys()).copied().collect();
    for path in paths {
        let (was, now) = (access(old, &o, path), access(new, &n, path));
        let item = n.get(path).or_else(|| o.get(path)).map(|(_, i)| *i);
        let Some(item) = item else { continue };
        let what = shown(item);
        if was != now {
            let effect = if now > was {
                Effect::More
            } else {
                Effect::Less
            };
            let how = match (o.contains_key(path), n.contains_key(path)) {
                (false, true) => "newly listed",
                (true, false) => "no longer listed",
                _ => "listed differently",
            };
            push(
                out,
                effect,
                Section::Filesystem,
                path,
                format!("{what} is {} (was {}; {how})", now.words(), was.words()),
            );
            continue;
        }
        if let (Some((_, a)), Some((_, b))) = (o.get(path), n.get(path)) {
            if a.realpath != b.realpath {
                push(
                    out,
                    Effect::Changed,
                    Section::Filesystem,
                    path,
                    format!(
                        "{what} resolves to `{}` (was `{}`)",
                        b.realpath.as_deref().unwrap_or(&b.path),
                        a.realpath.as_deref().unwrap_or(&a.path)
                    ),
                );
            }
        }
    }
    let devices = |p: &Policy| -> BTreeSet<String> {
        p.filesystem
            .devices
            .paths
            .iter()
            .map(|d| d.path.clone())
            .collect()
    };
    let (od, nd) = (devices(old), devices(new));
    for d in nd.difference(&od) {
        push(
            out,
            Effect::More,
            Section::Filesystem,
            d,
            format!("device `{d}` is writable"),
        );
    }
    for d in od.difference(&nd) {
        push(
            out,
            Effect::Less,
            Section::Filesystem,
            d,
            format!("device `{d}` is no longer writable"),
        );
    }
    let chain = |p: &Policy| -> Vec<String> {
        p.filesystem
            .launcher
            .iter()
            .map(|l| l.path.clone())
            .collect()
    };
    let (oc, nc) = (chain(old), chain(new));
    if oc != nc {
        let list = |c: &[String]| {
            if c.is_empty() {
                "none".to_string()
            } else {
                c.iter()
                    .map(|p| format!("`{p}`"))
                    .collect::<Vec<_>>()
                    .join(" → ")
            }
        };
        push(
            out,
            Effect::Changed,
            Section::Filesystem,
            "launcher",
            format!("launcher {} (was {})", list(&nc), list(&oc)),
        );
    }
}

fn net_rank(mode: &str) -> u8 {
    match mode {
        "none" => 0,
        "allowlist" => 1,
        "proxy" => 2,
        _ => 3,
    }
}

fn set_diff<T: Ord + Clone + std::fmt::Display>(
    old: &[T],
    new: &[T],
    section: Section,
    what: &str,
    out: &mut Vec<Change>,
) {
    let (o, n): (BTreeSet<&T>, BTreeSet<&T>) = (old.iter().collect(), new.iter().collect());
    for x in n.difference(&o) {
        let s = x.to_string();
        push(
            out,
            Effect::More,
            section,
            &s,
            format!("{what} `{s}` added"),
        );
    }
    for x in o.difference(&n) {
        let s = x.to_string();
        push(
            out,
            Effect::Less,
            section,
            &s,
            format!("{what} `{s}` removed"),
        );
    }
}

fn diff_network(old: &Network, new: &Network, out: &mut Vec<Change>) {
    if old.mode != new.mode {
        let effect = if net_rank(&new.mode) > net_rank(&old.mode) {
            Effect::More
        } else {
            Effect::Less
        };
        push(
            out,
            effect,
            Section::Network,
            "mode",
            format!("mode {} (was {}): {}", new.mode, old.mode, new.meaning),
        );
    }
    if old.proxy != new.proxy && old.proxy.is_some() && new.proxy.is_some() {
        push(
            out,
            Effect::Changed,
            Section::Network,
            "proxy",
            format!(
                "proxy at `{}` (was `{}`)",
                new.proxy.as_deref().unwrap_or_default(),
                old.proxy.as_deref().unwrap_or_default()
            ),
        );
    }
    set_diff(&old.hosts, &new.hosts, Section::Network, "host", out);
    set_diff(&old.ports, &new.ports, Section::Network, "port", out);
    set_diff(
        &old.allow_ranges,
        &new.allow_ranges,
        Section::Network,
        "allowed range",
        out,
    );
}

/// How a name crosses into the sandbox.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cross {
    Passed,
    PassedUnset,
    Set,
    Proxy,
    Secret,
}

impl Cross {
    fn words(self) -> &'static str {
        match self {
            Cross::Passed => "passed, its value captured when compiled",
            Cross::PassedUnset => "listed in `pass` but unset when compiled, so it does not cross",
            Cross::Set => "set",
            Cross::Proxy => "set for the proxy",
            Cross::Secret => "a secret (supplied at start)",
        }
    }
    fn crosses(self) -> bool {
        self != Cross::PassedUnset
    }
}

fn crossing(e: &Env) -> BTreeMap<&str, Cross> {
    let mut m = BTreeMap::new();
    for (list, c) in [
        (&e.passed, Cross::Passed),
        (&e.passed_unset, Cross::PassedUnset),
        (&e.set, Cross::Set),
        (&e.proxy_vars, Cross::Proxy),
        (&e.secrets, Cross::Secret),
    ] {
        for name in list {
            m.insert(name.as_str(), c);
        }
    }
    m
}

fn diff_env(old: &Env, new: &Env, out: &mut Vec<Change>) {
    let (o, n) = (crossing(old), crossing(new));
    let names: BTreeSet<&str> = o.keys().chain(n.keys()).copied().collect();
    for name in names {
        let (was, now) = (o.get(name).copied(), n.get(name).copied());
        let crosses = |c: Option<Cross>| c.is_some_and(Cross::crosses);
        let (effect, text) = match (was, now) {
            (Some(a), Some(b)) if a == b => {
                if old.values.get(name) != new.values.get(name) {
                    let how = if b == Cross::Passed {
                        "a different captured value"
                    } else {
                        "a different value"
                    };
                    (Effect::Changed, format!("`{name}` crosses with {how}"))
                } else {
                    continue;
                }
            }
            (a, b) => {
                let effect = match (crosses(a), crosses(b)) {
                    (false, true) => Effect::More,
                    (true, false) => Effect::Less,
                    _ => Effect::Changed,
                };
                let text = match (a, b) {
                    (None, Some(b)) => format!("`{name}` added: {}", b.words()),
                    (Some(a), None) => format!("`{name}` removed (was {})", a.words()),
                    (Some(a), Some(b)) => {
                        format!("`{name}` is {} (was {})", b.words(), a.words())
                    }
                    (None, None) => continue,
                };
                (effect, text)
            }
        };
        push(out, effect, Section::Env, name, text);
    }
}

fn diff_limits(old: &BTreeMap<String, u64>, new: &BTreeMap<String, u64>, out: &mut Vec<Change>) {
    let names: BTreeSet<&String> = old.keys().chain(new.keys()).collect();
    for name in names {
        let (effect, text) = match (old.get(name), new.get(name)) {
            (Some(a), Some(b)) if a == b => continue,
            (Some(a), Some(b)) => (
                if b > a { Effect::More } else { Effect::Less },
                format!("{name} {b} (was {a})"),
            ),
            (None, Some(b)) => (Effect::Less, format!("{name} {b} (was unlimited)")),
            (Some(a), None) => (Effect::More, format!("{name} unlimited (was {a})")),
            (None, None) => continue,
        };
        push(out, effect, Section::Limits, name, text);
    }
}

fn opt(v: &Option<String>) -> String {
    match v {
        Some(s) => format!("`{s}`"),
        None => "unset".to_string(),
    }
}

fn diff_codex(old: &Codex, new: &Codex, out: &mut Vec<Change>) {
    let mut changed = |subject: &str, text: String| {
        push(out, Effect::Changed, Section::Codex, subject, text);
    };
    if old.sealed != new.sealed {
        changed(
            "sealed",
            if new.sealed {
                "a Codex seal now: `sealc exec` installs the Codex config".to_string()
            } else {
                "no longer a Codex seal: `sealc exec` installs no Codex config".to_string()
            },
        );
    }
    if old.versions != new.versions {
        changed(
            "versions",
            format!(
                "for Codex {} (was {})",
                new.versions.join(", "),
                old.versions.join(", ")
            ),
        );
    }
    if old.sandbox != new.sandbox {
        changed(
            "sandbox",
            format!("Codex's own sandbox {} (was {})", new.sandbox, old.sandbox),
        );
    }
    if old.config != new.config {
        changed(
            "config",
            format!("config at {} (was {})", opt(&new.config), opt(&old.config)),
        );
    }
    if old.model != new.model {
        changed(
            "model",
            format!("model {} (was {})", opt(&new.model), opt(&old.model)),
        );
    }
    if old.reasoning_effort != new.reasoning_effort {
        changed(
            "reasoning_effort",
            format!(
                "reasoning effort {} (was {})",
                opt(&new.reasoning_effort),
                opt(&old.reasoning_effort)
            ),
        );
    }
    if old.workspace != new.workspace {
        changed(
            "workspace",
            format!(
                "workspace {} (was {})",
                opt(&new.workspace),
                opt(&old.workspace)
            ),
        );
    }
    if old.provider != new.provider {
        let p = |p: &Option<Provider>| match p {
            Some(p) => format!("`{}`", p.base_url),
            None => "the default".to_string(),
        };
        changed(
            "provider",
            format!("provider {} (was {})", p(&new.provider), p(&old.provider)),
        );
    }
    if old.workspace_trusted != new.workspace_trusted {
        let (effect, text) = if new.workspace_trusted {
            (
                Effect::More,
                "the workspace is trusted: Codex reads its `.codex/` project config",
            )
        } else {
            (
                Effect::Less,
                "the workspace is untrusted: its `.codex/` is hidden",
            )
        };
        push(
            out,
            effect,
            Section::Codex,
            "workspace trust",
            text.to_string(),
        );
    }
}

#[cfg(test)]
mod tests;
