//! Relaying an accepted connection both ways until both sides are done or
//! it is idle too long, by splice(2) where both ends are sockets.

use super::*;

/// How long a refused client is given to read its answer.
pub(super) const LINGER: Duration = Duration::from_secs(1);

/// Most bytes read and dropped from a refused client meanwhile.
pub(super) const LINGER_BYTES: usize = 1 << 20;

/// Relay both ways until both directions end, or until no byte has moved
/// either way for `idle`: then the cut is recorded first, and both sockets
/// are closed (so whoever sees the end finds it recorded). When one side is
/// done sending, the other is told (a half close), and the other direction
/// goes on.
pub(super) async fn relay<A, B>(client: A, upstream: B, conn: &Conn, idle: Duration)
where
    A: Socket + AsyncRead + AsyncWrite + Unpin,
    B: Socket + AsyncRead + AsyncWrite + Unpin,
{
    either(copy_both(client, upstream, conn), async {
        quiet_for(conn, idle).await;
        conn.set(|s| s.cut = Some("idle"));
    })
    .await
}

/// [`relay`] for streams that are not plain sockets (TLS to a held key's
/// API): through buffers.
pub(super) async fn relay_streams<A, B>(client: A, upstream: B, conn: &Conn, idle: Duration)
where
    A: AsyncRead + AsyncWrite + Unpin,
    B: AsyncRead + AsyncWrite + Unpin,
{
    let (cr, cw) = tokio::io::split(client);
    let (ur, uw) = tokio::io::split(upstream);
    either(
        both(copy(cr, uw, conn, &conn.up), copy(ur, cw, conn, &conn.down)),
        async {
            quiet_for(conn, idle).await;
            conn.set(|s| s.cut = Some("idle"));
        },
    )
    .await
}

/// Returns once no byte has moved either way for `idle`.
pub(super) async fn quiet_for(conn: &Conn, idle: Duration) {
    loop {
        let last = conn.start + Duration::from_nanos(conn.last.load(Ordering::Relaxed));
        let due = last + idle;
        if Instant::now() >= due {
            return;
        }
        tokio::time::sleep_until(tokio::time::Instant::from_std(due)).await;
    }
}

/// Both directions, counting bytes: on Linux through pipes with `splice`,
/// or, when no pipe can be had (out of descriptors), through a buffer.
pub(super) async fn copy_both<A, B>(client: A, upstream: B, conn: &Conn)
where
    A: Socket + AsyncRead + AsyncWrite + Unpin,
    B: Socket + AsyncRead + AsyncWrite + Unpin,
{
    #[cfg(target_os = "linux")]
    if let (Ok(up), Ok(down)) = (splice::Pipe::new(), splice::Pipe::new()) {
        both(
            async {
                let _ = up.copy(&client, &upstream, conn, &conn.up).await;
                let _ = rustix::net::shutdown(&upstream, rustix::net::Shutdown::Write);
            },
            async {
                let _ = down.copy(&upstream, &client, conn, &conn.down).await;
                let _ = rustix::net::shutdown(&client, rustix::net::Shutdown::Write);
            },
        )
        .await;
        return;
    }
    let (cr, cw) = tokio::io::split(client);
    let (ur, uw) = tokio::io::split(upstream);
    both(copy(cr, uw, conn, &conn.up), copy(ur, cw, conn, &conn.down)).await;
}

pub(super) async fn copy<R: AsyncRead + Unpin, W: AsyncWrite + Unpin>(
    mut r: R,
    mut w: W,
    conn: &Conn,
    n: &AtomicU64,
) {
    let mut buf = vec![0u8; BUF];
    loop {
        match r.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(k) => {
                if w.write_all(&buf[..k]).await.is_err() {
                    break;
                }
                conn.moved(n, k);
            }
        }
    }
    let _ = w.shutdown().await;
}

/// A socket whose readiness the relay waits on (the agent's side: a unix
/// stream from the bridge, or TCP; the host's side: TCP).
pub(super) trait Socket: std::os::fd::AsFd {
    fn readable(&self) -> impl Future<Output = io::Result<()>>;
    fn writable(&self) -> impl Future<Output = io::Result<()>>;
    fn try_io<R>(
        &self,
        interest: tokio::io::Interest,
        f: impl FnOnce() -> io::Result<R>,
    ) -> io::Result<R>;
}

impl Socket for tokio::net::TcpStream {
    fn readable(&self) -> impl Future<Output = io::Result<()>> {
        tokio::net::TcpStream::readable(self)
    }
    fn writable(&self) -> impl Future<Output = io::Result<()>> {
        tokio::net::TcpStream::writable(self)
    }
    fn try_io<R>(
        &self,
        interest: tokio::io::Interest,
        f: impl FnOnce() -> io::Result<R>,
    ) -> io::Result<R> {
        tokio::net::TcpStream::try_io(self, interest, f)
    }
}

impl Socket for tokio::net::UnixStream {
    fn readable(&self) -> impl Future<Output = io::Result<()>> {
        tokio::net::UnixStream::readable(self)
    }
    fn writable(&self) -> impl Future<Output = io::Result<()>> {
        tokio::net::UnixStream::writable(self)
    }
    fn try_io<R>(
        &self,
        interest: tokio::io::Interest,
        f: impl FnOnce() -> io::Result<R>,
    ) -> io::Result<R> {
        tokio::net::UnixStream::try_io(self, interest, f)
    }
}

/// The first of two futures to finish (without tokio's macros); the other
/// is dropped.
pub(super) async fn either<T>(a: impl Future<Output = T>, b: impl Future<Output = T>) -> T {
    let (mut a, mut b) = (pin!(a), pin!(b));
    std::future::poll_fn(|cx| {
        if let Poll::Ready(v) = a.as_mut().poll(cx) {
            return Poll::Ready(v);
        }
        b.as_mut().poll(cx)
    })
    .await
}

/// Run two futures to completion together (without tokio's macros).
pub(super) async fn both(a: impl Future<Output = ()>, b: impl Future<Output = ()>) {
    let (mut a, mut b) = (pin!(a), pin!(b));
    let (mut a_done, mut b_done) = (false, false);
    std::future::poll_fn(|cx| {
        if !a_done {
            a_done = a.as_mut().poll(cx).is_ready();
        }
        if !b_done {
            b_done = b.as_mut().poll(cx).is_ready();
        }
        if a_done && b_done {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await
}
