//! Stage 3, **lower**: Spec + Facts → [`Ir`].
//!
//! The IR is validated, absolute, normalized, deduplicated and sorted. Every
//! invariant of the contract is checked here, and every violation is reported
//! (with the span of the offending spec value), not just the first. No IO, no
//! clock, no env: the same spec and facts always give the same IR.

mod asserts;
mod codex;
mod isolation;
pub use codex::{codex_inexpressible, HeldKey};
pub use mcp::{McpIr, DEFAULT_STARTS, FIRST_PORT, MAX_STARTS};
mod launcher;
mod mcp;
mod network;
mod outputs;
pub use outputs::Output;
mod reset;
mod roots;
mod run;
pub use run::{ExecIr, LimitsIr};
mod spellings;
pub use spellings::Spellings;

use std::collections::{BTreeMap, BTreeSet};

pub use crate::paths::{
    ancestors_of_lengths, ancestors_or_self, check_path, is_within, macos_aliases, PathProblem,
    PathSet, MAX_LITERAL,
};

use crate::diag::{quote, visible, Diagnostic, Diagnostics, Span};
use crate::facts::{normalize, Facts, LinkKind, PathKind};
use crate::spec::{interpolate, Base, NetMode, Platform, Spanned, Spec};

/// What a filesystem root means. The order is the order of the spec's lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RootKind {
    DenyRead,
    AllowRead,
    MetadataOnly,
    Write,
    WriteDevice,
    /// Read-only inside a write root (`filesystem.protect`).
    Protect,
}

impl RootKind {
    /// The spec key this kind of root is listed under.
    pub fn key(self) -> &'static str {
        match self {
            RootKind::DenyRead => "filesystem.deny_read",
            RootKind::AllowRead => "filesystem.allow_read",
            RootKind::MetadataOnly => "filesystem.metadata_only",
            RootKind::Write => "filesystem.write",
            RootKind::WriteDevice => "filesystem.write_devices",
            RootKind::Protect => "filesystem.protect",
        }
    }
    /// Denies reading (data or all of it).
    pub fn is_denied(self) -> bool {
        matches!(self, RootKind::DenyRead | RootKind::MetadataOnly)
    }
}

/// A filesystem root with every spelling it is emitted under.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Root {
    pub kind: RootKind,
    /// The path as written, after `${var}` substitution.
    pub path: String,
    /// The path as written, its recorded realpath, and the macOS aliases of both.
    pub spellings: Spellings,
    /// The recorded realpath, when the root exists on the compiling host.
    pub real: Option<String>,
    /// What the realpath is (recorded for a Linux target only).
    pub host_kind: Option<PathKind>,
    /// A write root absent when compiled: `real` is where `sealc exec`
    /// makes it (a directory) before the sandbox starts.
    pub made: bool,
    /// The spec text of the entry, for comments in the artifacts.
    pub origin: String,
    pub span: Span,
    /// A protected root (`filesystem.protect`): what holds it and where.
    pub protect: Option<Protected>,
    /// Not listed in the spec: the package of npm's native Codex, the
    /// launcher, shown read-only with it (an `allow_read` root).
    pub launcher_package: bool,
}

impl Root {
    /// The spec entry it comes from, as the artifacts name it:
    /// `filesystem.write "${run}/ws"`; for a Codex seal's config, the
    /// `[codex]` table and where the home is.
    pub fn entry(&self) -> String {
        match self.protect.as_ref().map(|p| p.standing) {
            Some(Standing::CodexConfig) => format!(
                "[codex] config in CODEX_HOME \"{}\"",
                visible(self.path.trim_end_matches("/config.toml"))
            ),
            _ if self.launcher_package => format!(
                "launcher.path: its npm package \"{}\"",
                visible(&self.origin)
            ),
            _ => format!("{} \"{}\"", self.kind.key(), visible(&self.origin)),
        }
    }
}

