//! Stage 4d, **render** the Linux seal (`seal.bwrap.json`): the bubblewrap
//! argument vector that enforces the IR, one step per mount or namespace, each
//! with the reason it is there.
//!
//! Bubblewrap builds a new mount namespace in argument order, so a later mount
//! over a deeper path shadows an earlier one. Steps on paths are therefore
//! sorted by depth, shallowest first: the deepest root decides, as in the
//! seatbelt profile. Mounts work on objects, not spellings, so each root is
//! mounted at its recorded realpath; a symlink that points into a hidden tree,
//! wherever it was made, resolves inside the new namespace and finds the stand-in.
//!
//! | root | step |
//! | --- | --- |
//! | base `allow-default` | `--ro-bind / /` |
//! | base `deny-default` | `--ro-bind-try` of each [`SYSTEM_ROOTS`], then `--remount-ro /` |
//! | `deny_read`, `metadata_only` directory | `--tmpfs`, then `--remount-ro` |
//! | `deny_read` inside a hidden root, nothing re-allowed between | nothing (already gone) |
//! | `deny_read`, `metadata_only` file | `--ro-bind /dev/null` |
//! | `allow_read` (not inside a write root) | `--ro-bind` |
//! | `write` | `--bind` |
//! | `write_devices` outside [`DEV_SET`] | `--dev-bind` |
//! | launcher chain entry, hidden | `--symlink` / `--ro-bind` |
//! | a re-allowed root written through a symlink the sandbox would not show | `--symlink` to its realpath |
//! | a root absent when compiled | nothing (listed under `absent`) |
//! | a `write` root absent when compiled | `--bind` where `sealc exec` makes it (listed under `create`) |
//! | a directory between a write root and a `protect` root in it (a pin) | `--bind` onto itself (a mount point: a fixed name) |
//! | `protect` root, the Codex config in `CODEX_HOME` | `--ro-bind` onto itself |
//! | a `protect` root absent when compiled | `--ro-bind` of the stand-in `sealc exec` makes (listed under `stand_ins`) |
//! | always | a `--tmpfs /sys` (read-only) with only [`SYS_SHOWN`] bound back (`--ro-bind-try`), `--proc` with host-global entries read-only or masked, `--dev`, a private `/dev/shm`, own user (no nested one), pid, ipc, uts and cgroup namespaces, `--cap-drop ALL`, `--as-pid-1`, `--new-session`, `--die-with-parent` |
//! | a root under `/sys` | its step, after the sandbox's own `/sys`: it means what it says there too |
//! | network `none`, `proxy` | `--unshare-net` (proxy: `sealc exec` bridges the port) |

mod op;
mod refused;

pub use self::op::{Bind, Flag, Op};
pub use self::refused::{landlock, refused, refused_for, Landlock, LANDLOCK_DEVICES};

use std::collections::BTreeMap;

use serde::Serialize;

use crate::facts::{LinkKind, PathKind};
use crate::ir::{is_within, Ir, RootKind, Standing};
use crate::spec::{Base, NetMode};

/// The schema name of `seal.bwrap.json`.
pub const SCHEMA: &str = "sealc.bwrap/v2";

/// The system base of `deny-default` on Linux, bound read-only when present.
pub const SYSTEM_ROOTS: &[&str] = &[
    "/bin", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/sbin", "/usr",
];

pub use crate::known::DEV_SET;

/// Where `sealc exec` binds its own binary inside every Linux sandbox: in the
/// sandbox's fresh `/dev`, so the agent's user need not reach sealc's host path.
pub const INIT_PATH: &str = "/dev/.sealc-init";
/// Where `sealc exec` binds the proxy bridge's private directory (read-only).
pub const BRIDGE_PATH: &str = "/dev/.sealc-bridge";

