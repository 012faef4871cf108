//! Serving one client: read its request (HTTP CONNECT or plain, or SOCKS),
//! decide it against the allowlist, resolve the name and check every
//! answer, connect, and answer the client.

use super::*;

pub(super) struct Shared {
    pub(super) policy: Policy,
    pub(super) audit: Audit,
    pub(super) timeouts: Timeouts,
    pub(super) active: Arc<AtomicUsize>,
    pub(super) held: Vec<held::HeldKey>,
    pub(super) tls: Option<Arc<rustls::ClientConfig>>,
}

/// Why a connection goes no further, and what the client is told.
pub(super) struct Refused {
    pub(super) status: u16,
    pub(super) reason: String,
    /// `Refused` (the allowlist, a limit, a bad request) or `Failed` (an
    /// allowed host that cannot be resolved or reached).
    pub(super) decision: Decision,
    /// What to answer instead of the protocol's usual refusal.
    pub(super) reply: Option<Vec<u8>>,
}

pub(super) fn refused(status: u16, reason: impl Into<String>) -> Refused {
    Refused {
        status,
        reason: reason.into(),
        decision: Decision::Refused,
        reply: None,
    }
}

pub(super) fn failed(status: u16, reason: impl Into<String>) -> Refused {
    Refused {
        decision: Decision::Failed,
        ..refused(status, reason)
    }
}

