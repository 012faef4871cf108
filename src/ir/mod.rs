//! Stage 3, **lower**: Spec + Facts → [`Ir`].
//!
//! The IR is validated, absolute, normalized, deduplicated and sorted. Every
//! invariant of the contract is checked here, and every violation is reported
//! (with the span of the offending spec value), not just the first. No IO, no
//! clock, no env: the same spec and facts always give the same IR.

use std::collections::{BTreeMap, BTreeSet};

pub use crate::paths::{
    ancestors_or_self, check_path, is_within, macos_aliases, PathProblem, PathSet, MAX_LITERAL,
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
    pub spellings: BTreeSet<String>,
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
    pub spellings: BTreeSet<String>,
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
    pub spellings: BTreeSet<String>,
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
    /// Names whose values a runner supplies at start.
    pub secrets: BTreeSet<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExecIr {
    pub sandbox_exec: String,
    pub bwrap: String,
    pub timeout: Option<(String, u64)>,
    pub limits: LimitsIr,
}

/// The run's limits (`[limits]`), each checked to be in range. The wall
/// limit is `limits.wall_seconds` or `exec.timeout.seconds` (never both).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LimitsIr {
    pub wall_seconds: Option<u64>,
    pub cpu_seconds: Option<u64>,
    pub memory_mib: Option<u64>,
    pub processes: Option<u64>,
    pub open_files: Option<u64>,
    pub file_size_mib: Option<u64>,
    pub output_bytes: Option<u64>,
}

impl LimitsIr {
    /// Every limit that is set, by its spec name.
    pub fn set(&self) -> Vec<(&'static str, u64)> {
        [
            ("wall_seconds", self.wall_seconds),
            ("cpu_seconds", self.cpu_seconds),
            ("memory_mib", self.memory_mib),
            ("processes", self.processes),
            ("open_files", self.open_files),
            ("file_size_mib", self.file_size_mib),
            ("output_bytes", self.output_bytes),
        ]
        .into_iter()
        .filter_map(|(k, v)| Some((k, v?)))
        .collect()
    }
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
}

/// `[codex.provider]`, resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProviderIr {
    pub base_url: String,
    pub env_key: Option<String>,
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
        l.diags.0.retain(|d| d.code != "sealc::root::absent");
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

/// Check an env var name: a portable shell name (`[A-Za-z_][A-Za-z0-9_]*`), so
/// it is never empty, holds no `=` or NUL, and cannot be read as an option of
/// `env`.
pub(crate) fn check_env_name(name: &str, span: &Span, diags: &mut Diagnostics) -> bool {
    let problem = if name.is_empty() {
        Some("is empty")
    } else if name.contains('=') {
        Some("holds `=`")
    } else if name.contains('\0') {
        Some("holds a NUL byte")
    } else if !crate::spec::is_var_name(name) {
        Some("is not a portable name")
    } else {
        None
    };
    if let Some(p) = problem {
        diags.push(
            Diagnostic::error(
                "sealc::env::name",
                format!("env var name {} {p}", quote(name)),
            )
            .at(span.clone())
            .label("not a usable env var name")
            .help(
                "env var names are letters, digits and `_`, not starting with a digit, e.g. `PATH`",
            ),
        );
        return false;
    }
    true
}

