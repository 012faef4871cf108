//! Stage 2, **resolve**: Spec + host → [`Facts`].
//!
//! This is the only module that reads the host: env vars, realpaths, symlinks
//! and the launcher's bytes, all through the [`Host`] trait. Everything it
//! reads is recorded in [`Facts`], so later stages (and `verify`) never read
//! the host again. Secrets are never read here: a secret's value crosses only
//! at run time.

mod host;
pub mod links;
mod memo;
mod walk;

use std::collections::{BTreeMap, BTreeSet};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use host::{Bounds, FakeHost, Host, Kind, Met, RealHost, Unwalked};

use crate::diag::{did_you_mean, quote, Diagnostic, Diagnostics};
use crate::spec::{interpolate, references, Platform, Spanned, Spec};

/// Everything read from the host at compile time.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Facts {
    /// For a macOS target, each `allow_read` root (after `${var}` substitution) that did not exist on the compiling host and has a symlink on the way: where it would appear, the realpath of its nearest existing ancestor then the rest of it. The profile re-allows it there as well, where seatbelt will look; `sealc exec` refuses to start when the links on the way now lead elsewhere.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub absent_allowed: BTreeMap<String, String>,
    /// For a macOS target, each `deny_read` and `metadata_only` root (after `${var}` substitution) that did not exist on the compiling host and has a symlink on the way: where it would appear, the realpath of its nearest existing ancestor then the rest of it. Seatbelt checks the path the links resolve to, so the profile denies it there as well; `sealc exec` refuses to start when the links on the way now lead elsewhere.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub absent_denied: BTreeMap<String, String>,
    /// Each `write` root (after `${var}` substitution) that did not exist on the compiling host, with the path `sealc exec` makes it at before the sandbox starts: the realpath of its nearest existing ancestor, then the rest of it. The seal mounts and allows it there, as if it existed.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub absent_writes: BTreeMap<String, String>,
    /// The programs that start the sandbox, by path: `exec.bwrap` (Linux target) or `exec.sandbox_exec` (macOS target), and `/usr/bin/env`. Each is its symlink chain as `launcher` records it, the last entry a regular file with its digest; an empty chain means the path did not exist on the compiling host. `sealc exec` refuses to start when one changed, went missing or appeared.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub builders: BTreeMap<String, Vec<ChainLink>>,
    /// The captured value of each `env.pass` name (`null` when it was not set).
    pub env: BTreeMap<String, Option<String>>,
    /// For a Linux target, by realpath: the identity (device, inode, kind) of every `deny_read` and `metadata_only` root whose realpath lies inside a write root's realpath, and of each of its ancestors below that write root. The agent may rename these between runs; `sealc exec` refuses to start when one was moved or replaced.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub identities: BTreeMap<String, Identity>,
    /// For a Linux target, what each existing root's realpath is (`dir`, `file` or `other`): bubblewrap hides a directory and a file differently.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub kinds: BTreeMap<String, PathKind>,
    /// The launcher's symlink chain, first entry the launcher path, last a regular file.
    pub launcher: Vec<ChainLink>,
    /// For each filesystem root (after `${var}` substitution) whose realpath (or, absent, whose place in `absent_denied` or `absent_allowed`) differs from it, when its directory exists: where its own name is, the realpath of its directory then its name. The same as the realpath when a link on the way is what differs; otherwise the root is itself a symlink (perhaps dangling), found there. `sealc explain` reads it to tell the two apart.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub located: BTreeMap<String, String>,
    /// The target platform given by `--platform`, when one was given (it overrides the spec's `target.platform`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform: Option<Platform>,
    /// For each filesystem root (after `${var}` substitution) that exists on the compiling host, its realpath.
    pub realpaths: BTreeMap<String, String>,
    /// Each `filesystem.protect` path (after `${var}` substitution; a name joined below each write root that is a directory) that did not exist on the compiling host and lies inside a write root: what holds its place. `dir`: `at` is the first missing component (the realpath of its nearest existing ancestor, then one name), where `sealc exec` makes an empty directory for the run (bound or denied read-only, so nothing can be made there first) and removes it after; `file` or `other`: `at` is an existing object on the way that cannot hold it (a worktree's `.git` file), protected in its place.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub stand_ins: BTreeMap<String, StandIn>,
    /// The value of every declared var.
    pub vars: BTreeMap<String, String>,
}

/// What holds the place of a protected path that did not exist when compiled.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StandIn {
    /// Where: the stand-in `sealc exec` makes, or the object protected in the path's place.
    pub at: String,
    /// `dir`: an empty directory `sealc exec` makes; `file` or `other`: what is there already.
    pub kind: PathKind,
}

/// One path a `filesystem.protect` entry names, on these var values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProtectedPath<'a> {
    pub entry: &'a Spanned<String>,
    /// After `${var}` substitution; a name joined below its write root.
    pub path: String,
    /// For a name: the write root (as written, after substitution) it is below.
    pub below: Option<String>,
}

/// Is a `filesystem.protect` entry a name (applied below every write root)
/// rather than a path? A path starts with `/` or with a `${var}`.
pub fn is_protect_name(entry: &str) -> bool {
    !entry.starts_with('/') && !entry.starts_with("${")
}

/// Every path the `filesystem.protect` entries name: a path entry after
/// `${var}` substitution (when absolute), a name below each write root for
/// which `dir` holds. Entries that do not resolve are left out (the IR
/// reports them, with their spans).
pub fn protected_paths<'a>(
    spec: &'a Spec,
    src: &str,
    vars: &BTreeMap<String, String>,
    dir: &dyn Fn(&str) -> bool,
) -> Vec<ProtectedPath<'a>> {
    let writes: Vec<String> = spec
        .filesystem
        .write
        .iter()
        .filter_map(|w| root_path(w, src, vars))
        .collect();
    let mut out = Vec::new();
    for entry in &spec.filesystem.protect {
        let Ok(value) = interpolate(entry, src, vars) else {
            continue;
        };
        if !is_protect_name(&entry.value) {
            if value.starts_with('/') && !value.contains('\0') {
                out.push(ProtectedPath {
                    entry,
                    path: value,
                    below: None,
                });
            }
            continue;
        }
        if value.starts_with('/') || crate::paths::check_path(&format!("/{value}")).is_err() {
            continue;
        }
        for w in writes.iter().filter(|w| dir(w)) {
            let path = if w == "/" {
                format!("/{value}")
            } else {
                format!("{w}/{value}")
            };
            out.push(ProtectedPath {
                entry,
                path,
                below: Some(w.clone()),
            });
        }
    }
    out
}

/// One entry of the launcher chain.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChainLink {
    /// For the final file, `sha256:<hex>` of its bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// `symlink` or `file`.
    pub kind: LinkKind,
    /// Absolute path of this entry.
    pub path: String,
    /// Where the entry really is (its directory's realpath and its name), when that differs from `path`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub real: Option<String>,
    /// For a symlink, the link text as stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

/// What a root's realpath is on the compiling host.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum PathKind {
    Dir,
    File,
    Other,
}

impl PathKind {
    pub fn as_str(self) -> &'static str {
        match self {
            PathKind::Dir => "directory",
            PathKind::File => "file",
            PathKind::Other => "special file",
        }
    }
}

/// What a file system object is, as `lstat` sees it: a final symlink is not followed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum NodeKind {
    Dir,
    File,
    Symlink,
    Other,
}

impl NodeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            NodeKind::Dir => "directory",
            NodeKind::File => "file",
            NodeKind::Symlink => "symlink",
            NodeKind::Other => "special file",
        }
    }
}

