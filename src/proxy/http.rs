//! The proxy's side of HTTP/1: finding the end of a request head, parsing
//! it with `httparse`, reading its target, and the head sent on for a
//! plain-HTTP request. Pure functions over bytes.

/// Most bytes a request head may take.
pub const MAX_HEAD: usize = 16 * 1024;
/// Most header fields a request may have.
pub const MAX_HEADERS: usize = 64;

/// A request head, owned. Header values are carried, never shown.
#[derive(Debug, PartialEq, Eq)]
pub struct Head {
    pub method: String,
    pub target: String,
    /// The minor version: `HTTP/1.0` or `HTTP/1.1`.
    pub minor: u8,
    pub headers: Vec<(String, Vec<u8>)>,
    /// Bytes of the head, `\r\n\r\n` included; what follows is body.
    pub len: usize,
}

/// Why a request head cannot be used, with the status to answer.
#[derive(Debug, PartialEq, Eq)]
pub struct Bad {
    pub status: u16,
    pub reason: &'static str,
}

fn bad(status: u16, reason: &'static str) -> Bad {
    Bad { status, reason }
}

/// Where the head ends (just past `\r\n\r\n` or `\n\n`), searching only
/// from `from` on (minus the three bytes a terminator can straddle), so a
/// client that sends one byte at a time costs a constant per byte.
pub fn head_end(buf: &[u8], from: usize) -> Option<usize> {
    let start = from.saturating_sub(3);
    let hay = buf.get(start..)?;
    (0..hay.len()).find_map(|i| {
        if hay[i..].starts_with(b"\r\n\r\n") {
            Some(start + i + 4)
        } else if hay[i..].starts_with(b"\n\n") {
            Some(start + i + 2)
        } else {
            None
        }
    })
}

/// Parse a complete head (`buf` holds at least up to its end).
pub fn parse(buf: &[u8]) -> Result<Head, Bad> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    match req.parse(buf) {
        Ok(httparse::Status::Complete(len)) => Ok(Head {
            method: req.method.unwrap_or_default().to_string(),
            target: req.path.unwrap_or_default().to_string(),
            minor: req.version.unwrap_or(1),
            headers: req
                .headers
                .iter()
                .map(|h| (h.name.to_string(), h.value.to_vec()))
                .collect(),
            len,
        }),
        Ok(httparse::Status::Partial) => Err(bad(400, "an incomplete request head")),
        Err(httparse::Error::TooManyHeaders) => Err(bad(431, "too many header fields")),
        Err(httparse::Error::Version) => Err(bad(505, "not an HTTP/1 request")),
        Err(_) => Err(bad(400, "a malformed request head")),
    }
}

/// A request's destination as its target names it (host not yet checked).
#[derive(Debug, PartialEq, Eq)]
pub struct Target<'a> {
    pub host: &'a str,
    pub port: u16,
    /// For plain HTTP: the origin-form path and query sent on.
    pub path: Option<String>,
}

/// `host:port` (authority form, as `CONNECT` takes), or `host` with a
/// default port. `[v6]` keeps its brackets.
pub fn authority(a: &str, default_port: Option<u16>) -> Result<(&str, u16), Bad> {
    if a.contains('@') {
        return Err(bad(400, "credentials in the request target are refused"));
    }
    let (host, port) = if a.starts_with('[') {
        match a.find(']') {
            Some(i) => match &a[i + 1..] {
                "" => (&a[..=i], None),
                rest => (
                    &a[..=i],
                    Some(
                        rest.strip_prefix(':')
                            .ok_or(bad(400, "a malformed authority"))?,
                    ),
                ),
            },
            None => return Err(bad(400, "a malformed authority")),
        }
    } else {
        match a.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (a, None),
        }
    };
    let port = match (port, default_port) {
        (Some(p), _) => {
            if p.is_empty() || p.len() > 5 || !p.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad(400, "a malformed port"));
            }
            p.parse::<u16>()
                .ok()
                .filter(|p| *p > 0)
                .ok_or(bad(400, "a port outside 1-65535"))?
        }
        (None, Some(d)) => d,
        (None, None) => return Err(bad(400, "CONNECT needs `host:port`")),
    };
    if host.is_empty() {
        return Err(bad(400, "no host in the request target"));
    }
    Ok((host, port))
}