/// A protected root: `Root::path` is the path the entry names, `Root::real`
/// the object kept read-only (`Root::host_kind` its kind), which is that
/// path's realpath unless something else holds its place.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Protected {
    pub standing: Standing,
    /// The realpath (or, absent when compiled, the place) of the deepest
    /// write root that holds it.
    pub within: String,
    /// That write root as written, after substitution.
    pub write_root: String,
}

/// What a protected root's object is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Standing {
    /// The path itself, as it was when compiled.
    Here,
    /// Absent when compiled: an empty directory `sealc exec` makes at
    /// `Root::real` (the first missing component) for the run, and removes
    /// after it.
    StandIn,
    /// Absent, and an object on the way cannot hold it (a worktree's `.git`
    /// file): that object, protected in its place.
    InPlace,
    /// The Codex config that `sealc exec` installs in `CODEX_HOME` before
    /// the run.
    CodexConfig,
}

/// A directory between a write root and a protected root in it: a fixed
/// name for the run (on Linux bound onto itself, so a mount point; on
/// macOS not unlinked), so the protected root cannot be moved away and
/// replaced by a writable one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pin {
    /// Its realpath (or, made by `sealc exec`, its place).
    pub path: String,
    /// Its realpath, as written below its write root, and their aliases.
    pub spellings: Spellings,
    /// Made by `sealc exec` before the run (the Codex home and the
    /// directories above it), not there when compiled.
    pub made: bool,
    /// The spec entries of the protected roots it holds ([`Root::entry`]).
    pub holds: BTreeSet<String>,
    /// The realpath (or place) of the write root it lies in.
    pub within: String,
}

/// One entry of the launcher chain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LauncherEntry {
    pub path: String,
    pub spellings: Spellings,
    pub kind: LinkKind,
    /// For a symlink, the recorded link text.
    pub target: Option<String>,
    /// Re-allowed by literal path because it lies under a denied root (or the base denies it).
    pub reallow: bool,
}

/// The loopback proxy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Proxy {
    /// As written: `127.0.0.1`, `localhost` or `[::1]`.
    pub host: String,
    pub port: u16,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NetIr {
    pub mode: NetMode,
    pub proxy: Option<Proxy>,
    /// Canonical entries (see [`crate::netpolicy::canonical_entry`]).
    pub hosts: BTreeSet<String>,
    pub ports: BTreeSet<u16>,
    /// Special ranges a resolved name may lie in (`allowlist` mode).
    pub allow_ranges: BTreeSet<crate::netpolicy::Cidr>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EnvIr {
    /// Exactly the names and values that cross `env -i`.
    pub vars: BTreeMap<String, String>,
    /// Names whose values a runner supplies at start, and that cross into
    /// the command's environment.
    pub secrets: BTreeSet<String>,
    /// Secrets a runner supplies that sealc keeps to itself
    /// (`codex.provider.hold_key`): its proxy adds them to requests on the
    /// host side; they never cross.
    pub held: BTreeSet<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodexIr {
    /// The spec has a `[codex]` table: Codex's other layers are denied and
    /// `sealc exec` installs the config into [`CodexIr::home`].
    pub sealed: bool,
    /// The tested Codex releases the config is for, oldest first.
    pub versions: Vec<String>,
    pub model: Option<String>,
    pub reasoning_effort: Option<String>,
    pub provider: Option<ProviderIr>,
    /// Every spelling of the workspace (as written, its realpath, aliases).
    pub workspaces: Vec<String>,
    /// `allow_project_config`: the workspace is recorded as trusted.
    pub trust_workspace: bool,
    /// `sandbox = "profile"`: the config also carries the seal's meaning as
    /// a Codex permission profile (`backend::codex_profile`).
    pub profile: bool,
    /// The seal's `CODEX_HOME` (`env` `CODEX_HOME`, else `HOME` + `/.codex`),
    /// for a Codex seal; always strictly below a write root: `sealc exec`
    /// makes it fresh for every run.
    pub home: Option<String>,
    /// `[codex] credentials`: the file `sealc exec` copies into the fresh
    /// home as `auth.json`; outside every write root.
    pub credentials: Option<String>,
    /// `[codex.mcp_servers]`, in name order.
    pub mcp: Vec<McpIr>,
}

/// `[codex.provider]`, resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProviderIr {
    pub base_url: String,
    pub env_key: Option<String>,
    /// `hold_key`: sealc's proxy adds the key to requests under this
    /// route; Codex is given a plain-`http` base URL to the same host and
    /// port, which only that proxy serves.
    pub held: Option<HeldKey>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Allow,
    Deny,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Subject {
    Path(String),
    Remote(String),
    /// A name in the operation's namespace (`crate::ops::NameKind`).
    Name(String),
}

/// An `[[assert]]`, resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AssertIr {
    pub verdict: Verdict,
    pub op: String,
    pub subjects: Vec<Subject>,
    pub span: Span,
}

/// The validated seal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ir {
    pub name: String,
    pub description: Option<String>,
    pub platform: Platform,
    pub base: Base,
    /// Sorted by kind, then path; unique per (kind, path).
    pub roots: Vec<Root>,
    pub launcher: Vec<LauncherEntry>,
    pub network: NetIr,
    pub env: EnvIr,
    pub exec: ExecIr,
    pub codex: CodexIr,
    pub asserts: Vec<AssertIr>,
    /// The directories between each write root and the protected roots in
    /// it, sorted by path.
    pub pins: Vec<Pin>,
    /// The entries of the sealed IPC table (`crate::ipc::SEALED`) the spec
    /// re-allows (`ipc.allow`), by name.
    pub ipc_allowed: BTreeSet<String>,
}

