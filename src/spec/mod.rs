//! Stage 1, **parse**: TOML text → [`Spec`].
//!
//! The spec is what the user means, portable and checked into a repo. Every
//! user value keeps its byte span so later stages can point at it. Parsing
//! collects every problem (unknown keys with "did you mean", wrong types,
//! missing keys) instead of stopping at the first. Nothing here reads the host.

mod interp;
mod mcp;
mod read;
pub mod shape;

use std::borrow::Cow;
use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use interp::{interpolate, interpolated, reference_names, references, Reference};
pub use mcp::McpServer;
pub(crate) use read::is_var_name;

use crate::diag::{quote, Diagnostic, Diagnostics, Span};

/// A path as the schema accepts it: absolute (or starting with a `${var}`),
/// no empty, `.` or `..` segment, no trailing `/`, no `"`, `\` or control
/// character. (No look-ahead: Taplo's regex engine has none.)
pub const PATH_PATTERN: &str = r#"^(/|(/([^./"\\\x00-\x1f\x7f][^/"\\\x00-\x1f\x7f]*|\.[^./"\\\x00-\x1f\x7f][^/"\\\x00-\x1f\x7f]*|\.\.[^/"\\\x00-\x1f\x7f]+)|\$\{[A-Za-z_][A-Za-z0-9_]*\})(/([^./"\\\x00-\x1f\x7f][^/"\\\x00-\x1f\x7f]*|\.[^./"\\\x00-\x1f\x7f][^/"\\\x00-\x1f\x7f]*|\.\.[^/"\\\x00-\x1f\x7f]+))*)$"#;
/// A `filesystem.protect` entry: a path as [`PATH_PATTERN`] has it, or a
/// name (a relative path, such as `.git/hooks`): no empty, `.` or `..`
/// segment, no trailing `/`, no `"`, `\` or control character.
pub const PROTECT_PATTERN: &str = r#"^(/|(/([^./"\\\x00-\x1f\x7f][^/"\\\x00-\x1f\x7f]*|\.[^./"\\\x00-\x1f\x7f][^/"\\\x00-\x1f\x7f]*|\.\.[^/"\\\x00-\x1f\x7f]+)|\$\{[A-Za-z_][A-Za-z0-9_]*\})(/([^./"\\\x00-\x1f\x7f][^/"\\\x00-\x1f\x7f]*|\.[^./"\\\x00-\x1f\x7f][^/"\\\x00-\x1f\x7f]*|\.\.[^/"\\\x00-\x1f\x7f]+))*|([^/./"\\\x00-\x1f\x7f][^/"\\\x00-\x1f\x7f]*|\.[^./"\\\x00-\x1f\x7f][^/"\\\x00-\x1f\x7f]*|\.\.[^/"\\\x00-\x1f\x7f]+)(/([^./"\\\x00-\x1f\x7f][^/"\\\x00-\x1f\x7f]*|\.[^./"\\\x00-\x1f\x7f][^/"\\\x00-\x1f\x7f]*|\.\.[^/"\\\x00-\x1f\x7f]+))*)$"#;
/// A device path under `/dev`.
pub const DEVICE_PATTERN: &str = r#"^/dev/[^/"\\\x00-\x1f\x7f]+(/[^/"\\\x00-\x1f\x7f]+)*$"#;
/// An env var name: a portable shell name.
pub const ENV_NAME_PATTERN: &str = r"^[A-Za-z_][A-Za-z0-9_]*$";
/// A loopback proxy address; the port may be a `${var}`.
pub const PROXY_PATTERN: &str =
    r"^(127\.0\.0\.1|localhost|\[::1\]):([0-9]{1,5}|\$\{[A-Za-z_][A-Za-z0-9_]*\})$";
/// A host name (non-ASCII labels are converted with IDNA); a leading `*.`
/// or `.` allows every subdomain, not the name itself. Or a bracketed IPv6
/// literal; or a value with a `${var}` in it, checked once substituted.
pub const HOST_PATTERN: &str = r"^((\*?\.)?([A-Za-z0-9]|[^\x00-\x7f])(([A-Za-z0-9-]|[^\x00-\x7f])*([A-Za-z0-9]|[^\x00-\x7f]))?(\.([A-Za-z0-9]|[^\x00-\x7f])(([A-Za-z0-9-]|[^\x00-\x7f])*([A-Za-z0-9]|[^\x00-\x7f]))?)*|\[[0-9A-Fa-f:.]+\]|[^\x00-\x1f\x7f]*\$\{[A-Za-z_][A-Za-z0-9_]*\}[^\x00-\x1f\x7f]*)$";
/// An address range in CIDR notation (`10.0.0.0/8`, `fd00::/8`).
pub const RANGE_PATTERN: &str = r"^[0-9A-Fa-f:.]+/[0-9]{1,3}$";
/// Does an env var name look like it holds a secret (`GITHUB_TOKEN`,
/// `AWS_SECRET_ACCESS_KEY`, `OPENAI_API_KEY`)? Such a name belongs in
/// `env.secret`, whose value nothing records.
pub fn looks_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    ["KEY", "TOKEN", "SECRET", "PASSWORD", "AUTH"]
        .iter()
        .any(|w| upper.contains(w))
}