/// The destination of a request: `CONNECT host:port`, or a plain-HTTP
/// request in absolute form (`GET http://host[:port]/path`).
pub fn target(head: &Head) -> Result<Target<'_>, Bad> {
    if head.method == "CONNECT" {
        let (host, port) = authority(&head.target, None)?;
        return Ok(Target {
            host,
            port,
            path: None,
        });
    }
    let t = head.target.as_str();
    let scheme_end = t.find("://").ok_or(bad(
        400,
        "not a proxy request: the target must be an absolute `http://` URL, or use CONNECT",
    ))?;
    if !t[..scheme_end].eq_ignore_ascii_case("http") {
        return Err(bad(
            400,
            "only `http://` is forwarded; use CONNECT for anything else",
        ));
    }
    let rest = &t[scheme_end + 3..];
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (host, port) = authority(&rest[..end], Some(80))?;
    let mut path = rest[end..]
        .split('#')
        .next()
        .unwrap_or_default()
        .to_string();
    if !path.starts_with('/') {
        path.insert(0, '/');
    }
    Ok(Target {
        host,
        port,
        path: Some(path),
    })
}

/// Header fields that concern one hop only, never sent on.
const HOP_BY_HOP: [&str; 8] = [
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "proxy-connection",
    "te",
    "trailer",
    "upgrade",
];

/// The head sent on for a plain-HTTP request: origin form, `Host` from the
/// target, hop-by-hop fields (and those `Connection` names) dropped, and
/// `Connection: close`, so one request goes to the host that was checked.
pub fn forward_head(head: &Head, authority: &str, path: &str) -> Vec<u8> {
    forward_head_with(head, authority, path, None)
}

/// [`forward_head`], with `authorization`: every `Authorization` field the
/// client sent is dropped and this one value sent instead (a key sealc holds).
pub fn forward_head_with(
    head: &Head,
    authority: &str,
    path: &str,
    authorization: Option<&[u8]>,
) -> Vec<u8> {
    let named: Vec<String> = head
        .headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case("connection"))
        .flat_map(|(_, v)| {
            String::from_utf8_lossy(v)
                .split(',')
                .map(|s| s.trim().to_ascii_lowercase())
                .collect::<Vec<_>>()
        })
        .collect();
    let mut out = Vec::with_capacity(head.len + 64);
    out.extend_from_slice(
        format!(
            "{} {path} HTTP/1.{}\r\nHost: {authority}\r\n",
            head.method, head.minor
        )
        .as_bytes(),
    );
    for (name, value) in &head.headers {
        let lower = name.to_ascii_lowercase();
        if lower == "host"
            || HOP_BY_HOP.contains(&lower.as_str())
            || named.contains(&lower)
            || (authorization.is_some() && lower == "authorization")
        {
            continue;
        }
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value);
        out.extend_from_slice(b"\r\n");
    }
    if let Some(value) = authorization {
        out.extend_from_slice(b"Authorization: ");
        out.extend_from_slice(value);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"Connection: close\r\n\r\n");
    out
}

