//! Stage 4c, **render** the Codex config (`codex/config.toml`), generated with
//! the `toml` crate, never derived from the operator's own file.
//!
//! The config is sealed: no approvals (`never`), Codex's own sandbox off
//! (`danger-full-access`: the outer seal is the sandbox, and seatbelt does not
//! nest), web search, history, analytics, feedback, telemetry, hooks, plugins,
//! apps, memories, bundled skills and other side features off, no login
//! shell, the workspace recorded as untrusted, and child shells given exactly
//! the env allowlist. What is written depends on the Codex releases the seal
//! targets (`[codex] version`, over [`TESTED`]): a key is written only when
//! every targeted release reads it and calls it neither deprecated nor
//! removed (`docs/codex.md` has the table, `tests/codex_conformance.rs`
//! checks it with the real binaries).

use toml::{Table, Value};

use crate::ir::Ir;

pub use crate::known::{parse_version, select_versions, DEFAULT_VERSION, TESTED};

/// The name of the model provider sealc writes for `[codex.provider]`.
pub const PROVIDER_ID: &str = "sealc";

/// Feature flags switched off, each with the first release that no longer
/// reads it (`None`: every tested release reads it). Side features that reach
/// outside the seal, run user code on events, or keep state across runs.
/// Deprecated aliases (`codex_hooks`, `connectors`, `memory_tool`,
/// `web_search*`) and flags every tested release calls removed (`js_repl`,
/// `plugin_hooks`, `remote_control`) are never written.
pub const FEATURES_OFF: &[(&str, Option<&str>)] = &[
    ("apps", None),
    ("browser_use", None),
    ("chronicle", None),
    ("computer_use", None),
    ("hooks", None),
    ("image_generation", None),
    ("memories", None),
    ("network_proxy", None),
    ("plugins", None),
    // "removed" from 0.169.0 on (`codex features list` shows it on, whatever
    // the config says); the realtime voice conversation is a TUI feature
    // that `codex exec` does not start.
    ("realtime_conversation", Some("0.169.0")),
    ("remote_plugin", None),
    ("shell_snapshot", None),
    ("standalone_web_search", None),
    ("tool_suggest", None),
];

/// Does every targeted release still read a key that is gone from `until` on?
fn read_by_all(versions: &[String], until: Option<&str>) -> bool {
    let Some(until) = until.and_then(parse_version) else {
        return true;
    };
    versions
        .iter()
        .all(|v| parse_version(v).is_some_and(|v| v < until))
}

/// The feature flags written for these releases.
pub fn features_off(versions: &[String]) -> Vec<&'static str> {
    FEATURES_OFF
        .iter()
        .filter(|(_, until)| read_by_all(versions, *until))
        .map(|(f, _)| *f)
        .collect()
}