/// Which object a path names: its device and inode, and what it is. The same
/// path with another identity is another object: the first was moved away or
/// replaced.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Identity {
    /// The device number (`st_dev`).
    pub dev: u64,
    /// The inode number (`st_ino`).
    pub ino: u64,
    /// What the object is.
    pub kind: NodeKind,
}

impl std::fmt::Display for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "a {} (device {}, inode {})",
            self.kind.as_str(),
            self.dev,
            self.ino
        )
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum LinkKind {
    Symlink,
    File,
}

/// The longest symlink chain followed, as the kernel's `MAXSYMLINKS`.
const MAX_LINKS: usize = 40;

/// `--var NAME=VALUE` flags, in the order given (a later flag wins).
pub type VarFlags = Vec<(String, String)>;

/// Parse `NAME=VALUE`.
pub fn parse_var_flag(s: &str) -> Result<(String, String), Diagnostic> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
        split => {
            // Name the var the flag was meant for, when there is one.
            let name = match split {
                None if !s.is_empty() && !s.contains(char::is_whitespace) => s,
                _ => "NAME",
            };
            Err(Diagnostic::error(
                "sealc::var::flag",
                format!(
                    "`--var {}` is not of the form NAME=VALUE",
                    crate::diag::visible(s)
                ),
            )
            .help(format!(
                "write `--var {}=VALUE`",
                crate::diag::visible(name)
            )))
        }
    }
}

/// Resolve the spec against the host. Warnings (such as a `pass` var that is
/// not set) come back with the facts; errors come back all at once.
pub fn gather(
    spec: &Spec,
    src: &str,
    flags: &VarFlags,
    host: &dyn Host,
) -> Result<(Facts, Diagnostics), Diagnostics> {
    gather_for(spec, src, flags, None, host)
}

/// [`gather`] for a target platform that overrides the spec's (`--platform`).
pub fn gather_for(
    spec: &Spec,
    src: &str,
    flags: &VarFlags,
    platform: Option<Platform>,
    host: &dyn Host,
) -> Result<(Facts, Diagnostics), Diagnostics> {
    let (facts, diags) = gather_all(spec, src, flags, platform, host);
    if diags.has_errors() {
        return Err(diags);
    }
    Ok((facts, diags))
}

/// [`gather_for`] that goes on past errors: every fact it could read, and
/// every diagnostic (sorted). `sealc exec` uses it to compare a host with a
/// record, where an error is one more difference, not a reason to stop.
pub fn gather_all(
    spec: &Spec,
    src: &str,
    flags: &VarFlags,
    platform: Option<Platform>,
    host: &dyn Host,
) -> (Facts, Diagnostics) {
    let memo = memo::Memo::new(host);
    let host: &dyn Host = &memo;
    let linux = platform.unwrap_or(spec.platform()) == Platform::Linux;
    let mut kinds = BTreeMap::new();
    let mut diags = Diagnostics::default();
    let secrets: BTreeSet<&str> = spec.secret_names().collect();
    let vars = resolve_vars(spec, src, flags, host, &secrets, &mut diags);

    let mut realpaths = BTreeMap::new();
    let codex_denied = spec.codex_denied();
    for root in spec.filesystem.all_roots().chain(&codex_denied) {
        let Some(path) = root_path(root, src, &vars) else {
            continue;
        };
        if let Some(real) = host.canonicalize(&path) {
            if linux {
                let kind = match host.lstat(&real) {
                    Some(Kind::Dir) => PathKind::Dir,
                    Some(Kind::File) => PathKind::File,
                    _ => PathKind::Other,
                };
                kinds.insert(real.clone(), kind);
            }
            realpaths.insert(path, real);
        }
    }
    // Write roots that do not exist yet: where `sealc exec` will make them.
    let mut absent_writes = BTreeMap::new();
    for w in &spec.filesystem.write {
        let Some(path) = root_path(w, src, &vars) else {
            continue;
        };
        if realpaths.contains_key(&path) {
            continue;
        }
        if let Some(at) = would_be(&path, host) {
            // A symlink on the way that leads nowhere yet (or the root
            // itself one): the kernel would follow it where the root is
            // made, so neither the record nor the profile could say where
            // the agent writes.
            if let Some(elsewhere) = would_appear(&path, host).filter(|e| *e != at) {
                diags.push(
                    Diagnostic::error(
                        "sealc::root::dangling-link",
                        format!(
                            "write root {} does not exist, and a symlink on the way leads to {}, which does not exist either",
                            quote(&path),
                            quote(&elsewhere)
                        ),
                    )
                    .at(w.span.clone())
                    .label("cannot be made where the links lead")
                    .help("make the directory the link points at before compiling, or name the write root by the path it will have"),
                );
                continue;
            }
            absent_writes.insert(path, at);
        }
    }
    // Denied and stat-only roots that do not exist yet, through a link:
    // where seatbelt will look for them once they appear.
    // Re-allowed roots likewise, so the re-allow is where seatbelt looks.
    let mut absent_denied = BTreeMap::new();
    let mut absent_allowed = BTreeMap::new();
    if !linux {
        let fs = &spec.filesystem;
        for (root, denied) in fs
            .deny_read
            .iter()
            .chain(&codex_denied)
            .chain(&fs.metadata_only)
            .map(|r| (r, true))
            .chain(fs.allow_read.iter().map(|r| (r, false)))
        {
            let Some(path) = root_path(root, src, &vars) else {
                continue;
            };
            if realpaths.contains_key(&path) {
                continue;
            }
            if let Some(at) = would_appear(&path, host).filter(|at| *at != normalize(&path)) {
                if denied {
                    absent_denied.insert(path, at);
                } else {
                    absent_allowed.insert(path, at);
                }
            }
        }
    }
    let stand_ins = protected(
        spec,
        src,
        &vars,
        linux,
        (&mut realpaths, &mut kinds),
        &absent_writes,
        host,
        &mut diags,
    );
    // A root whose realpath differs: is it a link, or below one?
    let located_roots: BTreeMap<String, String> = realpaths
        .iter()
        .chain(&absent_denied)
        .chain(&absent_allowed)
        .filter(|(p, r)| p != r)
        .filter_map(|(p, _)| Some((p.clone(), located(p, host)?)))
        .collect();
    let identities = if linux {
        denied_in_write_roots(spec, src, &vars, &realpaths, host, &mut diags)
    } else {
        BTreeMap::new()
    };
    linked_roots(
        spec,
        src,
        &vars,
        &realpaths,
        host,
        links::BOUNDS,
        &mut diags,
    );
    let builders = builders(spec, src, &vars, linux, host);
    if linux && host.platform() == Some(Platform::Linux) {
        no_bwrap(spec, &builders, &mut diags);
    }

    let mut launcher = Vec::new();
    if let Some(l) = &spec.launcher {
        match interpolate(&l.path, src, &vars) {
            Ok(path) => match walk_chain(&path, host) {
                Ok(chain) => launcher = chain,
                Err(msg) => diags.push(
                    Diagnostic::error("sealc::launcher::chain", msg)
                        .at(l.path.span.clone())
                        .label(format!("resolves to {}", quote(&path)))
                        .help("point `launcher.path` at the agent binary or a symlink chain that ends at it"),
                ),
            },
            Err(d) => diags.push(d),
        }
    }

    let mut env = BTreeMap::new();
    for name in &spec.env.pass {
        let n = name.value.as_str();
        if secrets.contains(n) || n.is_empty() || n.contains(['=', '\0']) {
            continue; // never read a secret; the IR reports the conflict
        }
        match host.env(n) {
            Some(Ok(v)) => {
                env.insert(n.to_string(), Some(v));
            }
            Some(Err(())) => diags.push(
                Diagnostic::error(
                    "sealc::var::encoding",
                    format!("env var `{n}` is not UTF-8"),
                )
                .at(name.span.clone())
                .help("pass a UTF-8 value, or `set` the variable instead"),
            ),
            None => {
                diags.push(
                    Diagnostic::warning(
                        "sealc::env::absent",
                        format!("env var `{n}` is not set here, so it will not cross `env -i`"),
                    )
                    .at(name.span.clone())
                    .label("not set while compiling")
                    .help(if crate::spec::looks_secret(n) {
                        format!("`{n}` looks like a secret: list it under `env.secret` instead, so `sealc exec` takes it from its own environment and nothing records it")
                    } else {
                        format!("set `{n}` before compiling, or remove it from `pass`")
                    }),
                );
                env.insert(n.to_string(), None);
            }
        }
    }

    // A declared var without a value has its own error (no value, a refused
    // `--var`); a `${var}` that uses it is not also "undeclared".
    diags.0.retain(|d| {
        let knock_on = d.code == "sealc::var::undeclared"
            && d.message
                .strip_prefix("`${")
                .and_then(|m| m.split_once("}`"))
                .is_some_and(|(name, _)| spec.vars.contains_key(name) && !vars.contains_key(name));
        !knock_on
    });
    (
        Facts {
            absent_allowed,
            absent_denied,
            absent_writes,
            vars,
            realpaths,
            kinds,
            identities,
            launcher,
            located: located_roots,
            builders,
            env,
            platform,
            stand_ins,
        },
        diags.sorted(),
    )
}