/// What the sandbox's own `/sys` (an empty read-only tmpfs) shows of the
/// host's, bound read-only where present, each with the reason programs
/// need it. The rest of the host's `/sys` names the host: its network
/// interfaces, their addresses and traffic counters (`/sys/class/net`), its
/// processes' cgroups (`/sys/fs/cgroup`), firmware tables and DMI serials
/// (`/sys/firmware`, `/sys/devices/virtual/dmi`), its disks (`/sys/block`).
/// Docker's choice is the anchor: a read-only sysfs of the container's own
/// network namespace, with `/sys/firmware` masked; bubblewrap cannot mount
/// a sysfs, so only these are bound back.
pub const SYS_SHOWN: &[(&str, &str)] = &[
    (
        "/sys/devices/system/cpu",
        "the CPUs (online, possible, topology, caches): glibc's sysconf(_SC_NPROCESSORS_*), getconf, Python's os.cpu_count and thread pools (OpenMP, BLAS) count them here",
    ),
    (
        "/sys/devices/system/node",
        "the NUMA nodes: libnuma, hwloc and JVMs place memory and threads by them",
    ),
    (
        "/sys/kernel/mm/transparent_hugepage",
        "the transparent huge page settings: the Go runtime, jemalloc and JVMs read them to choose how to allocate",
    ),
];

/// Is `p` inside the sandbox's own `/sys` and outside what it shows of the
/// host's ([`SYS_SHOWN`])?
fn sys_hides(p: &str) -> bool {
    is_within(p, "/sys") && !SYS_SHOWN.iter().any(|(s, _)| is_within(p, s))
}

/// Host-global `/proc` entries made read-only (Docker's read-only list).
pub const PROC_READ_ONLY: &[&str] = &[
    "/proc/bus",
    "/proc/fs",
    "/proc/irq",
    "/proc/sys",
    "/proc/sysrq-trigger",
];
/// `/proc` files masked by an empty device (Docker's masked list).
pub const PROC_MASKED_FILES: &[&str] = &[
    "/proc/kcore",
    "/proc/keys",
    "/proc/latency_stats",
    "/proc/sched_debug",
    "/proc/timer_list",
    "/proc/timer_stats",
];
/// `/proc` directories masked by an empty read-only tmpfs (Docker's list).
pub const PROC_MASKED_DIRS: &[&str] = &["/proc/acpi", "/proc/asound", "/proc/scsi"];

/// The `/proc` destination of a step that only applies where the kernel has
/// that entry (the sandbox's `/proc` is the same kernel's): `sealc exec`
/// leaves such a step out when the host's `/proc` lacks the entry, since
/// bubblewrap cannot mount over what is not there.
pub fn kernel_entry(step: &Step) -> Option<&str> {
    let dest = step.op.dest()?;
    let masks = PROC_READ_ONLY
        .iter()
        .chain(PROC_MASKED_FILES)
        .chain(PROC_MASKED_DIRS);
    masks.clone().any(|m| *m == dest).then_some(dest)
}

/// Where the stand-in for a hidden file comes from.
const EMPTY_FILE: &str = "/dev/null";

/// `seal.bwrap.json`. Fields are declared in sorted order, so the serialized
/// struct is already in canonical form.
#[derive(Serialize)]
struct BwrapFile<'a> {
    /// Roots that did not exist when compiled: nothing is mounted for them,
    /// and `sealc exec` refuses to start if one has appeared since.
    absent: Vec<String>,
    /// `bwrap`'s path.
    bwrap: &'a str,
    /// Write roots absent when compiled: `sealc exec` makes each (a
    /// directory, at the path given) before the sandbox starts.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    create: Vec<String>,
    /// The second layer, applied by `sealc __confine` where the kernel has it.
    landlock: Landlock,
    /// Roots written through a symlink: the path as written and the
    /// realpath it leads to (the mounts are made at the realpath).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    links: BTreeMap<String, String>,
    /// `codex.mcp_servers`: each server `sealc exec` starts on the host
    /// side, under its own seal (verified with `--expect binding`), when the
    /// relay inside connects to its loopback port.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    mcp: Vec<McpServer<'a>>,
    network: Network,
    /// Calls refused inside the sandbox (see [`crate::refusals`]).
    refused: Vec<&'static str>,
    schema: &'static str,
    seal: &'a str,
    /// Protected paths absent when compiled: `sealc exec` makes each of
    /// these (an empty directory) before the sandbox starts, binds it
    /// read-only, and removes it after the run if it is still the empty
    /// directory it made.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    stand_ins: Vec<String>,
    steps: Vec<Step>,
    /// Seconds; `sealc exec` stops the whole sandbox when they run out.
    timeout: Option<u64>,
}

#[derive(Serialize)]
struct McpServer<'a> {
    binding: &'a str,
    command: &'a [String],
    name: &'a str,
    port: u16,
    seal: &'a str,
    starts: u32,
}

#[derive(Serialize)]
struct Network {
    mode: &'static str,
    /// `host:port` of the loopback proxy; `sealc exec` listens on it inside
    /// the sandbox's own network namespace and bridges to the host's.
    proxy: Option<String>,
}