/// A seal name.
pub const NAME_PATTERN: &str = r"^[A-Za-z0-9._-]{1,64}$";

/// Codex's system config directory (its system, managed and requirements layers).
pub const CODEX_SYSTEM_DIR: &str = "/etc/codex";

/// A user value with the byte range it came from in the spec text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spanned<T> {
    pub value: T,
    pub span: Span,
}

impl<T> Spanned<T> {
    pub fn new(value: T, span: Span) -> Self {
        Spanned { value, span }
    }
}

impl<T: JsonSchema> JsonSchema for Spanned<T> {
    fn inline_schema() -> bool {
        T::inline_schema()
    }
    fn schema_name() -> Cow<'static, str> {
        T::schema_name()
    }
    fn schema_id() -> Cow<'static, str> {
        T::schema_id()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        T::json_schema(generator)
    }
}

/// A seal spec: what an agent run may read, write, reach and see.
#[derive(Clone, Debug, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "sealc seal spec")]
pub struct Spec {
    /// Spec format version. Only `1` exists.
    #[schemars(range(min = 1, max = 1), extend("examples" = [1]))]
    pub version: Spanned<i64>,
    /// Short name of the seal; appears in the profile header and the record. Letters, digits, `.`, `_`, `-`.
    #[schemars(pattern(NAME_PATTERN), extend("examples" = ["probe-rep"]))]
    pub name: Spanned<String>,
    /// What this seal is for.
    #[serde(default)]
    pub description: Option<Spanned<String>>,
    /// Which sandbox the seal compiles to.
    #[serde(default)]
    pub target: Target,
    /// Variables resolved at compile time (from `--var`, then the named env var, then the default) and recorded. Paths use them as `${name}`.
    #[serde(default)]
    pub vars: BTreeMap<String, VarDecl>,
    /// What the agent may read and write.
    #[serde(default)]
    pub filesystem: Filesystem,
    /// The agent binary: its symlink chain is walked, recorded, and re-allowed by literal path.
    #[serde(default)]
    pub launcher: Option<Launcher>,
    /// What the agent may reach on the network.
    #[serde(default)]
    pub network: Network,
    /// Exactly which environment variables cross `env -i`.
    #[serde(default)]
    pub env: EnvSpec,
    /// How the sandbox is started.
    #[serde(default)]
    pub exec: Exec,
    /// The macOS IPC surface (docs/ipc.md): what a seatbelt profile seals beyond files and the network.
    #[serde(default)]
    pub ipc: Ipc,
    /// Limits of one run, enforced by `sealc exec`; each is optional.
    #[serde(default)]
    pub limits: Limits,
    /// The generated Codex config.
    #[serde(default)]
    pub codex: Codex,
    /// Statements proved on the compiled profile.
    #[serde(default, rename = "assert")]
    pub asserts: Vec<Assert>,
}

/// Which sandbox the seal compiles to.
#[derive(Clone, Debug, Default, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Target {
    /// `macos` compiles to a seatbelt profile run with `sandbox-exec -f`.
    #[serde(default)]
    #[schemars(extend("default" = "macos"))]
    pub platform: Option<Spanned<Platform>>,
    /// `allow-default` allows what is not denied; `deny-default` starts from a small system base. Writes are an allow-list under both.
    #[serde(default)]
    #[schemars(extend("default" = "allow-default"))]
    pub base: Option<Spanned<Base>>,
}

#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, JsonSchema, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Platform {
    /// macOS: a seatbelt profile run with `sandbox-exec -f`.
    #[default]
    Macos,
    /// Linux: a bubblewrap argument vector run by `sealc exec`.
    Linux,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Base {
    /// Everything not denied is allowed; writes are still an allow-list.
    #[default]
    AllowDefault,
    /// Everything not allowed is denied; a small documented system base is allowed.
    DenyDefault,
}

impl Platform {
    pub fn as_str(self) -> &'static str {
        match self {
            Platform::Macos => "macos",
            Platform::Linux => "linux",
        }
    }

    /// The name people call it by.
    pub fn display_name(self) -> &'static str {
        match self {
            Platform::Macos => "macOS",
            Platform::Linux => "Linux",
        }
    }

    /// The platform sealc was built for (Linux for anything that is not macOS).
    pub fn host() -> Platform {
        if cfg!(target_os = "macos") {
            Platform::Macos
        } else {
            Platform::Linux
        }
    }
}

