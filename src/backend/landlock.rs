//! `seal.landlock.json`: the Linux seal of `exec.isolation = "landlock"`.
//!
//! No namespace and no mount: the command runs in the host's (or the
//! container's) own filesystem, network and process tree, under a Landlock
//! ruleset that `sealc __confine` builds from these rules, the seccomp
//! policy of [`super::bwrap::refused`] with the Landlock mode's additions,
//! and rlimits. Landlock only grants access beneath a path, so a hidden root
//! inside a readable one is kept out by granting its siblings instead: the
//! artifact names each hidden root and the rule it is carved out of, and
//! `sealc exec` lists the directories on the way when the run starts (what
//! appears there later is not readable).

use std::collections::BTreeMap;

use serde::Serialize;

use super::bwrap::{SYSTEM_ROOTS, SYS_SHOWN};
use crate::ir::{is_within, Ir, RootKind};
use crate::spec::{Base, NetMode};

/// The schema name of `seal.landlock.json`.
pub const SCHEMA: &str = "sealc.landlock/v1";

/// The Landlock ABI the mode needs at the least: 3 for the filesystem
/// (truncation is Landlock's only from ABI 3), 4 where TCP is restricted (network `none` or `proxy`: without it the
/// command would reach the whole network). The signal and abstract socket
/// scopes (ABI 6) are applied where the kernel has them, and their absence
/// is said at every run.
pub fn abi_needed(ir: &Ir) -> u8 {
    if ir.network.mode == NetMode::Open {
        3
    } else {
        4
    }
}

/// Devices the command may read and write: the few bubblewrap's minimal
/// `/dev` holds. The host's own `/dev` is otherwise out of reach (no
/// `/dev/pts`, `/dev/ptmx` or `/dev/shm`, which are shared with the host's
/// processes in this mode).
pub const DEVICES: &[&str] = crate::known::DEV_SET;

/// What a rule grants beneath its path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Access {
    /// Read files, list directories, execute.
    Read,
    /// List directories only: names (and, as everywhere, `stat`), no data.
    List,
    /// Read and write: make, remove, rename, truncate.
    Write,
}

impl Access {
    pub fn as_str(self) -> &'static str {
        match self {
            Access::Read => "read",
            Access::List => "list",
            Access::Write => "write",
        }
    }

    pub fn parse(s: &str) -> Option<Access> {
        [Access::Read, Access::List, Access::Write]
            .into_iter()
            .find(|a| a.as_str() == s)
    }
}

/// One Landlock rule: access beneath a path.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Rule {
    pub access: Access,
    /// Applied only if the path is there when the run starts (else it must
    /// be: its absence or presence is part of the recorded facts).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub optional: bool,
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spec: Option<String>,
    pub why: String,
}

/// A root kept out of a `read` rule that holds it: `sealc exec` grants the
/// rule's access on every entry on the way except the one leading to it,
/// and `list` on the directories on the way (so their names stay listed).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Hidden {
    /// The rule it is carved out of.
    pub from: String,
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spec: Option<String>,
    pub why: String,
}

/// The whole Landlock policy of a seal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Policy {
    pub rules: Vec<Rule>,
    pub hidden: Vec<Hidden>,
    /// TCP connect only to these ports (`None`: not restricted).
    pub tcp_connect: Option<Vec<u16>>,
}

fn rule(access: Access, path: &str, spec: Option<String>, why: impl Into<String>) -> Rule {
    Rule {
        access,
        path: path.to_string(),
        optional: false,
        spec,
        why: why.into(),
    }
}