/// One bubblewrap option with its arguments, the spec entry it comes
/// from (none for what every seal has), and the reason for it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Step {
    /// The step, typed: what every reader of the renderer's steps looks at.
    #[serde(skip)]
    pub op: Op,
    /// Its arguments as bubblewrap reads them (and the artifact records).
    pub args: Vec<String>,
    /// The spec entry, as the seatbelt profile's comments name it:
    /// `filesystem.write "${run}/ws"`, `network.mode = "none"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spec: Option<String>,
    pub why: String,
}

fn step(op: Op, why: String) -> Step {
    Step {
        args: op.args(),
        op,
        spec: None,
        why,
    }
}

impl Step {
    /// The step comes from this spec entry.
    fn from(mut self, entry: String) -> Step {
        self.spec = Some(entry);
        self
    }
}

/// A root's spec entry: its list and its text as written.
fn entry_of(r: &crate::ir::Root) -> String {
    if r.launcher_package {
        return r.entry();
    }
    format!("{} \"{}\"", r.kind.key(), crate::diag::visible(&r.origin))
}

/// The base's spec entry.
fn base_entry(base: Base) -> String {
    match base {
        Base::AllowDefault => "target.base = \"allow-default\"".into(),
        Base::DenyDefault => "target.base = \"deny-default\"".into(),
    }
}

/// Where a root is mounted: its realpath, or the path as written.
fn dest_of(r: &crate::ir::Root) -> &str {
    r.real.as_deref().unwrap_or(&r.path)
}

fn depth(p: &str) -> usize {
    p.bytes().filter(|&b| b == b'/').count()
}

/// Does the sandbox show the host's entry at `p`? Its deepest mount (the
/// base or a path step) binds a host tree from above `p`; a stand-in, an
/// empty file or no mount at all (the deny-default root) shows nothing.
fn host_views(ir: &Ir, paths: &[((usize, u8, String), Step)]) -> impl Fn(&str) -> bool + use<> {
    let mut covers: Vec<(String, bool)> = match ir.base {
        Base::AllowDefault => vec![("/".to_string(), true)],
        Base::DenyDefault => SYSTEM_ROOTS.iter().map(|r| (r.to_string(), true)).collect(),
    };
    covers.push(("/sys".to_string(), false));
    covers.extend(SYS_SHOWN.iter().map(|(p, _)| (p.to_string(), true)));
    for (_, s) in paths {
        let (dest, host) = match &s.op {
            Op::Tmpfs(d) => (d, false),
            Op::Bind {
                try_: false,
                src,
                dst,
                ..
            } => (dst, src != EMPTY_FILE),
            _ => continue,
        };
        covers.push((dest.clone(), host));
    }
    move |p: &str| {
        covers
            .iter()
            .filter(|(d, _)| is_within(p, d))
            .max_by_key(|(d, _)| d.len())
            .is_some_and(|(d, host)| *host && d != p)
    }
}