/// A root's path after `${var}` substitution, when it is one the host can be
/// asked about (the IR reports the others, with their spans).
fn root_path(root: &Spanned<String>, src: &str, vars: &BTreeMap<String, String>) -> Option<String> {
    let path = interpolate(root, src, vars).ok()?;
    (path.starts_with('/') && !path.contains('\0')).then_some(path)
}

/// The longest path [`would_appear`] resolves: the kernel refuses longer
/// ones (`ENAMETOOLONG`; `PATH_MAX` is 1,024 on macOS and 4,096 on Linux).
const MAX_RESOLVED: usize = 4096;

/// Where an absent path would be once it appears, as the kernel will
/// resolve it then: every symlink on the way followed, a dangling one
/// included (its target may appear too), and a final one; a component that
/// does not exist, and all after it, taken as names. `None` when a file is
/// on the way (nothing can appear below it), for a loop of links, and for a
/// path too long to resolve.
pub fn would_appear(path: &str, host: &dyn Host) -> Option<String> {
    if path.len() > MAX_RESOLVED || !path.starts_with('/') {
        return None;
    }
    let mut pending: Vec<String> = path
        .split('/')
        .filter(|c| !c.is_empty())
        .rev()
        .map(str::to_string)
        .collect();
    let mut cur = String::new();
    let mut absent = false;
    let mut hops = 0;
    while let Some(c) = pending.pop() {
        match c.as_str() {
            "." => continue,
            ".." => {
                cur.truncate(cur.rfind('/').unwrap_or(0));
                continue;
            }
            _ => {}
        }
        let before = cur.len();
        cur.push('/');
        cur.push_str(&c);
        if absent {
            continue;
        }
        match host.lstat(&cur) {
            None => absent = true,
            Some(Kind::Dir) => {}
            Some(Kind::Symlink) => {
                hops += 1;
                if hops > 40 {
                    return None;
                }
                let to = host.read_link(&cur)?;
                cur.truncate(if to.starts_with('/') { 0 } else { before });
                pending.extend(
                    to.split('/')
                        .filter(|c| !c.is_empty())
                        .rev()
                        .map(str::to_string),
                );
                if cur.len() + pending.iter().map(|c| c.len() + 1).sum::<usize>() > MAX_RESOLVED {
                    return None;
                }
            }
            Some(Kind::File | Kind::Other) if !pending.is_empty() => return None,
            Some(_) => {}
        }
    }
    Some(if cur.is_empty() { "/".to_string() } else { cur })
}

/// Where an absent path would be made: the realpath of its nearest
/// existing ancestor, then the rest of the path as written. `None` when
/// that ancestor is not a directory (nothing can be made under it).
pub fn would_be(path: &str, host: &dyn Host) -> Option<String> {
    let path = normalize(path);
    let mut cut = path.len();
    loop {
        let above = match path[..cut].rfind('/') {
            Some(0) | None => "/",
            Some(i) => &path[..i],
        };
        let rest = &path[above.len().max(1)..];
        if let Some(real) = host.canonicalize(above) {
            if host.lstat(&real) != Some(Kind::Dir) {
                return None;
            }
            let joined = if real == "/" {
                rest.to_string()
            } else {
                format!("{real}{rest}")
            };
            return Some(normalize(&joined));
        }
        if above == "/" {
            return None;
        }
        cut = above.len();
    }
}

/// Where a path really is: its directory's realpath and its own name (a
/// final symlink is not followed). `None` when the directory does not exist.
fn located(path: &str, host: &dyn Host) -> Option<String> {
    let name = path.rsplit('/').next().unwrap_or_default();
    let dir = host.canonicalize(parent(path))?;
    Some(if dir == "/" {
        format!("/{name}")
    } else {
        format!("{dir}/{name}")
    })
}

