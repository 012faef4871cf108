//! Lowering `[codex.mcp_servers]`: the MCP servers the agent may start,
//! each under a seal of its own, pinned by binding. Only the namespaces
//! mode has the private network a server's relay is forwarded through:
//! elsewhere the entry is refused, never left for the agent to start with
//! its own rights.

use super::*;
use crate::spec::{Isolation, McpServer};

/// Where the default ports start (each server takes the next one free).
pub const FIRST_PORT: u16 = 47001;
/// How many times one run may start a server, unless the spec says.
pub const DEFAULT_STARTS: u32 = 4;
/// The most starts a spec may allow a server in one run.
pub const MAX_STARTS: u32 = 64;

/// An MCP server of the seal, resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct McpIr {
    pub name: String,
    /// The server's `seal.json` (absolute, outside every write root).
    pub seal: String,
    /// `sha256:` and 64 hex digits.
    pub binding: String,
    pub command: Vec<String>,
    /// The loopback port inside the agent's seal.
    pub port: u16,
    /// Starts allowed in one run.
    pub starts: u32,
}

impl Lower<'_> {
    pub(super) fn mcp(&mut self, spec: &Spec, roots: &[Root], network: &NetIr) -> Vec<McpIr> {
        let servers = &spec.codex.mcp_servers;
        if servers.is_empty() {
            return Vec::new();
        }
        let first = servers.values().next().map(|s| s.name.span.clone());
        let why = if self.platform(spec) == Platform::Macos {
            Some("a macOS seal has no private network to forward a relay through")
        } else if spec.isolation() == Isolation::Landlock {
            Some("`exec.isolation = \"landlock\"` shares the host's network, where any local process could reach the relay's port")
        } else if network.mode == NetMode::Open {
            Some("network `open` shares the host's network, where any local process could reach the relay's port")
        } else {
            None
        };
        if let (Some(why), Some(span)) = (why, first) {
            self.diags.push(
                Diagnostic::error(
                    crate::diag::code::CODEX_MCP,
                    "this seal cannot start sealed MCP servers".to_string(),
                )
                .at(span)
                .label(why)
                .help("MCP servers need a Linux seal in the namespaces mode with network `none`, `proxy` or `allowlist`"),
            );
            return Vec::new();
        }
        let mut taken: BTreeSet<u16> = network.proxy.iter().map(|p| p.port).collect();
        let mut out = Vec::new();
        for s in servers.values() {
            if let Some(m) = self.mcp_server(s, roots, &mut taken) {
                out.push(m);
            }
        }
        // Default ports, in name order, past every port already taken.
        let mut next = FIRST_PORT;
        for m in out.iter_mut().filter(|m| m.port == 0) {
            while taken.contains(&next) {
                next = next.saturating_add(1);
            }
            m.port = next;
            taken.insert(next);
        }
        out
    }

    fn mcp_server(
        &mut self,
        s: &McpServer,
        roots: &[Root],
        taken: &mut BTreeSet<u16>,
    ) -> Option<McpIr> {
        let name = &s.name.value;
        let valid_name = !name.is_empty()
            && name.len() <= 64
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if !valid_name {
            self.diags.push(
                Diagnostic::error(
                    crate::diag::code::CODEX_MCP,
                    format!("MCP server name {} is not allowed", quote(name)),
                )
                .at(s.name.span.clone())
                .label("letters, digits, `_` and `-`, at most 64")
                .help("rename the server, e.g. `docs`"),
            );
            return None;
        }
        let what = format!("`codex.mcp_servers.{name}.seal`");
        let seal = self.path(&s.seal, &what)?;
        if let Some(w) = write_root_holding(roots, &seal) {
            self.diags.push(
                Diagnostic::error(
                    crate::diag::code::CODEX_MCP,
                    format!(
                        "the seal of MCP server `{name}` {} lies inside the write root {}",
                        quote(&seal),
                        quote(&w.origin)
                    ),
                )
                .at(s.seal.span.clone())
                .label("the agent could put another seal in its place")
                .help("keep the server's compiled seal outside every write root"),
            );
            return None;
        }
        let binding = self.subst(&s.binding)?;
        let hex = binding.strip_prefix("sha256:").unwrap_or("");
        if hex.len() != 64 || !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            self.diags.push(
                Diagnostic::error(
                    crate::diag::code::CODEX_MCP,
                    format!(
                        "the binding of MCP server `{name}` {} is not a binding",
                        quote(&binding)
                    ),
                )
                .at(s.binding.span.clone())
                .label("`sha256:` and 64 lowercase hex digits")
                .help("copy the binding `sealc compile` printed for the server's seal"),
            );
            return None;
        }
        let mut command = Vec::new();
        for a in &s.command {
            command.push(self.subst(a)?);
        }
        if command.first().is_none_or(|p| p.is_empty()) {
            let span = s
                .command
                .first()
                .map_or(s.name.span.clone(), |a| a.span.clone());
            self.diags.push(
                Diagnostic::error(
                    crate::diag::code::CODEX_MCP,
                    format!("MCP server `{name}` has no command"),
                )
                .at(span)
                .label("the program and its arguments, run under the server's seal")
                .help("write e.g. `command = [\"/usr/bin/python3\", \"/srv/mcp/docs.py\"]`"),
            );
            return None;
        }
        let port = match &s.port {
            None => 0,
            Some(p) => match u16::try_from(p.value).ok().filter(|&v| v != 0) {
                Some(v) if !taken.contains(&v) => {
                    taken.insert(v);
                    v
                }
                Some(v) => {
                    self.diags.push(
                        Diagnostic::error(
                            crate::diag::code::CODEX_MCP,
                            format!("port {v} of MCP server `{name}` is taken"),
                        )
                        .at(p.span.clone())
                        .label("the proxy or another server listens there inside the seal")
                        .help("pick another port, or leave `port` out for one of sealc's"),
                    );
                    return None;
                }
                None => {
                    self.diags.push(
                        Diagnostic::error(
                            crate::diag::code::CODEX_MCP,
                            format!("port {} of MCP server `{name}` is not a port", p.value),
                        )
                        .at(p.span.clone())
                        .label("1 to 65535")
                        .help("pick a port, or leave `port` out for one of sealc's"),
                    );
                    return None;
                }
            },
        };
        let starts = match &s.starts {
            None => DEFAULT_STARTS,
            Some(n) => match u32::try_from(n.value)
                .ok()
                .filter(|v| (1..=MAX_STARTS).contains(v))
            {
                Some(v) => v,
                None => {
                    self.diags.push(
                        Diagnostic::error(
                            crate::diag::code::CODEX_MCP,
                            format!("`starts` of MCP server `{name}` cannot be {}", n.value),
                        )
                        .at(n.span.clone())
                        .label(format!("1 to {MAX_STARTS}"))
                        .help(format!("leave it out for {DEFAULT_STARTS}")),
                    );
                    return None;
                }
            },
        };
        Some(McpIr {
            name: name.clone(),
            seal,
            binding,
            command,
            port,
            starts,
        })
    }
}
