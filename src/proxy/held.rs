//! Keys sealc holds (`codex.provider.hold_key`): the agent sends plain HTTP
//! to a held key's host and port through this proxy (the only way out of
//! the seal), and the proxy sends the request on over TLS with the key
//! added as `Authorization: Bearer ...`. The key is never in the sandbox:
//! not in an environment, a file or a process the agent can read.
//!
//! What the agent can still do is *use* the key, through this route only:
//! to the one host and port of the provider's base URL, for paths under its
//! path, over TLS whose certificate the host's trust store vouches for.

use std::ffi::OsStr;
use std::fmt;

use rustls::pki_types::{CertificateDer, ServerName};

use super::serve::{answer, failed, open, refused, Shared};
use super::*;

/// One key sealc holds: where it goes and its header value.
#[derive(Clone, PartialEq, Eq)]
pub struct HeldKey {
    /// The `env.secret` it came from (what reports name).
    pub secret: String,
    pub host: Host,
    pub port: u16,
    /// The base URL's path: only requests under it get the key.
    pub path: String,
    /// `Bearer <key>`.
    value: Vec<u8>,
}

/// Never the value: a `Debug` print of a plan must not show the key.
impl fmt::Debug for HeldKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HeldKey")
            .field("secret", &self.secret)
            .field("host", &self.host)
            .field("port", &self.port)
            .field("path", &self.path)
            .field("value", &"<held>")
            .finish()
    }
}

impl HeldKey {
    /// The key of a verified seal's provider, its value from sealc's
    /// environment. A value that is not one line of visible ASCII is
    /// refused: it goes into a request head, and a line break in it would
    /// add fields of its own.
    pub fn new(ir: &crate::ir::HeldKey, key: &OsStr) -> Result<HeldKey, String> {
        let key = key.as_encoded_bytes();
        if key.is_empty() || !key.iter().all(|b| b.is_ascii_graphic()) {
            return Err(format!(
                "the held key `{}` is not one word of visible ASCII (it goes into an `Authorization` field)",
                ir.secret
            ));
        }
        let host = policy::parse_host(&ir.host)
            .map_err(|why| format!("the held key's host `{}`: {why}", ir.host))?;
        let mut value = b"Bearer ".to_vec();
        value.extend_from_slice(key);
        Ok(HeldKey {
            secret: ir.secret.clone(),
            host,
            port: ir.port,
            path: ir.path.clone(),
            value,
        })
    }

    /// Is `path` (origin form, with its query) under the base URL's path?
    /// `/v1` covers `/v1`, `/v1/responses` and `/v1?x`, never `/v10`. A
    /// path a server could resolve to somewhere else is never covered: a
    /// dot segment (`/v1/../admin`), one written with `%2e`, a slash
    /// written `%2f` (some servers decode it before resolving dots), or a
    /// backslash (which some servers read as `/`).
    fn covers(&self, path: &str) -> bool {
        let before_query = path.split('?').next().unwrap_or_default();
        let lower = before_query.to_ascii_lowercase();
        if ["%2e", "%2f", "%5c", "\\"]
            .iter()
            .any(|w| lower.contains(w))
        {
            return false;
        }
        if before_query.split('/').any(|seg| seg == "." || seg == "..") {
            return false;
        }
        let base = self.path.trim_end_matches('/');
        match path.strip_prefix(base) {
            Some(rest) => rest.is_empty() || rest.starts_with('/') || rest.starts_with('?'),
            None => false,
        }
    }
}