impl Ir {
    /// The write root (as written in the spec) whose realpath holds `path`,
    /// if any.
    pub fn write_root_holding(&self, path: &str) -> Option<String> {
        self.roots
            .iter()
            .filter(|r| r.kind == RootKind::Write)
            .find(|r| r.real.as_deref().is_some_and(|real| is_within(path, real)))
            .map(|r| r.origin.clone())
    }

    /// The root that hides `path` (absolute, as the host names it), if the
    /// deepest root holding it is a denied or stat-only one: what the seal
    /// takes away there, for run-time messages.
    pub fn hiding_root(&self, path: &str) -> Option<&Root> {
        self.roots
            .iter()
            .filter(|r| r.kind != RootKind::WriteDevice)
            .filter_map(|r| {
                r.spellings
                    .iter()
                    .chain(r.real.as_ref())
                    .filter(|s| is_within(path, s))
                    .map(String::len)
                    .max()
                    .map(|depth| (depth, r))
            })
            .max_by_key(|(depth, _)| *depth)
            .map(|(_, r)| r)
            .filter(|r| matches!(r.kind, RootKind::DenyRead | RootKind::MetadataOnly))
    }

    pub fn roots_of(&self, kind: RootKind) -> impl Iterator<Item = &Root> {
        self.roots.iter().filter(move |r| r.kind == kind)
    }

    /// The protected roots that change what the seal allows, one per
    /// object (two entries may name one stand-in), sorted by that object:
    /// one inside another protected object is read-only already.
    pub fn protected(&self) -> Vec<&Root> {
        protected_of(&self.roots)
    }

    /// The stand-ins `sealc exec` makes (empty directories, for the run):
    /// the protected roots of [`Ir::protected`] absent when compiled, each
    /// with the write root (its realpath or place) that holds it, sorted.
    pub fn stand_ins(&self) -> Vec<(&str, &str)> {
        self.protected()
            .into_iter()
            .filter_map(|r| {
                let p = r.protect.as_ref()?;
                (p.standing == Standing::StandIn).then_some((r.real.as_deref()?, p.within.as_str()))
            })
            .collect()
    }
}

