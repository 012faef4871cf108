//! `[codex.mcp_servers.NAME]`: an MCP server the agent may start, as
//! written (lowered in `ir::mcp`).

use schemars::JsonSchema;

use super::{Spanned, PATH_PATTERN};

/// An MCP server the agent may start, under a seal of its own.
#[derive(Clone, Debug, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct McpServer {
    #[schemars(skip)]
    pub name: Spanned<String>,
    /// The server's compiled seal (its `seal.json`), outside every write root: `sealc exec` verifies it with `--expect binding` before each start.
    #[schemars(pattern(PATH_PATTERN), extend("examples" = ["${checkout}/seals/mcp-docs/seal.json"]))]
    pub seal: Spanned<String>,
    /// The binding the server's seal must have (`sha256:` and 64 hex digits, as `sealc compile` prints it).
    #[schemars(pattern(r"^sha256:[0-9a-f]{64}$"))]
    pub binding: Spanned<String>,
    /// The server's command and arguments, run under its seal (the agent cannot change them).
    #[schemars(length(min = 1), extend("examples" = [["/usr/bin/python3", "/srv/mcp/docs.py"]]))]
    pub command: Vec<Spanned<String>>,
    /// The loopback port inside the agent's seal that Codex's relay connects to. Default: 47001 and up, in name order, past the proxy's.
    #[serde(default)]
    #[schemars(range(min = 1, max = 65535))]
    pub port: Option<Spanned<i64>>,
    /// How many times one run may start this server (each connection of the relay starts one). Default 4.
    #[serde(default)]
    #[schemars(range(min = 1, max = 64), extend("default" = 4))]
    pub starts: Option<Spanned<i64>>,
}