/// The TLS client of the held keys: the trust store given (tests), else
/// the host's own (`SSL_CERT_FILE` and `SSL_CERT_DIR` when set, as OpenSSL
/// reads them); none at all is an error, not a connection that trusts
/// nothing or everything.
pub(super) fn client(
    trust: Option<&[CertificateDer<'static>]>,
) -> io::Result<Arc<rustls::ClientConfig>> {
    let mut roots = rustls::RootCertStore::empty();
    match trust {
        Some(certs) => {
            roots.add_parsable_certificates(certs.iter().cloned());
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            roots.add_parsable_certificates(found.certs);
        }
    }
    if roots.is_empty() {
        return Err(io::Error::other(
            "no trusted certificate authority for the held key's API (the host's store is empty; set `SSL_CERT_FILE`)",
        ));
    }
    // ring builds with a C compiler alone (aws-lc-rs, rustls's other
    // provider, brings a far larger C build); ring has no post-quantum key
    // exchange, which rustls 0.23.48 marks by deprecating this function.
    // Said in docs/network.md.
    #[allow(deprecated)]
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(io::Error::other)?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// The held key whose host and port a plain-HTTP request names, if any.
pub(super) fn route<'a>(head: &http::Head, shared: &'a Shared) -> Option<&'a HeldKey> {
    if head.method == "CONNECT" || shared.held.is_empty() {
        return None;
    }
    let target = http::target(head).ok()?;
    let host = policy::parse_host(target.host).ok()?;
    shared
        .held
        .iter()
        .find(|k| k.host == host && k.port == target.port)
}

