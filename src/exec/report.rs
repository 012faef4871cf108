//! The run report (`sealc exec --report FILE`): how one run ended, what it
//! used, and what enforced each limit. JSON with a `schema` tag, written
//! atomically, also when nothing could start.

use std::collections::BTreeMap;

use serde::Serialize;

/// The schema name of a run report.
pub const SCHEMA: &str = "sealc.run/v1";

pub use crate::exit::{CPU_LIMIT, FILE_SIZE_LIMIT, MEMORY_LIMIT, OUTPUT_LIMIT};

/// How a run ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Outcome {
    /// The command exited with this code.
    Exited { code: i32 },
    /// The command was killed by this signal.
    Signaled { signal: i32 },
    /// `limits.wall_seconds` (or `exec.timeout`) ran out.
    WallTimeout,
    /// `limits.cpu_seconds` was reached (`SIGXCPU`).
    CpuLimit,
    /// `limits.memory_mib` was reached; sealc stopped the run.
    MemoryLimit,
    /// `limits.output_bytes` was reached on stdout or stderr; sealc stopped the run.
    OutputLimit,
    /// `limits.file_size_mib` was reached (`SIGXFSZ`).
    FileSizeLimit,
    /// Nothing ran: the phase that failed, and why.
    CouldNotStart { phase: Phase, message: String },
    /// Written when the command starts and replaced when the run ends: a
    /// report that still says this was left by a sealc that ended before
    /// its run did (killed: `kill -9`, the machine), so nothing says how
    /// the command ended, nor that nothing of it is left.
    Unfinished,
}

/// What a run left at one of the seal's outputs (`exec.outputs`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum OutputState {
    /// This run wrote it (its identity changed, or it appeared): its
    /// digest and size; the attestation names it as a subject.
    Written { sha256: String, bytes: u64 },
    /// There before the command started and not changed by it: an earlier
    /// run's, never attested as this one's.
    Unchanged,
    /// Not there.
    Absent,
    /// Not hashed: a link on its way or in its place, or not a regular file.
    Refused { message: String },
}

/// Where a run that could not start failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// The record did not verify, or `--expect` named another seal.
    Verify,
    /// The host drifted since compiling, or stdio, the user or a secret was refused.
    HostCheck,
    /// The run's own state could not be made: write roots or stand-ins
    /// absent when compiled, the Codex home (one an earlier run left), the
    /// agent's user and the write roots handed to it.
    Prepare,
    /// The sandbox could not be built.
    SandboxStart,
    /// The sandbox was built, but the command is not there (exit 127).
    CommandNotFound,
    /// The sandbox was built, but the command could not be executed (exit 126).
    CommandStart,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Verify => "verify",
            Phase::HostCheck => "host check",
            Phase::Prepare => "prepare",
            Phase::SandboxStart => "sandbox start",
            Phase::CommandNotFound => "command lookup",
            Phase::CommandStart => "command start",
        }
    }
}

impl Outcome {
    /// The limit that decided this outcome, if one did.
    pub fn limit(&self) -> Option<crate::limit::Limit> {
        use crate::limit::Limit;
        match self {
            Outcome::WallTimeout => Some(Limit::WallSeconds),
            Outcome::CpuLimit => Some(Limit::CpuSeconds),
            Outcome::MemoryLimit => Some(Limit::MemoryMib),
            Outcome::OutputLimit => Some(Limit::OutputBytes),
            Outcome::FileSizeLimit => Some(Limit::FileSizeMib),
            _ => None,
        }
    }

    /// The exit status sealc reports for this outcome: the command's own
    /// code, `128 + N` for a signal, or one documented code per kind.
    pub fn exit_code(&self) -> i32 {
        match self {
            Outcome::Exited { code } => *code,
            Outcome::Signaled { signal } => 128 + signal,
            Outcome::WallTimeout => super::TIMED_OUT,
            Outcome::CpuLimit => CPU_LIMIT,
            Outcome::MemoryLimit => MEMORY_LIMIT,
            Outcome::OutputLimit => OUTPUT_LIMIT,
            Outcome::FileSizeLimit => FILE_SIZE_LIMIT,
            Outcome::Unfinished => crate::exit::REFUSED,
            Outcome::CouldNotStart { phase, .. } => match phase {
                Phase::Verify | Phase::HostCheck => crate::exit::REFUSED,
                Phase::Prepare | Phase::SandboxStart => super::SANDBOX_FAILED,
                Phase::CommandNotFound => super::CANNOT_START,
                Phase::CommandStart => super::CANNOT_EXECUTE,
            },
        }
    }
}