impl Base {
    pub fn as_str(self) -> &'static str {
        match self {
            Base::AllowDefault => "allow-default",
            Base::DenyDefault => "deny-default",
        }
    }
}

/// A compile-time variable.
#[derive(Clone, Debug, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VarDecl {
    #[schemars(skip)]
    pub name: Spanned<String>,
    /// Environment variable read for the value when no `--var` is given.
    #[serde(default)]
    #[schemars(pattern(ENV_NAME_PATTERN), extend("examples" = ["HOME"]))]
    pub env: Option<Spanned<String>>,
    /// Value used when neither `--var` nor `env` gives one; may use `${var}`.
    #[serde(default)]
    #[schemars(extend("examples" = ["${home}/.codex"]))]
    pub default: Option<Spanned<String>>,
    /// The value must come from `--var` or `env`; no default is allowed.
    #[serde(default)]
    #[schemars(extend("default" = false))]
    pub required: Option<Spanned<bool>>,
    /// Shown when a required value is missing.
    #[serde(default)]
    pub help: Option<Spanned<String>>,
}

/// Filesystem roots. Each path is absolute and normalized; `${var}` references are allowed.
#[derive(Clone, Debug, Default, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Filesystem {
    /// Roots whose contents and metadata may not be read (recursively), in every spelling (as written, realpath, macOS `/private` alias). Link and clone are denied on them too.
    #[serde(default)]
    #[schemars(inner(pattern(PATH_PATTERN)), extend("examples" = [["${home}", "${checkout}"]]))]
    pub deny_read: Vec<Spanned<String>>,
    /// Roots re-allowed for reading inside a denied root; their ancestors get `file-read-metadata`.
    #[serde(default)]
    #[schemars(inner(pattern(PATH_PATTERN)))]
    pub allow_read: Vec<Spanned<String>>,
    /// Roots that may be stat'ed but not read, listed, written, linked or cloned.
    #[serde(default)]
    #[schemars(inner(pattern(PATH_PATTERN)), extend("examples" = [["${run}/dispatch"]]))]
    pub metadata_only: Vec<Spanned<String>>,
    /// The only roots that may be written (recursively); also readable. Everything else is `file-write*` denied.
    #[serde(default)]
    #[schemars(inner(pattern(PATH_PATTERN)), extend("examples" = [["${run}/ws"]]))]
    pub write: Vec<Spanned<String>>,
    /// Devices that may be written, by exact path under `/dev`.
    #[serde(default)]
    #[schemars(inner(pattern(DEVICE_PATTERN)), extend("examples" = [["/dev/null", "/dev/tty"]]))]
    pub write_devices: Vec<Spanned<String>>,
    /// Paths kept read-only inside the write roots: a path (absolute after `${var}` substitution, inside a write root), or a name (a relative path such as `.git/hooks`, applied below every write root that is a directory). It reads as its write root does, but nothing in it or at its name can be created, changed, removed, renamed or hard-linked, and the directories between the write root and it cannot be renamed or removed. One absent when compiled gets an empty stand-in directory, made by `sealc exec` for the run and removed after it, so the agent cannot make it first. For files the operator runs later: `.git/hooks` run at `git commit`, `.git/config` names `core.fsmonitor` and `core.hooksPath`, which any git command runs.
    #[serde(default)]
    #[schemars(inner(pattern(PROTECT_PATTERN)), extend("examples" = [[".git/hooks", ".git/config", ".codex", ".agents"]]))]
    pub protect: Vec<Spanned<String>>,
}

/// The agent binary.
#[derive(Clone, Debug, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Launcher {
    /// Path of the agent binary or the first symlink to it; the chain is walked, recorded with the final file's digest, and each entry under a denied root is re-allowed by literal path.
    #[schemars(pattern(PATH_PATTERN), extend("examples" = ["${home}/.local/bin/codex"]))]
    pub path: Spanned<String>,
}