/// An answer from the proxy itself, with a one-line reason as its body.
pub fn answer(status: u16, reason: &str) -> Vec<u8> {
    let phrase = match status {
        400 => "Bad Request",
        403 => "Forbidden",
        408 => "Request Timeout",
        431 => "Request Header Fields Too Large",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        505 => "HTTP Version Not Supported",
        _ => "Error",
    };
    let body = format!("sealc: {}\n", one_line(reason));
    format!(
        "HTTP/1.1 {status} {phrase}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Printable ASCII only, on one line.
pub fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_graphic() || c == ' ' {
                c
            } else {
                '?'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(s: &str) -> Head {
        parse(s.as_bytes()).unwrap()
    }

    #[test]
    fn the_end_of_a_head_is_found_once_across_reads() {
        let b = b"GET / HTTP/1.1\r\nA: b\r\n\r\nbody";
        assert_eq!(head_end(b, 0), Some(b.len() - 4));
        // Arriving a byte at a time: found exactly when the last byte lands.
        let end = b.len() - 4;
        for n in 1..=end {
            let found = head_end(&b[..n], n - 1);
            assert_eq!(found, (n == end).then_some(end), "{n}");
        }
        assert_eq!(head_end(b"GET / HTTP/1.0\n\n", 10), Some(16));
        assert_eq!(head_end(b"", 0), None);
    }

    #[test]
    fn connect_and_absolute_targets() {
        let h = head("CONNECT api.example.com:443 HTTP/1.1\r\nHost: x\r\n\r\n");
        assert_eq!(
            target(&h).unwrap(),
            Target {
                host: "api.example.com",
                port: 443,
                path: None
            }
        );
        let h = head("CONNECT [::1]:8443 HTTP/1.1\r\n\r\n");
        assert_eq!(target(&h).unwrap().host, "[::1]");
        let h = head("GET http://Example.com/a/b?c=d#frag HTTP/1.1\r\n\r\n");
        assert_eq!(
            target(&h).unwrap(),
            Target {
                host: "Example.com",
                port: 80,
                path: Some("/a/b?c=d".into())
            }
        );
        let h = head("GET HTTP://example.com:8080?q HTTP/1.0\r\n\r\n");
        let t = target(&h).unwrap();
        assert_eq!((t.port, t.path.as_deref()), (8080, Some("/?q")));
        for bad_line in [
            "CONNECT example.com HTTP/1.1",
            "CONNECT example.com:0 HTTP/1.1",
            "CONNECT example.com:65536 HTTP/1.1",
            "CONNECT example.com:+80 HTTP/1.1",
            "CONNECT :443 HTTP/1.1",
            "CONNECT [::1 HTTP/1.1",
            "CONNECT [::1]x HTTP/1.1",
            "CONNECT user:pw@example.com:443 HTTP/1.1",
            "GET / HTTP/1.1",
            "GET https://example.com/ HTTP/1.1",
            "GET ftp://example.com/ HTTP/1.1",
            "GET http://user:pw@example.com/ HTTP/1.1",
            "GET http:///x HTTP/1.1",
        ] {
            let h = head(&format!("{bad_line}\r\n\r\n"));
            assert!(target(&h).is_err(), "{bad_line}");
        }
    }

    #[test]
    fn hostile_heads_are_refused_not_panicked_on() {
        assert_eq!(parse(b"\x00\xff garbage\r\n\r\n").unwrap_err().status, 400);
        assert_eq!(parse(b"GET / HTTP/2.0\r\n\r\n").unwrap_err().status, 505);
        let many: String = (0..MAX_HEADERS + 1)
            .map(|i| format!("H{i}: v\r\n"))
            .collect();
        let req = format!("GET http://a/ HTTP/1.1\r\n{many}\r\n");
        assert_eq!(parse(req.as_bytes()).unwrap_err().status, 431);
        assert_eq!(
            parse(b"GET http://a/ HTTP/1.1\r\nBad Header: x\r\n\r\n")
                .unwrap_err()
                .status,
            400
        );
    }

    #[test]
    fn a_forwarded_head_goes_to_the_checked_host_only() {
        let h = head("POST http://example.com:8080/up HTTP/1.1\r\nHost: evil.test\r\nProxy-Authorization: Basic c2VjcmV0\r\nConnection: keep-alive, X-Hop\r\nX-Hop: 1\r\nContent-Length: 3\r\nProxy-Connection: keep-alive\r\n\r\n");
        let out = String::from_utf8(forward_head(&h, "example.com:8080", "/up")).unwrap();
        assert_eq!(
            out,
            "POST /up HTTP/1.1\r\nHost: example.com:8080\r\nContent-Length: 3\r\nConnection: close\r\n\r\n"
        );
    }

    #[test]
    fn answers_are_one_line() {
        let a = String::from_utf8(answer(403, "evil.test\r\nX: y is not allowed")).unwrap();
        assert!(a.starts_with("HTTP/1.1 403 Forbidden\r\n"));
        assert!(
            a.ends_with("\r\n\r\nsealc: evil.test??X: y is not allowed\n"),
            "{a}"
        );
    }
}