fn table(entries: impl IntoIterator<Item = (&'static str, Value)>) -> Value {
    Value::Table(
        entries
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
    )
}

fn s(v: &str) -> Value {
    Value::String(v.to_string())
}

/// Render `codex/config.toml`.
pub fn render(ir: &Ir) -> Vec<u8> {
    let c = &ir.codex;
    let mut t = Table::new();
    t.insert("approval_policy".into(), s("never"));
    if c.profile {
        // Codex's own sandbox, with the seal's meaning as its profile.
        super::codex_profile::insert(ir, &mut t);
    } else {
        t.insert("sandbox_mode".into(), s("danger-full-access"));
    }
    t.insert("web_search".into(), s("disabled"));
    t.insert("check_for_update_on_startup".into(), Value::Boolean(false));
    // Codex's shell tool otherwise runs `bash -lc`: /etc/profile and
    // ~/.profile would rewrite the env allowlist (PATH first of all).
    t.insert("allow_login_shell".into(), Value::Boolean(false));
    if let Some(m) = &c.model {
        t.insert("model".into(), s(m));
    }
    if let Some(r) = &c.reasoning_effort {
        t.insert("model_reasoning_effort".into(), s(r));
    }
    if let Some(p) = &c.provider {
        t.insert("model_provider".into(), s(PROVIDER_ID));
        let mut info = Table::new();
        info.insert("name".into(), s(PROVIDER_ID));
        info.insert("wire_api".into(), s("responses"));
        match &p.held {
            // The key stays with sealc: Codex sends plain HTTP to the API's
            // host and port through sealc's proxy (the only way out of the
            // seal), which adds the key and speaks TLS to the API.
            Some(h) => {
                let url = format!("http://{}:{}{}", h.host, h.port, h.path);
                info.insert("base_url".into(), s(&url));
            }
            None => {
                info.insert("base_url".into(), s(&p.base_url));
                if let Some(k) = &p.env_key {
                    info.insert("env_key".into(), s(k));
                }
            }
        }
        t.insert(
            "model_providers".into(),
            Value::Table(Table::from_iter([(
                PROVIDER_ID.to_string(),
                Value::Table(info),
            )])),
        );
    }
    t.insert(
        "analytics".into(),
        table([("enabled", Value::Boolean(false))]),
    );
    t.insert(
        "feedback".into(),
        table([("enabled", Value::Boolean(false))]),
    );
    t.insert("history".into(), table([("persistence", s("none"))]));
    t.insert(
        "otel".into(),
        table([
            ("exporter", s("none")),
            ("log_user_prompt", Value::Boolean(false)),
            ("metrics_exporter", s("none")),
            ("trace_exporter", s("none")),
        ]),
    );
    let features: Table = features_off(&c.versions)
        .into_iter()
        .map(|f| (f.to_string(), Value::Boolean(false)))
        .collect();
    t.insert("features".into(), Value::Table(features));
    t.insert(
        "memories".into(),
        table([
            ("generate_memories", Value::Boolean(false)),
            ("use_memories", Value::Boolean(false)),
        ]),
    );
    // Bundled skills would be written into CODEX_HOME and listed to the model.
    t.insert(
        "skills".into(),
        table([("bundled", table([("enabled", Value::Boolean(false))]))]),
    );
    if !c.mcp.is_empty() {
        // Each server is the relay sealc binds into every Linux seal: it
        // connects to the server's loopback port, where `sealc exec` starts
        // the server under its own seal on the host side.
        t.insert(
            "mcp_servers".into(),
            Value::Table(
                c.mcp
                    .iter()
                    .map(|m| {
                        let args = ["__mcp", "--port", &m.port.to_string()].map(s).to_vec();
                        // `required`: Codex waits for the server and
                        // fails when it cannot start under its seal, never
                        // running on without it.
                        let server = table([
                            ("command", s(super::bwrap::INIT_PATH)),
                            ("args", Value::Array(args)),
                            ("required", Value::Boolean(true)),
                        ]);
                        (m.name.clone(), server)
                    })
                    .collect(),
            ),
        );
    }
    if !c.workspaces.is_empty() {
        let level = if c.trust_workspace {
            "trusted"
        } else {
            "untrusted"
        };
        t.insert(
            "projects".into(),
            Value::Table(
                c.workspaces
                    .iter()
                    .map(|w| (w.clone(), table([("trust_level", s(level))])))
                    .collect(),
            ),
        );
    }
    let set: Table = ir.env.vars.iter().map(|(k, v)| (k.clone(), s(v))).collect();
    t.insert(
        "shell_environment_policy".into(),
        table([
            ("inherit", s("none")),
            ("ignore_default_excludes", Value::Boolean(false)),
            ("set", Value::Table(set)),
        ]),
    );
    // A table of strings and booleans always serializes: toml escapes every string.
    let body = toml::to_string(&t).expect("a table of strings and booleans serializes");
    let mut out = format!(
        "# Codex config for seal `{}`, generated by sealc for Codex {}; do not edit.\n\n",
        crate::diag::visible(&ir.name),
        c.versions.join(", ")
    );
    out.push_str(&body);
    out.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_and_ranges_select_tested_releases() {
        assert_eq!(select_versions("0.171.0").unwrap(), ["0.171.0"]);
        assert_eq!(
            select_versions(">=0.137, <0.161").unwrap(),
            ["0.137.0", "0.144.3", "0.160.1"]
        );
        assert_eq!(select_versions("*").unwrap(), TESTED);
        assert!(select_versions("0.150.0").is_err());
        assert!(select_versions(">=9").is_err());
        assert!(select_versions("latest").is_err());
        assert_eq!(TESTED.last(), Some(&DEFAULT_VERSION));
    }

    #[test]
    fn a_flag_gone_in_a_targeted_release_is_not_written() {
        let v = |xs: &[&str]| xs.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert!(features_off(&v(&["0.160.1"])).contains(&"realtime_conversation"));
        assert!(!features_off(&v(&["0.169.0"])).contains(&"realtime_conversation"));
        assert!(!features_off(&v(&["0.160.1", "0.171.0"])).contains(&"realtime_conversation"));
        assert!(features_off(&v(&["0.171.0"])).contains(&"hooks"));
    }
}
