//! Stage 4b, **render** the env allowlist (`env.json`): the exact names and
//! values that cross `env -i`, the secret names (without values), and the argv
//! prefix that starts the sandbox. No shell stands anywhere between the spec
//! and the child: values are argv elements, carried byte for byte.

use std::collections::{BTreeMap, BTreeSet};

use crate::backend::SEATBELT;
use crate::ir::Ir;
use crate::spec::Platform;

/// The schema name of `env.json`.
pub const SCHEMA: &str = "sealc.env/v1";
/// The program that clears the environment.
pub const ENV_BIN: &str = "/usr/bin/env";

/// `/usr/bin/env -i K=V...` and then the sandbox: on macOS
/// `<sandbox_exec> -f seal.sb [<timeout> --foreground N]`; on Linux the whole
/// bubblewrap argv of `seal.bwrap.json` (which `sealc exec` extends with the
/// proxy bridge in `proxy` mode). A runner supplies each secret in the
/// environment (never in argv), then appends the agent's command.
pub fn argv_prefix(ir: &Ir) -> Vec<String> {
    let mut argv = vec![ENV_BIN.to_string(), "-i".to_string()];
    argv.extend(ir.env.vars.iter().map(|(k, v)| format!("{k}={v}")));
    argv.extend(sandbox_argv(ir));
    argv
}

/// The part of [`argv_prefix`] after the environment: what `sealc exec` runs.
pub fn sandbox_argv(ir: &Ir) -> Vec<String> {
    match ir.platform {
        Platform::Macos => {
            let mut argv = vec![ir.exec.sandbox_exec.clone(), "-f".into(), SEATBELT.into()];
            if let Some((bin, secs)) = &ir.exec.timeout {
                argv.extend([bin.clone(), "--foreground".into(), secs.to_string()]);
            }
            argv
        }
        Platform::Linux => crate::backend::bwrap::argv(ir),
    }
}

/// `env.json`. Fields are declared in sorted order, so the serialized struct
/// is already in the canonical form (`record::canonical_json`; a test checks).
#[derive(serde::Serialize)]
struct EnvFile<'a> {
    argv_prefix: Vec<String>,
    env: &'a BTreeMap<String, String>,
    proxy: Option<ProxyAllowlist<'a>>,
    schema: &'static str,
    seal: &'a str,
    secrets: &'a BTreeSet<String>,
}

/// The host and port allowlist, for the proxy that listens on the loopback
/// port: another program in mode `proxy`, sealc's own in mode `allowlist`
/// (which also reads `allow_ranges`).
#[derive(serde::Serialize)]
struct ProxyAllowlist<'a> {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    allow_ranges: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    enforced_by: Option<&'static str>,
    hosts: &'a BTreeSet<String>,
    listen: String,
    ports: &'a BTreeSet<u16>,
}

/// Render `env.json`.
pub fn render(ir: &Ir) -> Vec<u8> {
    let file = EnvFile {
        argv_prefix: argv_prefix(ir),
        env: &ir.env.vars,
        proxy: ir.network.proxy.as_ref().map(|p| ProxyAllowlist {
            allow_ranges: ir
                .network
                .allow_ranges
                .iter()
                .map(|r| r.to_string())
                .collect(),
            enforced_by: (ir.network.mode == crate::spec::NetMode::Allowlist)
                .then_some("sealc exec"),
            hosts: &ir.network.hosts,
            listen: format!("{}:{}", p.host, p.port),
            ports: &ir.network.ports,
        }),
        schema: SCHEMA,
        seal: &ir.name,
        secrets: &ir.env.secrets,
    };
    let mut out = serde_json::to_vec_pretty(&file).unwrap_or_default();
    out.push(b'\n');
    out
}

#[cfg(test)]
mod tests {

    #[test]
    fn the_direct_form_is_canonical() {
        let src = "version = 1\nname = \"e\"\n[network]\nmode = \"proxy\"\nproxy = \"127.0.0.1:1\"\nhosts = [\"b.com\", \"a.com\"]\n[env]\nset = { Z = \"1\", A = \"\\n\" }\nsecret = [\"K\"]\n";
        let c = crate::compile("e.toml", src, &Vec::new(), &crate::facts::FakeHost::new()).unwrap();
        let bytes = &c.files["env.json"];
        let v: serde_json::Value = serde_json::from_slice(bytes).unwrap();
        assert_eq!(
            crate::record::canonical_json(&v).as_bytes(),
            bytes.as_slice()
        );
    }
}
