//! Stage 1, **parse**: TOML text → [`Spec`].
//!
//! The spec is what the user means, portable and checked into a repo. Every
//! user value keeps its byte span so later stages can point at it. Parsing
//! collects every problem (unknown keys with "did you mean", wrong types,
//! missing keys) instead of stopping at the first. Nothing here reads the host.

mod interp;
mod read;

use std::borrow::Cow;
use std::collections::BTreeMap;

use schemars::JsonSchema;

pub use interp::{interpolate, references, Reference};
pub(crate) use read::is_var_name;

use crate::diag::{Diagnostics, Span};

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
    pub version: Spanned<i64>,
    /// Short name of the seal; appears in the profile header and the record.
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
    /// `macos` compiles to a seatbelt profile.
    #[serde(default)]
    pub platform: Option<Spanned<Platform>>,
    /// `allow-default` allows what is not denied; `deny-default` starts from a small system base.
    #[serde(default)]
    pub base: Option<Spanned<Base>>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Platform {
    /// macOS: a seatbelt profile run with `sandbox-exec -f`.
    #[default]
    Macos,
    /// Linux: bubblewrap (not yet implemented).
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
    pub env: Option<Spanned<String>>,
    /// Value used when neither `--var` nor `env` gives one; may use `${var}`.
    #[serde(default)]
    pub default: Option<Spanned<String>>,
    /// The value must come from `--var` or `env`; no default is allowed.
    #[serde(default)]
    pub required: Option<Spanned<bool>>,
    /// Shown when a required value is missing.
    #[serde(default)]
    pub help: Option<Spanned<String>>,
}

/// Filesystem roots. Each path is absolute and normalized; `${var}` references are allowed.
#[derive(Clone, Debug, Default, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Filesystem {
    /// Roots whose contents and metadata may not be read (recursively).
    #[serde(default)]
    pub deny_read: Vec<Spanned<String>>,
    /// Roots re-allowed for reading inside a denied root.
    #[serde(default)]
    pub allow_read: Vec<Spanned<String>>,
    /// Roots that may be stat'ed but not read, listed, written, linked or cloned.
    #[serde(default)]
    pub metadata_only: Vec<Spanned<String>>,
    /// The only roots that may be written (recursively); also readable.
    #[serde(default)]
    pub write: Vec<Spanned<String>>,
    /// Devices that may be written, by exact path under `/dev`.
    #[serde(default)]
    pub write_devices: Vec<Spanned<String>>,
}

/// The agent binary.
#[derive(Clone, Debug, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Launcher {
    /// Path of the agent binary or the first symlink to it.
    pub path: Spanned<String>,
}

/// Network policy.
#[derive(Clone, Debug, Default, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Network {
    /// `none` denies all network; `proxy` allows only the loopback proxy; `open` adds no rule.
    #[serde(default)]
    pub mode: Option<Spanned<NetMode>>,
    /// Loopback `host:port` of the proxy (`127.0.0.1`, `localhost` or `[::1]`).
    #[serde(default)]
    pub proxy: Option<Spanned<String>>,
    /// Hosts the proxy may let through; a leading `.` allows subdomains.
    #[serde(default)]
    pub hosts: Vec<Spanned<String>>,
    /// Ports the proxy may let through.
    #[serde(default)]
    pub ports: Vec<Spanned<i64>>,
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
}

impl NetMode {
    pub fn as_str(self) -> &'static str {
        match self {
            NetMode::None => "none",
            NetMode::Proxy => "proxy",
            NetMode::Open => "open",
        }
    }
}

/// The environment that crosses `env -i`.
#[derive(Clone, Debug, Default, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EnvSpec {
    /// Names whose values are captured at compile time and recorded.
    #[serde(default)]
    pub pass: Vec<Spanned<String>>,
    /// Names set to fixed values; values may use `${var}`.
    #[serde(default)]
    pub set: BTreeMap<String, Spanned<String>>,
    #[schemars(skip)]
    pub set_keys: BTreeMap<String, Span>,
    /// Names whose values a runner reads from its own environment at start; never written anywhere.
    #[serde(default)]
    pub secret: Vec<Spanned<String>>,
}

/// How the sandbox is started.
#[derive(Clone, Debug, Default, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Exec {
    /// Path of `sandbox-exec`.
    #[serde(default)]
    pub sandbox_exec: Option<Spanned<String>>,
    /// Wall-clock limit.
    #[serde(default)]
    pub timeout: Option<Timeout>,
}

/// A wall-clock limit enforced by `timeout --foreground`.
#[derive(Clone, Debug, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Timeout {
    /// Path of `timeout`.
    pub bin: Spanned<String>,
    /// Seconds before the agent is stopped.
    pub seconds: Spanned<i64>,
}

/// The generated Codex config.
#[derive(Clone, Debug, Default, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Codex {
    /// Model name.
    #[serde(default)]
    pub model: Option<Spanned<String>>,
    /// Reasoning effort.
    #[serde(default)]
    pub reasoning_effort: Option<Spanned<String>>,
}

/// A statement proved on the compiled profile.
#[derive(Clone, Debug, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Assert {
    #[schemars(skip)]
    pub span: Span,
    /// Operation that must be allowed.
    #[serde(default)]
    pub allow: Option<Spanned<String>>,
    /// Operation that must be denied.
    #[serde(default)]
    pub deny: Option<Spanned<String>>,
    /// Paths the verdict holds for.
    #[serde(default)]
    pub paths: Vec<Spanned<String>>,
    /// `host:port` endpoints the verdict holds for.
    #[serde(default)]
    pub remote: Vec<Spanned<String>>,
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
    draft07_schema::<Spec>(true)
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
