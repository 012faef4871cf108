use super::*;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};

/// An upstream that echoes, or answers a GET with its head's first line.
fn upstream() -> (u16, Arc<AtomicUsize>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let open = Arc::new(AtomicUsize::new(0));
    let o = open.clone();
    std::thread::spawn(move || {
        for mut c in l.incoming().flatten() {
            let o = o.clone();
            o.fetch_add(1, Ordering::SeqCst);
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while let Ok(n) = c.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    if buf.starts_with(b"GET ") {
                        let line = String::from_utf8_lossy(&buf[..n]).replace("\r\n", "|");
                        let _ = write!(c, "HTTP/1.0 200 OK\r\n\r\n{line}");
                        break;
                    }
                    if c.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
                o.fetch_sub(1, Ordering::SeqCst);
            });
        }
    });
    (port, open)
}

fn proxy(port: u16) -> (Running, u16, Audit) {
    proxy_with(&[port], Timeouts::default())
}

fn proxy_with(ports: &[u16], timeouts: Timeouts) -> (Running, u16, Audit) {
    let hosts = vec!["allowed.test".to_string(), "private.test".to_string()];
    let mut own = Own {
        policy: Policy::new(
            &hosts,
            ports.iter().copied(),
            [policy::Cidr::parse("127.0.0.1/32").unwrap()],
        ),
        timeouts,
        ..Own::default()
    };
    let resolve = [
        ("allowed.test".to_string(), "127.0.0.1".parse().unwrap()),
        ("private.test".to_string(), "10.0.0.1".parse().unwrap()),
    ];
    own.audit = Audit::new(None, resolve.into_iter().collect());
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let at = l.local_addr().unwrap().port();
    (own.serve_on(l).unwrap(), at, own.audit.clone())
}