/// Serve a request to a held key's host and port: under its path, sent on
/// over TLS with the key; anything else refused.
pub(super) async fn serve<S>(
    mut client: S,
    head: &http::Head,
    buf: &[u8],
    key: &HeldKey,
    shared: &Shared,
    conn: &Conn,
) where
    S: AsyncRead + AsyncWrite + Unpin,
{
    conn.set(|s| s.protocol = "http");
    let opened = async {
        let target = http::target(head).map_err(|b| refused(b.status, b.reason))?;
        let path = target.path.as_deref().unwrap_or("/");
        if !key.covers(path) {
            conn.set(|s| {
                s.host = Some(key.host.to_string());
                s.port = Some(key.port);
            });
            return Err(refused(
                403,
                format!(
                    "{}:{} is the held key's API: only paths under `{}` are sent on",
                    key.host, key.port, key.path
                ),
            ));
        }
        let (tcp, host) = open(target.host, target.port, shared, conn).await?;
        let tls = shared
            .tls
            .clone()
            .ok_or_else(|| failed(502, "no TLS client for the held key"))?;
        let name = match &host {
            Host::Name(n) => {
                ServerName::try_from(n.clone()).map_err(|e| failed(502, format!("{n}: {e}")))?
            }
            Host::Ip(ip) => ServerName::IpAddress((*ip).into()),
        };
        let connector = tokio_rustls::TlsConnector::from(tls);
        let stream = match tokio::time::timeout(CONNECT_TIMEOUT, connector.connect(name, tcp)).await
        {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => return Err(failed(502, format!("TLS with {host}:{}: {e}", key.port))),
            Err(_) => {
                return Err(failed(
                    504,
                    format!("TLS with {host}:{} timed out", key.port),
                ))
            }
        };
        let authority = match key.port {
            443 => host.to_string(),
            p => format!("{host}:{p}"),
        };
        let mut out = http::forward_head_with(head, &authority, path, Some(&key.value));
        out.extend_from_slice(&buf[head.len..]);
        Ok((stream, out))
    }
    .await;
    match opened {
        Ok((mut upstream, first)) => {
            conn.set(|s| s.held_key = Some(key.secret.clone()));
            if upstream.write_all(&first).await.is_ok() {
                conn.moved(&conn.up, first.len());
                conn.set(|s| s.relaying = true);
                relay_streams(client, upstream, conn, shared.timeouts.idle).await;
                conn.set(|s| s.relaying = false);
            }
        }
        Err(r) => answer(&mut client, shared, conn, r).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};

    /// A certificate authority and a server certificate it signed for
    /// `name`: (the CA's certificate, the server's chain, its key).
    fn pki(
        name: &str,
    ) -> (
        CertificateDer<'static>,
        Vec<CertificateDer<'static>>,
        rustls::pki_types::PrivateKeyDer<'static>,
    ) {
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let ca_cert = ca.self_signed(&ca_key).unwrap();
        let issuer = rcgen::Issuer::new(ca, ca_key);
        let key = rcgen::KeyPair::generate().unwrap();
        let leaf = rcgen::CertificateParams::new(vec![name.to_string()])
            .unwrap()
            .signed_by(&key, &issuer)
            .unwrap();
        (
            ca_cert.der().clone(),
            vec![leaf.der().clone()],
            rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
        )
    }

    /// A TLS server that answers each request with the head it received as
    /// its body; the port.
    fn api(name: &str) -> (u16, CertificateDer<'static>) {
        let (ca, chain, key) = pki(name);
        #[allow(deprecated)]
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = Arc::new(
            rustls::ServerConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .unwrap()
                .with_no_client_auth()
                .with_single_cert(chain, key)
                .unwrap(),
        );
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for c in l.incoming().flatten() {
                let config = config.clone();
                std::thread::spawn(move || {
                    let conn = rustls::ServerConnection::new(config).unwrap();
                    let mut s = rustls::StreamOwned::new(conn, c);
                    let mut got = Vec::new();
                    let mut buf = [0u8; 4096];
                    while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                        match s.read(&mut buf) {
                            Ok(0) | Err(_) => return,
                            Ok(n) => got.extend_from_slice(&buf[..n]),
                        }
                    }
                    let _ = write!(
                        s,
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        got.len()
                    );
                    let _ = s.write_all(&got);
                    s.conn.send_close_notify();
                    let _ = s.flush();
                });
            }
        });
        (port, ca)
    }

    fn proxy(port: u16, trust: Vec<CertificateDer<'static>>) -> (Running, u16, Audit) {
        let hosts = vec!["api.held.test".to_string()];
        let ir = crate::ir::HeldKey {
            secret: "API_KEY".into(),
            host: "api.held.test".into(),
            port,
            path: "/v1".into(),
        };
        let mut own = Own {
            policy: Policy::new(
                &hosts,
                [port],
                [policy::Cidr::parse("127.0.0.1/32").unwrap()],
            ),
            held: vec![HeldKey::new(&ir, OsStr::new("sk-held-7")).unwrap()],
            trust: Some(trust),
            ..Own::default()
        };
        let resolve = [("api.held.test".to_string(), "127.0.0.1".parse().unwrap())];
        own.audit = Audit::new(None, resolve.into_iter().collect());
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let at = l.local_addr().unwrap().port();
        (own.serve_on(l).unwrap(), at, own.audit.clone())
    }

    fn ask(at: u16, req: &str) -> String {
        let mut c = TcpStream::connect(("127.0.0.1", at)).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        c.write_all(req.as_bytes()).unwrap();
        let mut got = Vec::new();
        let _ = c.read_to_end(&mut got);
        String::from_utf8_lossy(&got).into_owned()
    }

    /// The connections, once `n` are recorded (a connection is recorded
    /// when its task starts, which may be just after the client's answer
    /// came), or after 5 s.
    fn settled(audit: &Audit, n: usize) -> Vec<crate::audit::Connection> {
        let until = Instant::now() + Duration::from_secs(5);
        loop {
            let conns = audit.connections();
            if conns.len() >= n || Instant::now() > until {
                return conns;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    #[test]
    fn the_key_is_added_over_tls_under_the_base_path_only() {
        let (port, ca) = api("api.held.test");
        let (_running, at, audit) = proxy(port, vec![ca]);
        // The client's own `Authorization` is replaced, never sent on.
        let got = ask(
            at,
            &format!("POST http://api.held.test:{port}/v1/responses HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer agent-guess\r\nContent-Length: 2\r\n\r\n{{}}"),
        );
        assert!(got.starts_with("HTTP/1.1 200 OK"), "{got}");
        assert!(got.contains("POST /v1/responses HTTP/1.1\r\n"), "{got}");
        assert!(
            got.contains("\r\nAuthorization: Bearer sk-held-7\r\n"),
            "{got}"
        );
        assert!(!got.contains("agent-guess"), "{got}");
        assert_eq!(got.matches("Authorization").count(), 1, "{got}");
        // Outside the base path: refused, nothing sent on.
        for path in ["/v10/x", "/", "/admin", "/v1/../admin", "/v1/%2e%2e/admin"] {
            let got = ask(
                at,
                &format!("GET http://api.held.test:{port}{path} HTTP/1.1\r\nHost: x\r\n\r\n"),
            );
            assert!(got.starts_with("HTTP/1.1 403"), "{path}: {got}");
            assert!(!got.contains("sk-held-7"), "{got}");
        }
        let conns = settled(&audit, 6);
        let held: Vec<_> = conns.iter().filter(|c| c.held_key.is_some()).collect();
        assert_eq!(held.len(), 1, "{conns:?}");
        assert_eq!(held[0].held_key.as_deref(), Some("API_KEY"));
        assert_eq!(held[0].decision, crate::audit::Decision::Allowed);
        assert_eq!(conns.len(), 6, "{conns:?}");
        let json = serde_json::to_string(&conns).unwrap();
        assert!(
            !json.contains("sk-held-7"),
            "the key is in the report: {json}"
        );
    }

    #[test]
    fn an_api_whose_certificate_the_store_does_not_vouch_for_gets_no_key() {
        let (port, _ca) = api("api.held.test");
        // Another authority: the server's chain does not lead to it.
        let (other, _, _) = pki("api.held.test");
        let (_running, at, audit) = proxy(port, vec![other]);
        let got = ask(
            at,
            &format!("GET http://api.held.test:{port}/v1/models HTTP/1.1\r\nHost: x\r\n\r\n"),
        );
        assert!(got.starts_with("HTTP/1.1 502"), "{got}");
        assert!(got.contains("TLS with api.held.test"), "{got}");
        let conns = settled(&audit, 1);
        assert_eq!(conns.len(), 1, "{conns:?}");
        assert!(conns[0].held_key.is_none());
        assert_eq!(conns[0].decision, crate::audit::Decision::Failed);
    }

    #[test]
    fn a_key_that_would_add_a_field_of_its_own_is_refused() {
        let ir = crate::ir::HeldKey {
            secret: "K".into(),
            host: "h.test".into(),
            port: 443,
            path: "/".into(),
        };
        for bad in ["", "a b", "a\r\nX-Evil: 1", "k\u{e9}"] {
            assert!(HeldKey::new(&ir, OsStr::new(bad)).is_err(), "{bad:?}");
        }
        let k = HeldKey::new(&ir, OsStr::new("sk-1")).unwrap();
        assert!(!format!("{k:?}").contains("sk-1"));
    }

    #[test]
    fn base_paths_cover_what_lies_under_them() {
        let ir = crate::ir::HeldKey {
            secret: "K".into(),
            host: "h.test".into(),
            port: 443,
            path: "/v1/".into(),
        };
        let k = HeldKey::new(&ir, OsStr::new("k")).unwrap();
        for p in ["/v1", "/v1/", "/v1/responses", "/v1?x=1"] {
            assert!(k.covers(p), "{p}");
        }
        for p in ["/v10", "/", "/v2/x", "v1"] {
            assert!(!k.covers(p), "{p}");
        }
        // Paths a server would resolve out of `/v1`.
        for p in [
            "/v1/../admin",
            "/v1/..",
            "/v1/./../x",
            "/v1/%2e%2e/admin",
            "/v1/%2E%2E/admin",
            "/v1/.%2e/admin",
            "/v1/..\\admin",
            "/v1/%5c../admin",
            "/v1/x%2f..%2f..%2fadmin",
            "/v1/x%2F..%2F..%2Fadmin",
        ] {
            assert!(!k.covers(p), "{p}");
        }
        // A query may say anything.
        assert!(k.covers("/v1/responses?next=../x"));
    }
}