/// The protected paths: the realpath (and, for Linux, the kind) of each
/// that exists, recorded with the roots'; what holds the place of each that
/// does not (returned); a symlink on the way below a write root refused
/// (`sealc::protect::link`); and advice for a write root that holds a
/// `.git` whose hooks and config are not protected (`sealc::protect::git`).
#[allow(clippy::too_many_arguments)]
fn protected(
    spec: &Spec,
    src: &str,
    vars: &BTreeMap<String, String>,
    linux: bool,
    (realpaths, kinds): (
        &mut BTreeMap<String, String>,
        &mut BTreeMap<String, PathKind>,
    ),
    absent_writes: &BTreeMap<String, String>,
    host: &dyn Host,
    diags: &mut Diagnostics,
) -> BTreeMap<String, StandIn> {
    use crate::paths::is_within;
    let mut stand_ins = BTreeMap::new();
    // Each write root as written, and where it is (or is made).
    let writes: Vec<(String, String)> = spec
        .filesystem
        .write
        .iter()
        .filter_map(|w| root_path(w, src, vars))
        .filter_map(|w| {
            let at = realpaths.get(&w).or_else(|| absent_writes.get(&w))?.clone();
            Some((w, at))
        })
        .collect();
    let dirs: BTreeSet<String> = writes
        .iter()
        .filter(|(w, at)| absent_writes.contains_key(w) || host.lstat(at) == Some(Kind::Dir))
        .map(|(w, _)| w.clone())
        .collect();
    let is_dir = |w: &str| dirs.contains(w);
    // The spec entry of the write root `w` (as written): where advice points.
    let write_entry = |w: &str| {
        spec.filesystem
            .write
            .iter()
            .find(|e| root_path(e, src, vars).as_deref() == Some(w))
    };
    let paths = protected_paths(spec, src, vars, &is_dir);
    let kind_of = |k: Option<Kind>| match k {
        Some(Kind::Dir) => PathKind::Dir,
        Some(Kind::File) => PathKind::File,
        _ => PathKind::Other,
    };
    for pp in &paths {
        if let Some(d) = protect_link(&pp.path, &writes, host) {
            diags.push(d.at(pp.entry.span.clone()));
            continue;
        }
        if let Some(real) = host.canonicalize(&pp.path) {
            if linux {
                kinds.insert(real.clone(), kind_of(host.lstat(&real)));
            }
            realpaths.insert(pp.path.clone(), real);
            continue;
        }
        if let Some(s) = stand_in(&pp.path, &writes, absent_writes, host) {
            stand_ins.insert(pp.path.clone(), s);
        }
    }
    // A checkout in a write root: what the agent leaves in its `.git` runs
    // with the operator's rights at the next git command.
    for (w, at) in &writes {
        if !is_dir(w) || host.lstat(&format!("{at}/.git")).is_none() {
            continue;
        }
        let covered = |rel: &str| {
            paths.iter().any(|pp| {
                is_within(&format!("{w}/{rel}"), &pp.path)
                    || realpaths
                        .get(&pp.path)
                        .or_else(|| stand_ins.get(&pp.path).map(|s: &StandIn| &s.at))
                        .is_some_and(|l| is_within(&format!("{at}/{rel}"), l))
            })
        };
        let open: Vec<&str> = [".git/hooks", ".git/config"]
            .into_iter()
            .filter(|rel| !covered(rel))
            .collect();
        if open.is_empty() {
            continue;
        }
        let Some(entry) = write_entry(w) else {
            continue;
        };
        let names: Vec<String> = open.iter().map(|o| format!("`{o}`")).collect();
        diags.push(
            Diagnostic::advice(
                "sealc::protect::git",
                format!(
                    "the write root {} holds a `.git`, and {} {} not protected",
                    quote(w),
                    names.join(" and "),
                    if open.len() == 1 { "is" } else { "are" }
                ),
            )
            .at(entry.span.clone())
            .label("a hook the agent plants there runs with your rights at your next `git commit`; a `core.fsmonitor` or `core.hooksPath` in `.git/config` runs at any git command")
            .help(format!(
                "add `protect = [{}]` under `[filesystem]` (the starter of `sealc init` protects `.git/hooks`, `.git/config`, `.codex` and `.agents`)",
                open.iter().map(|o| format!("\"{o}\"")).collect::<Vec<_>>().join(", ")
            )),
        );
    }
    // A protected `.git/config` that sends git to what the agent writes:
    // a hooks directory, a monitor program or an included config in a
    // write root, not protected.
    for (w, at) in &writes {
        let config = format!("{at}/.git/config");
        if !is_dir(w) || host.lstat(&config) != Some(Kind::File) {
            continue;
        }
        let protected_here = |p: &str| {
            paths.iter().any(|pp| {
                is_within(p, &pp.path)
                    || realpaths
                        .get(&pp.path)
                        .or_else(|| stand_ins.get(&pp.path).map(|s: &StandIn| &s.at))
                        .is_some_and(|l| is_within(p, l))
            })
        };
        if !protected_here(&config) {
            continue; // `sealc::protect::git` says so
        }
        // In a write root: the agent may have made it any size.
        let Some(bytes) = host.read_at_most(&config, 1 << 20) else {
            continue;
        };
        let text = String::from_utf8_lossy(&bytes);
        let Some(entry) = write_entry(w) else {
            continue;
        };
        for (key, value) in git_config_reach(&text) {
            // `core.hooksPath` and `core.fsmonitor` are taken from the top
            // of the work tree, an include from the config's directory.
            let base = if key.starts_with("include") {
                format!("{at}/.git")
            } else {
                at.clone()
            };
            let Some(target) = config_path(&value, &base) else {
                continue;
            };
            let in_write = writes
                .iter()
                .any(|(wp, wl)| is_within(&target, wl) || is_within(&target, wp));
            if !in_write || protected_here(&target) {
                continue;
            }
            diags.push(
                Diagnostic::warning(
                    "sealc::protect::git-config",
                    format!(
                        "the protected `.git/config` of the write root {} sets `{key}` to {}, which the agent may write",
                        quote(w),
                        quote(&value)
                    ),
                )
                .at(entry.span.clone())
                .label(if key.starts_with("include") {
                    "git reads it as config at every command: a `core.fsmonitor` the agent puts there runs with your rights"
                } else {
                    "git runs what is there with your rights at your next git command"
                })
                .help(format!(
                    "add {} to `filesystem.protect` (or review it after each run)",
                    quote(&target)
                )),
            );
        }
    }
    stand_ins
}

/// The settings of a git config that name a file git runs or reads as
/// config: `core.hooksPath`, `core.fsmonitor` (when it is a path, not a
/// boolean), `include.path` and `includeIf.<condition>.path`, as (key,
/// value). A small reader: sections, `key = value` lines, quotes.
fn git_config_reach(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut section = String::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('#') || line.starts_with(';') || line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix('[') {
            let name = rest.split([']', ' ', '"', '.']).next().unwrap_or_default();
            section = name.to_ascii_lowercase();
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let key = key.trim().to_ascii_lowercase();
        let value = value
            .split(['#', ';'])
            .next()
            .unwrap_or_default()
            .trim()
            .trim_matches('"')
            .to_string();
        let named = match (section.as_str(), key.as_str()) {
            ("core", "hookspath") => Some("core.hooksPath"),
            ("core", "fsmonitor") => {
                let boolean = ["true", "false", "yes", "no", "on", "off", "1", "0"]
                    .contains(&value.to_ascii_lowercase().as_str());
                (!boolean).then_some("core.fsmonitor")
            }
            ("include", "path") => Some("include.path"),
            ("includeif", "path") => Some("includeIf.path"),
            _ => None,
        };
        if let Some(k) = named.filter(|_| !value.is_empty()) {
            out.push((k.to_string(), value));
        }
    }
    out
}

/// A config value taken as a path: absolute, or relative to `base`; `None`
/// for a value sealc cannot place (`~`, a command line with arguments).
fn config_path(value: &str, base: &str) -> Option<String> {
    if value.starts_with('~') || value.contains(char::is_whitespace) {
        return None;
    }
    Some(if value.starts_with('/') {
        normalize(value)
    } else {
        normalize(&format!("{base}/{value}"))
    })
}

/// A symlink on the way to a protected path, below a write root (or the
/// path itself a symlink): the agent could point it elsewhere, and the
/// operator's tools, which use the path, would follow.
fn protect_link(path: &str, writes: &[(String, String)], host: &dyn Host) -> Option<Diagnostic> {
    use crate::paths::is_within;
    let inside = |p: &str, w: &str| p != w && is_within(p, w);
    let mut q = String::new();
    for c in path.split('/').filter(|c| !c.is_empty()) {
        q.push('/');
        q.push_str(c);
        match host.lstat(&q) {
            None => return None,
            Some(Kind::Symlink) => {}
            Some(_) => continue,
        }
        // A write root written through a link is not on the way below it.
        if writes.iter().any(|(w, _)| *w == q) {
            continue;
        }
        let at = located(&q, host).unwrap_or_else(|| q.clone());
        let Some((w, _)) = writes
            .iter()
            .find(|(w, loc)| inside(&q, w) || inside(&at, loc))
        else {
            continue;
        };
        let target = host.read_link(&q).unwrap_or_default();
        let what = if q == path {
            format!("the protected path {} is a symlink", quote(path))
        } else {
            format!(
                "{} on the way to the protected path {} is a symlink",
                quote(&q),
                quote(path)
            )
        };
        return Some(
            Diagnostic::error("sealc::protect::link", format!("{what} inside the write root {}", quote(w)))
                .label("the agent can point it elsewhere, and your tools, which use this path, would follow it to what the agent wrote")
                .help(format!(
                    "protect the path it leads to ({}), or replace the link by what it points at",
                    quote(&target)
                )),
        );
    }
    None
}