/// Network policy.
#[derive(Clone, Debug, Default, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Network {
    /// `none` denies all network; `proxy` allows only outbound TCP to a loopback proxy that someone else runs (`hosts` and `ports` are recorded for it, not enforced); `allowlist` is `proxy` with sealc's own proxy, started by `sealc exec`, which enforces `hosts`, `ports` and `allow_ranges` and audits every connection; `open` leaves it open (under either base).
    #[serde(default)]
    #[schemars(extend("default" = "none"))]
    pub mode: Option<Spanned<NetMode>>,
    /// Loopback `host:port` of the proxy (`127.0.0.1`, `localhost` or `[::1]`); the port may be a `${var}`. Sets `HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY` and their lowercase forms to it, `NO_PROXY` and `no_proxy` empty. Required in `proxy` mode; in `allowlist` mode the address the agent reaches sealc's proxy at (default `127.0.0.1:3128`).
    #[serde(default)]
    #[schemars(pattern(PROXY_PATTERN), extend("examples" = ["127.0.0.1:${proxy_port}"]))]
    pub proxy: Option<Spanned<String>>,
    /// Hosts the proxy may let through, compared case-insensitively after IDNA: an exact name; `*.example.com` (or `.example.com`) for every name below `example.com` but not `example.com` itself; or an IP literal (`192.0.2.7`, `[2001:db8::7]`), the only way an IP literal is let through. `${var}` may give all or part of one (so one spec points at a stand-in a harness picks). Recorded in `env.json`.
    #[serde(default)]
    #[schemars(inner(pattern(HOST_PATTERN)), extend("examples" = [["api.openai.com", "*.oaiusercontent.com"]]))]
    pub hosts: Vec<Spanned<String>>,
    /// Ports the proxy may let through, exactly: a number, or a string that is one `${var}` (so one spec points at a stand-in on a port a harness picks), checked once substituted.
    #[serde(default)]
    #[schemars(extend("examples" = [[443]]))]
    pub ports: Vec<PortEntry>,
    /// `allowlist` mode: address ranges (CIDR) that a name in `hosts` may resolve into although they are special (loopback, private, link-local, shared, multicast, unspecified, documentation, reserved). Any other answer in those ranges is refused.
    #[serde(default)]
    #[schemars(inner(pattern(RANGE_PATTERN)), extend("examples" = [["10.20.0.0/16"]]))]
    pub allow_ranges: Vec<Spanned<String>>,
}

/// A port of `network.ports` as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PortEntry {
    Number(Spanned<i64>),
    /// `"${var}"`: the port is the var's value.
    Var(Spanned<String>),
}

/// A port given by a var: the whole string is one `${var}`.
pub const PORT_VAR_PATTERN: &str = r"^\$\{[A-Za-z_][A-Za-z0-9_]*\}$";

/// Is `s` a port given by a var, as [`PORT_VAR_PATTERN`] says?
pub fn is_port_var(s: &str) -> bool {
    s.strip_prefix("${")
        .and_then(|r| r.strip_suffix('}'))
        .is_some_and(|name| {
            name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
}

impl JsonSchema for PortEntry {
    fn schema_name() -> Cow<'static, str> {
        "PortEntry".into()
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "anyOf": [
                { "type": "integer", "minimum": 1, "maximum": 65535 },
                { "type": "string", "pattern": PORT_VAR_PATTERN }
            ]
        })
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum NetMode {
    /// No network at all.
    #[default]
    None,
    /// Only outbound TCP to the loopback proxy.
    Proxy,
    /// No network restriction (a warning).
    Open,
    /// Only outbound TCP to sealc's own proxy, which enforces the host and port allowlist.
    Allowlist,
}

impl NetMode {
    /// The agent reaches the network only through a loopback proxy (`proxy`
    /// and `allowlist`).
    pub fn proxied(self) -> bool {
        matches!(self, NetMode::Proxy | NetMode::Allowlist)
    }
    pub fn as_str(self) -> &'static str {
        match self {
            NetMode::None => "none",
            NetMode::Proxy => "proxy",
            NetMode::Open => "open",
            NetMode::Allowlist => "allowlist",
        }
    }
}

/// The environment that crosses `env -i`.
#[derive(Clone, Debug, Default, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EnvSpec {
    /// Names whose values are captured at compile time and recorded. Never list a secret here.
    #[serde(default)]
    #[schemars(inner(pattern(ENV_NAME_PATTERN)), extend("examples" = [["PATH", "LANG", "TERM"]]))]
    pub pass: Vec<Spanned<String>>,
    /// Names set to fixed values; values may use `${var}` and are carried byte for byte.
    #[serde(default)]
    #[schemars(extend("propertyNames" = {"pattern": "^[A-Za-z_][A-Za-z0-9_]*$"}, "examples" = [{"HOME": "${run}/home"}]))]
    pub set: BTreeMap<String, Spanned<String>>,
    #[schemars(skip)]
    pub set_keys: BTreeMap<String, Span>,
    /// Names whose values a runner reads from its own environment at start; never written anywhere.
    #[serde(default)]
    #[schemars(inner(pattern(ENV_NAME_PATTERN)), extend("examples" = [["OPENAI_API_KEY"]]))]
    pub secret: Vec<Spanned<String>>,
    /// Allow dynamic loader and libc variables (`LD_*`, `DYLD_*`, `GCONV_PATH`, `GLIBC_TUNABLES`, `LOCPATH`, `NLSPATH`, `MALLOC_TRACE`, `HOSTALIASES`, `RESOLV_HOST_CONF`) in `pass`, `set` and `secret`. Refused by default, since they change what a program loads; with `true` they reach only the command inside the sandbox, never the programs that build it.
    #[serde(default)]
    #[schemars(extend("default" = false))]
    pub allow_loader_vars: Option<Spanned<bool>>,
}