/// Every step, in the order bubblewrap must apply them.
pub fn steps(ir: &Ir) -> Vec<Step> {
    let mut out = Vec::new();
    match ir.base {
        Base::AllowDefault => out.push(
            step(
                Op::bind(Bind::ReadOnly, false, "/", "/"),
                "base allow-default: the host, read-only".into(),
            )
            .from(base_entry(ir.base)),
        ),
        Base::DenyDefault => {
            for r in SYSTEM_ROOTS {
                out.push(
                    step(
                        Op::bind(Bind::ReadOnly, true, r, r),
                        "base deny-default: system files, read-only, when present".into(),
                    )
                    .from(base_entry(ir.base)),
                );
            }
        }
    }
    out.push(step(
        Op::Tmpfs("/sys".into()),
        "a /sys of the sandbox's own: the host's names its network interfaces, their addresses and counters, its cgroups, firmware and DMI serials; only what programs need is bound back (as Docker shows a sysfs of the container's own and masks /sys/firmware)".into(),
    ));
    for (p, why) in SYS_SHOWN {
        out.push(step(
            Op::bind(Bind::ReadOnly, true, p, p),
            format!("the host's {p}, read-only, when present: {why}"),
        ));
    }
    match ir.exec.proc {
        crate::spec::ProcMode::Fresh => out.push(step(
            Op::Proc("/proc".into()),
            "a fresh /proc: only this sandbox's processes; /proc/self/root is the sandbox's root"
                .into(),
        )),
        crate::spec::ProcMode::None => {
            out.push(step(
                Op::Tmpfs("/proc".into()),
                "exec.proc = \"none\": an empty /proc (programs that read it fail)".into(),
            ));
            out.push(step(
                Op::RemountRo("/proc".into()),
                "the empty /proc stays empty".into(),
            ));
        }
        crate::spec::ProcMode::Host => out.push(step(
            Op::bind(Bind::ReadOnly, false, "/proc", "/proc"),
            "exec.proc = \"host\": the host's (or the container's) /proc, read-only, as it is: every process of the host shows, not only the sandbox's".into(),
        )),
    }
    let masked = ir.exec.proc != crate::spec::ProcMode::None;
    for d in PROC_READ_ONLY.iter().filter(|_| masked) {
        out.push(step(
            Op::bind(Bind::ReadOnly, true, d, d),
            "host-global /proc entry, read-only (as container runtimes do)".into(),
        ));
    }
    for f in PROC_MASKED_FILES.iter().filter(|_| masked) {
        out.push(step(
            Op::bind(Bind::ReadOnly, true, EMPTY_FILE, f),
            "host-global /proc entry, masked (as container runtimes do)".into(),
        ));
    }
    for d in PROC_MASKED_DIRS.iter().filter(|_| masked) {
        out.push(step(
            Op::Tmpfs(d.to_string()),
            "host-global /proc directory, masked (as container runtimes do)".into(),
        ));
        out.push(step(
            Op::RemountRo(d.to_string()),
            "the masked /proc directory stays empty".into(),
        ));
    }
    out.push(step(
        Op::Dev("/dev".into()),
        "a minimal /dev: null, zero, full, random, urandom, tty, pts".into(),
    ));
    out.push(step(
        Op::Tmpfs("/dev/shm".into()),
        "a private, empty /dev/shm: POSIX shared memory and semaphores of the sandbox's own processes"
            .into(),
    ));

    // Path steps, keyed by (depth, order, destination) so the deepest decides.
    let mut paths: Vec<((usize, u8, String), Step)> = Vec::new();
    let mut hidden_dirs: Vec<String> = Vec::new();
    for root in &ir.roots {
        let dest = dest_of(root).to_string();
        let from = if root.origin == dest {
            format!("`{}`", root.origin)
        } else {
            format!("`{}` ({})", root.origin, dest)
        };
        let key = |order: u8| (depth(&dest), order, dest.clone());
        let entry = entry_of(root);
        match root.kind {
            RootKind::DenyRead | RootKind::MetadataOnly => {
                let what = if root.kind == RootKind::DenyRead {
                    "deny_read"
                } else {
                    "metadata_only"
                };
                // Mount only what changes the view: a denied root inside
                // another hidden root, with nothing re-allowed between, is
                // already gone; its own mount point would show its name in
                // a listing of the stand-in (macOS shows nothing).
                let enclosing = ir
                    .roots
                    .iter()
                    .filter(|r| r.kind != RootKind::WriteDevice && r.real.is_some())
                    .filter(|r| dest_of(r) != dest && is_within(&dest, dest_of(r)))
                    .max_by_key(|r| dest_of(r).len());
                let already_hidden = root.kind == RootKind::DenyRead
                    && enclosing.is_some_and(|r| r.kind.is_denied());
                match root.host_kind {
                    None => {} // absent when compiled: nothing to hide
                    Some(_) if already_hidden => {}
                    Some(PathKind::Dir) => {
                        let why = if root.kind == RootKind::DenyRead {
                            format!("{what} {from}: an empty read-only stand-in directory")
                        } else {
                            format!("{what} {from}: stat works, its contents are gone")
                        };
                        paths.push((key(0), step(Op::Tmpfs(dest.to_string()), why).from(entry)));
                        hidden_dirs.push(dest.clone());
                    }
                    Some(PathKind::File | PathKind::Other) => paths.push((
                        key(0),
                        step(
                            Op::bind(Bind::ReadOnly, false, EMPTY_FILE, &dest),
                            format!("{what} {from}: replaced by an empty file"),
                        )
                        .from(entry),
                    )),
                }
            }
            RootKind::AllowRead => {
                // Inside a write root, with no hidden root between, it is
                // already there, and writable: a read-only bind would take
                // that away.
                let enclosing = ir
                    .roots
                    .iter()
                    .filter(|r| r.kind != RootKind::AllowRead && r.kind != RootKind::WriteDevice)
                    .filter(|r| is_within(&dest, dest_of(r)))
                    .max_by_key(|r| dest_of(r).len());
                let in_write = enclosing
                    .is_some_and(|r| matches!(r.kind, RootKind::Write | RootKind::Protect));
                if root.real.is_some() && !in_write {
                    paths.push((
                        key(1),
                        step(
                            Op::bind(Bind::ReadOnly, false, &dest, &dest),
                            if root.launcher_package {
                                format!("the launcher's npm package {from}: bound back, read-only, so its bundled tools run")
                            } else {
                                format!("allow_read {from}: bound back, read-only")
                            },
                        )
                        .from(entry),
                    ));
                }
            }
            RootKind::Write => {
                if root.real.is_some() {
                    paths.push((
                        key(2),
                        step(
                            Op::bind(Bind::Writable, false, &dest, &dest),
                            format!("write {from}: bound read-write"),
                        )
                        .from(entry),
                    ));
                }
            }
            // Below, once per object, with the pins on the way.
            RootKind::Protect => {}
            RootKind::WriteDevice => {
                if !DEV_SET.contains(&root.path.as_str()) && root.real.is_some() {
                    paths.push((
                        key(3),
                        step(
                            Op::bind(Bind::Device, false, &dest, &dest),
                            format!("write_devices {from}: the host's device, writable"),
                        )
                        .from(entry),
                    ));
                }
            }
        }
    }
    for entry in &ir.launcher {
        let hidden = match ir.base {
            Base::AllowDefault => {
                sys_hides(&entry.path)
                    || ir
                        .roots
                        .iter()
                        .filter(|r| r.kind.is_denied())
                        .filter_map(|r| r.real.as_deref())
                        .any(|d| is_within(&entry.path, d))
            }
            Base::DenyDefault => !SYSTEM_ROOTS.iter().any(|s| is_within(&entry.path, s)),
        };
        if !hidden {
            continue;
        }
        let why = format!(
            "launcher chain `{}`: re-allowed by literal path",
            entry.path
        );
        let s = match (&entry.kind, &entry.target) {
            (LinkKind::Symlink, Some(target)) => step(
                Op::Symlink {
                    target: target.to_string(),
                    at: entry.path.to_string(),
                },
                why,
            ),
            _ => step(
                Op::bind(Bind::ReadOnly, false, &entry.path, &entry.path),
                why,
            ),
        };
        paths.push((
            (depth(&entry.path), 4, entry.path.clone()),
            s.from("launcher.path".into()),
        ));
    }
    // Protected roots: each directory between its write root and it bound
    // onto itself (the same object, now a mount point: a fixed name), then
    // it, read-only.
    for pin in &ir.pins {
        let holds: Vec<&str> = pin.holds.iter().map(String::as_str).collect();
        let made = if pin.made {
            " (made by `sealc exec` with the Codex home before the run)"
        } else {
            ""
        };
        let mut s = step(
            Op::bind(Bind::Writable, false, &pin.path, &pin.path),
            format!(
                "`{}`{made} lies between a write root and what is protected in it ({}): bound onto itself (a mount point: not renamed or removed), so that cannot be moved away and replaced",
                pin.path,
                holds.join(", ")
            ),
        );
        s.spec = pin.holds.iter().next().cloned();
        paths.push(((depth(&pin.path), 2, pin.path.clone()), s));
    }
    for root in ir.protected() {
        let Some(dest) = root.real.as_deref() else {
            continue;
        };
        let standing = root.protect.as_ref().map(|p| p.standing);
        let why = match standing {
            Some(Standing::StandIn) => format!(
                "protect `{}` (`{}`): absent when compiled, so `{dest}` is an empty stand-in `sealc exec` makes for the run (listed under `stand_ins`) and removes after it, bound read-only: nothing can be made in it",
                root.origin, root.path
            ),
            Some(Standing::InPlace) => format!(
                "protect `{}` (`{}`): `{dest}` on the way is not a directory (a worktree's `.git` file), so it is protected in its place, bound read-only",
                root.origin, root.path
            ),
            Some(Standing::CodexConfig) => format!(
                "the Codex config `sealc exec` installs (`{dest}`): bound read-only, so a change during the run fails"
            ),
            _ => {
                let from = if root.origin == dest {
                    format!("`{}`", root.origin)
                } else {
                    format!("`{}` ({dest})", root.origin)
                };
                format!(
                    "protect {from}: bound read-only onto itself: nothing in it or at its name can be created, changed, removed, renamed or hard-linked"
                )
            }
        };
        paths.push((
            (depth(dest), 6, dest.to_string()),
            step(Op::bind(Bind::ReadOnly, false, dest, dest), why).from(root.entry()),
        ));
    }
    // A root written through a symlink that the sandbox would not show
    // (it lies in a hidden directory, or outside the deny-default base):
    // the link is made again, so the root is reached by both spellings, as
    // on macOS. Denied roots need none: what they lead to is hidden anyway.
    let shows_host = host_views(ir, &paths);
    let mut links = Vec::new();
    for root in &ir.roots {
        let Some(real) = root.real.as_deref() else {
            continue;
        };
        let reallows = matches!(
            root.kind,
            RootKind::AllowRead | RootKind::MetadataOnly | RootKind::Write
        );
        if !reallows || real == root.path || shows_host(&root.path) {
            continue;
        }
        links.push((
            (depth(&root.path), 5, root.path.clone()),
            step(
                Op::Symlink { target: real.to_string(), at: root.path.to_string() },
                format!(
                    "{} `{}` is written through a symlink the sandbox would not show: made again, to `{real}`",
                    root.kind.key().trim_start_matches("filesystem."),
                    root.origin
                ),
            )
            .from(entry_of(root)),
        ));
    }
    paths.extend(links);
    paths.sort_by(|a, b| a.0.cmp(&b.0));
    // Two roots with one realpath (a var and its literal) mount once.
    paths.dedup_by(|a, b| a.1.op == b.1.op);
    out.extend(paths.into_iter().map(|(_, s)| s));

    if ir.base == Base::DenyDefault {
        // The root bubblewrap builds is a tmpfs: nothing may be made in it.
        hidden_dirs.push("/".into());
    }
    // The sandbox's own /sys, once the host's entries are bound in it.
    hidden_dirs.push("/sys".into());
    hidden_dirs.sort();
    hidden_dirs.dedup();
    for d in &hidden_dirs {
        let (why, entry) = if d == "/" {
            (
                "base deny-default: the sandbox's own root stays read-only".to_string(),
                Some(base_entry(ir.base)),
            )
        } else {
            // The entry of the stand-in that stays read-only (the last one
            // made there: a `deny_read` of `/sys` over the sandbox's own).
            let stand_in = out.iter().rev().find(|s| s.op == Op::Tmpfs(d.clone()));
            (
                format!("`{d}` stays read-only once the mounts inside it are made"),
                stand_in.and_then(|s| s.spec.clone()),
            )
        };
        let mut s = step(Op::RemountRo(d.to_string()), why);
        s.spec = entry;
        out.push(s);
    }
    out.push(step(
        Op::RemountRo("/dev".into()),
        "nothing can be created in /dev; its device nodes still work".into(),
    ));

    out.push(step(
        Op::Flag(Flag::UnshareUser),
        "own user namespace: no capability counts on the host's files (`sealc exec` never starts bubblewrap as root)".into(),
    ));
    // bubblewrap switches further user namespaces off through the
    // sandbox's /proc/sys, which only a fresh /proc gives it writable;
    // without, the seccomp filter's refusal of `unshare`, `setns` and
    // `clone` with a namespace flag is the one layer left.
    if ir.exec.proc == crate::spec::ProcMode::Fresh {
        out.push(step(
            Op::Flag(Flag::DisableUserns),
            "no further user namespace inside, so no new mount or network namespace either".into(),
        ));
    }
    out.push(step(
        Op::CapDrop("ALL".into()),
        "no capabilities, even inside the sandbox's own user namespace".into(),
    ));
    out.push(step(
        Op::Flag(Flag::UnsharePid),
        "own pid namespace: no other process is visible or signalled".into(),
    ));
    out.push(step(
        Op::Flag(Flag::AsPid1),
        "no bubblewrap process inside: `sealc exec`'s own init is pid 1, non-dumpable and filtered"
            .into(),
    ));
    out.push(step(
        Op::Flag(Flag::UnshareCgroupTry),
        "own cgroup namespace where the kernel has one: the host's cgroup tree is not named".into(),
    ));
    out.push(step(
        Op::Flag(Flag::UnshareIpc),
        "own System V IPC and POSIX message queues".into(),
    ));
    out.push(step(Op::Flag(Flag::UnshareUts), "own hostname".into()));
    let net_entry = format!("network.mode = \"{}\"", ir.network.mode.as_str());
    match ir.network.mode {
        NetMode::None => out.push(step(
            Op::Flag(Flag::UnshareNet),
            "network none: own network namespace, with only its own loopback".into(),
        ).from(net_entry)),
        NetMode::Proxy => out.push(step(
            Op::Flag(Flag::UnshareNet),
            "network proxy: own network namespace; `sealc exec` bridges only the proxy port".into(),
        ).from(net_entry)),
        NetMode::Allowlist => out.push(step(
            Op::Flag(Flag::UnshareNet),
            "network allowlist: own network namespace; `sealc exec` bridges only the proxy port, to its own proxy, which lets through only the listed hosts and ports".into(),
        ).from(net_entry)),
        NetMode::Open => {}
    }
    out.push(step(
        Op::Flag(Flag::NewSession),
        "own session: no terminal injection (TIOCSTI) into the caller's terminal".into(),
    ));
    out.push(step(
        Op::Flag(Flag::DieWithParent),
        "the sandbox dies with `sealc exec`".into(),
    ));
    out
}