/// [`Ir::protected`] of these roots.
fn protected_of(roots: &[Root]) -> Vec<&Root> {
    {
        let mut by_object: BTreeMap<&str, &Root> = BTreeMap::new();
        for r in roots.iter().filter(|r| r.kind == RootKind::Protect) {
            let Some(at) = r.real.as_deref() else {
                continue;
            };
            match by_object.get(at) {
                Some(o) if (&o.origin, &o.path) <= (&r.origin, &r.path) => {}
                _ => {
                    by_object.insert(at, r);
                }
            }
        }
        let objects: Vec<&str> = by_object.keys().copied().collect();
        by_object
            .into_iter()
            .filter(|(at, _)| !objects.iter().any(|o| o != at && is_within(at, o)))
            .map(|(_, r)| r)
            .collect()
    }
}

pub use crate::known::{BWRAP, SANDBOX_EXEC};
/// The address of sealc's own proxy in `allowlist` mode, unless `network.proxy` says.
pub const DEFAULT_PROXY_HOST: &str = "127.0.0.1";
/// See [`DEFAULT_PROXY_HOST`].
pub const DEFAULT_PROXY_PORT: u16 = 3128;
/// The proxy variables set in `proxy` and `allowlist` mode, each also in
/// lowercase: programs differ in which they read (curl takes `http_proxy`
/// only in lowercase). The bypass lists (`NO_PROXY`, `no_proxy`) are set
/// empty: nothing goes around the proxy.
pub const PROXY_VARS: [&str; 8] = [
    "ALL_PROXY",
    "HTTPS_PROXY",
    "HTTP_PROXY",
    "NO_PROXY",
    "all_proxy",
    "http_proxy",
    "https_proxy",
    "no_proxy",
];
/// The reasoning efforts Codex accepts.
pub const REASONING_EFFORTS: [&str; 6] = ["none", "minimal", "low", "medium", "high", "xhigh"];
/// The longest timeout accepted: one week.
pub const MAX_TIMEOUT_SECS: i64 = 7 * 24 * 3600;

/// Lower a parsed spec and its facts to the IR. Warnings come back with it.
pub fn lower(spec: &Spec, src: &str, facts: &Facts) -> Result<(Ir, Diagnostics), Diagnostics> {
    lower_mode(spec, src, facts, false)
}

/// Lower for `lint`: `facts` hold symbolic values (`/${name}`) for vars that
/// need the host, and no host facts; the checks that need them are skipped.
pub fn lower_symbolic(
    spec: &Spec,
    src: &str,
    facts: &Facts,
) -> Result<(Ir, Diagnostics), Diagnostics> {
    lower_mode(spec, src, facts, true)
}

fn lower_mode(
    spec: &Spec,
    src: &str,
    facts: &Facts,
    symbolic: bool,
) -> Result<(Ir, Diagnostics), Diagnostics> {
    let mut l = Lower {
        src,
        facts,
        diags: Diagnostics::default(),
        symbolic,
    };
    let ir = l.run(spec);
    if l.diags.has_errors() {
        // Which roots are absent matters for a seal that compiles; next to
        // errors it is noise.
        l.diags
            .0
            .retain(|d| d.code != crate::diag::code::ROOT_ABSENT);
        return Err(l.diags.sorted());
    }
    Ok((ir, l.diags.sorted()))
}

struct Lower<'a> {
    src: &'a str,
    facts: &'a Facts,
    diags: Diagnostics,
    /// Lint mode: vars without a host-free value are symbolic (`/${name}`),
    /// and checks that need host facts (launcher chain, captured env) are skipped.
    symbolic: bool,
}

pub(crate) use crate::spec::check_env_name;