fn ask(at: u16, req: &str) -> (TcpStream, String) {
    let mut c = TcpStream::connect(("127.0.0.1", at)).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    c.write_all(req.as_bytes()).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    // Read the answer's head (and what came with it).
    while !got.windows(4).any(|w| w == b"\r\n\r\n") {
        match c.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
    (c, String::from_utf8_lossy(&got).into_owned())
}

/// A SOCKS5 exchange: greeting (methods), then CONNECT to `target`
/// (address type and bytes); the two replies.
fn socks(
    at: u16,
    methods: &[u8],
    atyp: u8,
    addr: &[u8],
    port: u16,
) -> (TcpStream, Vec<u8>, Vec<u8>) {
    let mut c = TcpStream::connect(("127.0.0.1", at)).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut hello = vec![5, methods.len() as u8];
    hello.extend_from_slice(methods);
    c.write_all(&hello).unwrap();
    let mut greeting = vec![0u8; 2];
    c.read_exact(&mut greeting).unwrap();
    if greeting[1] != 0 {
        return (c, greeting, Vec::new());
    }
    let mut req = vec![5, 1, 0, atyp];
    req.extend_from_slice(addr);
    req.extend_from_slice(&port.to_be_bytes());
    c.write_all(&req).unwrap();
    let mut rep = vec![0u8; 10];
    let _ = c.read_exact(&mut rep);
    (c, greeting, rep)
}

/// Every refusal line the proxy gives its log (sealc prints them on its
/// stderr, maybe a terminal) is one line of visible text, whatever
/// controls the agent put in its request.
#[test]
fn refusal_lines_hold_no_control_character_from_the_request() {
    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let kept = lines.clone();
    let mut own = Own {
        policy: Policy::new(&["allowed.test".to_string()], [443], []),
        ..Own::default()
    };
    own.audit = Audit::new(
        Some(Box::new(move |l: &str| lock(&kept).push(l.to_string()))),
        BTreeMap::new(),
    );
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let at = l.local_addr().unwrap().port();
    let running = own.serve_on(l).unwrap();
    let send = |req: &[u8]| {
        let mut c = TcpStream::connect(("127.0.0.1", at)).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        c.write_all(req).unwrap();
        let mut sink = Vec::new();
        let _ = c.read_to_end(&mut sink);
    };
    let socks = |name: &[u8]| {
        let mut req = vec![5, 1, 0, 5, 1, 0, 3, name.len() as u8];
        req.extend_from_slice(name);
        req.extend_from_slice(&443u16.to_be_bytes());
        req
    };
    let hostile: Vec<Vec<u8>> = vec![
        b"CONNECT \x1b]52;c;eA==\x07.test:443 HTTP/1.1\r\n\r\n".to_vec(),
        b"CONNECT evil\x9b2J.test:443 HTTP/1.1\r\n\r\n".to_vec(),
        "CONNECT evil\u{9b}2J.test:443 HTTP/1.1\r\n\r\n".into(),
        b"GET http://x\x1b[2J.test/ HTTP/1.1\r\n\r\n".to_vec(),
        b"\x1b[2J\x07garbage\x1bM\r\n\r\n".to_vec(),
        socks(b"\x1b]0;title\x07.test"),
        socks("evil\u{9b}6n.test".as_bytes()),
        socks(b"evil\r\nsealc: fake.test"),
    ];
    for req in &hostile {
        send(req);
    }
    running.stop();
    let lines = lock(&lines).clone();
    assert_eq!(lines.len(), hostile.len(), "{lines:?}");
    for l in &lines {
        assert!(!l.chars().any(char::is_control), "{l:?}");
    }
}

#[test]
fn socks5_clients_get_the_same_checks() {
    let (port, open) = upstream();
    let (running, at, audit) = proxy(port);
    let name = |n: &str| [&[n.len() as u8][..], n.as_bytes()].concat();
    let (mut c, greeting, rep) = socks(at, &[0], 3, &name("allowed.test"), port);
    assert_eq!((greeting, rep), (vec![5, 0], socks::reply(0)));
    c.write_all(b"ping").unwrap();
    let mut echo = [0u8; 4];
    c.read_exact(&mut echo).unwrap();
    assert_eq!(&echo, b"ping");
    drop(c);
    // Refused: another name (ruleset), an unlisted literal, another port.
    assert_eq!(socks(at, &[0], 3, &name("evil.test"), port).2[1], 2);
    assert_eq!(socks(at, &[0], 1, &[127, 0, 0, 1], port).2[1], 2);
    assert_eq!(
        socks(
            at,
            &[0],
            3,
            &name("allowed.test"),
            port.wrapping_add(1).max(1)
        )
        .2[1],
        2
    );
    // Only "no authentication" is spoken; only CONNECT.
    assert_eq!(
        socks(at, &[2], 3, &name("allowed.test"), port).1,
        vec![5, 0xff]
    );
    let conns = audit.connections();
    assert_eq!(conns.len(), 5);
    assert!(conns.iter().all(|c| c.protocol == "socks5"));
    assert_eq!(conns[0].decision, Decision::Allowed);
    assert_eq!((conns[0].bytes_up, conns[0].bytes_down), (4, 4));
    assert_eq!(
        conns[1].reason.as_deref(),
        Some("evil.test is not in `network.hosts`")
    );
    assert!(conns[1..].iter().all(|c| c.decision == Decision::Refused));
    running.stop();
    let t0 = Instant::now();
    while open.load(Ordering::SeqCst) > 0 && t0.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(open.load(Ordering::SeqCst), 0);
}

#[test]
fn tunnels_and_requests_go_through_checks_first_and_end_with_the_proxy() {
    let (port, open) = upstream();
    let (running, at, audit) = proxy(port);
    // A tunnel, with bytes sent along with the CONNECT.
    let (mut t, head) = ask(
        at,
        &format!("CONNECT Allowed.Test:{port} HTTP/1.1\r\n\r\nping"),
    );
    assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
    // The echo may have come with the head (a client that reads late
    // finds both waiting), or after it.
    let (_, echoed) = head.split_once("\r\n\r\n").unwrap();
    let mut echoed = echoed.as_bytes().to_vec();
    let mut buf = [0u8; 4];
    while echoed.len() < 4 {
        let n = t.read(&mut buf).unwrap();
        assert!(n > 0, "the tunnel closed before the echo");
        echoed.extend_from_slice(&buf[..n]);
    }
    assert_eq!(echoed, b"ping");
    // Plain HTTP: origin form, Host from the target, no proxy fields.
    let (mut c, head) = ask(at, &format!("GET http://allowed.test:{port}/p?q HTTP/1.1\r\nHost: evil\r\nProxy-Authorization: Basic eA==\r\n\r\n"));
    let mut rest = String::new();
    let _ = c.read_to_string(&mut rest);
    assert_eq!(
        format!("{head}{rest}"),
        format!("HTTP/1.0 200 OK\r\n\r\nGET /p?q HTTP/1.1|Host: allowed.test:{port}|Connection: close||")
    );
    for (req, status, why) in [
        (
            format!("CONNECT evil.test:{port} HTTP/1.1\r\n\r\n"),
            403,
            "evil.test is not in `network.hosts`",
        ),
        (
            format!(
                "CONNECT allowed.test:{} HTTP/1.1\r\n\r\n",
                port.wrapping_add(1).max(1)
            ),
            403,
            "is not in `network.ports`",
        ),
        (
            format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n"),
            403,
            "IP literal",
        ),
        (
            format!("CONNECT private.test:{port} HTTP/1.1\r\n\r\n"),
            403,
            "10.0.0.1, a private address",
        ),
        (
            format!("GET https://allowed.test:{port}/ HTTP/1.1\r\n\r\n"),
            400,
            "use CONNECT",
        ),
        ("\u{0}\u{1}garbage\r\n\r\n".to_string(), 400, "malformed"),
        (
            format!(
                "GET http://a/ HTTP/1.1\r\nX: {}\r\n\r\n",
                "x".repeat(20_000)
            ),
            431,
            "over 16384 bytes",
        ),
    ] {
        let (_, head) = ask(at, &req);
        assert!(
            head.starts_with(&format!("HTTP/1.1 {status} ")),
            "{req:.60}: {head}"
        );
        assert!(head.contains(why), "{req:.60}: {head}");
    }
    assert_eq!(
        open.load(Ordering::SeqCst),
        1,
        "only the tunnel reached the upstream"
    );
    running.stop();
    // The tunnel is cut: the upstream sees its end, the client too.
    let t0 = Instant::now();
    while open.load(Ordering::SeqCst) > 0 && t0.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(open.load(Ordering::SeqCst), 0);
    assert!(matches!(t.read(&mut buf), Ok(0) | Err(_)));
    let conns = audit.connections();
    let decisions: Vec<(Option<&str>, Decision)> = conns
        .iter()
        .map(|c| (c.host.as_deref(), c.decision))
        .collect();
    assert_eq!(decisions[0], (Some("allowed.test"), Decision::Allowed));
    assert_eq!(decisions[1], (Some("allowed.test"), Decision::Allowed));
    assert_eq!(conns[0].bytes_up, 4);
    assert_eq!(conns[0].bytes_down, 4);
    assert_eq!(conns[0].protocol, "connect");
    // Still open when the proxy stopped: cut by the end of the run.
    assert_eq!(conns[0].cut, Some("run_ended"));
    assert_eq!(conns[1].protocol, "http");
    assert!(conns[1].bytes_down > 0);
    assert_eq!(
        conns[0].address.as_deref(),
        Some(format!("127.0.0.1:{port}").as_str())
    );
    // The refused answer is what the report shows; nothing connected to it.
    assert_eq!(
        conns[5].address.as_deref(),
        Some(format!("10.0.0.1:{port}").as_str())
    );
    assert_eq!(
        conns[4].address.as_deref(),
        None,
        "refused before resolving"
    );
    assert!(conns[2..]
        .iter()
        .all(|c| c.decision == Decision::Refused && c.bytes_up == 0));
}

/// An upstream that reads until the client is done sending, then
/// neither answers nor closes until the test ends (a half-open peer).
fn silent_upstream() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for mut c in l.incoming().flatten() {
            let mut buf = [0u8; 4096];
            while matches!(c.read(&mut buf), Ok(n) if n > 0) {}
            held.push(c);
        }
    });
    port
}

