//! The network audit of one run: one [`Connection`] per connection to
//! sealc's proxy, with its decision, and the `--resolve` overrides in force.
//! It never holds a request or response body, a header value or a
//! credential: only the host and port asked for, the address connected to,
//! counts and times. The run report (`crate::exec::report`, schema
//! `sealc.run/v1`) carries it.
//!
//! Unlike the compiled artifacts this is a log of one run, so its times are
//! read from the clock; [`rfc3339`] is the one formatter of them.

use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;

/// What the proxy saw during one run; the run report copies it.
#[derive(Clone, Debug, Default)]
pub struct NetworkAudit {
    /// Each connection to sealc's proxy, in the order they were opened.
    pub network: Vec<Connection>,
    /// Connections past the report's cap ([`MAX_CONNECTIONS`]), counted only.
    pub network_omitted: u64,
    /// `--resolve NAME=ADDR` overrides in force (a test run).
    pub resolve_overrides: Vec<String>,
}

/// Most connections a report lists one by one.
pub const MAX_CONNECTIONS: usize = 100_000;

/// What the proxy did with a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    /// Allowed and connected: bytes went through.
    Allowed,
    /// Refused by the allowlist or the proxy's limits; nothing was sent on.
    Refused,
    /// Allowed, but the host could not be resolved or reached.
    Failed,
}

/// One connection to sealc's proxy.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Connection {
    /// When the agent connected (RFC 3339, UTC).
    pub time: String,
    /// `connect`, `http` (plain HTTP forwarded), `socks5`, or `unknown`
    /// when no request could be read.
    pub protocol: &'static str,
    /// The host asked for, normalized (ASCII after IDNA, lowercase); `null`
    /// when the request did not name one that parses.
    pub host: Option<String>,
    pub port: Option<u16>,
    /// The address connected to (or refused), `ip:port`.
    pub address: Option<String>,
    pub decision: Decision,
    /// Why it was refused or failed: one line.
    pub reason: Option<String>,
    /// Bytes relayed from the agent to the host (for plain HTTP, the head
    /// as sent on included).
    pub bytes_up: u64,
    /// Bytes relayed from the host to the agent.
    pub bytes_down: u64,
    /// From the agent's connection to its end (or the end of the run).
    pub duration_ms: f64,
    /// When sealc cut an allowed connection before both sides were done:
    /// `idle` (no byte either way for the proxy's idle timeout), or
    /// `run_ended` (still open when the command ended). Absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cut: Option<&'static str>,
    /// The held key sealc added to this request on the host side (the
    /// secret's name, never its value), over TLS to the host
    /// (`codex.provider.hold_key`). Absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held_key: Option<String>,
}

/// RFC 3339 in UTC, with milliseconds (`2026-11-01T09:30:00.123Z`, a
/// connection's time) or in whole seconds (`2026-11-01T09:30:00Z`, the run
/// report's start and end).
pub fn rfc3339(t: SystemTime, millis: bool) -> String {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, day) = civil(days as i64);
    let (h, min, s) = (rem / 3600, rem / 60 % 60, rem % 60);
    if millis {
        format!(
            "{y:04}-{m:02}-{day:02}T{h:02}:{min:02}:{s:02}.{:03}Z",
            d.subsec_millis()
        )
    } else {
        format!("{y:04}-{m:02}-{day:02}T{h:02}:{min:02}:{s:02}Z")
    }
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian
/// (Howard Hinnant's `civil_from_days`).
fn civil(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn times_are_rfc3339_utc() {
        let at = |s: u64, ms: u64| rfc3339(UNIX_EPOCH + Duration::from_millis(s * 1000 + ms), true);
        assert_eq!(at(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(at(951_782_400, 5), "2000-02-29T00:00:00.005Z");
        assert_eq!(at(1_700_000_000, 999), "2023-11-14T22:13:20.999Z");
        assert_eq!(at(4_107_542_399, 0), "2100-02-28T23:59:59.000Z");
        let whole = |s: u64| rfc3339(UNIX_EPOCH + Duration::from_millis(s * 1000 + 999), false);
        assert_eq!(whole(0), "1970-01-01T00:00:00Z");
        assert_eq!(whole(1_700_000_000), "2023-11-14T22:13:20Z");
    }
}