/// How the sandbox is started.
#[derive(Clone, Debug, Default, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Exec {
    /// Path of `sandbox-exec`.
    #[serde(default)]
    #[schemars(pattern(PATH_PATTERN), extend("default" = "/usr/bin/sandbox-exec"))]
    pub sandbox_exec: Option<Spanned<String>>,
    /// Path of `bwrap` (bubblewrap), for a Linux target.
    #[serde(default)]
    #[schemars(pattern(PATH_PATTERN), extend("default" = "/usr/bin/bwrap"))]
    pub bwrap: Option<Spanned<String>>,
    /// Wall-clock limit.
    #[serde(default)]
    pub timeout: Option<Timeout>,
    /// The sandbox's `/proc`, for a Linux target: `fresh` (its own, the
    /// default), `none` (an empty one), or `host` (the host's or the
    /// container's own, read-only; where a fresh one cannot be mounted).
    #[serde(default)]
    #[schemars(extend("default" = "fresh"))]
    pub proc: Option<Spanned<ProcMode>>,
    /// How a Linux seal confines the command: `namespaces` (bubblewrap's
    /// user, mount, pid and network namespaces, then Landlock and seccomp;
    /// the default), or `landlock` (no namespace at all: Landlock, seccomp
    /// and rlimits on the command as the host runs it; for containers and
    /// hosts where user namespaces cannot be made; docs/isolation.md says
    /// what each guarantee becomes).
    #[serde(default)]
    #[schemars(extend("default" = "namespaces"))]
    pub isolation: Option<Spanned<Isolation>>,
    /// Write roots that `sealc exec` empties before each run, so every run of one seal starts from the same state (a harness's workspace and scratch directory). Each must be an entry of `filesystem.write` holding no other root that exists. Emptied by descriptor, no link followed, no other mount entered, only directories of the root's owner, while no other run resets it.
    #[serde(default)]
    #[schemars(inner(pattern(PATH_PATTERN)), extend("examples" = [["${run}/ws", "${run}/tmp"]]))]
    pub reset: Vec<Spanned<String>>,
    /// Files the command produces, each inside a write root: after each run `sealc exec` hashes each one this run wrote (no link followed on its way) into the run report, and names it in the run's attestation (`--attest`) as a subject, by its file name. One left unchanged since before the run, absent, or not a regular file is said so, and is no subject.
    #[serde(default)]
    #[schemars(inner(pattern(PATH_PATTERN)), extend("examples" = [["${run}/ws/answer.md"]]))]
    pub outputs: Vec<Spanned<String>>,
}

/// How a Linux seal confines the command (`exec.isolation`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Isolation {
    /// bubblewrap's namespaces, then Landlock, seccomp and rlimits inside.
    #[default]
    Namespaces,
    /// Landlock, seccomp and rlimits on the command, without namespaces.
    Landlock,
}

impl Spec {
    /// `exec.isolation`, or its default.
    pub fn isolation(&self) -> Isolation {
        self.exec
            .isolation
            .as_ref()
            .map(|i| i.value)
            .unwrap_or_default()
    }
}

impl Isolation {
    pub fn as_str(self) -> &'static str {
        match self {
            Isolation::Namespaces => "namespaces",
            Isolation::Landlock => "landlock",
        }
    }
}

/// What the Linux sandbox gets as `/proc` (`exec.proc`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ProcMode {
    /// A fresh `proc` of the sandbox's own pid namespace: only its processes.
    #[default]
    Fresh,
    /// An empty, read-only `/proc`: programs that read it fail.
    None,
    /// The host's (or the container's) own `/proc`, read-only, with the
    /// host-global entries masked: every process of the host shows.
    Host,
}

impl ProcMode {
    pub fn as_str(self) -> &'static str {
        match self {
            ProcMode::Fresh => "fresh",
            ProcMode::None => "none",
            ProcMode::Host => "host",
        }
    }
}

/// The macOS IPC surface a seal keeps closed (docs/ipc.md).
#[derive(Clone, Debug, Default, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Ipc {
    /// Entries of the sealed table re-allowed for this seal, each by its name in docs/ipc.md: a Mach service (`com.apple.SecurityServer`, for a tool that needs the keychain), an operation (`appleevent-send`) or a program (`/usr/bin/security`). `sealc lint` says what each opens. macOS only.
    #[serde(default)]
    #[schemars(extend("examples" = [["com.apple.SecurityServer"]]))]
    pub allow: Vec<Spanned<String>>,
}

