//! Closing a connection without losing the answer the client has not read yet.
//!
//! When the server answers a request before reading its body (a 401 or 404 to an upload) and
//! then closes the connection, the client may still be sending that body. Closed with unread
//! bytes waiting, a TCP socket answers them with a reset, which can reach the client before it
//! has read the answer: the client saw "EOF occurred in violation of protocol" or "connection
//! reset" instead of the problem (half the time, for a 22 KB upload without a token on a
//! kept-alive HTTPS connection). So, as web servers have long done ("lingering close"), a
//! shutdown first ends the server's side of the stream (TLS close_notify, TCP FIN), then reads
//! and drops what the client still sends until it closes its side too, for a bounded time and
//! byte count; only then is the socket closed.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

/// The longest a closing connection waits for the client to stop sending.
const LINGER_TIME: Duration = Duration::from_secs(3);
/// The most a closing connection reads and drops.
const LINGER_BYTES: usize = 16 * 1024 * 1024;

/// What a lingering shutdown has to keep: set once the server's side is shut, the deadline
/// and what was dropped since.
#[derive(Default)]
pub(crate) struct Linger(Option<(Pin<Box<Sleep>>, usize)>);

/// Shuts `inner` down as the module's doc says: its write side first, then reading and dropping
/// until the peer closes, an error, [`LINGER_TIME`] or [`LINGER_BYTES`].
pub(crate) fn poll_shutdown<S: AsyncRead + AsyncWrite + Unpin>(
    inner: &mut S,
    linger: &mut Linger,
    cx: &mut Context<'_>,
) -> Poll<std::io::Result<()>> {
    if linger.0.is_none() {
        ready!(Pin::new(&mut *inner).poll_shutdown(cx))?;
        linger.0 = Some((Box::pin(tokio::time::sleep(LINGER_TIME)), 0));
    }
    let Some((deadline, dropped)) = linger.0.as_mut() else {
        return Poll::Ready(Ok(()));
    };
    let mut scratch = [0u8; 8192];
    loop {
        if *dropped >= LINGER_BYTES {
            return Poll::Ready(Ok(()));
        }
        let mut buf = ReadBuf::new(&mut scratch);
        match Pin::new(&mut *inner).poll_read(cx, &mut buf) {
            // The peer closed its side (or the stream failed): nothing is left to reset.
            Poll::Ready(Ok(())) if buf.filled().is_empty() => return Poll::Ready(Ok(())),
            Poll::Ready(Ok(())) => *dropped += buf.filled().len(),
            Poll::Ready(Err(_)) => return Poll::Ready(Ok(())),
            Poll::Pending => return deadline.as_mut().poll(cx).map(Ok),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// The peer still sending when the server shuts down gets the server's last bytes and a
    /// clean end, not a reset; the shutdown ends when the peer closes.
    #[tokio::test]
    async fn a_shutdown_reads_what_the_peer_still_sends() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let (mut stream, _) = listener.accept().await.unwrap();
            stream.write_all(b"answer").await.unwrap();
            let mut linger = Linger::default();
            std::future::poll_fn(|cx| poll_shutdown(&mut stream, &mut linger, cx))
                .await
                .unwrap();
        });
        let mut client = tokio::net::TcpStream::connect(address).await.unwrap();
        // Sent after the server has answered and shut its side down.
        tokio::time::sleep(Duration::from_millis(100)).await;
        client.write_all(&vec![b'x'; 1 << 20]).await.unwrap();
        let mut answer = Vec::new();
        client.read_to_end(&mut answer).await.unwrap();
        assert_eq!(answer, b"answer");
        client.shutdown().await.unwrap();
        drop(client);
        tokio::time::timeout(Duration::from_secs(2), server)
            .await
            .expect("the shutdown ends when the peer closes")
            .unwrap();
    }
}