pub(super) async fn accept_unix(l: tokio::net::UnixListener, shared: Arc<Shared>) {
    loop {
        match l.accept().await {
            Ok((s, _)) => {
                tokio::spawn(serve(s, shared.clone()));
            }
            // Out of descriptors, most likely: wait instead of spinning.
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

pub(super) async fn accept_tcp(l: tokio::net::TcpListener, shared: Arc<Shared>) {
    loop {
        match l.accept().await {
            Ok((s, _)) => {
                let _ = s.set_nodelay(true);
                tokio::spawn(serve(s, shared.clone()));
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

/// Serve one connection from the agent.
pub(super) async fn serve<S>(mut client: S, shared: Arc<Shared>)
where
    S: AsyncRead + AsyncWrite + Socket + Unpin + Send + 'static,
{
    let conn = shared.audit.open();
    let _ending = Ending(conn.clone());
    let Some(_slot) = Slot::take(&shared.active) else {
        let r = refused(
            503,
            format!("more than {MAX_CONNECTIONS} connections at once"),
        );
        return answer(&mut client, &shared, &conn, r).await;
    };
    let mut buf = Vec::with_capacity(1024);
    // The whole request (an HTTP head, or a SOCKS5 greeting and request)
    // within one deadline.
    let deadline = tokio::time::Instant::now() + shared.timeouts.head;
    let late = || {
        refused(
            408,
            format!(
                "no complete request head within {}",
                seconds(shared.timeouts.head)
            ),
        )
    };
    let opened = match tokio::time::timeout_at(deadline, first_bytes(&mut client, &mut buf)).await {
        Err(_) => Err(late()),
        Ok(Err(r)) => Err(r),
        Ok(Ok(())) if buf[0] == socks::VERSION => {
            conn.set(|s| s.protocol = "socks5");
            match tokio::time::timeout_at(deadline, socks::handshake(&mut client, &mut buf)).await {
                Err(_) => Err(late()),
                Ok(Err(r)) => Err(r),
                Ok(Ok((host, port))) => open(&host, port, &shared, &conn)
                    .await
                    .map(|(up, _)| (up, socks::reply(0), buf.clone())),
            }
        }
        Ok(Ok(())) => {
            match tokio::time::timeout_at(deadline, read_head(&mut client, &mut buf)).await {
                Err(_) => Err(late()),
                Ok(Err(r)) => Err(r),
                Ok(Ok(head)) => {
                    if let Some(key) = held::route(&head, &shared) {
                        return held::serve(client, &head, &buf, key, &shared, &conn).await;
                    }
                    open_http(&head, &buf, &shared, &conn).await
                }
            }
        }
    };
    match opened {
        Ok((mut upstream, to_client, to_upstream)) => {
            if client.write_all(&to_client).await.is_ok()
                && upstream.write_all(&to_upstream).await.is_ok()
            {
                conn.moved(&conn.up, to_upstream.len());
                conn.set(|s| s.relaying = true);
                relay(client, upstream, &conn, shared.timeouts.idle).await;
                conn.set(|s| s.relaying = false);
            }
        }
        Err(r) => answer(&mut client, &shared, &conn, r).await,
    }
}

/// `10s`, or `0.2s`.
pub(super) fn seconds(d: Duration) -> String {
    format!("{}s", d.as_secs_f64())
}

/// Read the first bytes of a request.
pub(super) async fn first_bytes<S: AsyncRead + Unpin>(
    s: &mut S,
    buf: &mut Vec<u8>,
) -> Result<(), Refused> {
    let mut chunk = [0u8; 4096];
    match s.read(&mut chunk).await {
        Ok(0) => Err(refused(400, "the connection closed before a request")),
        Ok(n) => {
            buf.extend_from_slice(&chunk[..n]);
            Ok(())
        }
        Err(e) => Err(refused(400, format!("cannot read the request: {e}"))),
    }
}

/// An HTTP request: its host connected to, what to answer the client
/// (`200` for `CONNECT`, nothing for plain HTTP) and the first bytes to
/// send on (what followed a `CONNECT`'s head, or the plain-HTTP head
/// rewritten and what followed it).
pub(super) async fn open_http(
    head: &http::Head,
    buf: &[u8],
    shared: &Shared,
    conn: &Conn,
) -> Result<(tokio::net::TcpStream, Vec<u8>, Vec<u8>), Refused> {
    let connect = head.method == "CONNECT";
    conn.set(|s| s.protocol = if connect { "connect" } else { "http" });
    let target = http::target(head).map_err(|b| refused(b.status, b.reason))?;
    let (upstream, host) = open(target.host, target.port, shared, conn).await?;
    let rest = &buf[head.len..];
    if connect {
        let ok = b"HTTP/1.1 200 Connection established\r\n\r\n".to_vec();
        return Ok((upstream, ok, rest.to_vec()));
    }
    let authority = match target.port {
        80 => host.to_string(),
        p => format!("{host}:{p}"),
    };
    let mut out = http::forward_head(head, &authority, target.path.as_deref().unwrap_or("/"));
    out.extend_from_slice(rest);
    Ok((upstream, Vec::new(), out))
}

/// Check a target and connect to it: the upstream connection and the host,
/// normalized.
pub(super) async fn open(
    raw_host: &str,
    port: u16,
    shared: &Shared,
    conn: &Conn,
) -> Result<(tokio::net::TcpStream, Host), Refused> {
    let host = policy::parse_host(raw_host)
        .map_err(|why| refused(400, format!("the request's host: {why}")))?;
    conn.set(|s| {
        s.host = Some(host.to_string());
        s.port = Some(port);
    });
    shared
        .policy
        .check_target(&host, port)
        .map_err(|r| refused(403, r.0))?;
    let addrs = resolve(shared, &host, port, conn).await?;
    let mut last_err = String::new();
    for a in &addrs {
        conn.set(|s| s.address = Some(*a));
        match tokio::time::timeout(CONNECT_TIMEOUT, tokio::net::TcpStream::connect(a)).await {
            Ok(Ok(upstream)) => {
                let _ = upstream.set_nodelay(true);
                conn.set(|s| {
                    s.decision = Decision::Allowed;
                    s.reason = None;
                });
                return Ok((upstream, host));
            }
            Ok(Err(e)) => last_err = e.to_string(),
            Err(_) => last_err = "timed out".into(),
        }
    }
    Err(failed(
        502,
        format!("cannot reach {host}:{port}: {last_err}"),
    ))
}

/// Read until a whole head is in `buf`; parse it.
pub(super) async fn read_head<S: AsyncRead + Unpin>(
    s: &mut S,
    buf: &mut Vec<u8>,
) -> Result<http::Head, Refused> {
    let mut chunk = [0u8; 4096];
    // `buf` may hold the first bytes already.
    let mut from = 0;
    loop {
        if let Some(end) = http::head_end(buf, from) {
            if end > http::MAX_HEAD {
                return Err(refused(
                    431,
                    format!("the request head is over {} bytes", http::MAX_HEAD),
                ));
            }
            return http::parse(&buf[..end]).map_err(|b| refused(b.status, b.reason));
        }
        if buf.len() > http::MAX_HEAD {
            return Err(refused(
                431,
                format!("the request head is over {} bytes", http::MAX_HEAD),
            ));
        }
        from = buf.len();
        let n = s
            .read(&mut chunk)
            .await
            .map_err(|e| refused(400, format!("cannot read the request: {e}")))?;
        if n == 0 {
            return Err(refused(
                400,
                "the connection closed before a whole request head",
            ));
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// The checked addresses to try for `host:port`: a listed IP literal as it
/// is; a name resolved here (the test override first), every answer
/// checked, refused if any is in a special range not allowed.
pub(super) async fn resolve(
    shared: &Shared,
    host: &Host,
    port: u16,
    conn: &Conn,
) -> Result<Vec<SocketAddr>, Refused> {
    let name = match host {
        Host::Ip(ip) => return Ok(vec![SocketAddr::new(*ip, port)]),
        Host::Name(n) => n,
    };
    let answers: Vec<IpAddr> = match shared.audit.0.resolve.get(name) {
        Some(ip) => vec![*ip],
        None => {
            let looked = tokio::time::timeout(
                RESOLVE_TIMEOUT,
                tokio::net::lookup_host((name.as_str(), port)),
            )
            .await;
            match looked {
                Ok(Ok(it)) => it.map(|a| a.ip()).collect(),
                Ok(Err(e)) => return Err(failed(502, format!("cannot resolve {name}: {e}"))),
                Err(_) => return Err(failed(504, format!("resolving {name} timed out"))),
            }
        }
    };
    if answers.is_empty() {
        return Err(failed(502, format!("{name} has no address")));
    }
    let mut out = Vec::new();
    for ip in answers {
        let a = SocketAddr::new(ip.to_canonical(), port);
        if let Err(r) = shared.policy.check_answer(host, ip) {
            conn.set(|s| s.address = Some(a));
            return Err(refused(403, r.0));
        }
        if !out.contains(&a) {
            out.push(a);
        }
    }
    Ok(out)
}

/// Record a refusal or failure, tell sealc's stderr, and answer the client
/// with the status and the one-line reason.
pub(super) async fn answer<S: AsyncRead + AsyncWrite + Unpin>(
    client: &mut S,
    shared: &Shared,
    conn: &Conn,
    r: Refused,
) {
    let reason = http::one_line(&r.reason);
    let mut said = String::new();
    let mut socks = false;
    conn.set(|s| {
        socks = s.protocol == "socks5";
        s.decision = r.decision;
        s.reason = Some(reason.clone());
        let what = match r.decision {
            Decision::Failed => "failed",
            _ => "refused",
        };
        said = match (&s.host, s.port) {
            (Some(h), Some(p)) => format!("proxy {what} {} {h}:{p}: {reason}", s.protocol),
            _ => format!("proxy {what} a connection: {reason}"),
        };
    });
    shared.audit.say(&said);
    // Best effort, and bounded: a client that does not read is not waited
    // for. What it still sends is read and dropped for a moment (a lingering
    // close): closing with unread bytes would reset the connection, and the
    // client could lose the answer.
    let _ = tokio::time::timeout(LINGER, async {
        let bytes = match (r.reply, socks) {
            (Some(b), _) => b,
            (None, true) => socks::reply(socks::code(r.status)),
            (None, false) => http::answer(r.status, &reason),
        };
        let _ = client.write_all(&bytes).await;
        let _ = client.shutdown().await;
        let mut sink = [0u8; 4096];
        let mut left = LINGER_BYTES;
        while left > 0 {
            match client.read(&mut sink).await {
                Ok(0) | Err(_) => break,
                Ok(n) => left = left.saturating_sub(n),
            }
        }
    })
    .await;
}
