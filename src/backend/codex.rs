//! Stage 4c, **render** the Codex config (`codex/config.toml`), written with
//! `toml_writer` in the `toml` crate's layout ([`super::toml_doc`]), never
//! derived from the operator's own file.
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

use super::toml_doc::{Doc, Item};

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

/// Render `codex/config.toml`.
pub fn render(ir: &Ir) -> Vec<u8> {
    let c = &ir.codex;
    let mut t = Doc::new();
    t.set("approval_policy", "never");
    if c.profile {
        // Codex's own sandbox, with the seal's meaning as its profile.
        super::codex_profile::insert(ir, &mut t);
    } else {
        t.set("sandbox_mode", "danger-full-access");
    }
    t.set("web_search", "disabled");
    t.set("check_for_update_on_startup", false);
    // Codex's shell tool otherwise runs `bash -lc`: /etc/profile and
    // ~/.profile would rewrite the env allowlist (PATH first of all).
    t.set("allow_login_shell", false);
    if let Some(m) = &c.model {
        t.set("model", m.as_str());
    }
    if let Some(r) = &c.reasoning_effort {
        t.set("model_reasoning_effort", r.as_str());
    }
    if let Some(p) = &c.provider {
        t.set("model_provider", PROVIDER_ID);
        let info = t.table("model_providers").table(PROVIDER_ID);
        info.set("name", PROVIDER_ID);
        info.set("wire_api", "responses");
        match &p.held {
            // The key stays with sealc: Codex sends plain HTTP to the API's
            // host and port through sealc's proxy (the only way out of the
            // seal), which adds the key and speaks TLS to the API.
            Some(h) => {
                info.set(
                    "base_url",
                    format!("http://{}:{}{}", h.host, h.port, h.path),
                );
            }
            None => {
                info.set("base_url", p.base_url.as_str());
                if let Some(k) = &p.env_key {
                    info.set("env_key", k.as_str());
                }
            }
        }
    }
    t.table("analytics").set("enabled", false);
    t.table("feedback").set("enabled", false);
    t.table("history").set("persistence", "none");
    t.table("otel")
        .set("exporter", "none")
        .set("log_user_prompt", false)
        .set("metrics_exporter", "none")
        .set("trace_exporter", "none");
    let features = t.table("features");
    for f in features_off(&c.versions) {
        features.set(f, false);
    }
    t.table("memories")
        .set("generate_memories", false)
        .set("use_memories", false);
    // Bundled skills would be written into CODEX_HOME and listed to the model.
    t.table("skills").table("bundled").set("enabled", false);
    if !c.mcp.is_empty() {
        // Each server is the relay sealc binds into every Linux seal: it
        // connects to the server's loopback port, where `sealc exec` starts
        // the server under its own seal on the host side.
        let servers = t.table("mcp_servers");
        for m in &c.mcp {
            let args = vec!["__mcp".into(), "--port".into(), m.port.to_string().into()];
            // `required`: Codex waits for the server and fails when it
            // cannot start under its seal, never running on without it.
            servers
                .table(m.name.as_str())
                .set("command", super::bwrap::INIT_PATH)
                .set("args", Item::Strs(args))
                .set("required", true);
        }
    }
    if !c.workspaces.is_empty() {
        let level = if c.trust_workspace {
            "trusted"
        } else {
            "untrusted"
        };
        let projects = t.table("projects");
        for w in &c.workspaces {
            projects.table(w.as_str()).set("trust_level", level);
        }
    }
    let policy = t.table("shell_environment_policy");
    policy
        .set("inherit", "none")
        .set("ignore_default_excludes", false);
    let set = policy.table("set");
    for (k, v) in &ir.env.vars {
        set.set(k.as_str(), v.as_str());
    }
    let mut out = format!(
        "# Codex config for seal `{}`, generated by sealc for Codex {}; do not edit.\n\n",
        crate::diag::visible(&ir.name),
        c.versions.join(", ")
    );
    t.write_to(&mut out);
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
