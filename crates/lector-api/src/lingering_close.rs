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

/// A connection's stream whose shutdown lingers (see the module's doc).
pub(crate) struct Lingering<S> {
    inner: S,
    /// Set once the server's side is shut: the deadline and what was dropped since.
    linger: Option<(Pin<Box<Sleep>>, usize)>,
}

impl<S> Lingering<S> {
    pub(crate) fn new(inner: S) -> Self {
        Self { inner, linger: None }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Lingering<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for Lingering<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, data)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        if this.linger.is_none() {
            ready!(Pin::new(&mut this.inner).poll_shutdown(cx))?;
            this.linger = Some((Box::pin(tokio::time::sleep(LINGER_TIME)), 0));
        }
        let Some((deadline, dropped)) = this.linger.as_mut() else {
            return Poll::Ready(Ok(()));
        };
        let mut scratch = [0u8; 8192];
        loop {
            if *dropped >= LINGER_BYTES {
                return Poll::Ready(Ok(()));
            }
            let mut buf = ReadBuf::new(&mut scratch);
            match Pin::new(&mut this.inner).poll_read(cx, &mut buf) {
                // The client closed its side (or the stream failed): nothing is left to reset.
                Poll::Ready(Ok(())) if buf.filled().is_empty() => return Poll::Ready(Ok(())),
                Poll::Ready(Ok(())) => *dropped += buf.filled().len(),
                Poll::Ready(Err(_)) => return Poll::Ready(Ok(())),
                Poll::Pending => return deadline.as_mut().poll(cx).map(Ok),
            }
        }
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
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
            let (stream, _) = listener.accept().await.unwrap();
            let mut stream = Lingering::new(stream);
            stream.write_all(b"answer").await.unwrap();
            stream.shutdown().await.unwrap();
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