/// What holds the place of a protected path that does not exist: the
/// first missing component, made by `sealc exec` (below what it makes for
/// a write root absent when compiled: that is there when the seal starts),
/// or the object on the way that cannot hold it. `None` outside every write
/// root (the IR says so), or when that object is the write root itself.
fn stand_in(
    path: &str,
    writes: &[(String, String)],
    absent_writes: &BTreeMap<String, String>,
    host: &dyn Host,
) -> Option<StandIn> {
    use crate::paths::is_within;
    let path = normalize(path);
    // The nearest existing ancestor, by realpath, and the rest below it.
    let mut cut = path.len();
    let (real, rest) = loop {
        let above = match path[..cut].rfind('/') {
            Some(0) | None => "/",
            Some(i) => &path[..i],
        };
        if let Some(real) = host.canonicalize(above) {
            break (real, &path[above.len().max(1)..]);
        }
        if above == "/" {
            return None;
        }
        cut = above.len();
    };
    let rest: Vec<&str> = rest.split('/').filter(|c| !c.is_empty()).collect();
    let join = |a: &str, b: &str| {
        if a == "/" {
            format!("/{b}")
        } else {
            format!("{a}/{b}")
        }
    };
    let would = rest.iter().fold(real.clone(), |acc, c| join(&acc, c));
    let (_, loc) = writes
        .iter()
        .filter(|(_, loc)| would != *loc && is_within(&would, loc))
        .max_by_key(|(_, loc)| loc.len())?;
    // What `sealc exec` makes on the way to a write root absent when
    // compiled is there when the seal starts: the stand-in goes below it
    // (and is the path itself when that is on the way to such a root,
    // which the IR refuses: it would hold a write root).
    let mut base = real.clone();
    let mut made = 0;
    for c in &rest {
        let next = join(&base, c);
        if !absent_writes.values().any(|m| is_within(m, &next)) {
            break;
        }
        base = next;
        made += 1;
    }
    if made == rest.len() {
        return Some(StandIn {
            at: would,
            kind: PathKind::Dir,
        });
    }
    if made > 0 {
        return Some(StandIn {
            at: join(&base, rest[made]),
            kind: PathKind::Dir,
        });
    }
    match host.lstat(&real) {
        Some(Kind::Dir) => Some(StandIn {
            at: join(&real, rest.first()?),
            kind: PathKind::Dir,
        }),
        _ if real == *loc => None,
        Some(Kind::File) => Some(StandIn {
            at: real,
            kind: PathKind::File,
        }),
        _ => Some(StandIn {
            at: real,
            kind: PathKind::Other,
        }),
    }
}

/// For a Linux target: the identity of every denied or metadata-only root
/// whose realpath lies inside a write root's realpath, and of each of its
/// ancestors below the outermost such write root. Between runs the agent may
/// rename any of them (its mounts hide a root only where it is), so
/// `sealc exec` compares them before starting. A denied root that is itself a
/// symlink inside a write root is refused: the agent could point it anywhere.
fn denied_in_write_roots(
    spec: &Spec,
    src: &str,
    vars: &BTreeMap<String, String>,
    realpaths: &BTreeMap<String, String>,
    host: &dyn Host,
    diags: &mut Diagnostics,
) -> BTreeMap<String, Identity> {
    use crate::paths::is_within;
    let writes: Vec<(String, Option<&String>)> = spec
        .filesystem
        .write
        .iter()
        .filter_map(|w| root_path(w, src, vars))
        .map(|p| {
            let real = realpaths.get(&p);
            (p, real)
        })
        .collect();
    let fs = &spec.filesystem;
    let mut identities = BTreeMap::new();
    let codex_denied = spec.codex_denied();
    for entry in fs
        .deny_read
        .iter()
        .chain(&fs.metadata_only)
        .chain(&codex_denied)
    {
        let Some(path) = root_path(entry, src, vars) else {
            continue;
        };
        if host.lstat(&path) == Some(Kind::Symlink) {
            let location = located(&path, host).unwrap_or_else(|| path.clone());
            let inside = writes.iter().find(|(w, real)| {
                is_within(&path, w) || real.is_some_and(|r| is_within(&location, r))
            });
            if let Some((w, _)) = inside {
                let target = host.read_link(&path).unwrap_or_default();
                diags.push(
                    Diagnostic::error(
                        "sealc::linux::denied-link-in-write-root",
                        format!(
                            "{} is a symlink inside the write root {}",
                            quote(&path),
                            quote(w)
                        ),
                    )
                    .at(entry.span.clone())
                    .label("the agent can point it at a decoy between runs, and what it hid is exposed")
                    .help(format!(
                        "list the path it points to ({}) instead, or move the link out of the write root",
                        quote(&target)
                    )),
                );
            }
        }
        let Some(real) = realpaths.get(&path) else {
            continue;
        };
        let Some(outer) = writes
            .iter()
            .filter_map(|(_, r)| *r)
            .filter(|w| is_within(real, w))
            .min_by_key(|w| w.len())
        else {
            continue;
        };
        let mut cur = real.as_str();
        loop {
            if let Some(id) = host.identity(cur) {
                identities.insert(cur.to_string(), id);
            }
            let up = parent(cur);
            if up == cur || up == outer.as_str() || !is_within(up, outer) {
                break;
            }
            cur = up;
        }
    }
    identities
}

/// The most paths a `sealc::root::linked` diagnostic names (the rest are
/// counted).
const LISTED: usize = 20;