/// Limits of one run (`sealc exec`). How each is enforced, and what a run
/// that reaches it reports, is in docs/limits.md.
#[derive(Clone, Debug, Default, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// Wall-clock seconds before the command is stopped (exit 124); the same as `exec.timeout.seconds`, which it replaces (1 to 604800).
    #[serde(default)]
    #[schemars(range(min = 1, max = 604800), extend("examples" = [1800]))]
    pub wall_seconds: Option<Spanned<i64>>,
    /// CPU seconds of each process (`RLIMIT_CPU`; `SIGXCPU`, exit 152) (1 to 604800).
    #[serde(default)]
    #[schemars(range(min = 1, max = 604800), extend("examples" = [3]))]
    pub cpu_seconds: Option<Spanned<i64>>,
    /// Memory in MiB: the sandbox's resident memory, summed over its processes, watched by sealc (exit 120); each process's data segment is also held to twice this (`RLIMIT_DATA`) (1 to 1048576).
    #[serde(default)]
    #[schemars(range(min = 1, max = 1048576), extend("examples" = [64]))]
    pub memory_mib: Option<Spanned<i64>>,
    /// Processes (and threads) of the agent's user (`RLIMIT_NPROC`); a `fork` past it fails (1 to 65536).
    #[serde(default)]
    #[schemars(range(min = 1, max = 65536), extend("examples" = [256]))]
    pub processes: Option<Spanned<i64>>,
    /// Open files per process (`RLIMIT_NOFILE`) (16 to 1048576).
    #[serde(default)]
    #[schemars(range(min = 16, max = 1048576), extend("examples" = [1024]))]
    pub open_files: Option<Spanned<i64>>,
    /// Largest file a process may write, in MiB (`RLIMIT_FSIZE`; `SIGXFSZ`, exit 153) (1 to 1048576).
    #[serde(default)]
    #[schemars(range(min = 1, max = 1048576), extend("examples" = [100]))]
    pub file_size_mib: Option<Spanned<i64>>,
    /// Bytes of stdout and of stderr each that sealc relays; past it the rest is dropped and the run stopped (exit 121) (1 to 1099511627776).
    #[serde(default)]
    #[schemars(range(min = 1, max = 1099511627776_i64), extend("examples" = [65536]))]
    pub output_bytes: Option<Spanned<i64>>,
}

/// A wall-clock limit enforced by `timeout --foreground`.
#[derive(Clone, Debug, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Timeout {
    /// Path of `timeout`.
    #[schemars(pattern(PATH_PATTERN), extend("examples" = ["/usr/bin/timeout"]))]
    pub bin: Spanned<String>,
    /// Seconds before the agent is stopped (1 to 604800, one week).
    #[schemars(range(min = 1, max = 604800), extend("examples" = [240]))]
    pub seconds: Spanned<i64>,
}

/// The generated Codex config. A spec with a `[codex]` table is a Codex seal:
/// Codex's other config layers (`/etc/codex`, the workspace's `.codex/`) are
/// denied unless it opts in, and `sealc exec` installs the config into the
/// seal's `CODEX_HOME`.
#[derive(Clone, Debug, Default, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Codex {
    /// Where the `[codex]` table is, when the spec has one.
    #[schemars(skip)]
    pub span: Option<Span>,
    /// The Codex release(s) the config is for: an exact version (`0.171.0`) or a range (`>=0.137, <0.172`) over the releases sealc has tested. Only keys that every matched release reads, and none it calls deprecated or removed, are written. Default: the newest tested release.
    #[serde(default)]
    #[schemars(extend("examples" = ["0.171.0", ">=0.137, <0.172"]))]
    pub version: Option<Spanned<String>>,
    /// Model name, written to the generated config as `model`.
    #[serde(default)]
    #[schemars(length(min = 1), extend("examples" = ["gpt-5.5"]))]
    pub model: Option<Spanned<String>>,
    /// Reasoning effort, written as `model_reasoning_effort`.
    #[serde(default)]
    #[schemars(extend("enum" = ["none", "minimal", "low", "medium", "high", "xhigh"]))]
    pub reasoning_effort: Option<Spanned<String>>,
    /// The agent's workspace, one of the write roots: recorded as untrusted in the config (so its project layer never loads), and its `.codex/` is denied unless `allow_project_config`.
    #[serde(default)]
    #[schemars(pattern(PATH_PATTERN), extend("examples" = ["${run}/ws"]))]
    pub workspace: Option<Spanned<String>>,
    /// Which sandbox holds Codex: `outer` (the seal around `codex exec`, Codex's own sandbox off) or `profile` (the same meaning also written as a Codex permission profile, `default_permissions`, enforced by Codex's own sandbox inside the seal). Default `outer`.
    #[serde(default)]
    #[schemars(extend("enum" = ["outer", "profile"], "default" = "outer"))]
    pub sandbox: Option<Spanned<String>>,
    /// The model provider Codex talks to (written as `model_provider = "sealc"`); without it, Codex's built-in OpenAI provider.
    #[serde(default)]
    pub provider: Option<CodexProvider>,
    /// A credentials file (Codex's `auth.json`, e.g. `${home}/.codex/auth.json`) that `sealc exec` copies into the fresh Codex home of every run, outside every write root; never linked, never written back (a token Codex refreshes during a run is not kept). Without it, the agent authenticates only by its `env.secret` API key.
    #[serde(default)]
    #[schemars(pattern(PATH_PATTERN), extend("examples" = ["${home}/.codex/auth.json"]))]
    pub credentials: Option<Spanned<String>>,
    /// Let Codex read its system layers in `/etc/codex` (`config.toml`, `managed_config.toml`, `requirements.toml`), which can override the sealed config. Denied by default.
    #[serde(default)]
    #[schemars(extend("default" = false))]
    pub allow_system_config: Option<Spanned<bool>>,
    /// Let Codex read the workspace's `.codex/` directory and record the workspace as trusted, so its project layer loads and can override the sealed config. Denied by default.
    #[serde(default)]
    #[schemars(extend("default" = false))]
    pub allow_project_config: Option<Spanned<bool>>,
    /// MCP servers the agent may start, each under a seal of its own (Linux, `isolation = "namespaces"`, network not `open`). Codex's config names a relay for each; `sealc exec` starts the server on the host side under its seal, verified and pinned by `binding`, and relays its stdio over the run's private bridge. The agent starts nothing else as a server, and a server has its seal's rights, not the agent's.
    #[serde(default)]
    #[schemars(extend("propertyNames" = { "pattern": "^[A-Za-z0-9_-]{1,64}$" }))]
    pub mcp_servers: BTreeMap<String, McpServer>,
}