/// The rules and hidden roots of a Landlock seal.
pub fn policy(ir: &Ir) -> Policy {
    let mut rules = Vec::new();
    let mut hidden = Vec::new();
    let base = Some(format!("base {}", ir.base.as_str()));
    let hide = |path: &str, from: &str, spec: Option<String>, why: &str| Hidden {
        path: path.to_string(),
        from: from.to_string(),
        spec,
        why: why.to_string(),
    };
    match ir.base {
        Base::AllowDefault => {
            rules.push(rule(
                Access::Read,
                "/",
                base.clone(),
                "base allow-default: the host, read-only",
            ));
            hidden.push(hide(
                "/dev",
                "/",
                None,
                "the host's devices: only the few every program needs are granted again",
            ));
            hidden.push(hide(
                "/sys",
                "/",
                None,
                "the host's /sys names its interfaces, cgroups, firmware and disks: only what programs need is granted again",
            ));
        }
        Base::DenyDefault => {
            for r in SYSTEM_ROOTS {
                let mut x = rule(
                    Access::Read,
                    r,
                    base.clone(),
                    "base deny-default: system files, read-only, when present",
                );
                x.optional = true;
                rules.push(x);
            }
            rules.push(rule(
                Access::Read,
                "/proc",
                None,
                "the host's /proc: Landlock keeps the command out of other processes' entries (their root, working directory, descriptors, memory and environment)",
            ));
        }
    }
    for (p, why) in SYS_SHOWN {
        let mut x = rule(
            Access::Read,
            p,
            None,
            format!("the host's {p}, read-only, when present: {why}"),
        );
        x.optional = true;
        rules.push(x);
    }
    for d in DEVICES {
        let mut x = rule(
            Access::Write,
            d,
            None,
            "a device every program may use (the controlling terminal: none, the command runs in a session of its own)",
        );
        x.optional = true;
        rules.push(x);
    }
    for r in &ir.roots {
        let Some(real) = &r.real else { continue };
        let spec = Some(r.entry());
        match r.kind {
            RootKind::AllowRead => rules.push(rule(
                Access::Read,
                real,
                spec,
                if r.launcher_package {
                    format!("the launcher's npm package `{}`: readable", r.origin)
                } else {
                    format!("allow_read `{}`: readable", r.origin)
                },
            )),
            RootKind::Write | RootKind::WriteDevice => rules.push(rule(
                Access::Write,
                real,
                spec,
                format!("{} `{}`: readable and writable", r.kind.key(), r.origin),
            )),
            RootKind::MetadataOnly => rules.push(rule(
                Access::List,
                real,
                spec,
                format!(
                    "metadata_only `{}`: names listed and stat'ed, no data read",
                    r.origin
                ),
            )),
            RootKind::DenyRead | RootKind::Protect => {}
        }
    }
    // Each denied or metadata-only root, carved out of the deepest read
    // rule that holds it (none: nothing grants it anyway).
    for r in &ir.roots {
        let (true, Some(real)) = (r.kind.is_denied(), &r.real) else {
            continue;
        };
        let holder = rules
            .iter()
            .filter(|x| x.access == Access::Read && x.path != *real && is_within(real, &x.path))
            .max_by_key(|x| x.path.len());
        if let Some(h) = holder {
            let what = if r.kind == RootKind::DenyRead {
                "deny_read"
            } else {
                "metadata_only"
            };
            hidden.push(hide(
                real,
                &h.path.clone(),
                Some(r.entry()),
                &format!(
                    "{what} `{}`: its data is not read; its names and metadata are (Landlock refuses no stat, and lists the directories on the way)",
                    r.origin
                ),
            ));
        }
    }
    rules.sort_by(|a, b| (&a.path, a.access).cmp(&(&b.path, b.access)));
    rules.dedup_by(|a, b| a.path == b.path && a.access == b.access);
    hidden.sort_by(|a, b| (&a.path, &a.from).cmp(&(&b.path, &b.from)));
    hidden.dedup_by(|a, b| a.path == b.path && a.from == b.from);
    let tcp_connect = super::bwrap::landlock(ir).tcp_connect;
    Policy {
        rules,
        hidden,
        tcp_connect,
    }
}

/// `seal.landlock.json`. Fields are declared in sorted order, so the
/// serialized struct is already in canonical form.
#[derive(Serialize)]
struct LandlockFile<'a> {
    /// The Landlock ABI `sealc exec` needs at the least.
    abi: u8,
    /// Roots that did not exist when compiled: no rule is made for them,
    /// and `sealc exec` refuses to start if one has appeared since.
    absent: Vec<String>,
    /// Write roots absent when compiled: `sealc exec` makes each first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    create: Vec<String>,
    /// Roots kept out of a read rule that holds them.
    hidden: Vec<Hidden>,
    isolation: &'static str,
    /// Roots written through a symlink: the path as written and the
    /// realpath the rule is made at.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    links: BTreeMap<String, String>,
    network: Network,
    /// What the command's processes cannot do in this mode, beyond the
    /// rules: the seccomp refusals, and what the kernel's ABI decides.
    refused: Vec<&'static str>,
    rules: Vec<Rule>,
    schema: &'static str,
    /// Landlock scopes: no abstract unix socket and no signal outside the
    /// command's own processes (applied where the kernel has ABI 6).
    scopes: Vec<&'static str>,
    seal: &'a str,
    /// Seconds; `sealc exec` stops every process of the command then.
    timeout: Option<u64>,
}

#[derive(Serialize)]
struct Network {
    mode: &'static str,
    /// `host:port` of the loopback proxy the command connects to itself.
    proxy: Option<String>,
    /// TCP connect only to these ports, on any address (`null`: any).
    tcp_connect: Option<Vec<u16>>,
}

/// What the Landlock mode's seccomp filter refuses on top of the namespaces
/// mode's (which a network namespace and an IPC namespace make moot
/// there). The artifact lists the entries for an agent's user shared with
/// the host too: whether the agent gets a uid of the run's own is decided
/// at exec (root's runs do), where the filter leaves them out.
pub fn refused_here(ir: &Ir) -> Vec<&'static str> {
    refused_for(ir, true)
}

/// [`refused_here`], for an agent's user shared with the host or not.
pub fn refused_for(ir: &Ir, shared_user: bool) -> Vec<&'static str> {
    let mut out = super::bwrap::refused(ir);
    out.extend(crate::refusals::landlock_mode(
        ir.network.mode != NetMode::Open,
        shared_user,
    ));
    out
}

/// Render `seal.landlock.json`.
pub fn render(ir: &Ir) -> Vec<u8> {
    let (absent, links, create) = (
        super::bwrap::absent(ir),
        super::bwrap::links(ir),
        super::bwrap::create(ir),
    );
    let p = policy(ir);
    let file = LandlockFile {
        abi: abi_needed(ir),
        absent,
        create,
        hidden: p.hidden,
        isolation: "landlock",
        links,
        network: Network {
            mode: ir.network.mode.as_str(),
            proxy: ir
                .network
                .proxy
                .as_ref()
                .map(|p| format!("{}:{}", p.host, p.port)),
            tcp_connect: p.tcp_connect,
        },
        refused: refused_here(ir),
        rules: p.rules,
        schema: SCHEMA,
        scopes: vec!["abstract-unix-socket", "signal"],
        seal: &ir.name,
        timeout: ir.exec.timeout.as_ref().map(|(_, s)| *s),
    };
    let mut out = serde_json::to_vec_pretty(&file).unwrap_or_default();
    out.push(b'\n');
    out
}