/// The whole argv before the command: `bwrap`, every step, `--`. `sealc
/// exec` puts its own init (which sets the command's exact environment)
/// and filter between that and the command.
pub fn argv(ir: &Ir) -> Vec<String> {
    let mut argv = vec![ir.exec.bwrap.clone()];
    argv.extend(steps(ir).into_iter().flat_map(|s| s.args));
    argv.push("--".into());
    argv
}

/// The stand-ins `sealc exec` makes: protected paths absent when
/// compiled, each by its first missing component, sorted.
pub fn stand_ins(ir: &Ir) -> Vec<String> {
    ir.stand_ins()
        .into_iter()
        .map(|(at, _)| at.to_string())
        .collect()
}

/// Roots absent when compiled, as both Linux seals list them (`absent`).
pub(crate) fn absent(ir: &Ir) -> Vec<String> {
    ir.roots
        .iter()
        .filter(|r| {
            r.real.is_none()
                && !(r.kind == RootKind::WriteDevice && DEV_SET.contains(&r.path.as_str()))
        })
        .map(|r| format!("{} {}", r.kind.key(), r.path))
        .collect()
}

/// Roots written through a symlink, as both Linux seals list them (`links`).
pub(crate) fn links(ir: &Ir) -> BTreeMap<String, String> {
    ir.roots
        .iter()
        .filter(|r| !matches!(r.kind, RootKind::WriteDevice | RootKind::Protect))
        .filter_map(|r| {
            let real = r.real.as_ref()?;
            (*real != r.path).then(|| (r.path.clone(), real.clone()))
        })
        .collect()
}