impl Lower<'_> {
    /// The target: `--platform` (recorded in the facts) over `target.platform`.
    fn platform(&self, spec: &Spec) -> Platform {
        self.facts.platform.unwrap_or(spec.platform())
    }

    fn run(&mut self, spec: &Spec) -> Ir {
        let base = spec.base();
        let roots = self.roots(spec);
        let (launcher, package) = self.launcher(spec, base, &roots);
        let roots = match package {
            Some(p) => {
                let mut roots = roots;
                let at = roots.partition_point(|r| (r.kind, &r.path) < (p.kind, &p.path));
                roots.insert(at, p);
                roots
            }
            None => roots,
        };
        let network = self.network(spec);
        let env = self.env(spec, &network);
        let exec = self.exec(spec);
        self.builders_out_of_reach(spec, &roots, &exec);
        let mut codex = self.codex(spec, &roots, &env, &network);
        codex.mcp = self.mcp(spec, &roots, &network);
        let mut roots = roots;
        self.codex_protected(spec, &mut roots, &codex);
        self.isolation(spec, &roots, &network);
        let exec = ExecIr {
            reset: self.reset(spec, &roots),
            outputs: self.outputs(spec, &roots),
            ..exec
        };
        let pins = pins(&roots, self.platform(spec));
        let asserts = self.asserts(spec);
        let ipc_allowed = self.ipc_allowed(spec);
        Ir {
            name: spec.name.value.clone(),
            description: spec.description.as_ref().map(|d| d.value.clone()),
            platform: self.platform(spec),
            base,
            roots,
            launcher,
            network,
            env,
            exec,
            codex,
            asserts,
            pins,
            ipc_allowed,
        }
    }

    /// `ipc.allow`: each a name in the sealed table.
    fn ipc_allowed(&mut self, spec: &Spec) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        for entry in &spec.ipc.allow {
            let Some(name) = self.subst(entry) else {
                continue;
            };
            if crate::ipc::find(&name).is_none() {
                let names = crate::ipc::SEALED.iter().map(|e| e.name());
                let near = crate::diag::did_you_mean(&name, names);
                self.diags.push(
                    Diagnostic::error(
                        crate::diag::code::IPC_UNKNOWN,
                        format!("{} is not an entry of the sealed IPC table", quote(&name)),
                    )
                    .at(entry.span.clone())
                    .label("not sealed, so there is nothing to re-allow")
                    .help(match near {
                        Some(m) => format!("did you mean `{m}`? docs/ipc.md lists the entries"),
                        None => "docs/ipc.md lists the entries; a service not in it is left as the base leaves it".to_string(),
                    }),
                );
                continue;
            }
            out.insert(name);
        }
        out
    }

    fn subst(&mut self, s: &Spanned<String>) -> Option<String> {
        match interpolate(s, self.src, &self.facts.vars) {
            // A symbolic value `/${x}` after a `/` would read as `//`.
            Ok(v) if self.symbolic => Some(v.replace("//${", "/${")),
            Ok(v) => Some(v),
            Err(d) => {
                self.diags.push(d);
                None
            }
        }
    }

    /// Substitute and check a path; the error names the written and resolved forms.
    fn path(&mut self, s: &Spanned<String>, what: impl std::fmt::Display) -> Option<String> {
        let p = self.subst(s)?;
        if let Err(problem) = check_path(&p) {
            self.diags
                .push(path_error(&what.to_string(), &s.value, &p, &problem).at(s.span.clone()));
            return None;
        }
        Some(p)
    }
}

/// The write root that holds `path` by any of its spellings: where the
/// agent could put anything in its place.
fn write_root_holding<'r>(roots: &'r [Root], path: &str) -> Option<&'r Root> {
    roots
        .iter()
        .filter(|r| r.kind == RootKind::Write)
        .find(|r| r.spellings.iter().any(|sp| is_within(path, sp)))
}