/// `1 file`, `2 files`.
fn count(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Why a walk stopped, in words.
fn unwalked(root: &str, why: &Unwalked) -> String {
    match why {
        Unwalked::Entries(n) => format!("more than {n} entries under {}", quote(root)),
        Unwalked::Depth(n, at) => format!(
            "{} is more than {n} directories below {}",
            quote(at),
            quote(root)
        ),
        Unwalked::Read { path, error } => {
            format!("cannot read {} ({error})", quote(path))
        }
    }
}

/// Hidden by identity, not only by path: each denied or metadata-only root
/// whose realpath lies inside a write root's realpath (for either target:
/// the host is the same) is walked for objects with another hard link
/// ([`links::exposed`]), which the seal would not hide: the agent reads the
/// file through the other name (one it made itself in an earlier run, when
/// the root was absent, or one a host process made). Each such root is
/// refused (`sealc::root::linked`), naming where the other links are; a
/// root whose walk cannot finish cannot be checked and is refused too
/// (`sealc::root::uncheckable`). Nothing is recorded: `sealc exec` runs the
/// same check before every run (`drift::host_drift`).
fn linked_roots(
    spec: &Spec,
    src: &str,
    vars: &BTreeMap<String, String>,
    realpaths: &BTreeMap<String, String>,
    host: &dyn Host,
    bounds: Bounds,
    diags: &mut Diagnostics,
) {
    use crate::paths::is_within;
    let fs = &spec.filesystem;
    let real_of = |e: &Spanned<String>| {
        let p = root_path(e, src, vars)?;
        let r = realpaths.get(&p)?.clone();
        Some((p, r))
    };
    let writes: Vec<String> = fs
        .write
        .iter()
        .filter_map(real_of)
        .map(|(_, r)| r)
        .collect();
    let codex = spec.codex_denied();
    let denied = fs.deny_read.iter().chain(&codex).map(|e| ("deny_read", e));
    let stat_only = fs.metadata_only.iter().map(|e| ("metadata_only", e));
    // Each hidden realpath, with the first entry that names it.
    let mut hidden: BTreeMap<String, (&str, String, crate::diag::Span)> = BTreeMap::new();
    for (key, entry) in denied.chain(stat_only) {
        let Some((path, real)) = real_of(entry) else {
            continue;
        };
        if writes.iter().any(|w| is_within(&real, w)) {
            hidden
                .entry(real)
                .or_insert((key, path, entry.span.clone()));
        }
    }
    if hidden.is_empty() {
        return;
    }
    // What shows: the write roots, and a root re-allowed or writable inside
    // a hidden one.
    let mut visible = writes.clone();
    for e in fs.allow_read.iter().chain(&fs.write) {
        if let Some((_, r)) = real_of(e) {
            if hidden.keys().any(|h| *h != r && is_within(&r, h)) {
                visible.push(r);
            }
        }
    }
    let roots: Vec<String> = hidden.keys().cloned().collect();
    let found = links::exposed(&roots, &visible, host, bounds);

    let what = |key: &str, path: &str| format!("the `filesystem.{key}` root {}", quote(path));
    for (root, why) in &found.unchecked {
        let Some((key, path, span)) = hidden.get(root) else {
            continue;
        };
        let help = match why {
            Unwalked::Read { .. } => "make it readable to the user that runs sealc (the check runs at every compile and every `sealc exec`), or start from a fresh write root",
            _ => "hide a smaller tree, or move this one out of the write root (the check runs at every compile and every `sealc exec`), or start from a fresh write root",
        };
        diags.push(
            Diagnostic::error(
                "sealc::root::uncheckable",
                format!(
                    "{}: {}, so sealc cannot check it for hard links",
                    what(key, path),
                    unwalked(root, why)
                ),
            )
            .at(span.clone())
            .label("inside a write root, where another link to a file in it would show it")
            .help(help),
        );
    }
    let partial: Vec<String> = found
        .partial
        .iter()
        .map(|(root, why)| {
            format!(
                "the write root {} was not walked to the end ({}), so links there may be among those counted outside",
                quote(root),
                unwalked(root, why)
            )
        })
        .collect();
    let mut by_root: BTreeMap<&str, Vec<&links::Exposed>> = BTreeMap::new();
    for e in &found.exposed {
        by_root.entry(e.root.as_str()).or_default().push(e);
    }
    for (root, group) in by_root {
        let Some((key, path, span)) = hidden.get(root) else {
            continue;
        };
        let mut named = 0;
        let mut items = Vec::new();
        let (mut files_left, mut links_left, mut shown, mut outside) = (0u64, 0u64, 0u64, 0u64);
        for e in &group {
            outside += e.elsewhere;
            let visible = e.visible.len() as u64 + e.more_visible;
            shown += visible;
            if named >= LISTED {
                files_left += 1;
                links_left += visible;
                continue;
            }
            named += 1;
            let take = e.visible.len().min(LISTED - named);
            named += take;
            links_left += visible - take as u64;
            let links: Vec<String> = e.visible[..take].iter().map(|l| quote(l)).collect();
            items.push(if links.is_empty() {
                quote(&e.path)
            } else {
                format!("{} is also {}", quote(&e.path), links.join(", "))
            });
        }
        let mut message = format!(
            "{} holds {} with another hard link, which the seal does not hide: {}",
            what(key, path),
            count(group.len() as u64, "file", "files"),
            items.join("; ")
        );
        if files_left > 0 || links_left > 0 {
            message.push_str(&format!(
                "; and {} and {} in the write roots, not listed",
                count(files_left, "more file", "more files"),
                count(links_left, "more link", "more links")
            ));
        }
        if outside > 0 {
            let n = if shown > 0 {
                count(outside, "more link", "more links")
            } else {
                count(outside, "link", "links")
            };
            message.push_str(&format!(
                "; {} {n} outside the write roots",
                if shown > 0 { "and" } else { "with" }
            ));
        }
        for p in &partial {
            message.push_str(&format!(" ({p})"));
        }
        diags.push(
            Diagnostic::error("sealc::root::linked", message)
                .at(span.clone())
                .label("hiding a path does not hide the file: every other link of it reads the same data")
                .help("remove the other links (the file keeps its content), or give the file a single link of its own (copy it over itself: `cp -p FILE FILE.new && mv FILE.new FILE`; what it holds now stays readable through the old links), or start from a fresh write root"),
        );
    }
}

/// The programs that start the sandbox, each walked as the launcher is:
/// `exec.bwrap` (Linux) or `exec.sandbox_exec` (macOS), and `env`. A program
/// absent here is recorded with an empty chain.
fn builders(
    spec: &Spec,
    src: &str,
    vars: &BTreeMap<String, String>,
    linux: bool,
    host: &dyn Host,
) -> BTreeMap<String, Vec<ChainLink>> {
    let (given, default) = if linux {
        (&spec.exec.bwrap, crate::known::BWRAP)
    } else {
        (&spec.exec.sandbox_exec, crate::known::SANDBOX_EXEC)
    };
    let mut programs = vec![crate::known::ENV_BIN.to_string()];
    match given {
        Some(p) => programs.extend(root_path(p, src, vars)),
        None => programs.push(default.to_string()),
    }
    programs
        .into_iter()
        .map(|p| {
            let (chain, _) = walk(&p, host);
            (p, chain)
        })
        .collect()
}

/// A Linux seal compiled on a Linux host where its bubblewrap is not a
/// program (absent, or a chain that ends elsewhere than at a file): the
/// seal compiles, but `sealc exec` cannot start it here.
fn no_bwrap(spec: &Spec, builders: &BTreeMap<String, Vec<ChainLink>>, diags: &mut Diagnostics) {
    let given = spec.exec.bwrap.as_ref();
    let Some((path, chain)) = builders
        .iter()
        .find(|(p, _)| p.as_str() != crate::known::ENV_BIN)
    else {
        return;
    };
    if chain.last().is_some_and(|l| l.kind == LinkKind::File) {
        return;
    }
    let what = if chain.is_empty() {
        "does not exist on this host"
    } else {
        "does not lead to a program on this host"
    };
    let key = if given.is_some() {
        "correct `[exec] bwrap`"
    } else {
        "set `[exec] bwrap` to where it is"
    };
    diags.push(
        Diagnostic::warning(
            "sealc::exec::no-bwrap",
            format!(
                "bubblewrap {} {what}, so `sealc exec` cannot run this seal here",
                quote(path)
            ),
        )
        .at_opt(given.map(|g| g.span.clone()))
        .label("not found while compiling")
        .help(format!(
            "install bubblewrap 0.8 or newer (`apt-get install bubblewrap`), or {key}; then compile again: its digest is part of the seal"
        )),
    );
}

/// The vars whose value is used as a path: a path of the spec (a root, the
/// launcher, a program, the workspace, an assertion's path, another var's
/// default) starts with `${name}`.
fn path_vars(spec: &Spec) -> BTreeSet<&str> {
    let fs = &spec.filesystem;
    let mut strings: Vec<&str> = fs
        .all_roots()
        .chain(&fs.protect)
        .map(|s| s.value.as_str())
        .collect();
    strings.extend(spec.launcher.as_ref().map(|l| l.path.value.as_str()));
    strings.extend(spec.exec.sandbox_exec.as_ref().map(|s| s.value.as_str()));
    strings.extend(spec.exec.bwrap.as_ref().map(|s| s.value.as_str()));
    strings.extend(spec.exec.timeout.as_ref().map(|t| t.bin.value.as_str()));
    strings.extend(spec.codex.workspace.as_ref().map(|s| s.value.as_str()));
    strings.extend(
        spec.vars
            .values()
            .filter_map(|d| d.default.as_ref())
            .map(|s| s.value.as_str()),
    );
    for a in &spec.asserts {
        strings.extend(a.paths.iter().map(|s| s.value.as_str()));
    }
    spec.vars
        .keys()
        .map(String::as_str)
        .filter(|name| {
            let head = format!("${{{name}}}");
            strings.iter().any(|s| {
                s.strip_prefix(head.as_str())
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
            })
        })
        .collect()
}

/// The value of `--var name=value` for a var used as a path, as recorded:
/// a trailing `/` dropped (tab completion adds one), a relative value (`.`,
/// `ws`, `../runs/r1`) resolved against the current directory. An absolute
/// value is otherwise kept as given, so its problems are reported as the
/// flag's.
fn flag_path(name: &str, value: &str, host: &dyn Host) -> Result<String, Diagnostic> {
    let flag = |v: &str| {
        format!(
            "--var {}={}",
            crate::diag::visible(name),
            crate::diag::visible(v)
        )
    };
    let bad = |msg: String, help: String| Diagnostic::error("sealc::var::flag", msg).help(help);
    if value.starts_with('~') {
        return Err(bad(
            format!(
                "`{}` starts with `~`, which sealc does not expand",
                flag(value)
            ),
            match value.strip_prefix('~') {
                Some(rest) if rest.is_empty() || rest.starts_with('/') => format!(
                    "write the home directory out: `{}`",
                    flag(&format!("$HOME{rest}"))
                ),
                _ => format!("pass an absolute path: `{}`", flag("/path")),
            },
        ));
    }
    let path = if value.starts_with('/') {
        let trimmed = value.trim_end_matches('/');
        if trimmed.is_empty() {
            "/".to_string()
        } else {
            trimmed.to_string()
        }
    } else if value.is_empty() {
        let name = crate::diag::visible(name);
        return Err(bad(
            format!("`{}` gives a path var an empty value", flag(value)),
            format!(
                "the value is empty, as a `$(...)` that printed nothing leaves it (with `$(command -v {name})`: is `{name}` installed and on `PATH`?); pass a path: `{}`",
                flag("/path")
            ),
        ));
    } else {
        let Some(cwd) = host.cwd().filter(|c| c.starts_with('/')) else {
            return Err(bad(
                format!(
                    "`{}` is a relative path, and the current directory cannot be read",
                    flag(value)
                ),
                format!("pass an absolute path: `{}`", flag("/path")),
            ));
        };
        normalize(&format!("{cwd}/{value}"))
    };
    if let Err(problem) = crate::paths::check_path(&path) {
        use crate::paths::PathProblem;
        let help = match &problem {
            PathProblem::DoubleSlash | PathProblem::DotSegment(_) => {
                format!("write `{}`", flag(&normalize(&path)))
            }
            other => other
                .help(&path)
                .unwrap_or_else(|| "pass a plain absolute path".to_string()),
        };
        return Err(bad(
            format!(
                "`{}` is not a usable path: it {}",
                flag(value),
                problem.message()
            ),
            help,
        ));
    }
    Ok(path)
}

fn resolve_vars(
    spec: &Spec,
    src: &str,
    flags: &VarFlags,
    host: &dyn Host,
    secrets: &BTreeSet<&str>,
    diags: &mut Diagnostics,
) -> BTreeMap<String, String> {
    let mut given: BTreeMap<&str, String> = BTreeMap::new();
    let paths = path_vars(spec);
    let mut refused = BTreeSet::new();
    for (k, v) in flags {
        if spec.vars.contains_key(k) {
            let value = if paths.contains(k.as_str()) {
                match flag_path(k, v, host) {
                    Ok(p) => p,
                    Err(d) => {
                        let at = spec.vars.get(k).map(|d| d.name.span.clone());
                        diags.push(d.at_opt(at).label("its value is used as a path"));
                        refused.insert(k.clone());
                        continue;
                    }
                }
            } else {
                v.clone()
            };
            given.insert(k, value);
        } else {
            let mut d = Diagnostic::error(
                "sealc::var::undeclared",
                format!("`--var {}` names no declared var", crate::diag::visible(k)),
            );
            d = match did_you_mean(k, spec.vars.keys().map(String::as_str)) {
                Some(m) => d.help(format!("did you mean `--var {m}=...`?")),
                None => d.help("declare it under `[vars]`, or drop the flag"),
            };
            diags.push(d);
        }
    }
    let mut r = Resolver {
        spec,
        src,
        host,
        secrets,
        given,
        done: BTreeMap::new(),
        failed: refused,
        stack: Vec::new(),
    };
    for name in spec.vars.keys() {
        r.resolve(name, diags);
    }
    r.done
}

struct Resolver<'a> {
    spec: &'a Spec,
    src: &'a str,
    host: &'a dyn Host,
    secrets: &'a BTreeSet<&'a str>,
    given: BTreeMap<&'a str, String>,
    done: BTreeMap<String, String>,
    failed: BTreeSet<String>,
    stack: Vec<String>,
}

