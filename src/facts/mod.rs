//! Stage 2, **resolve**: Spec + host → [`Facts`].
//!
//! This is the only module that reads the host: env vars, realpaths, symlinks
//! and the launcher's bytes, all through the [`Host`] trait. Everything it
//! reads is recorded in [`Facts`], so later stages (and `verify`) never read
//! the host again. Secrets are never read here: a secret's value crosses only
//! at run time.

mod appear;
mod chain;
mod digests;
mod host;
pub mod layers;
pub mod links;
mod memo;
mod protect;
mod script;
pub use self::script::npm_codex_package;
mod vars;
mod walk;

pub use self::appear::{would_appear, would_be};
use self::chain::{builders, linked_roots, no_bwrap, parent, walk_chain};
use self::protect::{count, denied_in_write_roots, protected, unwalked, LISTED};
pub use self::protect::{is_protect_name, protected_paths, ProtectedPath};
pub use self::vars::parse_var_flag;
use self::vars::resolve_vars;

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use host::{Bounds, FakeHost, Host, Kind, Met, RealHost, Unwalked};

use crate::diag::{did_you_mean, quote, Diagnostic, Diagnostics};
use crate::spec::{interpolate, interpolated, references, Platform, Spanned, Spec};

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
    let (facts, mut diags) = gather_all(spec, src, flags, platform, host);
    if diags.has_errors() {
        return Err(diags);
    }
    // What the host says of the layers a Linux seal needs: a warning for
    // whoever compiles (not read again by exec's comparison of facts).
    if platform.unwrap_or(spec.platform()) == Platform::Linux
        && host.platform() == Some(Platform::Linux)
        && spec.isolation() == crate::spec::Isolation::Namespaces
    {
        let proc = spec.exec.proc.as_ref().map(|p| p.value).unwrap_or_default();
        layers::warn_obstacles(host, proc, &mut diags);
    }
    // A script launcher pins less than it seems: said to whoever compiles.
    if let (Some(l), Some(last)) = (&spec.launcher, facts.launcher.last()) {
        if let Some(d) = script::script_warning(&last.path, host) {
            diags.push(d.at(l.path.span.clone()));
        }
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
    // Room for the probe spec's paths in one block (a bigger spec's
    // arena grows as it goes).
    let arena = memo::Arena::with_capacity(4096);
    let memo = memo::Memo::new(host, &arena);
    let host: &dyn Host = &memo;
    let linux = platform.unwrap_or(spec.platform()) == Platform::Linux;
    let mut kinds = BTreeMap::new();
    let mut diags = Diagnostics::default();
    let secrets: BTreeSet<&str> = spec.secret_names().collect();
    let vars = resolve_vars(spec, src, flags, host, &secrets, &mut diags);

    let mut realpaths = BTreeMap::new();
    let codex_denied = spec.codex_denied();
    for root in spec.filesystem.all_roots().chain(&codex_denied) {
        let Some(path) = root_path_ref(root, src, &vars) else {
            continue;
        };
        if let Some(real) = host.canonicalize(&path) {
            if linux {
                kinds.insert(real.clone(), path_kind(&real, host));
            }
            realpaths.insert(path.into_owned(), real);
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
                        crate::diag::code::ROOT_DANGLING_LINK,
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
    // No program digest is kept where the agent writes.
    memo.set_write_roots(
        spec.filesystem
            .write
            .iter()
            .filter_map(|w| root_path(w, src, &vars))
            .filter_map(|p| realpaths.get(&p).or_else(|| absent_writes.get(&p)).cloned())
            .collect(),
    );
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
            let Some(path) = root_path_ref(root, src, &vars) else {
                continue;
            };
            if realpaths.contains_key(path.as_ref()) {
                continue;
            }
            // What it walks to is normal: equal to the path, the path is too.
            if let Some(at) = would_appear(&path, host)
                .filter(|at| *at != path.as_ref() && *at != normalize(&path))
            {
                let path = path.into_owned();
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
    if linux
        && host.platform() == Some(Platform::Linux)
        && spec.isolation() == crate::spec::Isolation::Namespaces
    {
        no_bwrap(spec, &builders, &mut diags);
    }

    let mut launcher = Vec::new();
    if let Some(l) = &spec.launcher {
        match interpolate(&l.path, src, &vars) {
            Ok(path) => match walk_chain(&path, host) {
                Ok(chain) => launcher = chain,
                Err(msg) => diags.push(
                    Diagnostic::error(crate::diag::code::LAUNCHER_CHAIN, msg)
                        .at(l.path.span.clone())
                        .label(format!("resolves to {}", quote(&path)))
                        .help("point `launcher.path` at the agent binary or a symlink chain that ends at it"),
                ),
            },
            Err(d) => diags.push(d),
        }
    }

    // npm's native Codex: its package directory, which the seal shows
    // read-only with the binary where a hidden root holds it (the IR
    // decides), located like a root.
    if let Some(package) = launcher.last().and_then(|l| npm_codex_package(&l.path)) {
        if !realpaths.contains_key(package) {
            if let Some(real) = host.canonicalize(package) {
                if linux {
                    kinds.insert(real.clone(), path_kind(&real, host));
                }
                realpaths.insert(package.to_string(), real);
            }
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
                    crate::diag::code::VAR_ENCODING,
                    format!("env var `{n}` is not UTF-8"),
                )
                .at(name.span.clone())
                .help("pass a UTF-8 value, or `set` the variable instead"),
            ),
            None => {
                diags.push(
                    Diagnostic::warning(
                        crate::diag::code::ENV_ABSENT,
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
        let knock_on = d.code == crate::diag::code::VAR_UNDECLARED
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

/// What a realpath is, as a Linux seal records it.
fn path_kind(real: &str, host: &dyn Host) -> PathKind {
    match host.lstat(real) {
        Some(Kind::Dir) => PathKind::Dir,
        Some(Kind::File) => PathKind::File,
        _ => PathKind::Other,
    }
}

/// A root's path after `${var}` substitution, when it is one the host can be
/// asked about (the IR reports the others, with their spans).
fn root_path(root: &Spanned<String>, src: &str, vars: &BTreeMap<String, String>) -> Option<String> {
    root_path_ref(root, src, vars).map(Cow::into_owned)
}

/// [`root_path`], borrowed from the spec when it names no var.
fn root_path_ref<'a>(
    root: &'a Spanned<String>,
    src: &str,
    vars: &BTreeMap<String, String>,
) -> Option<Cow<'a, str>> {
    let path = interpolated(root, src, vars).ok()?;
    (path.starts_with('/') && !path.contains('\0')).then_some(path)
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
            assert_eq!(e[0].code, crate::diag::code::ROOT_LINKED);
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
        assert_eq!(e[0].code, crate::diag::code::ROOT_UNCHECKABLE);
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
        assert_eq!(d[0].code, crate::diag::code::ROOT_UNCHECKABLE);
        assert_eq!(d[0].message, "the `filesystem.deny_read` root `/w/grader`: more than 4 entries under `/w/grader`, so sealc cannot check it for hard links");
        let d = run(Bounds {
            entries: 100,
            depth: 2,
        });
        assert_eq!(d[0].message, "the `filesystem.deny_read` root `/w/grader`: `/w/grader/1/2/3` is more than 2 directories below `/w/grader`, so sealc cannot check it for hard links");
        assert!(run(links::BOUNDS).is_empty());
    }
}