/// The directories strictly between each protected root that changes
/// the seal ([`Ir::protected`]) and the write root that holds it, by
/// where they are, merged and sorted.
fn pins(roots: &[Root], platform: Platform) -> Vec<Pin> {
    let mut out: BTreeMap<String, Pin> = BTreeMap::new();
    for r in protected_of(roots) {
        let (Some(p), Some(at)) = (&r.protect, r.real.as_deref()) else {
            continue;
        };
        let made = p.standing == Standing::CodexConfig;
        let mut cur = at;
        loop {
            let up = match cur.rfind('/') {
                Some(0) | None => "/",
                Some(i) => &cur[..i],
            };
            if up == cur || up.len() <= p.within.len() || !is_within(up, &p.within) {
                break;
            }
            let pin = out.entry(up.to_string()).or_insert_with(|| {
                let mut spellings = Spellings::one(up.to_string());
                spellings.insert(below_as_written(&p.write_root, &p.within, up));
                if platform == Platform::Macos {
                    let extra: Vec<String> =
                        spellings.iter().filter_map(|s| macos_aliases(s)).collect();
                    spellings.extend(extra.into_iter().filter(|a| check_path(a).is_ok()));
                }
                Pin {
                    path: up.to_string(),
                    spellings,
                    made,
                    holds: BTreeSet::new(),
                    within: p.within.clone(),
                }
            });
            pin.made &= made;
            pin.holds.insert(r.entry());
            cur = up;
        }
    }
    out.into_values().collect()
}

/// The dynamic loader's and libc's variables: each changes what a program
/// loads or reads (a library, a module, a locale, a hosts file) before its
/// `main` runs.
pub const LOADER_VARS: [&str; 7] = [
    "GCONV_PATH",
    "GLIBC_TUNABLES",
    "HOSTALIASES",
    "LOCPATH",
    "MALLOC_TRACE",
    "NLSPATH",
    "RESOLV_HOST_CONF",
];

/// `LD_*`, `DYLD_*` or one of [`LOADER_VARS`].
pub fn is_loader_var(name: &str) -> bool {
    name.starts_with("LD_") || name.starts_with("DYLD_") || LOADER_VARS.contains(&name)
}

/// `real`, which lies in the write root whose realpath (or place) is
/// `within`, spelled below that root as written (`written`).
fn below_as_written(written: &str, within: &str, real: &str) -> String {
    let rest = if within == "/" {
        real
    } else {
        &real[within.len().min(real.len())..]
    };
    normalize(&format!("{written}/{rest}"))
}

/// A protected path outside every (directory) write root.
fn outside(path: &str, span: Span) -> Diagnostic {
    Diagnostic::error(
        crate::diag::code::PROTECT_OUTSIDE,
        format!(
            "the protected path {} lies inside no write root",
            quote(path)
        ),
    )
    .at(span)
    .label("read-only already: only write roots can be written")
    .help("remove the entry, or name a path inside a directory write root")
}

fn nul_error(name: &str, span: Span) -> Diagnostic {
    Diagnostic::error(
        crate::diag::code::ENV_VALUE,
        format!("the value of env var `{}` holds a NUL byte", visible(name)),
    )
    .at(span)
    .help("a NUL cannot cross exec; remove it")
}

fn port_error(port: String, span: Span) -> Diagnostic {
    Diagnostic::error(
        crate::diag::code::NETWORK_PORT,
        format!("port {} is outside 1-65535", quote(&port)),
    )
    .at(span)
    .label("not a TCP port")
    .help("give a port from 1 to 65535")
}

fn path_error(what: &str, written: &str, resolved: &str, problem: &PathProblem) -> Diagnostic {
    let subject = if written == resolved {
        quote(resolved)
    } else {
        format!("{} (from {})", quote(resolved), quote(written))
    };
    let mut d = Diagnostic::error(
        crate::diag::code::PATH_INVALID,
        format!("{what} {subject} {}", problem.message()),
    )
    .label(problem.label());
    if let Some(h) = problem.help(resolved) {
        d = d.help(h);
    }
    d
}