fn open_tunnel(at: u16, port: u16) -> TcpStream {
    let (c, head) = ask(at, &format!("CONNECT allowed.test:{port} HTTP/1.1\r\n\r\n"));
    assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
    c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    c
}

fn ping(c: &mut TcpStream) {
    c.write_all(b"ping").unwrap();
    let mut echo = [0u8; 4];
    c.read_exact(&mut echo).unwrap();
    assert_eq!(&echo, b"ping");
}

/// Reads until the proxy closes (not until the read timeout): what came
/// before the end.
fn until_closed(c: &mut TcpStream) -> Vec<u8> {
    let mut got = Vec::new();
    if let Err(e) = c.read_to_end(&mut got) {
        assert!(
            !matches!(
                e.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
            ),
            "still open: {e}"
        );
    }
    got
}

#[test]
fn idle_and_half_open_tunnels_are_cut_and_recorded_busy_ones_are_not() {
    let (echo, open) = upstream();
    let silent = silent_upstream();
    let idle = Duration::from_millis(1500);
    let (running, at, audit) = proxy_with(
        &[echo, silent],
        Timeouts {
            head: HEAD_TIMEOUT,
            idle,
        },
    );
    // 0: used, then left open and silent both ways.
    let mut quiet = open_tunnel(at, echo);
    ping(&mut quiet);
    // 1: the client is done sending (a half close); the host never
    // answers nor closes.
    let mut half = open_tunnel(at, silent);
    half.write_all(b"last words").unwrap();
    half.shutdown(std::net::Shutdown::Write).unwrap();
    // 2: bytes keep moving, in gaps well under the idle timeout, for
    // longer than it.
    let mut busy = open_tunnel(at, echo);
    let t0 = Instant::now();
    while t0.elapsed() < idle * 3 {
        ping(&mut busy);
        std::thread::sleep(idle / 15);
    }
    // The two idle ones were cut: each client sees the end, and so
    // does the echoing host behind the first.
    assert_eq!(until_closed(&mut quiet), b"");
    assert_eq!(until_closed(&mut half), b"");
    ping(&mut busy);
    drop(busy);
    let t1 = Instant::now();
    while open.load(Ordering::SeqCst) > 0 && t1.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(open.load(Ordering::SeqCst), 0, "the upstreams saw the end");
    let conns = audit.connections();
    assert_eq!(conns.len(), 3);
    let cut: Vec<Option<&str>> = conns.iter().map(|c| c.cut).collect();
    assert_eq!(cut, [Some("idle"), Some("idle"), None]);
    assert!(conns.iter().all(|c| c.decision == Decision::Allowed));
    assert_eq!((conns[0].bytes_up, conns[0].bytes_down), (4, 4));
    assert_eq!((conns[1].bytes_up, conns[1].bytes_down), (10, 0));
    assert!(conns[2].bytes_up > 4 * 15);
    // Cut after the idle timeout, not before.
    assert!(conns[0].duration_ms >= idle.as_millis() as f64);
    running.stop();
}