/// What one relayed stream carried.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Stream {
    /// Bytes of the command's relayed to the caller (counted before the
    /// terminal filter, as `limits.output_bytes` counts them).
    pub bytes: u64,
    /// Of those, the bytes the terminal filter dropped (escape sequences
    /// and controls); absent when none.
    #[serde(skip_serializing_if = "is_zero")]
    pub controls_dropped: u64,
    /// The caller's descriptor was a terminal: `filtered` (through the
    /// terminal filter) or `raw` (`--raw-terminal`); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub terminal: Option<&'static str>,
    /// `sha256:` of the bytes written to sealc's own descriptor (after the
    /// terminal filter, when there was one): what a harness that captured
    /// sealc's stdout or stderr holds, to bind its transcript by digest.
    /// Absent when nothing was relayed (sealc's own descriptor was closed).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub sha256: String,
    /// Bytes past `limits.output_bytes` were dropped.
    pub truncated: bool,
    /// `--stdout FILE` / `--stderr FILE`: where the stream was kept (its
    /// `sha256` is then the file's); absent when it was relayed to sealc's
    /// own descriptor.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kept: Option<String>,
}

/// The processes the command left running when it ended, which sealc's
/// init then ended: how many, and the names of the first few (where the
/// init could read them: a `/proc` of the run's own).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct LeftRunning {
    pub count: u64,
    pub names: Vec<String>,
}

/// Who signed the seal (`--allowed-signers`): the principals of the line
/// that trusts the key, and the key's type and fingerprint.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SignedBy {
    pub key: String,
    pub principals: Vec<String>,
}

impl From<&crate::signature::Signed> for SignedBy {
    fn from(s: &crate::signature::Signed) -> Self {
        SignedBy {
            key: s.key.clone(),
            principals: s.principals.clone(),
        }
    }
}

/// One limit: its value and what enforced it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Limit {
    pub value: u64,
    pub enforced_by: &'static str,
}

/// The whole report. Fields in sorted order: the serialized form is canonical.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Report {
    pub argv: Vec<String>,
    pub binding: Option<String>,
    /// The Codex config in `CODEX_HOME` after the run: `unchanged` or `drift`
    /// (a Codex seal only).
    pub codex_config: Option<&'static str>,
    /// With `drift`: what changed, one `subject: detail` per check that
    /// drifted (as `sealc verify --codex-config` says it); absent otherwise.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub codex_config_changes: Vec<String>,
    /// A Codex seal: the fresh Codex home of the run, what it held after
    /// the run, and where that was kept for review (or `null`: discarded).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub codex_home: Option<super::codex_home::Left>,
    /// CPU seconds of every process of the run (user + system).
    pub cpu_seconds: Option<f64>,
    pub duration_seconds: f64,
    /// RFC 3339, UTC.
    /// Absent while the run is unfinished.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub ended_at: String,
    /// Absent while the run is unfinished.
    pub exit_code: Option<i32>,
    /// Started by root: what could not be handed back to the write roots'
    /// owners after the run (absent when everything was).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hand_back_errors: Vec<String>,
    pub layers: serde_json::Value,
    pub limits: BTreeMap<&'static str, Limit>,
    /// Which limits were reached (a process limit makes `fork` fail; it ends nothing by itself).
    pub limits_reached: Vec<crate::limit::Limit>,
    /// What the command left running when it ended (ended by sealc's init
    /// then); absent when not known (no init, or the run was stopped).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub left_running: Option<LeftRunning>,
    /// `codex.mcp_servers`: each sealed MCP server, how many times the
    /// agent started it (each start's own run report inside), and the
    /// starts refused past its bound.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub mcp: Vec<super::mcp::ServerReport>,
    /// Each connection to sealc's own proxy (network `allowlist`), in the order opened.
    pub network: Vec<crate::audit::Connection>,
    /// Connections past the report's cap, counted only.
    #[serde(skip_serializing_if = "is_zero")]
    pub network_omitted: u64,
    pub outcome: Option<Outcome>,
    /// `exec.outputs`: what the run left at each, once it ended.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub outputs: BTreeMap<String, OutputState>,
    /// The largest resident memory seen, summed over the sandbox's processes, in KiB.
    pub peak_memory_kib: Option<u64>,
    /// `--resolve NAME=ADDR` overrides in force (a test run).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub resolve_overrides: Vec<String>,
    /// `exec.reset`: each write root emptied before the run, with how
    /// many entries went.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub reset: std::collections::BTreeMap<String, u64>,
    pub schema: &'static str,
    /// `--allowed-signers`: who signed the seal that ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signed_by: Option<SignedBy>,
    pub started_at: String,
    pub stderr: Stream,
    pub stdout: Stream,
    /// Started by root (Linux): `UID:GID` the agent ran as on the host (a uid
    /// of the run's own unless `--user` named one or the roots were chowned).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// Started by root (Linux): how the agent's user could write the write
    /// roots, `idmapped` (nothing on disk changed hands) or `chowned`
    /// (handed over for the run and back after it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_roots: Option<&'static str>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// How each limit of the IR is enforced on `platform`.