impl Lower<'_> {
    /// The target: `--platform` (recorded in the facts) over `target.platform`.
    fn platform(&self, spec: &Spec) -> Platform {
        self.facts.platform.unwrap_or(spec.platform())
    }

    fn run(&mut self, spec: &Spec) -> Ir {
        let base = spec.base();
        let roots = self.roots(spec);
        let launcher = self.launcher(spec, base, &roots);
        let network = self.network(spec);
        let env = self.env(spec, &network);
        let exec = self.exec(spec);
        self.builders_out_of_reach(spec, &roots, &exec);
        let codex = self.codex(spec, &roots, &env);
        let mut roots = roots;
        self.codex_protected(spec, &mut roots, &codex);
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
                        "sealc::ipc::unknown",
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

    fn roots(&mut self, spec: &Spec) -> Vec<Root> {
        let fs = &spec.filesystem;
        // A Codex seal also denies Codex's other config layers.
        let deny_read: Vec<Spanned<String>> = fs
            .deny_read
            .iter()
            .cloned()
            .chain(spec.codex_denied())
            .collect();
        let lists = [
            (RootKind::DenyRead, &deny_read),
            (RootKind::AllowRead, &fs.allow_read),
            (RootKind::MetadataOnly, &fs.metadata_only),
            (RootKind::Write, &fs.write),
            (RootKind::WriteDevice, &fs.write_devices),
        ];
        let mut out: Vec<Root> = Vec::new();
        for (kind, list) in lists {
            for entry in list {
                let Some(path) = self.path(entry, format_args!("`{}` entry", kind.key())) else {
                    continue;
                };
                if kind == RootKind::WriteDevice && !path.starts_with("/dev/") {
                    self.diags.push(
                        Diagnostic::error(
                            "sealc::path::device",
                            format!("device {} is not under `/dev`", quote(&path)),
                        )
                        .at(entry.span.clone())
                        .label("`write_devices` lists devices by exact path")
                        .help("list a device such as `/dev/null`, or move the path to `write`"),
                    );
                    continue;
                }
                let mut spellings = BTreeSet::from([path.clone()]);
                let mut real = self.facts.realpaths.get(&path).cloned();
                let mut host_kind = real.as_ref().and_then(|r| self.facts.kinds.get(r).copied());
                // A write root that does not exist yet is made when the seal
                // starts: mounted and allowed where it will be.
                let made = kind == RootKind::Write
                    && real.is_none()
                    && self.facts.absent_writes.contains_key(&path);
                if made {
                    real = self.facts.absent_writes.get(&path).cloned();
                    if self.platform(spec) == Platform::Linux {
                        host_kind = Some(PathKind::Dir);
                    }
                }
                // Absent, through a link: denied where it would appear too.
                let place = match kind {
                    RootKind::DenyRead | RootKind::MetadataOnly if real.is_none() => {
                        self.facts.absent_denied.get(&path)
                    }
                    RootKind::AllowRead if real.is_none() => self.facts.absent_allowed.get(&path),
                    _ => None,
                };
                if let Some(real) = real.as_ref().or(place) {
                    if let Err(problem) = check_path(real) {
                        self.diags.push(
                            Diagnostic::error(
                                "sealc::path::realpath",
                                format!(
                                    "{} resolves on this host to {}, which {}",
                                    quote(&path),
                                    quote(real),
                                    problem.message()
                                ),
                            )
                            .at(entry.span.clone())
                            .label("its realpath cannot be written into a profile")
                            .help("resolve the symlink to a plain path, or list a different root"),
                        );
                        continue;
                    }
                    spellings.insert(real.clone());
                }
                if self
                    .add_aliases(&mut spellings, entry, self.platform(spec))
                    .is_none()
                {
                    continue;
                }
                let root = Root {
                    kind,
                    path,
                    spellings,
                    real,
                    host_kind,
                    made,
                    origin: entry.value.clone(),
                    span: entry.span.clone(),
                    protect: None,
                };
                out.push(root);
            }
        }
        // Duplicates collapse; the smallest spelling of the entry is kept
        // as its origin (the first listed among equal ones: the sort is
        // stable), so the order of the list does not show. One sort, where
        // a map was an insert a root.
        out.sort_by(|a, b| (a.kind, &a.path, &a.origin).cmp(&(b.kind, &b.path, &b.origin)));
        out.dedup_by(|later, first| later.kind == first.kind && later.path == first.path);
        let mut roots: Vec<Root> = out;
        self.conflicts(&roots);
        let protected = self.protected(spec, &roots);
        roots.extend(protected);
        roots.sort_by(|a, b| (a.kind, &a.path).cmp(&(b.kind, &b.path)));
        if !self.symbolic {
            self.absent(&roots, self.platform(spec));
        }
        if self.platform(spec) == Platform::Linux && !self.symbolic {
            // Bubblewrap mounts by kind: a recorded realpath without one
            // cannot be hidden (only an edited record lacks it).
            for r in roots
                .iter()
                .filter(|r| r.real.is_some() && r.host_kind.is_none())
            {
                self.diags.push(
                    Diagnostic::error(
                        "sealc::linux::kind",
                        format!(
                            "the facts give {} a realpath but not what it is",
                            quote(&r.path)
                        ),
                    )
                    .at(r.span.clone())
                    .label("a Linux seal needs `facts.kinds` for every existing root")
                    .help("compile the spec again on the host instead of editing the record"),
                );
            }
            for r in roots.iter().filter(|r| r.kind.is_denied()) {
                if r.host_kind == Some(PathKind::File) {
                    self.diags.push(
                        Diagnostic::warning(
                            "sealc::linux::file-root",
                            format!(
                                "{} is a file: on Linux it is hidden by a mount on the file itself",
                                quote(&r.path)
                            ),
                        )
                        .at(r.span.clone())
                        .label("the host undoes it by replacing the file during the run")
                        .help("deny its directory instead: an atomic rewrite (such as a token refresh) swaps the file for one the sandbox can read"),
                    );
                }
            }
        }
        roots
    }

    /// The `filesystem.protect` roots: each path an entry names (a name
    /// below every write root that is a directory), placed where the facts
    /// say, checked to lie strictly inside a write root, to hold none, and
    /// not to lie in a denied root; duplicates collapse.
    fn protected(&mut self, spec: &Spec, roots: &[Root]) -> Vec<Root> {
        let platform = self.platform(spec);
        // Each entry is checked once, whatever it expands to.
        for entry in &spec.filesystem.protect {
            if !crate::facts::is_protect_name(&entry.value) {
                self.path(entry, "`filesystem.protect` entry");
                continue;
            }
            let Some(name) = self.subst(entry) else {
                continue;
            };
            let problem = if name.is_empty() || name.starts_with('/') {
                Some("is not a relative name".to_string())
            } else {
                check_path(&format!("/{name}"))
                    .err()
                    .map(|p| p.message().to_string())
            };
            if let Some(why) = problem {
                self.diags.push(
                    Diagnostic::error(
                        "sealc::path::invalid",
                        format!("`filesystem.protect` name {} {why}", quote(&entry.value)),
                    )
                    .at(entry.span.clone())
                    .label("a name is a relative path, applied below every write root")
                    .help("write a name such as `.git/hooks`, or an absolute path inside a write root"),
                );
            }
        }
        let writes: Vec<&Root> = roots.iter().filter(|r| r.kind == RootKind::Write).collect();
        let denied: Vec<&Root> = roots.iter().filter(|r| r.kind.is_denied()).collect();
        let paths = crate::facts::protected_paths(spec, self.src, &self.facts.vars, &|_| true);
        let mut out: BTreeMap<String, Root> = BTreeMap::new();
        let mut said: BTreeSet<(usize, usize, &'static str)> = BTreeSet::new();
        for pp in paths {
            let entry = pp.entry;
            let path = normalize(&pp.path);
            if check_path(&path).is_err() {
                continue; // said above, for the entry
            }
            let name = pp.below.is_some();
            // Where it is, or what holds its place.
            let (real, standing, kind) = match (
                self.facts.realpaths.get(&pp.path),
                self.facts.stand_ins.get(&pp.path),
            ) {
                (Some(real), _) => (
                    real.clone(),
                    Standing::Here,
                    self.facts.kinds.get(real).copied(),
                ),
                (None, Some(si)) if si.kind == PathKind::Dir => {
                    (si.at.clone(), Standing::StandIn, Some(PathKind::Dir))
                }
                (None, Some(si)) => (si.at.clone(), Standing::InPlace, Some(si.kind)),
                // A name below a write root that is not a directory.
                (None, None) if name => continue,
                // Placed in no directory write root when compiled.
                (None, None) => {
                    if said.insert((entry.span.start, entry.span.end, "sealc::protect::outside")) {
                        self.diags.push(outside(&path, entry.span.clone()));
                    }
                    continue;
                }
            };
            if let Err(problem) = check_path(&real) {
                self.diags.push(
                    Diagnostic::error(
                        "sealc::path::realpath",
                        format!(
                            "{} resolves on this host to {}, which {}",
                            quote(&path),
                            quote(&real),
                            problem.message()
                        ),
                    )
                    .at(entry.span.clone())
                    .label("its realpath cannot be written into a profile")
                    .help("resolve the symlink to a plain path, or protect a different path"),
                );
                continue;
            }
            // Where each write root is (lint's symbolic roots may have no place).
            let at = |w: &Root| w.real.clone().unwrap_or_else(|| w.path.clone());
            let holds_write = writes.iter().find(|w| {
                is_within(&at(w), &real) || w.spellings.iter().any(|sp| is_within(sp, &path))
            });
            if let Some(w) = holds_write {
                if said.insert((
                    entry.span.start,
                    entry.span.end,
                    "sealc::protect::write-root",
                )) {
                    let what = if w.real.as_deref() == Some(real.as_str()) || w.path == path {
                        "is"
                    } else {
                        "holds"
                    };
                    self.diags.push(
                        Diagnostic::error(
                            "sealc::protect::write-root",
                            format!(
                                "the protected path {} {what} the write root {}",
                                quote(&path),
                                quote(&w.origin)
                            ),
                        )
                        .at(entry.span.clone())
                        .label("it cannot be both read-only and writable")
                        .help("protect a path strictly inside the write root, or narrow `filesystem.write`"),
                    );
                }
                continue;
            }
            // The deepest write root that holds it, by where it is.
            let Some(w) = writes
                .iter()
                .filter(|w| is_within(&real, &at(w)))
                .max_by_key(|w| at(w).len())
            else {
                if said.insert((entry.span.start, entry.span.end, "sealc::protect::outside")) {
                    self.diags.push(outside(&path, entry.span.clone()));
                }
                continue;
            };
            let within = at(w);
            // Hidden inside its write root: a denied root below the write
            // root holds it (the write root re-allows what a shallower
            // denied root hides).
            let wspell: Vec<&String> = w.spellings.iter().chain(w.real.iter()).collect();
            let hidden = denied.iter().any(|d| {
                d.spellings.iter().any(|ds| {
                    (is_within(&real, ds) || is_within(&path, ds))
                        && wspell.iter().any(|ws| ds != *ws && is_within(ds, ws))
                })
            });
            if hidden {
                if !name
                    && said.insert((entry.span.start, entry.span.end, "sealc::protect::denied"))
                {
                    self.diags.push(
                        Diagnostic::advice(
                            "sealc::protect::denied",
                            format!(
                                "the protected path {} lies inside a denied or metadata-only root",
                                quote(&entry.value)
                            ),
                        )
                        .at(entry.span.clone())
                        .label("neither readable nor writable already: the entry changes nothing")
                        .help("remove it from `filesystem.protect`"),
                    );
                }
                continue;
            }
            // Its spellings: where it is, as written below its write root,
            // the path as named, and their macOS aliases.
            let mut spellings = BTreeSet::from([real.clone()]);
            spellings.insert(below_as_written(&w.path, &within, &real));
            if !spellings.iter().any(|sp| is_within(&path, sp)) {
                spellings.insert(path.clone());
            }
            if self.add_aliases(&mut spellings, entry, platform).is_none() {
                continue;
            }
            let root = Root {
                kind: RootKind::Protect,
                path: path.clone(),
                spellings,
                real: Some(real),
                host_kind: kind,
                made: false,
                origin: entry.value.clone(),
                span: entry.span.clone(),
                protect: Some(Protected {
                    standing,
                    within,
                    write_root: w.path.clone(),
                }),
            };
            // Duplicates collapse, keeping the smallest entry.
            match out.entry(path) {
                std::collections::btree_map::Entry::Vacant(v) => {
                    v.insert(root);
                }
                std::collections::btree_map::Entry::Occupied(mut o) => {
                    if root.origin < o.get().origin {
                        o.insert(root);
                    }
                }
            }
        }
        out.into_values().collect()
    }

    /// A Codex seal's config, which `sealc exec` installs in `CODEX_HOME`:
    /// protected like a `filesystem.protect` file, so a change during the
    /// run fails rather than being found after it. The Codex home must
    /// neither lie in nor hold a protected root (Codex writes it).
    fn codex_protected(&mut self, spec: &Spec, roots: &mut Vec<Root>, codex: &CodexIr) {
        let Some(home) = codex.home.as_ref().filter(|_| codex.sealed) else {
            return;
        };
        let Some(w) = roots
            .iter()
            .filter(|r| r.kind == RootKind::Write && is_within(home, &r.path) && *home != r.path)
            .max_by_key(|r| r.path.len())
        else {
            return;
        };
        let Some(wreal) = w.real.clone() else {
            return;
        };
        let below = &home[w.path.len()..];
        let home_at = normalize(&format!("{wreal}{below}"));
        let span = spec
            .env
            .set
            .get("CODEX_HOME")
            .or_else(|| spec.env.set.get("HOME"))
            .map(|s| s.span.clone())
            .or_else(|| spec.codex.span.clone());
        let clashes: Vec<&Root> = roots
            .iter()
            .filter(|r| r.kind == RootKind::Protect)
            .filter(|r| {
                let at = r.real.as_deref().unwrap_or(&r.path);
                is_within(at, &home_at)
                    || is_within(&home_at, at)
                    || is_within(&r.path, home)
                    || is_within(home, &r.path)
            })
            .collect();
        if let Some(r) = clashes.first() {
            let inside = is_within(&home_at, r.real.as_deref().unwrap_or(&r.path))
                || is_within(home, &r.path);
            let how = if inside { "lies in" } else { "holds" };
            self.diags.push(
                Diagnostic::error(
                    "sealc::protect::codex-home",
                    format!(
                        "the seal's CODEX_HOME {} {how} a protected path (`filesystem.protect` {})",
                        quote(home),
                        quote(&r.origin)
                    ),
                )
                .at_opt(span)
                .label("Codex writes its home, and `sealc exec` makes and removes it for every run")
                .help("set `CODEX_HOME` to a directory whose name no protect entry names (such as `${scratch}/home/codex`), or narrow `filesystem.protect`"),
            );
            return;
        }
        let config = format!("{home}/config.toml");
        let real = format!("{home_at}/config.toml");
        if check_path(&config).is_err() || check_path(&real).is_err() {
            return;
        }
        let mut spellings = BTreeSet::from([config.clone(), real.clone()]);
        if self.platform(spec) == Platform::Macos {
            let extra: Vec<String> = spellings.iter().filter_map(|s| macos_aliases(s)).collect();
            spellings.extend(extra.into_iter().filter(|a| check_path(a).is_ok()));
        }
        roots.push(Root {
            kind: RootKind::Protect,
            path: config.clone(),
            spellings,
            real: Some(real),
            host_kind: Some(PathKind::File),
            made: false,
            origin: config,
            span: span.unwrap_or(0..0),
            protect: Some(Protected {
                standing: Standing::CodexConfig,
                within: wreal,
                write_root: w.path.clone(),
            }),
        });
        roots.sort_by(|a, b| (a.kind, &a.path).cmp(&(b.kind, &b.path)));
    }

    /// Say which roots did not exist when compiled, and what that means.
    fn absent(&mut self, roots: &[Root], platform: Platform) {
        // The write root a path lies in, as written or where it is (the
        // first by path when several hold it): each of the path's
        // ancestors looked up, not every write root compared.
        let mut writes: BTreeMap<&str, &str> = BTreeMap::new();
        for w in roots.iter().filter(|w| w.kind == RootKind::Write) {
            for at in std::iter::once(w.path.as_str()).chain(w.real.as_deref()) {
                let first = writes.entry(at).or_insert(&w.path);
                *first = (*first).min(w.path.as_str());
            }
        }
        let write_holding = |p: &str| {
            ancestors_or_self(p)
                .filter_map(|a| writes.get(a).copied())
                .min()
                .map(str::to_string)
        };
        for r in roots.iter().filter(|r| r.kind != RootKind::Protect) {
            let provided = r.kind == RootKind::WriteDevice
                && platform == Platform::Linux
                && crate::known::DEV_SET.contains(&r.path.as_str());
            let in_write = (r.kind.is_denied() && r.real.is_none())
                .then(|| write_holding(&r.path))
                .flatten();
            let (message, label, help) = if let Some(w) = in_write {
                // Issue 22, finding 3: what a run can do with it meanwhile.
                let label = match platform {
                    Platform::Linux => "absent when compiled: nothing is mounted for it",
                    Platform::Macos => "absent when compiled: its rules apply by path",
                };
                let exposed = match platform {
                    Platform::Linux => "it is not hidden while it is absent: a run may create it (and link the files it makes there to names elsewhere in the write root), and anything a host process writes there during a run is readable by the agent",
                    Platform::Macos => "its rules apply by path if it appears during a run, but a run may be what makes it",
                };
                (
                    format!(
                        "`{}` root {} does not exist here, inside the write root {}: {exposed}; a later `sealc exec` refuses to start once it exists",
                        r.kind.key(),
                        quote(&r.path),
                        quote(&w)
                    ),
                    label.to_string(),
                    "make it before compiling (an empty directory will do), so it is hidden from the first run; otherwise correct the path",
                )
            } else if r.made {
                (
                    format!(
                        "write root {} does not exist here: `sealc exec` makes it at {} before the sandbox starts",
                        quote(&r.path),
                        quote(r.real.as_deref().unwrap_or(&r.path))
                    ),
                    "absent when compiled; made as a directory when the seal starts".to_string(),
                    "nothing to do if that is meant; otherwise correct the path",
                )
            } else if r.real.is_none() && !provided {
                let label = match platform {
                    Platform::Linux => "absent when compiled: nothing is mounted for it, and `sealc exec` refuses to start once it exists",
                    Platform::Macos => "absent when compiled: its rules apply by path if it appears",
                };
                (
                    format!(
                        "`{}` root {} does not exist here",
                        r.kind.key(),
                        quote(&r.path)
                    ),
                    label.to_string(),
                    "correct the path, or make it before compiling if it should exist",
                )
            } else {
                continue;
            };
            self.diags.push(
                Diagnostic::warning("sealc::root::absent", message)
                    .at(r.span.clone())
                    .label(label)
                    .help(help),
            );
        }
    }

    fn add_aliases(
        &mut self,
        spellings: &mut BTreeSet<String>,
        entry: &Spanned<String>,
        platform: Platform,
    ) -> Option<()> {
        if platform != Platform::Macos {
            return Some(());
        }
        let extra: Vec<String> = spellings.iter().filter_map(|s| macos_aliases(s)).collect();
        for a in extra {
            if let Err(problem) = check_path(&a) {
                self.diags.push(
                    path_error("its macOS alias", &entry.value, &a, &problem)
                        .at(entry.span.clone()),
                );
                return None;
            }
            spellings.insert(a);
        }
        Some(())
    }

    fn conflicts(&mut self, roots: &[Root]) {
        use RootKind::*;
        let contradicts = |a: RootKind, b: RootKind| {
            matches!(
                (a, b),
                (Write | WriteDevice, DenyRead | MetadataOnly)
                    | (DenyRead | MetadataOnly, Write | WriteDevice)
                    | (AllowRead, DenyRead | MetadataOnly)
                    | (DenyRead | MetadataOnly, AllowRead)
                    | (DenyRead, MetadataOnly)
                    | (MetadataOnly, DenyRead)
            )
        };
        // Roots that share a spelling, found through an index rather than by
        // comparing every pair.
        // One sorted list of (spelling, root), not a list a spelling.
        let mut pairs: Vec<(&str, usize)> = roots
            .iter()
            .enumerate()
            .flat_map(|(i, r)| r.spellings.iter().map(move |sp| (sp.as_str(), i)))
            .collect();
        pairs.sort_unstable();
        let mut by_spelling: Vec<(&str, Vec<usize>)> = Vec::new();
        for group in pairs.chunk_by(|a, b| a.0 == b.0) {
            if group.len() > 1 {
                by_spelling.push((group[0].0, group.iter().map(|(_, i)| *i).collect()));
            }
        }
        let mut seen: BTreeSet<(usize, usize)> = BTreeSet::new();
        for (shared, ids) in &by_spelling {
            for (x, &i) in ids.iter().enumerate() {
                for &j in &ids[x + 1..] {
                    let (a, b) = (&roots[i], &roots[j]);
                    if i == j || !contradicts(a.kind, b.kind) || !seen.insert((i.min(j), i.max(j)))
                    {
                        continue;
                    }
                    // Point at whichever entry comes later in the file.
                    let (first, second) = if a.span.start <= b.span.start {
                        (a, b)
                    } else {
                        (b, a)
                    };
                    // Name the path as written; a realpath or a macOS alias
                    // only when that is where the two entries meet.
                    let meet = if first.path == second.path {
                        String::new()
                    } else {
                        let common: Vec<&String> =
                            first.spellings.intersection(&second.spellings).collect();
                        let at = common
                            .iter()
                            .find(|s| ***s == first.path || ***s == second.path)
                            .or_else(|| common.iter().find(|s| macos_aliases(s).is_some()))
                            .map_or(*shared, |s| s.as_str());
                        if at == second.path.as_str() {
                            String::new()
                        } else {
                            format!(" (as {})", quote(at))
                        }
                    };
                    self.diags.push(
                        Diagnostic::error(
                            "sealc::root::conflict",
                            format!(
                                "{}{meet} is listed in both `{}` and `{}`",
                                quote(&second.path),
                                first.kind.key(),
                                second.kind.key()
                            ),
                        )
                        .at(second.span.clone())
                        .label(format!(
                            "also in `{}` as {}",
                            first.kind.key(),
                            quote(&first.origin)
                        ))
                        .help("a path cannot be both; keep it in one list"),
                    );
                }
            }
        }
    }

    fn launcher(&mut self, spec: &Spec, base: Base, roots: &[Root]) -> Vec<LauncherEntry> {
        let chain = &self.facts.launcher;
        let Some(l) = &spec.launcher else {
            if !chain.is_empty() {
                self.diags.push(Diagnostic::error(
                    "sealc::launcher::chain",
                    "the facts hold a launcher chain but the spec has no `[launcher]`",
                ));
            }
            return Vec::new();
        };
        if self.symbolic {
            self.path(&l.path, "`launcher.path`");
            return Vec::new();
        }
        let span = l.path.span.clone();
        let bad = |msg: String| {
            Diagnostic::error("sealc::launcher::chain", msg)
                .at(span.clone())
                .label("the recorded launcher chain")
                .help("recompile on a host where the launcher exists")
        };
        let Some(head) = self.subst(&l.path) else {
            return Vec::new();
        };
        if chain.is_empty() {
            self.diags.push(bad(format!(
                "no launcher chain is recorded for {}",
                quote(&head)
            )));
            return Vec::new();
        }
        if chain[0].path != normalize(&head) {
            self.diags.push(bad(format!(
                "the launcher chain starts at {}, not at the launcher {}",
                quote(&chain[0].path),
                quote(&head)
            )));
        }
        let denied = PathSet::new(
            roots
                .iter()
                .filter(|r| r.kind.is_denied())
                .flat_map(|r| r.spellings.iter()),
        );
        let mut out = Vec::new();
        for (i, link) in chain.iter().enumerate() {
            let last = i + 1 == chain.len();
            let shape_ok = match link.kind {
                LinkKind::Symlink => !last && link.target.is_some() && link.digest.is_none(),
                LinkKind::File => {
                    last && link.target.is_none() && link.digest.as_deref().is_some_and(is_digest)
                }
            };
            if !shape_ok {
                self.diags.push(bad(format!(
                    "launcher chain entry {} is not adjacent: each entry but the last is a symlink, the last a regular file with a digest",
                    quote(&link.path)
                )));
                continue;
            }
            if let (Some(target), Some(next)) = (&link.target, chain.get(i + 1)) {
                if !adjacent(&link.path, target, &next.path) {
                    self.diags.push(bad(format!(
                        "launcher chain entry {} links to {}, not to the next entry {}",
                        quote(&link.path),
                        quote(target),
                        quote(&next.path)
                    )));
                }
            }
            if let Err(problem) = check_path(&link.path) {
                self.diags.push(
                    path_error("launcher chain entry", &link.path, &link.path, &problem)
                        .at(span.clone()),
                );
                continue;
            }
            let mut spellings = BTreeSet::from([link.path.clone()]);
            if self.platform(spec) == Platform::Macos {
                spellings.extend(macos_aliases(&link.path));
            }
            let under_denied = spellings.iter().any(|s| denied.covers(s));
            out.push(LauncherEntry {
                path: link.path.clone(),
                spellings,
                kind: link.kind,
                target: link.target.clone(),
                reallow: under_denied || base == Base::DenyDefault,
            });
        }
        out
    }

    /// The programs that start the sandbox (`exec.bwrap` or
    /// `exec.sandbox_exec`, and `env`) and every entry of the launcher chain
    /// must lie outside every write root, by the path as written and by
    /// every place their symlink chains pass through: a run could replace
    /// them, and the next run would start what it wrote, `bwrap` as the
    /// caller and before any sandbox.
    fn builders_out_of_reach(&mut self, spec: &Spec, roots: &[Root], exec: &ExecIr) {
        let writes: Vec<&Root> = roots.iter().filter(|r| r.kind == RootKind::Write).collect();
        if writes.is_empty() {
            return;
        }
        let inside = |p: &str| -> Option<(&Root, &String)> {
            writes.iter().find_map(|r| {
                r.spellings
                    .iter()
                    .find(|s| is_within(p, s))
                    .map(|s| (*r, s))
            })
        };
        // (what, the path as written, the span to point at, if the spec names it)
        let (key, program, given) = match self.platform(spec) {
            Platform::Linux => ("`exec.bwrap`", &exec.bwrap, &spec.exec.bwrap),
            Platform::Macos => (
                "`exec.sandbox_exec`",
                &exec.sandbox_exec,
                &spec.exec.sandbox_exec,
            ),
        };
        let mut programs: Vec<(String, String, Option<Span>)> = Vec::new();
        if !program.is_empty() {
            programs.push((
                key.to_string(),
                program.clone(),
                given.as_ref().map(|g| g.span.clone()),
            ));
        }
        programs.push(("`env`".to_string(), crate::known::ENV_BIN.to_string(), None));
        let launcher_span = spec.launcher.as_ref().map(|l| l.path.span.clone());
        if let (Some(l), Some(span)) = (&spec.launcher, &launcher_span) {
            if self.symbolic {
                if let Ok(p) = interpolate(&l.path, self.src, &self.facts.vars) {
                    programs.push(("the launcher".into(), p, Some(span.clone())));
                }
            }
        }
        let mut found: Vec<(String, String, Option<Span>, &Root, String)> = Vec::new();
        for (what, path, span) in programs {
            let chain = self.facts.builders.get(&path);
            let places = std::iter::once(path.clone()).chain(
                chain
                    .into_iter()
                    .flatten()
                    .flat_map(|l| std::iter::once(l.path.clone()).chain(l.real.clone())),
            );
            for place in places {
                if let Some((root, spelling)) = inside(&place) {
                    let shown = if place == path {
                        quote(&path)
                    } else {
                        format!("{} (through {})", quote(&path), quote(&place))
                    };
                    found.push((what, shown, span, root, spelling.clone()));
                    break;
                }
            }
        }
        for link in &self.facts.launcher {
            let places = std::iter::once(&link.path).chain(link.real.as_ref());
            for place in places {
                if let Some((root, spelling)) = inside(place) {
                    found.push((
                        "the launcher chain entry".into(),
                        quote(place),
                        launcher_span.clone(),
                        root,
                        spelling.clone(),
                    ));
                    break;
                }
            }
        }
        for (what, shown, span, root, spelling) in found {
            let root_shown = if spelling == root.path {
                quote(&root.path)
            } else {
                format!("{} (as {})", quote(&root.path), quote(&spelling))
            };
            self.diags.push(
                Diagnostic::error(
                    "sealc::exec::in-write-root",
                    format!("{what} {shown} lies inside the write root {root_shown}"),
                )
                .at(span.unwrap_or_else(|| root.span.clone()))
                .label("a run could replace it, and the next run would start what it wrote, outside the sandbox")
                .help("install it outside every write root (such as under `/usr/bin`), or narrow `filesystem.write`"),
            );
        }
    }

    fn network(&mut self, spec: &Spec) -> NetIr {
        let n = &spec.network;
        let mode = spec.net_mode();
        if let (NetMode::Open, Some(m)) = (mode, &n.mode) {
            self.diags.push(
                Diagnostic::warning(
                    "sealc::network::open",
                    "`network.mode = \"open\"` leaves the network unrestricted",
                )
                .at(m.span.clone())
                .label("every connection is allowed, on macOS and on Linux")
                .help("use `mode = \"allowlist\"` with `hosts` and `ports`: sealc's own proxy enforces them"),
            );
        }
        let proxy = match (&n.proxy, mode) {
            (Some(p), NetMode::Proxy | NetMode::Allowlist) => self.proxy(p),
            (None, NetMode::Allowlist) => Some(Proxy {
                host: DEFAULT_PROXY_HOST.to_string(),
                port: DEFAULT_PROXY_PORT,
            }),
            (None, NetMode::Proxy) => {
                let span = n.mode.as_ref().map(|m| m.span.clone());
                self.diags.push(
                    Diagnostic::error(
                        "sealc::network::proxy",
                        "`network.mode = \"proxy\"` needs `network.proxy`",
                    )
                    .at_opt(span)
                    .help("add `proxy = \"127.0.0.1:PORT\"`, or use `mode = \"allowlist\"`, where sealc runs the proxy"),
                );
                None
            }
            (Some(p), _) => {
                self.diags.push(
                    Diagnostic::error(
                        "sealc::network::proxy",
                        format!(
                            "`network.proxy` is set but `network.mode` is `{}`",
                            mode.as_str()
                        ),
                    )
                    .at(p.span.clone())
                    .label("unused unless the mode is `proxy` or `allowlist`")
                    .help("set `mode = \"proxy\"` or `mode = \"allowlist\"`, or remove `proxy`"),
                );
                None
            }
            (None, _) => None,
        };
        let mut hosts = BTreeSet::new();
        for h in &n.hosts {
            match crate::netpolicy::canonical_entry(&h.value) {
                Ok(c) => {
                    hosts.insert(c);
                }
                Err(why) => self.diags.push(
                    Diagnostic::error(
                        "sealc::network::host",
                        format!("{} cannot be allowed: {why}", quote(&h.value)),
                    )
                    .at(h.span.clone())
                    .label("a name, `*.name` for its subdomains, or an IP literal")
                    .help("write a host such as `api.openai.com`, `*.oaiusercontent.com` or `192.0.2.7`"),
                ),
            }
        }
        let mut ports = BTreeSet::new();
        for p in &n.ports {
            match u16::try_from(p.value) {
                Ok(v) if v >= 1 => {
                    ports.insert(v);
                }
                _ => self
                    .diags
                    .push(port_error(p.value.to_string(), p.span.clone())),
            }
        }
        let mut allow_ranges = BTreeSet::new();
        for r in &n.allow_ranges {
            match crate::netpolicy::Cidr::parse(&r.value) {
                Ok(c) => {
                    allow_ranges.insert(c);
                }
                Err(why) => self.diags.push(
                    Diagnostic::error(
                        "sealc::network::range",
                        format!("{} is not an address range: {why}", quote(&r.value)),
                    )
                    .at(r.span.clone())
                    .label("CIDR: an address and a prefix length")
                    .help("write a range such as `10.20.0.0/16` or `fd00::/8`"),
                ),
            }
        }
        if mode == NetMode::Allowlist {
            let span = n.mode.as_ref().map(|m| m.span.clone());
            for (list, empty) in [("hosts", n.hosts.is_empty()), ("ports", n.ports.is_empty())] {
                if empty {
                    self.diags.push(
                        Diagnostic::error(
                            "sealc::network::allowlist",
                            format!("`network.mode = \"allowlist\"` with no `network.{list}` lets nothing through"),
                        )
                        .at_opt(span.clone())
                        .help(format!("list the {list} the agent may reach, or use `mode = \"none\"`")),
                    );
                }
            }
        } else if let Some(r) = n.allow_ranges.first() {
            self.diags.push(
                Diagnostic::error(
                    "sealc::network::allowlist",
                    format!(
                        "`network.allow_ranges` is set but `network.mode` is `{}`",
                        mode.as_str()
                    ),
                )
                .at(r.span.clone())
                .label("only sealc's own proxy reads it")
                .help("set `mode = \"allowlist\"`, or remove `allow_ranges`"),
            );
        }
        NetIr {
            mode,
            proxy,
            hosts,
            ports,
            allow_ranges,
        }
    }

    fn proxy(&mut self, p: &Spanned<String>) -> Option<Proxy> {
        // A URL: the spec names the address, and sealc writes the URL.
        if let Some((scheme, rest)) = p.value.split_once("://") {
            let address = rest.trim_end_matches('/');
            let help = if scheme.eq_ignore_ascii_case("http") && !address.contains('/') {
                format!("did you mean `proxy = \"{address}\"`? sealc sets `HTTPS_PROXY`, `HTTP_PROXY` and `ALL_PROXY` to `http://` and that address")
            } else {
                "write the proxy's loopback `host:port`, such as `127.0.0.1:8080`: sealc sets `HTTPS_PROXY`, `HTTP_PROXY` and `ALL_PROXY` to `http://` and that address, so it must be an HTTP proxy".to_string()
            };
            self.diags.push(
                Diagnostic::error(
                    "sealc::network::proxy",
                    format!("proxy {} is a URL, not a `host:port`", quote(&p.value)),
                )
                .at(p.span.clone())
                .label("`network.proxy` is the address of an HTTP proxy on this machine")
                .help(help),
            );
            return None;
        }
        let v = self.subst(p)?;
        let Some((host, port)) = v.rsplit_once(':') else {
            self.diags.push(
                Diagnostic::error(
                    "sealc::network::proxy",
                    format!("proxy {} has no port", quote(&v)),
                )
                .at(p.span.clone())
                .help("write `127.0.0.1:PORT`"),
            );
            return None;
        };
        if !matches!(host, "127.0.0.1" | "localhost" | "[::1]") {
            self.diags.push(
                Diagnostic::error(
                    "sealc::network::proxy",
                    format!("proxy host {} is not loopback", quote(host)),
                )
                .at(p.span.clone())
                .label("the agent may reach only a proxy on this machine")
                .help("use `127.0.0.1`, `localhost` or `[::1]`; seatbelt can name no other host"),
            );
            return None;
        }
        if self.symbolic && port.contains("${") {
            return Some(Proxy {
                host: host.to_string(),
                port: 0,
            });
        }
        match port.parse::<u16>() {
            Ok(n) if n >= 1 && port.bytes().all(|b| b.is_ascii_digit()) => Some(Proxy {
                host: host.to_string(),
                port: n,
            }),
            _ => {
                self.diags
                    .push(port_error(port.to_string(), p.span.clone()));
                None
            }
        }
    }

    fn env(&mut self, spec: &Spec, net: &NetIr) -> EnvIr {
        let e = &spec.env;
        let mut lists: BTreeMap<String, Vec<(&'static str, Span)>> = BTreeMap::new();
        let mut note = |name: &str, list: &'static str, span: Span| {
            lists
                .entry(name.to_string())
                .or_default()
                .push((list, span));
        };
        for p in &e.pass {
            note(&p.value, "pass", p.span.clone());
        }
        for (k, span) in &e.set_keys {
            note(k, "set", span.clone());
        }
        for s in &e.secret {
            note(&s.value, "secret", s.span.clone());
        }
        if net.mode.proxied() {
            let why = match net.mode {
                NetMode::Allowlist => "network.mode = \"allowlist\"",
                _ => "network.mode = \"proxy\"",
            };
            for v in PROXY_VARS {
                note(v, why, 0..0);
            }
        }
        let loader_ok = e.allow_loader_vars.as_ref().is_some_and(|a| a.value);
        let mut ok_names = BTreeSet::new();
        for (name, places) in &lists {
            let spanned: Vec<&(&str, Span)> = places.iter().filter(|(_, s)| s.end > 0).collect();
            if let Some((_, span)) = spanned.first() {
                if !check_env_name(name, span, &mut self.diags) {
                    continue;
                }
            }
            if is_loader_var(name) && !loader_ok {
                for (list, span) in &spanned {
                    self.diags.push(
                        Diagnostic::error(
                            "sealc::env::loader",
                            format!(
                                "`env.{list}` names `{}`, a variable that changes what programs load",
                                visible(name)
                            ),
                        )
                        .at(span.clone())
                        .label("a loader or libc variable")
                        .help("remove it, or set `env.allow_loader_vars = true` if the command inside the sandbox needs it: it then reaches that command only"),
                    );
                }
            }
            let kinds: BTreeSet<&str> = places.iter().map(|(k, _)| *k).collect();
            if kinds.len() > 1 {
                let (last_kind, last_span) = spanned
                    .last()
                    .map(|(k, s)| (*k, s.clone()))
                    .unwrap_or(("", 0..0));
                let others: Vec<&str> = kinds.iter().copied().filter(|k| *k != last_kind).collect();
                self.diags.push(
                    Diagnostic::error(
                        "sealc::env::duplicate",
                        format!("env var `{}` is in both `{}` and `{}`", visible(name), others.join("`, `"), last_kind),
                    )
                    .at(last_span)
                    .label("listed more than once")
                    .help("an env var crosses one way only: keep it in one of `pass`, `set`, `secret`"),
                );
                continue;
            }
            ok_names.insert(name.clone());
        }
        let mut vars = BTreeMap::new();
        for p in &e.pass {
            if !ok_names.contains(&p.value) {
                continue;
            }
            match self.facts.env.get(&p.value) {
                Some(Some(v)) => {
                    if v.contains('\0') {
                        self.diags.push(nul_error(&p.value, p.span.clone()));
                    } else {
                        vars.insert(p.value.clone(), v.clone());
                    }
                }
                Some(None) => {}
                None if self.symbolic => {}
                None => self.diags.push(
                    Diagnostic::error(
                        "sealc::env::absent",
                        format!("no captured value is recorded for `pass` var `{}`", p.value),
                    )
                    .at(p.span.clone())
                    .help("recompile to capture it"),
                ),
            }
        }
        for (k, v) in &e.set {
            if !ok_names.contains(k) {
                continue;
            }
            let Some(val) = self.subst(v) else { continue };
            if val.contains('\0') {
                self.diags.push(nul_error(k, v.span.clone()));
                continue;
            }
            vars.insert(k.clone(), val);
        }
        if let (true, Some(p)) = (net.mode.proxied(), &net.proxy) {
            let url = format!("http://{}:{}", p.host, p.port);
            for v in PROXY_VARS {
                let bypass = v.eq_ignore_ascii_case("NO_PROXY");
                vars.insert(
                    v.to_string(),
                    if bypass { String::new() } else { url.clone() },
                );
            }
        }
        let secrets = e
            .secret
            .iter()
            .filter(|s| ok_names.contains(&s.value))
            .map(|s| s.value.clone())
            .collect();
        EnvIr { vars, secrets }
    }

    fn exec(&mut self, spec: &Spec) -> ExecIr {
        let x = &spec.exec;
        let sandbox_exec = match &x.sandbox_exec {
            Some(s) => self.path(s, "`exec.sandbox_exec`").unwrap_or_default(),
            None => SANDBOX_EXEC.to_string(),
        };
        let bwrap = match &x.bwrap {
            Some(s) => self.path(s, "`exec.bwrap`").unwrap_or_default(),
            None => BWRAP.to_string(),
        };
        let timeout = x.timeout.as_ref().and_then(|t| {
            let bin = self.path(&t.bin, "`exec.timeout.bin`");
            let secs = t.seconds.value;
            if !(1..=MAX_TIMEOUT_SECS).contains(&secs) {
                self.diags.push(
                    Diagnostic::error(
                        "sealc::spec::value",
                        format!("timeout of `{secs}` seconds is out of range"),
                    )
                    .at(t.seconds.span.clone())
                    .label(format!("1 to {MAX_TIMEOUT_SECS}"))
                    .help("give a positive number of seconds, at most one week"),
                );
                return None;
            }
            Some((bin?, secs as u64))
        });
        let limits = self.limits(spec, timeout.as_ref().map(|(_, s)| *s));
        ExecIr {
            sandbox_exec,
            bwrap,
            timeout,
            limits,
        }
    }

    fn limits(&mut self, spec: &Spec, timeout: Option<u64>) -> LimitsIr {
        let l = &spec.limits;
        let mut check = |key: &str, v: &Option<crate::spec::Spanned<i64>>, min: i64, max: i64| {
            let v = v.as_ref()?;
            if !(min..=max).contains(&v.value) {
                self.diags.push(
                    Diagnostic::error(
                        "sealc::spec::value",
                        format!("`limits.{key}` of `{}` is out of range", v.value),
                    )
                    .at(v.span.clone())
                    .label(format!("{min} to {max}"))
                    .help(format!("write `{key} = {min}` or more, at most {max}")),
                );
                return None;
            }
            Some(v.value as u64)
        };
        let wall = check("wall_seconds", &l.wall_seconds, 1, MAX_TIMEOUT_SECS);
        let out = LimitsIr {
            wall_seconds: wall,
            cpu_seconds: check("cpu_seconds", &l.cpu_seconds, 1, MAX_TIMEOUT_SECS),
            memory_mib: check("memory_mib", &l.memory_mib, 1, 1 << 20),
            processes: check("processes", &l.processes, 1, 65536),
            open_files: check("open_files", &l.open_files, 16, 1 << 20),
            file_size_mib: check("file_size_mib", &l.file_size_mib, 1, 1 << 20),
            output_bytes: check("output_bytes", &l.output_bytes, 1, 1 << 40),
        };
        if let (Some(w), Some(_)) = (&l.wall_seconds, timeout) {
            self.diags.push(
                Diagnostic::error(
                    "sealc::limits::wall-twice",
                    "the wall-clock limit is given twice, as `limits.wall_seconds` and `exec.timeout`",
                )
                .at(w.span.clone())
                .label("one wall-clock limit")
                .help("keep `limits.wall_seconds` and remove `exec.timeout` (its older spelling)"),
            );
        }
        out
    }

    fn codex(&mut self, spec: &Spec, roots: &[Root], env: &EnvIr) -> CodexIr {
        let c = &spec.codex;
        if let Some(m) = &c.model {
            if m.value.is_empty() || m.value.chars().any(char::is_control) {
                self.diags.push(
                    Diagnostic::error(
                        "sealc::spec::value",
                        format!("model {} is not a model name", quote(&m.value)),
                    )
                    .at(m.span.clone())
                    .help("write a model name such as `gpt-5.5`"),
                );
            }
        }
        if let Some(r) = &c.reasoning_effort {
            if !REASONING_EFFORTS.contains(&r.value.as_str()) {
                let mut d = Diagnostic::error(
                    "sealc::spec::value",
                    format!("`codex.reasoning_effort` cannot be {}", quote(&r.value)),
                )
                .at(r.span.clone())
                .label(format!("one of: {}", REASONING_EFFORTS.join(", ")));
                d = match crate::diag::did_you_mean(&r.value, REASONING_EFFORTS) {
                    Some(m) => d.help(format!("did you mean `{m}`?")),
                    None => d.help(format!("use one of: {}", REASONING_EFFORTS.join(", "))),
                };
                self.diags.push(d);
            }
        }
        let versions = self.codex_versions(spec);
        let profile = self.codex_sandbox(spec, roots, env, &versions);
        let workspaces = self.codex_workspace(spec, roots);
        let provider = self.codex_provider(spec, env);
        let home = if spec.is_codex_seal() {
            self.codex_home(spec, roots, env)
        } else {
            None
        };
        let credentials = self.codex_credentials(spec, roots);
        CodexIr {
            sealed: spec.is_codex_seal(),
            versions,
            model: c.model.as_ref().map(|m| m.value.clone()),
            reasoning_effort: c.reasoning_effort.as_ref().map(|r| r.value.clone()),
            provider,
            workspaces,
            trust_workspace: c.allow_project_config.as_ref().is_some_and(|b| b.value),
            profile,
            home,
            credentials,
        }
    }

    /// `[codex] credentials`: a file outside every write root (by every
    /// spelling), which `sealc exec` copies into each run's fresh home.
    fn codex_credentials(&mut self, spec: &Spec, roots: &[Root]) -> Option<String> {
        let c = spec.codex.credentials.as_ref()?;
        let path = self.path(c, "`codex.credentials`")?;
        if let Some(w) = roots
            .iter()
            .filter(|r| r.kind == RootKind::Write)
            .find(|r| r.spellings.iter().any(|sp| is_within(&path, sp)))
        {
            self.diags.push(
                Diagnostic::error(
                    "sealc::codex::credentials",
                    format!(
                        "the Codex credentials {} lie inside the write root {}",
                        quote(&path),
                        quote(&w.origin)
                    ),
                )
                .at(c.span.clone())
                .label("`sealc exec` copies this file into every run's Codex home")
                .help("name a file outside every write root (the agent could put anything in its place), such as `${home}/.codex/auth.json`"),
            );
            return None;
        }
        Some(path)
    }

    /// `[codex] sandbox`: `profile` only when every meaning of the seal has
    /// a Codex permission-profile spelling on every targeted release.
    fn codex_sandbox(
        &mut self,
        spec: &Spec,
        roots: &[Root],
        env: &EnvIr,
        versions: &[String],
    ) -> bool {
        const SANDBOXES: [&str; 2] = ["outer", "profile"];
        let Some(v) = &spec.codex.sandbox else {
            return false;
        };
        if !SANDBOXES.contains(&v.value.as_str()) {
            let mut d = Diagnostic::error(
                "sealc::spec::value",
                format!("`codex.sandbox` cannot be {}", quote(&v.value)),
            )
            .at(v.span.clone())
            .label("one of: outer, profile");
            d = match crate::diag::did_you_mean(&v.value, SANDBOXES) {
                Some(m) => d.help(format!("did you mean `{m}`?")),
                None => d.help("use `outer` or `profile`"),
            };
            self.diags.push(d);
            return false;
        }
        if v.value != "profile" {
            return false;
        }
        for r in roots {
            if let Some(why) = codex_inexpressible(r) {
                self.diags.push(
                    Diagnostic::error(
                        "sealc::codex::profile",
                        format!(
                            "Codex {} cannot express the {} root {} in a permission profile",
                            versions.join(", "),
                            r.kind.key(),
                            quote(&r.path)
                        ),
                    )
                    .at(r.span.clone())
                    .label(why)
                    .help("change or drop this root (a `metadata_only` one can be `deny_read`), or use `sandbox = \"outer\"`"),
                );
            }
        }
        // Codex's sandbox takes the search right below a denied directory.
        for r in roots.iter().filter(|r| r.kind == RootKind::AllowRead) {
            if roots.iter().any(|d| {
                d.kind == RootKind::DenyRead && is_within(&r.path, &d.path) && d.path != r.path
            }) {
                self.diags.push(
                    Diagnostic::warning(
                        "sealc::codex::reallow",
                        format!(
                            "Codex {} refuses reads of {} inside its denied directory: stricter than the seal",
                            versions.join(", "),
                            quote(&r.path)
                        ),
                    )
                    .at(r.span.clone())
                    .label("a `deny` entry takes the search right of everything below it, whatever a more specific `read` says")
                    .help("the outer seal still means it; deny the denied directory's other entries instead to let Codex read it too"),
                );
            }
        }
        let old: Vec<&str> = versions
            .iter()
            .filter(|v| {
                semver::Version::parse(v).is_ok_and(|v| {
                    semver::Version::parse(crate::known::PATH_SINCE).is_ok_and(|s| v < s)
                })
            })
            .map(String::as_str)
            .collect();
        if env.vars.contains_key("PATH") && !old.is_empty() {
            let mut d = Diagnostic::warning(
                "sealc::codex::sandbox-path",
                format!(
                    "Codex {} cannot start its own sandbox with the allowlist's PATH",
                    old.join(", ")
                ),
            )
            .label("it starts its helper (`codex-linux-sandbox`) by the PATH of `shell_environment_policy`, which lacks Codex's helper directory")
            .help(format!(
                "target Codex {} or newer (`version = \">={}\"`), or leave PATH out of the allowlist",
                crate::known::PATH_SINCE,
                crate::known::PATH_SINCE
            ));
            if let Some(sp) = spec.codex.version.as_ref().map(|v| v.span.clone()) {
                d = d.at(sp);
            }
            self.diags.push(d);
        }
        true
    }

    /// `[codex] version`: the tested releases it selects (default the newest).
    fn codex_versions(&mut self, spec: &Spec) -> Vec<String> {
        use crate::known::{select_versions, DEFAULT_VERSION, TESTED};
        let Some(v) = &spec.codex.version else {
            return vec![DEFAULT_VERSION.to_string()];
        };
        let Some(want) = self.subst(v) else {
            return vec![DEFAULT_VERSION.to_string()];
        };
        if self.symbolic && want.contains("${") {
            return vec![DEFAULT_VERSION.to_string()]; // lint: known only on a host
        }
        match select_versions(&want) {
            Ok(vs) => {
                let vs: Vec<String> = vs.into_iter().map(str::to_string).collect();
                let old = crate::known::tools_refused_on_linux(&vs);
                if self.platform(spec) == Platform::Linux
                    && spec.net_mode() != NetMode::Open
                    && !old.is_empty()
                {
                    self.diags.push(
                        Diagnostic::warning(
                            "sealc::codex::tools",
                            format!(
                                "Codex {} cannot start its tools under this Linux seal",
                                old.join(", ")
                            ),
                        )
                        .at(v.span.clone())
                        .label("it makes a SOCK_SEQPACKET unix socket pair for every tool process, which the seal refuses")
                        .help(format!(
                            "target Codex {} or newer (`version = \">={}\"`)",
                            crate::known::LINUX_TOOLS_SINCE,
                            crate::known::LINUX_TOOLS_SINCE
                        )),
                    );
                }
                vs
            }
            Err(why) => {
                self.diags.push(
                    Diagnostic::error(
                        "sealc::codex::version",
                        format!("`codex.version` {}: {why}", quote(&want)),
                    )
                    .at(v.span.clone())
                    .label(format!("tested: {}", TESTED.join(", ")))
                    .help("name a tested release, or a range such as `>=0.137, <0.172` over them"),
                );
                vec![DEFAULT_VERSION.to_string()]
            }
        }
    }

    /// `[codex] workspace`: one of the write roots; every spelling of it.
    fn codex_workspace(&mut self, spec: &Spec, roots: &[Root]) -> Vec<String> {
        let Some(ws) = &spec.codex.workspace else {
            return Vec::new();
        };
        let Some(path) = self.path(ws, "`codex.workspace`") else {
            return Vec::new();
        };
        match roots
            .iter()
            .find(|r| r.kind == RootKind::Write && r.path == path)
        {
            Some(r) => r.spellings.iter().cloned().collect(),
            None => {
                self.diags.push(
                    Diagnostic::error(
                        "sealc::codex::workspace",
                        format!("the Codex workspace {} is not a write root", quote(&path)),
                    )
                    .at(ws.span.clone())
                    .label("Codex works and records trust here")
                    .help("list it under `filesystem.write`, or name one of the write roots"),
                );
                Vec::new()
            }
        }
    }

    /// `[codex.provider]`: an http(s) base URL, and a key that is a secret.
    fn codex_provider(&mut self, spec: &Spec, env: &EnvIr) -> Option<ProviderIr> {
        let p = spec.codex.provider.as_ref()?;
        let url = self.subst(&p.base_url)?;
        let scheme_ok = url
            .strip_prefix("http://")
            .or_else(|| url.strip_prefix("https://"))
            .is_some_and(|rest| !rest.is_empty());
        if !scheme_ok || url.chars().any(|c| c.is_whitespace() || c.is_control()) {
            self.diags.push(
                Diagnostic::error(
                    "sealc::codex::provider",
                    format!(
                        "`codex.provider.base_url` {} is not an http(s) URL",
                        quote(&url)
                    ),
                )
                .at(p.base_url.span.clone())
                .help("write a URL such as `http://127.0.0.1:${proxy_port}/v1`"),
            );
            return None;
        }
        if let Some(k) = &p.env_key {
            if !env.secrets.contains(&k.value) {
                self.diags.push(
                    Diagnostic::error(
                        "sealc::codex::provider",
                        format!("`codex.provider.env_key` {} is not an `env.secret`", quote(&k.value)),
                    )
                    .at(k.span.clone())
                    .label("Codex reads the API key from this variable")
                    .help(format!("list {} under `env.secret`, so the runner supplies it and nothing records it", quote(&k.value))),
                );
            }
        }
        Some(ProviderIr {
            base_url: url,
            env_key: p.env_key.as_ref().map(|k| k.value.clone()),
        })
    }

    /// The seal's `CODEX_HOME`, where `sealc exec` installs the config: it
    /// must lie in a write root (nothing else is written on the host).
    fn codex_home(&mut self, spec: &Spec, roots: &[Root], env: &EnvIr) -> Option<String> {
        let home = match (env.vars.get("CODEX_HOME"), env.vars.get("HOME")) {
            (Some(h), _) => h.clone(),
            (None, Some(h)) => format!("{}/.codex", h.trim_end_matches('/')),
            (None, None) => return None,
        };
        let inside = roots
            .iter()
            .filter(|r| r.kind == RootKind::Write)
            .any(|r| is_within(&home, &r.path) && home != r.path);
        if !inside {
            let span = spec
                .env
                .set
                .get("CODEX_HOME")
                .or_else(|| spec.env.set.get("HOME"))
                .map(|s| s.span.clone())
                .or_else(|| spec.codex.span.clone());
            let mut d = Diagnostic::error(
                "sealc::codex::home",
                format!(
                    "the seal's CODEX_HOME {} lies strictly below no write root",
                    quote(&home)
                ),
            )
            .label("`sealc exec` makes the Codex home fresh for every run there, and Codex writes its state there")
            .help("set `CODEX_HOME` (or `HOME`) in `env.set` to a directory below a write root (not the write root itself: it is made and removed with each run)");
            if let Some(span) = span {
                d = d.at(span);
            }
            self.diags.push(d);
            return None;
        }
        Some(home)
    }

    fn asserts(&mut self, spec: &Spec) -> Vec<AssertIr> {
        let mut out = Vec::new();
        for a in &spec.asserts {
            let shape = |msg: &str| {
                Diagnostic::error("sealc::assert::shape", msg.to_string())
                    .at(a.span.clone())
                    .help("write `allow = \"OP\"` or `deny = \"OP\"`, and `paths = [...]` or `remote = [...]`")
            };
            let (verdict, op) = match (&a.allow, &a.deny) {
                (Some(op), None) => (Verdict::Allow, op),
                (None, Some(op)) => (Verdict::Deny, op),
                _ => {
                    self.diags.push(shape(
                        "an `[[assert]]` names exactly one of `allow` and `deny`",
                    ));
                    continue;
                }
            };
            if crate::ops::find(&op.value).is_none() {
                // The list itself is `sealc explain --list-ops`: wrapped in
                // a diagnostic, its names would break at their hyphens.
                let (near, _) = crate::ops::unknown(&op.value);
                let list = format!(
                    "`sealc explain --list-ops` lists the {} operations modelled, and which seal answers each",
                    crate::ops::OPERATIONS.len()
                );
                self.diags.push(
                    Diagnostic::error(
                        "sealc::assert::op",
                        format!("{} is not an operation sealc models", quote(&op.value)),
                    )
                    .at(op.span.clone())
                    .label("not a modelled operation")
                    .help(match near {
                        Some(m) => format!("did you mean `{m}`? {list}"),
                        None => list,
                    }),
                );
                continue;
            }
            // For one platform only: left out of the other's seal.
            if let Some(p) = &a.platform {
                match p.value.as_str() {
                    "macos" | "linux" => {
                        if p.value != self.platform(spec).as_str() {
                            continue;
                        }
                    }
                    other => {
                        self.diags.push(
                            Diagnostic::error(
                                "sealc::assert::shape",
                                format!("assertion platform {} is not `macos` or `linux`", quote(other)),
                            )
                            .at(p.span.clone())
                            .label("not a platform")
                            .help("write `platform = \"macos\"` or `platform = \"linux\"`, or leave it out to prove it on both"),
                        );
                        continue;
                    }
                }
            }
            let named = crate::ops::NameKind::of(&op.value);
            let subjects: Vec<Subject> = match (
                a.paths.is_empty(),
                a.remote.is_empty(),
                a.names.is_empty(),
            ) {
                (false, true, true) => a
                    .paths
                    .iter()
                    .filter_map(|p| self.path(p, "`assert` path").map(Subject::Path))
                    .collect(),
                (true, false, true) => a
                    .remote
                    .iter()
                    .filter_map(|r| self.subst(r).map(Subject::Remote))
                    .collect(),
                (true, true, false) if named.is_some() => a
                    .names
                    .iter()
                    .filter_map(|n| self.subst(n).map(Subject::Name))
                    .collect(),
                (true, true, false) => {
                    self.diags.push(
                        Diagnostic::error(
                            "sealc::assert::shape",
                            format!("{} is not applied to a name", quote(&op.value)),
                        )
                        .at(op.span.clone())
                        .label("an operation on paths or endpoints")
                        .help("`names` go with `mach-lookup`, `appleevent-send`, `iokit-open`, the `ipc-posix` and `sysctl` operations, `user-preference-read`/`-write` and `signal`; give `paths` or `remote` for this one"),
                    );
                    continue;
                }
                _ => {
                    self.diags.push(shape(
                        "an `[[assert]]` names exactly one of `paths`, `remote` and `names`, not empty",
                    ));
                    continue;
                }
            };
            out.push(AssertIr {
                verdict,
                op: op.value.clone(),
                subjects,
                span: a.span.clone(),
            });
        }
        out
    }
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
                let mut spellings = BTreeSet::from([up.to_string()]);
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
/// Why a root has no spelling in a Codex permission profile, if it has none.
pub fn codex_inexpressible(r: &Root) -> Option<&'static str> {
    match r.kind {
        RootKind::MetadataOnly => Some(
            "a profile entry is `read`, `write` or `deny`: there is no \"metadata but not data\"",
        ),
        RootKind::WriteDevice if !crate::known::DEV_SET.contains(&r.path.as_str()) => Some(
            "Codex's sandbox shows only its minimal /dev (null, zero, full, random, urandom, tty), and a writable file entry makes it fail to start",
        ),
        RootKind::Write if r.host_kind == Some(PathKind::File) => Some(
            "a writable file entry makes Codex's sandbox fail to start (it mounts stand-ins for `.git`, `.codex` and the like below every write root)",
        ),
        _ => None,
    }
}

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
        "sealc::protect::outside",
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
        "sealc::env::value",
        format!("the value of env var `{}` holds a NUL byte", visible(name)),
    )
    .at(span)
    .help("a NUL cannot cross exec; remove it")
}

fn port_error(port: String, span: Span) -> Diagnostic {
    Diagnostic::error(
        "sealc::network::port",
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
        "sealc::path::invalid",
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
                .filter(|d| d.code == "sealc::root::absent")
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