impl Resolver<'_> {
    fn resolve(&mut self, name: &str, diags: &mut Diagnostics) -> Option<String> {
        if let Some(v) = self.done.get(name) {
            return Some(v.clone());
        }
        if self.failed.contains(name) {
            return None;
        }
        let decl = self.spec.vars.get(name)?;
        if self.stack.iter().any(|s| s == name) {
            let cycle = self.stack.join(" → ");
            diags.push(
                Diagnostic::error(
                    "sealc::var::cycle",
                    format!("var `{name}` depends on itself: {cycle} → {name}"),
                )
                .at(decl.name.span.clone())
                .help("give one of these vars a default that does not refer back"),
            );
            self.failed.insert(name.to_string());
            return None;
        }
        let value = self.value_of(name, diags);
        match &value {
            Some(v) => {
                self.done.insert(name.to_string(), v.clone());
            }
            None => {
                self.failed.insert(name.to_string());
            }
        }
        value
    }

    fn value_of(&mut self, name: &str, diags: &mut Diagnostics) -> Option<String> {
        let decl = self.spec.vars.get(name)?;
        if let Some(v) = self.given.get(name) {
            return Some(v.clone());
        }
        if let Some(env) = &decl.env {
            if self.secrets.contains(env.value.as_str()) {
                diags.push(
                    Diagnostic::error(
                        "sealc::var::secret",
                        format!(
                            "var `{name}` reads `{}`, which is listed as a secret",
                            env.value
                        ),
                    )
                    .at(env.span.clone())
                    .label("its value would be recorded")
                    .help("a secret's value is never read at compile time; use another env var"),
                );
                return None;
            }
            match self.host.env(&env.value) {
                Some(Ok(v)) => return Some(v),
                Some(Err(())) => {
                    diags.push(
                        Diagnostic::error(
                            "sealc::var::encoding",
                            format!("env var `{}` is not UTF-8", env.value),
                        )
                        .at(env.span.clone())
                        .help(format!("pass `--var {name}=VALUE` instead")),
                    );
                    return None;
                }
                None => {}
            }
        }
        if let Some(default) = &decl.default {
            let refs = match references(default, self.src) {
                Ok(r) => r,
                Err(d) => {
                    diags.push(d);
                    return None;
                }
            };
            self.stack.push(name.to_string());
            let mut ok = true;
            for r in &refs {
                if self.spec.vars.contains_key(&r.name) {
                    ok &= self.resolve(&r.name, diags).is_some();
                }
            }
            self.stack.pop();
            if !ok {
                return None;
            }
            return match interpolate(default, self.src, &self.done) {
                Ok(v) => Some(v),
                Err(d) => {
                    diags.push(d);
                    None
                }
            };
        }
        let mut help = format!("pass `--var {name}=VALUE`");
        if let Some(env) = &decl.env {
            help.push_str(&format!(" or set `{}`", env.value));
        }
        if let Some(h) = &decl.help {
            help.push_str(&format!(" ({})", h.value));
        }
        let required = decl.required.as_ref().is_some_and(|r| r.value);
        diags.push(
            Diagnostic::error(
                "sealc::var::missing",
                if required {
                    format!("required var `{name}` has no value")
                } else {
                    format!("var `{name}` has no value")
                },
            )
            .at(decl.name.span.clone())
            .label("no `--var`, env var or default gives it a value")
            .help(help),
        );
        None
    }
}

/// Walk the symlink chain from `path` to a regular file.
fn walk_chain(path: &str, host: &dyn Host) -> Result<Vec<ChainLink>, String> {
    let (chain, end) = walk(path, host);
    end.map(|()| chain)
}

/// Walk the symlink chain from `path`: the entries walked, and why the walk
/// did not end at a regular file, if it did not.
fn walk(path: &str, host: &dyn Host) -> (Vec<ChainLink>, Result<(), String>) {
    let mut chain = Vec::new();
    let end = walk_into(path, host, &mut chain);
    (chain, end)
}

