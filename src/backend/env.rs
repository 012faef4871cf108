//! Stage 4b, **render** the env allowlist (`env.json`): the exact names and
//! values that reach the command, the secret names (without values), and the
//! proxy allowlist. It holds no argv: the only way to run the seal is
//! `sealc exec`, which adds what no argv could (its init and the filters
//! inside, the uid drop, the limits, the Codex config check).

use std::collections::{BTreeMap, BTreeSet};

use crate::ir::Ir;

/// The schema name of `env.json`.
pub const SCHEMA: &str = "sealc.env/v1";
pub use crate::known::ENV_BIN;

/// `env.json`. Fields are declared in sorted order, so the serialized struct
/// is already in the canonical form (`record::canonical_json`; a test checks).
#[derive(serde::Serialize)]
struct EnvFile<'a> {
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
    /// Keys sealc's proxy adds on the host side (`codex.provider.hold_key`):
    /// where, and the secret's name (never its value).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    held_keys: Vec<HeldKeyEntry<'a>>,
    hosts: &'a BTreeSet<String>,
    listen: String,
    ports: &'a BTreeSet<u16>,
}

#[derive(serde::Serialize)]
struct HeldKeyEntry<'a> {
    header: &'static str,
    host: &'a str,
    path: &'a str,
    port: u16,
    secret: &'a str,
}

/// Render `env.json`.
pub fn render(ir: &Ir) -> Vec<u8> {
    let file = EnvFile {
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
            held_keys: ir
                .codex
                .provider
                .iter()
                .filter_map(|p| p.held.as_ref())
                .map(|h| HeldKeyEntry {
                    header: "authorization",
                    host: &h.host,
                    path: &h.path,
                    port: h.port,
                    secret: &h.secret,
                })
                .collect(),
            hosts: &ir.network.hosts,
            listen: format!("{}:{}", p.host, p.port),
            ports: &ir.network.ports,
        }),
        schema: SCHEMA,
        seal: &ir.name,
        secrets: &ir.env.secrets,
    };
    // Room for the allowlist in one block (the probe spec's is 856 bytes).
    let mut out = Vec::with_capacity(1024 + 128 * ir.env.vars.len());
    if serde_json::to_writer_pretty(&mut out, &file).is_err() {
        out.clear();
    }
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
            crate::canonical::canonical_json(&v).as_bytes(),
            bytes.as_slice()
        );
    }
}