pub fn limits(ir: &crate::ir::Ir) -> BTreeMap<&'static str, Limit> {
    let linux = crate::exec::Mechanism::of(ir).watches_memory();
    ir.exec
        .limits
        .set()
        .into_iter()
        .map(|(k, value)| {
            (
                k.key(),
                Limit {
                    value,
                    enforced_by: k.enforced_by(linux),
                },
            )
        })
        .collect()
}

/// RFC 3339 in UTC, whole seconds: the report's start and end.
pub fn rfc3339(t: std::time::SystemTime) -> String {
    crate::audit::rfc3339(t, false)
}

/// The report's bytes: pretty JSON with a final newline.
pub fn to_json(report: &Report) -> std::io::Result<Vec<u8>> {
    let mut bytes = serde_json::to_vec_pretty(report).map_err(std::io::Error::other)?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// Write the report to `target` ([`crate::hostfs::Target::write`]: a temp
/// file of a random name beside it, never through a link, then a rename).
pub fn write(target: &crate::hostfs::Target, report: &Report) -> std::io::Result<()> {
    target.write(&to_json(report)?, 0o644)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_rfc3339() {
        let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_796_000_000);
        assert_eq!(rfc3339(t), "2026-11-30T00:53:20Z");
        assert_eq!(rfc3339(std::time::UNIX_EPOCH), "1970-01-01T00:00:00Z");
    }

    #[test]
    fn each_outcome_has_its_own_code() {
        let codes: Vec<i32> = [
            Outcome::WallTimeout,
            Outcome::CpuLimit,
            Outcome::MemoryLimit,
            Outcome::OutputLimit,
            Outcome::FileSizeLimit,
        ]
        .iter()
        .map(Outcome::exit_code)
        .collect();
        assert_eq!(codes, [124, 152, 120, 121, 153]);
        assert_eq!(Outcome::Exited { code: 3 }.exit_code(), 3);
        assert_eq!(Outcome::Signaled { signal: 15 }.exit_code(), 143);
    }

    #[test]
    fn a_stream_names_its_terminal_and_drops_only_when_there_were_some() {
        let plain = serde_json::to_value(Stream {
            bytes: 3,
            ..Stream::default()
        })
        .unwrap();
        assert_eq!(plain, serde_json::json!({"bytes": 3, "truncated": false}));
        let filtered = serde_json::to_value(Stream {
            bytes: 9,
            controls_dropped: 4,
            terminal: Some("filtered"),
            sha256: "sha256:x".into(),
            truncated: false,
            kept: None,
        })
        .unwrap();
        assert_eq!(
            filtered,
            serde_json::json!({"bytes": 9, "controls_dropped": 4, "sha256": "sha256:x", "terminal": "filtered", "truncated": false})
        );
    }
}