#[test]
fn a_client_that_never_finishes_its_request_is_answered_408() {
    let (port, _) = upstream();
    let (running, at, audit) = proxy_with(
        &[port],
        Timeouts {
            head: Duration::from_millis(300),
            idle: IDLE_TIMEOUT,
        },
    );
    // Silent from the start, and a head that never ends.
    let mut silent = TcpStream::connect(("127.0.0.1", at)).unwrap();
    silent
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut partial = TcpStream::connect(("127.0.0.1", at)).unwrap();
    partial
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    partial
        .write_all(format!("CONNECT allowed.test:{port} HTTP/1.1\r\nX: ").as_bytes())
        .unwrap();
    for c in [&mut silent, &mut partial] {
        let got = String::from_utf8(until_closed(c)).unwrap();
        assert!(got.starts_with("HTTP/1.1 408 "), "{got}");
        assert!(
            got.ends_with("no complete request head within 0.3s\n"),
            "{got}"
        );
    }
    let conns = audit.connections();
    assert_eq!(conns.len(), 2);
    assert!(conns.iter().all(|c| c.decision == Decision::Refused
        && c.reason.as_deref() == Some("no complete request head within 0.3s")));
    running.stop();
}

#[test]
fn an_idle_tunnel_from_the_bridge_socket_is_cut_too() {
    use std::os::unix::net::{UnixListener, UnixStream};
    let (echo, open) = upstream();
    let dir = std::env::temp_dir().join(format!("sealc-proxy-idle-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bridge.sock");
    let own = Own {
        policy: Policy::new(
            &["allowed.test".to_string()],
            [echo],
            [policy::Cidr::parse("127.0.0.1/32").unwrap()],
        ),
        audit: Audit::new(
            None,
            [("allowed.test".to_string(), "127.0.0.1".parse().unwrap())].into(),
        ),
        timeouts: Timeouts {
            head: HEAD_TIMEOUT,
            idle: Duration::from_millis(500),
        },
        ..Own::default()
    };
    let running = own.serve_unix(UnixListener::bind(&path).unwrap()).unwrap();
    let mut c = UnixStream::connect(&path).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(c, "CONNECT allowed.test:{echo} HTTP/1.1\r\n\r\nping").unwrap();
    let mut got = Vec::new();
    let mut b = [0u8; 256];
    while !got.ends_with(b"ping") {
        let n = c.read(&mut b).unwrap();
        assert!(n > 0, "{got:?}");
        got.extend_from_slice(&b[..n]);
    }
    assert!(got.starts_with(b"HTTP/1.1 200 "));
    // Then nothing either way: the proxy ends it.
    let mut rest = Vec::new();
    let end = c.read_to_end(&mut rest);
    assert!(end.is_ok() && rest.is_empty(), "{end:?} {rest:?}");
    let t0 = Instant::now();
    while open.load(Ordering::SeqCst) > 0 && t0.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(open.load(Ordering::SeqCst), 0, "the upstream saw the end");
    let conns = own.audit.connections();
    assert_eq!(conns.len(), 1);
    assert_eq!(conns[0].cut, Some("idle"));
    assert_eq!((conns[0].bytes_up, conns[0].bytes_down), (4, 4));
    running.stop();
    let _ = std::fs::remove_dir_all(&dir);
}