/// A Responses API endpoint for Codex.
#[derive(Clone, Debug, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CodexProvider {
    /// Base URL of a Responses API (`http://` or `https://`, which may be a `${var}`, checked once substituted); in `proxy` and `allowlist` mode reached through the proxy.
    #[schemars(pattern(r"^(https?|\$\{[A-Za-z_][A-Za-z0-9_]*\})://[^\s\x00-\x1f\x7f]+$"), extend("examples" = ["http://127.0.0.1:${proxy_port}/v1"]))]
    pub base_url: Spanned<String>,
    /// The `env.secret` name whose value Codex sends as the API key.
    #[serde(default)]
    #[schemars(pattern(ENV_NAME_PATTERN), extend("examples" = ["OPENAI_API_KEY"]))]
    pub env_key: Option<Spanned<String>>,
    /// sealc holds the `env_key` secret: Codex is given no key, and sealc's own proxy (`network.mode = "allowlist"`, an `https://` `base_url`) adds `Authorization: Bearer <key>` to each request under `base_url` on the host side, so neither Codex nor its tools can read the key.
    #[serde(default)]
    pub hold_key: Option<Spanned<bool>>,
}

/// A statement proved on the compiled profile.
#[derive(Clone, Debug, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Assert {
    #[schemars(skip)]
    pub span: Span,
    /// Operation that must be allowed, e.g. `file-write-data` (`sealc explain --list-ops` lists them).
    #[serde(default)]
    #[schemars(extend("enum" = crate::ops::names()))]
    pub allow: Option<Spanned<String>>,
    /// Operation that must be denied, e.g. `file-read-data` (`sealc explain --list-ops` lists them).
    #[serde(default)]
    #[schemars(extend("enum" = crate::ops::names()))]
    pub deny: Option<Spanned<String>>,
    /// Paths the verdict holds for.
    #[serde(default)]
    #[schemars(inner(pattern(PATH_PATTERN)))]
    pub paths: Vec<Spanned<String>>,
    /// `host:port` endpoints the verdict holds for.
    #[serde(default)]
    pub remote: Vec<Spanned<String>>,
    /// Names the verdict holds for, in the operation's namespace: Mach services for `mach-lookup` (`com.apple.pasteboard.1`), bundle identifiers for `appleevent-send`, IOKit classes for `iokit-open`, POSIX IPC names, sysctls, preference domains, or `self` / `others` for `signal`. macOS only: on Linux none of these exists, so a `deny` holds and an `allow` cannot.
    #[serde(default)]
    pub names: Vec<Spanned<String>>,
    /// Prove it only on seals for this platform (`macos` or `linux`); without it, on both.
    #[serde(default)]
    #[schemars(extend("enum" = ["macos", "linux"]))]
    pub platform: Option<Spanned<String>>,
}