fn walk_into(path: &str, host: &dyn Host, chain: &mut Vec<ChainLink>) -> Result<(), String> {
    let mut cur = normalize(path);
    for _ in 0..=MAX_LINKS {
        let real = located(&cur, host).filter(|r| *r != cur);
        match host.lstat(&cur) {
            Some(Kind::Symlink) => {
                let target = host
                    .read_link(&cur)
                    .ok_or_else(|| format!("cannot read the symlink {}", quote(&cur)))?;
                let parent = parent(&cur);
                let base = host
                    .canonicalize(parent)
                    .unwrap_or_else(|| parent.to_string());
                let next = if target.starts_with('/') {
                    normalize(&target)
                } else {
                    normalize(&format!("{base}/{target}"))
                };
                chain.push(ChainLink {
                    path: cur,
                    kind: LinkKind::Symlink,
                    real,
                    target: Some(target),
                    digest: None,
                });
                cur = next;
            }
            Some(Kind::File) => {
                let bytes = host
                    .read(&cur)
                    .ok_or_else(|| format!("cannot read the launcher file {}", quote(&cur)))?;
                chain.push(ChainLink {
                    path: cur,
                    kind: LinkKind::File,
                    real,
                    target: None,
                    digest: Some(crate::digest::sha256(&bytes)),
                });
                return Ok(());
            }
            Some(Kind::Dir) => {
                return Err(format!(
                    "launcher chain ends at the directory {}",
                    quote(&cur)
                ))
            }
            Some(Kind::Other) => {
                return Err(format!(
                    "launcher chain ends at {}, which is not a regular file",
                    quote(&cur)
                ))
            }
            None if chain.is_empty() => {
                return Err(format!(
                    "launcher {} does not exist on this host",
                    quote(&cur)
                ))
            }
            None => {
                return Err(format!(
                    "launcher chain is broken: {} does not exist",
                    quote(&cur)
                ))
            }
        }
    }
    Err(format!(
        "launcher chain from {} has more than {MAX_LINKS} links",
        quote(path)
    ))
}

fn parent(p: &str) -> &str {
    match p.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &p[..i],
    }
}

pub use crate::paths::normalize;

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(platform: &str, extra: &str) -> String {
        format!("version = 1\nname = \"l\"\n[target]\nplatform = \"{platform}\"\n[filesystem]\nwrite = [\"/w\"]\ndeny_read = [\"/w/grader\"]\n{extra}")
    }

    fn errors(src: &str, host: &FakeHost) -> Vec<Diagnostic> {
        match crate::compile("l.toml", src, &Vec::new(), host) {
            Ok(_) => Vec::new(),
            Err(d) => d.0.into_iter().filter(Diagnostic::is_error).collect(),
        }
    }

    /// Issue 22, finding 3: a denied file with another link in a write root
    /// is refused at compile, for either target, naming both paths.
    #[test]
    fn a_denied_file_linked_into_a_write_root_is_refused_naming_both() {
        let h = FakeHost::new()
            .file("/w/grader/answer", b"")
            .hard_link("/w/grader/answer", "/w/.peek");
        for platform in ["linux", "macos"] {
            let src = spec(platform, "");
            let e = errors(&src, &h);
            assert_eq!(e.len(), 1, "{e:?}");
            assert_eq!(e[0].code, "sealc::root::linked");
            assert!(
                e[0].message
                    .contains("`/w/grader/answer` is also `/w/.peek`"),
                "{}",
                e[0].message
            );
            assert!(e[0]
                .message
                .contains("`filesystem.deny_read` root `/w/grader`"));
            let at = e[0].span.clone().unwrap();
            assert_eq!(&src[at], "\"/w/grader\"");
        }
        // metadata_only alike; one link outside the write roots counted.
        let src = spec("linux", "metadata_only = [\"/w/m\"]\n");
        let h = FakeHost::new()
            .file("/w/m/f", b"")
            .links_elsewhere("/w/m/f", 1);
        let e = errors(&src, &h);
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(
            e[0].message
                .contains("the `filesystem.metadata_only` root `/w/m` holds 1 file with another hard link, which the seal does not hide: `/w/m/f`; with 1 link outside the write roots"),
            "{}",
            e[0].message
        );
        // A single link, or links all inside the denied root: compiles.
        let h = FakeHost::new()
            .file("/w/grader/a", b"")
            .hard_link("/w/grader/a", "/w/grader/b")
            .file("/w/x", b"");
        assert!(errors(&spec("linux", ""), &h).is_empty());
        // A denied root outside the write roots is not walked.
        let src =
            "version = 1\nname = \"l\"\n[filesystem]\nwrite = [\"/w\"]\ndeny_read = [\"/s\"]\n";
        let h = FakeHost::new()
            .dir("/w")
            .file("/s/f", b"")
            .hard_link("/s/f", "/w/f");
        assert!(errors(src, &h).is_empty());
    }

    #[test]
    fn the_listing_is_bounded() {
        let mut h = FakeHost::new();
        for i in 0..30 {
            let f = format!("/w/grader/f{i:02}");
            h = h
                .file(&f, b"")
                .hard_link(&f, &format!("/w/l{i:02}"))
                .links_elsewhere(&f, 1);
        }
        let e = errors(&spec("linux", ""), &h);
        assert_eq!(e.len(), 1, "{e:?}");
        let m = &e[0].message;
        assert_eq!(m.matches("`/w/").count(), LISTED + 1, "{m}");
        assert!(m.contains("holds 30 files"), "{m}");
        assert!(
            m.contains("; and 20 more files and 20 more links in the write roots, not listed; and 30 more links outside the write roots"),
            "{m}"
        );
    }

    #[test]
    fn a_denied_root_that_cannot_be_walked_is_refused() {
        let h = FakeHost::new()
            .file("/w/grader/sub/f", b"")
            .unreadable("/w/grader/sub");
        let e = errors(&spec("linux", ""), &h);
        assert_eq!(e.len(), 1, "{e:?}");
        assert_eq!(e[0].code, "sealc::root::uncheckable");
        assert!(
            e[0].message.contains("cannot read `/w/grader/sub`")
                && e[0]
                    .message
                    .contains("so sealc cannot check it for hard links"),
            "{}",
            e[0].message
        );
        // Past the entry bound, or too deep (small bounds here; the
        // compile's are `links::BOUNDS`).
        let mut h = FakeHost::new().file("/w/grader/1/2/3/f", b"");
        for i in 0..5 {
            h = h.file(&format!("/w/grader/f{i}"), b"");
        }
        let src = spec("linux", "");
        let parsed = crate::spec::parse(&src).unwrap();
        let realpaths: BTreeMap<String, String> = [("/w", "/w"), ("/w/grader", "/w/grader")]
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .into();
        let run = |bounds: Bounds| {
            let mut d = Diagnostics::default();
            let vars = BTreeMap::new();
            linked_roots(&parsed, &src, &vars, &realpaths, &h, bounds, &mut d);
            d.0
        };
        let d = run(Bounds {
            entries: 4,
            depth: 8,
        });
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].code, "sealc::root::uncheckable");
        assert_eq!(d[0].message, "the `filesystem.deny_read` root `/w/grader`: more than 4 entries under `/w/grader`, so sealc cannot check it for hard links");
        let d = run(Bounds {
            entries: 100,
            depth: 2,
        });
        assert_eq!(d[0].message, "the `filesystem.deny_read` root `/w/grader`: `/w/grader/1/2/3` is more than 2 directories below `/w/grader`, so sealc cannot check it for hard links");
        assert!(run(links::BOUNDS).is_empty());
    }
}
