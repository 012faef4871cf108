//! SOCKS5 on the proxy's port (RFC 1928): no authentication, `CONNECT`
//! only, the target as a name (`socks5h://`), an IPv4 or an IPv6 address.
//! The target then goes through the same checks as an HTTP `CONNECT`. A
//! refusal can carry no reason in SOCKS5: the client gets reply 2
//! ("connection not allowed by ruleset") and the reason goes to sealc's
//! stderr and the report.

use std::net::{Ipv4Addr, Ipv6Addr};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::{refused, Refused};

/// The first byte of a SOCKS5 greeting.
pub const VERSION: u8 = 5;

/// The reply to a request: `code` (0 succeeded), bound address 0.0.0.0:0.
pub fn reply(code: u8) -> Vec<u8> {
    vec![VERSION, code, 0, 1, 0, 0, 0, 0, 0, 0]
}

/// The reply code for a refusal or failure of the given HTTP-like status.
pub fn code(status: u16) -> u8 {
    match status {
        403 => 2,       // not allowed by ruleset
        502 | 504 => 4, // host unreachable
        _ => 1,         // general failure
    }
}

/// Read until `buf` holds `n` bytes.
async fn need<S: AsyncRead + Unpin>(s: &mut S, buf: &mut Vec<u8>, n: usize) -> Result<(), Refused> {
    let mut chunk = [0u8; 512];
    while buf.len() < n {
        match s.read(&mut chunk).await {
            Ok(0) | Err(_) => {
                return Err(refused(
                    400,
                    "the connection closed before a whole SOCKS5 request",
                ))
            }
            Ok(k) => buf.extend_from_slice(&chunk[..k]),
        }
    }
    Ok(())
}

fn with_reply(mut r: Refused, bytes: Vec<u8>) -> Refused {
    r.reply = Some(bytes);
    r
}

/// The greeting and the request: the target's host (as text, for
/// [`super::policy::parse_host`]) and port. `buf` holds what was read so
/// far; what follows the request is left in it.
pub(super) async fn handshake<S: AsyncRead + AsyncWrite + Unpin>(
    s: &mut S,
    buf: &mut Vec<u8>,
) -> Result<(String, u16), Refused> {
    need(s, buf, 2).await?;
    let methods = usize::from(buf[1]);
    need(s, buf, 2 + methods).await?;
    if !buf[2..2 + methods].contains(&0) {
        return Err(with_reply(
            refused(
                400,
                "the SOCKS5 client offers no method without authentication",
            ),
            vec![VERSION, 0xff],
        ));
    }
    buf.drain(..2 + methods);
    s.write_all(&[VERSION, 0])
        .await
        .map_err(|e| refused(400, format!("cannot answer the SOCKS5 greeting: {e}")))?;
    need(s, buf, 5).await?;
    if buf[0] != VERSION {
        return Err(refused(400, "not a SOCKS5 request"));
    }
    if buf[1] != 1 {
        return Err(with_reply(
            refused(400, "only SOCKS5 CONNECT is served"),
            reply(7),
        ));
    }
    let (host, at) = match buf[3] {
        1 => {
            need(s, buf, 4 + 4 + 2).await?;
            let a = Ipv4Addr::new(buf[4], buf[5], buf[6], buf[7]);
            (a.to_string(), 8)
        }
        3 => {
            let len = usize::from(buf[4]);
            need(s, buf, 5 + len + 2).await?;
            let name = std::str::from_utf8(&buf[5..5 + len])
                .map_err(|_| refused(400, "a SOCKS5 host name that is not UTF-8"))?;
            (name.to_string(), 5 + len)
        }
        4 => {
            need(s, buf, 4 + 16 + 2).await?;
            let mut o = [0u8; 16];
            o.copy_from_slice(&buf[4..20]);
            (format!("[{}]", Ipv6Addr::from(o)), 20)
        }
        _ => {
            return Err(with_reply(
                refused(400, "an unknown SOCKS5 address type"),
                reply(8),
            ))
        }
    };
    let port = u16::from_be_bytes([buf[at], buf[at + 1]]);
    buf.drain(..at + 2);
    if port == 0 {
        return Err(refused(400, "port 0"));
    }
    Ok((host, port))
}