impl Filesystem {
    /// Every root of every list, in the order of the lists.
    pub fn all_roots(&self) -> impl Iterator<Item = &Spanned<String>> {
        self.deny_read
            .iter()
            .chain(&self.allow_read)
            .chain(&self.metadata_only)
            .chain(&self.write)
            .chain(&self.write_devices)
    }
}

impl Spec {
    pub fn platform(&self) -> Platform {
        self.target
            .platform
            .as_ref()
            .map_or(Platform::default(), |p| p.value)
    }
    pub fn base(&self) -> Base {
        self.target
            .base
            .as_ref()
            .map_or(Base::default(), |b| b.value)
    }
    pub fn net_mode(&self) -> NetMode {
        self.network
            .mode
            .as_ref()
            .map_or(NetMode::default(), |m| m.value)
    }
    /// Is this a Codex seal (a spec with a `[codex]` table)?
    pub fn is_codex_seal(&self) -> bool {
        self.codex.span.is_some()
    }
    /// The roots a Codex seal denies besides `filesystem.deny_read`: Codex's
    /// system layers (`/etc/codex`) and the workspace's project layer
    /// (`<workspace>/.codex`), each unless the spec opts in. Their spans point
    /// at the `[codex]` table and at `workspace`.
    pub fn codex_denied(&self) -> Vec<Spanned<String>> {
        let c = &self.codex;
        let Some(span) = &c.span else {
            return Vec::new();
        };
        let on = |b: &Option<Spanned<bool>>| b.as_ref().is_some_and(|b| b.value);
        let mut out = Vec::new();
        if !on(&c.allow_system_config) {
            out.push(Spanned::new(CODEX_SYSTEM_DIR.to_string(), span.clone()));
        }
        if let (false, Some(ws)) = (on(&c.allow_project_config), &c.workspace) {
            out.push(Spanned::new(
                format!("{}/.codex", ws.value),
                ws.span.clone(),
            ));
        }
        out
    }
    /// All names listed as secrets.
    pub fn secret_names(&self) -> impl Iterator<Item = &str> {
        self.env.secret.iter().map(|s| s.value.as_str())
    }
}

/// Parse spec text. Every problem is reported, not just the first.
pub fn parse(text: &str) -> Result<Spec, Diagnostics> {
    read::parse(text)
}

/// The JSON Schema of the spec format, as committed under `schemas/`.
pub fn json_schema() -> serde_json::Value {
    with_id(draft07_schema::<Spec>(true), SPEC_SCHEMA_ID)
}

/// The spec schema's `$id`: a name, not an address (nothing is fetched from
/// it). Editors are pointed at the file: `sealc schema spec` prints it.
/// The committed spec schema, the one editors use.
pub const SPEC_SCHEMA: &str = include_str!("../../schemas/seal-spec.schema.json");

pub const SPEC_SCHEMA_ID: &str = "urn:sealc:schema:seal-spec:v1";

/// `schema` with `$id` first among its keys' meaning (JSON key order is the
/// map's, sorted, as everywhere).
pub fn with_id(mut schema: serde_json::Value, id: &str) -> serde_json::Value {
    if let Some(map) = schema.as_object_mut() {
        map.insert("$id".into(), serde_json::Value::String(id.into()));
    }
    schema
}

/// A draft-07 JSON Schema of a type. With `toml`, optional keys are simply
/// optional: TOML has no null.
pub fn draft07_schema<T: JsonSchema>(toml: bool) -> serde_json::Value {
    let mut settings = schemars::generate::SchemaSettings::draft07();
    if toml {
        settings = settings.with_transform(schemars::transform::RecursiveTransform(strip_null));
    }
    let schema = settings.into_generator().into_root_schema_for::<T>();
    serde_json::to_value(schema).unwrap_or(serde_json::Value::Null)
}

/// Remove the `null` alternative schemars adds for `Option` fields.
fn strip_null(schema: &mut schemars::Schema) {
    use serde_json::Value;
    if schema.get("x-nullable") == Some(&Value::Bool(true)) {
        schema.remove("x-nullable");
        return;
    }
    if let Some(Value::Array(types)) = schema.get_mut("type") {
        types.retain(|t| t != "null");
        if types.len() == 1 {
            let t = types.remove(0);
            schema.insert("type".into(), t);
        }
    }
    if let Some(Value::Array(any)) = schema.get_mut("anyOf") {
        any.retain(|s| s.get("type") != Some(&Value::String("null".into())));
        if any.len() == 1 {
            let only = any.remove(0);
            schema.remove("anyOf");
            schema.insert("allOf".into(), Value::Array(vec![only]));
        }
    }
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
    } else if !is_var_name(name) {
        Some("is not a portable name")
    } else {
        None
    };
    if let Some(p) = problem {
        diags.push(
            Diagnostic::error(
                crate::diag::code::ENV_NAME,
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