fn is_digest(s: &str) -> bool {
    s.strip_prefix("sha256:").is_some_and(|h| {
        h.len() == 64
            && h.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// Does the symlink at `path` with text `target` lead to `next`? An absolute
/// target must normalize to `next`; a relative one is resolved against the
/// link's directory, which the host may have resolved further, so its final
/// name must match.
fn adjacent(path: &str, target: &str, next: &str) -> bool {
    if target.starts_with('/') {
        return normalize(target) == next;
    }
    let dir = match path.rfind('/') {
        Some(0) | None => "",
        Some(i) => &path[..i],
    };
    let lexical = normalize(&format!("{dir}/{target}"));
    lexical == next || lexical.rsplit('/').next() == next.rsplit('/').next()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ancestors() {
        let all = |p| ancestors_or_self(p).collect::<Vec<_>>();
        assert_eq!(all("/a/b/c"), ["/a/b/c", "/a/b", "/a", "/"]);
        assert_eq!(all("/a"), ["/a", "/"]);
        assert_eq!(all("/"), ["/"]);
    }

    #[test]
    fn path_set() {
        let paths = ["/a/b".to_string(), "/x".to_string()];
        let s = PathSet::new(&paths);
        assert!(s.covers("/a/b") && s.covers("/a/b/c") && s.covers("/x/y/z"));
        assert!(!s.covers("/a") && !s.covers("/a/bc") && !s.covers("/y"));
        assert!(s.covers_strictly("/a/b/c") && !s.covers_strictly("/a/b"));
        let slash = ["/".to_string()];
        let root = PathSet::new(&slash);
        assert!(root.covers("/q") && root.covers_strictly("/q") && !root.covers_strictly("/"));
    }

    #[test]
    fn within() {
        assert!(is_within("/a/b", "/a"));
        assert!(is_within("/a", "/a"));
        assert!(!is_within("/ab", "/a"));
        assert!(is_within("/x", "/"));
    }

    /// Issue 22, finding 3: an absent denied root inside a write root is
    /// said to be unhidden while absent, and to be made before compiling.
    #[test]
    fn an_absent_denied_root_in_a_write_root_says_what_a_run_can_do_with_it() {
        let host = crate::facts::FakeHost::new().dir("/w");
        for platform in ["linux", "macos"] {
            let src = format!("version = 1\nname = \"a\"\n[target]\nplatform = \"{platform}\"\n[filesystem]\nwrite = [\"/w\"]\ndeny_read = [\"/w/grader\", \"/elsewhere\"]\n");
            let c = crate::compile("a.toml", &src, &Vec::new(), &host).unwrap();
            let absent: Vec<&crate::diag::Diagnostic> = c
                .warnings
                .0
                .iter()
                .filter(|d| d.code == crate::diag::code::ROOT_ABSENT)
                .collect();
            assert_eq!(absent.len(), 2, "{absent:?}");
            let inside = absent
                .iter()
                .find(|d| d.message.contains("`/w/grader`"))
                .unwrap();
            assert!(
                inside
                    .message
                    .contains("does not exist here, inside the write root `/w`"),
                "{}",
                inside.message
            );
            assert!(
                inside
                    .message
                    .ends_with("a later `sealc exec` refuses to start once it exists"),
                "{}",
                inside.message
            );
            if platform == "linux" {
                assert!(
                    inside
                        .message
                        .contains("it is not hidden while it is absent: a run may create it"),
                    "{}",
                    inside.message
                );
                assert!(inside.message.contains("anything a host process writes there during a run is readable by the agent"), "{}", inside.message);
            }
            assert!(inside
                .help
                .as_deref()
                .unwrap()
                .starts_with("make it before compiling"));
            let outside = absent
                .iter()
                .find(|d| d.message.contains("`/elsewhere`"))
                .unwrap();
            assert!(!outside.message.contains("inside the write root"));
        }
    }

    #[test]
    fn adjacency() {
        assert!(adjacent("/a/b", "c", "/a/c"));
        assert!(adjacent("/a/b", "/x/y", "/x/y"));
        assert!(adjacent("/a/b", "../lib/c", "/real/lib/c"));
        assert!(!adjacent("/a/b", "c", "/a/d"));
    }
}
