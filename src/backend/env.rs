//! Stage 4b, **render** the env allowlist (`env.json`): the exact names and
//! values that cross `env -i`, the secret names (without values), and the argv
//! prefix that starts the sandbox. No shell stands anywhere between the spec
//! and the child: values are argv elements, carried byte for byte.

use serde_json::json;

use crate::backend::SEATBELT;
use crate::ir::Ir;

/// The schema name of `env.json`.
pub const SCHEMA: &str = "sealc.env/v1";
/// The program that clears the environment.
pub const ENV_BIN: &str = "/usr/bin/env";

/// `/usr/bin/env -i K=V... <sandbox_exec> -f seal.sb [<timeout> --foreground N]`.
/// A runner inserts `SECRET=value` for each secret right after the last `K=V`,
/// then appends the agent's command.
pub fn argv_prefix(ir: &Ir) -> Vec<String> {
    let mut argv = vec![ENV_BIN.to_string(), "-i".to_string()];
    argv.extend(ir.env.vars.iter().map(|(k, v)| format!("{k}={v}")));
    argv.extend([ir.exec.sandbox_exec.clone(), "-f".into(), SEATBELT.into()]);
    if let Some((bin, secs)) = &ir.exec.timeout {
        argv.extend([bin.clone(), "--foreground".into(), secs.to_string()]);
    }
    argv
}

/// Render `env.json`.
pub fn render(ir: &Ir) -> Vec<u8> {
    // The host and port allowlist, for the proxy that listens on the loopback port.
    let proxy = ir.network.proxy.as_ref().map(|p| {
        json!({
            "listen": format!("{}:{}", p.host, p.port),
            "hosts": ir.network.hosts,
            "ports": ir.network.ports,
        })
    });
    let value = json!({
        "schema": SCHEMA,
        "proxy": proxy,
        "seal": ir.name,
        "env": ir.env.vars,
        "secrets": ir.env.secrets,
        "argv_prefix": argv_prefix(ir),
    });
    crate::record::canonical_json(&value).into_bytes()
}