/// Write roots `sealc exec` makes first, as both Linux seals list them (`create`).
pub(crate) fn create(ir: &Ir) -> Vec<String> {
    ir.roots
        .iter()
        .filter(|r| r.made)
        .filter_map(|r| r.real.clone())
        .collect()
}

/// Render `seal.bwrap.json`.
pub fn render(ir: &Ir) -> Vec<u8> {
    let (absent, links, create) = (absent(ir), links(ir), create(ir));
    let stand_ins = stand_ins(ir);
    let file = BwrapFile {
        absent,
        bwrap: &ir.exec.bwrap,
        create,
        landlock: landlock(ir),
        links,
        mcp: ir
            .codex
            .mcp
            .iter()
            .map(|m| McpServer {
                binding: &m.binding,
                command: &m.command,
                name: &m.name,
                port: m.port,
                seal: &m.seal,
                starts: m.starts,
            })
            .collect(),
        network: Network {
            mode: ir.network.mode.as_str(),
            proxy: ir
                .network
                .proxy
                .as_ref()
                .map(|p| format!("{}:{}", p.host, p.port)),
        },
        refused: refused(ir),
        schema: SCHEMA,
        seal: &ir.name,
        stand_ins,
        steps: steps(ir),
        timeout: ir.exec.timeout.as_ref().map(|(_, s)| *s),
    };
    let mut out = serde_json::to_vec_pretty(&file).unwrap_or_default();
    out.push(b'\n');
    out
}

#[cfg(test)]
mod tests;
