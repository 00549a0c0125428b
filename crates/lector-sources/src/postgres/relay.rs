//! The one connection to a database source, handed to sqlx as a Unix socket.
//!
//! sqlx speaks the protocol, but it trusts the length a server declares for a message: it
//! reserves that much before the bytes arrive (and, under TLS, zero-fills it), so a "database"
//! answering the start-up with a 4 GiB message made it take 4 GiB. This module therefore owns
//! the connection: it dials the address the guard checked, makes the TLS handshake itself
//! ([`super::tls`]), and forwards the plain protocol to sqlx through a socket in a directory only
//! this process's user can enter. It reads the server's side by its frames (a type byte, then a
//! four-byte length) and cuts the connection, before sqlx sees the header, at a message longer
//! than any row a source may deliver, or once the server has sent more than a whole answer
//! could need ([`Budget`]). It does not look inside the server's messages.
//!
//! The other way, it passes sqlx's start-up message on with only the parameters the credential
//! and sqlx's constants set ([`STARTUP_PARAMETERS`]): sqlx also sends `options` from this
//! server's own PGOPTIONS, which no source may see.

use super::{SslMode, Target, io_error, tls};
use crate::Limits;
use lector_core::{Error, Result};
use std::io;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader, BufWriter};
use tokio::net::{TcpStream, UnixListener};

/// Room for what is not row data: the per-value bytes of a row of up to 1,664 columns
/// (PostgreSQL's most), their descriptions (about 140 KB at most), and the rest of the
/// conversation (start-up, parameters, the statements around the query).
const PROTOCOL_ALLOWANCE: u64 = 1024 * 1024;

/// A row arrives as the text of one array of its values. A value's array text is at most twice
/// its CSV (each backslash escaped) plus four bytes (a NULL spelled out); with the braces, the
/// commas and the message's 11 bytes of framing, a row takes at most 8.5 bytes on the wire for
/// each byte of its CSV line (one NULL: 2 bytes of CSV, 17 on the wire).
const WIRE_BYTES_PER_CSV_BYTE: u64 = 9;

/// A message's type byte and length.
const HEADER_BYTES: usize = 5;

/// Bytes read from the server, and written to sqlx, at a time.
const BUFFER_BYTES: usize = 64 * 1024;

/// The start-up parameters that reach the server: `user` and `database` from the credential,
/// `application_name` ("lector"), and sqlx's fixed session settings.
const STARTUP_PARAMETERS: [&[u8]; 7] = [
    b"user",
    b"database",
    b"application_name",
    b"DateStyle",
    b"client_encoding",
    b"TimeZone",
    b"extra_float_digits",
];

/// The protocol version of a start-up message, 3.0.
const PROTOCOL_VERSION: [u8; 4] = [0, 3, 0, 0];

/// PostgreSQL's own bound on a start-up message.
const MAX_STARTUP_BYTES: u32 = 10_000;

/// What the server may send through the relay, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Budget {
    /// One message, its type byte and length included: a row whose CSV fits `max_bytes`.
    message: u64,
    /// The whole conversation: every row of an answer whose CSV fits `max_bytes`.
    total: u64,
}

impl Budget {
    pub(super) fn for_limits(limits: &Limits) -> Budget {
        Budget {
            message: limits.max_bytes.saturating_mul(2).saturating_add(PROTOCOL_ALLOWANCE),
            total: limits
                .max_bytes
                .saturating_mul(WIRE_BYTES_PER_CSV_BYTE)
                .saturating_add(PROTOCOL_ALLOWANCE),
        }
    }
}

/// A connection to a database source, waiting for sqlx in [`Relay::socket_dir`]; closed when
/// dropped.
pub(super) struct Relay {
    dir: tempfile::TempDir,
    task: tokio::task::JoinHandle<()>,
    over_budget: Arc<AtomicBool>,
}

impl Relay {
    /// Dials `addr`, makes the handshake `target.ssl` calls for, and listens for sqlx on a
    /// socket named for `target.port`.
    pub(super) async fn open(addr: SocketAddr, target: &Target, budget: Budget) -> Result<Relay> {
        // Dialled first, so that a refused or unreachable address reads as such.
        let tcp = TcpStream::connect(addr).await.map_err(|e| {
            tracing::info!(error = %e, "a database source could not be reached");
            io_error(&e)
        })?;
        match target.ssl {
            SslMode::Disable => Relay::start(tcp, target.port, budget),
            SslMode::Require | SslMode::VerifyFull => {
                Relay::start(tls::negotiate(tcp, target).await?, target.port, budget)
            }
        }
    }

    fn start<S>(server: S, port: u16, budget: Budget) -> Result<Relay>
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let dir = tempfile::Builder::new()
            .prefix("lector-pg-")
            .tempdir()
            .map_err(local_failure)?;
        // The name sqlx looks for in a socket directory.
        let listener = UnixListener::bind(dir.path().join(format!(".s.PGSQL.{port}"))).map_err(local_failure)?;
        let over_budget = Arc::new(AtomicBool::new(false));
        let task = tokio::spawn(serve(listener, server, budget, over_budget.clone()));
        Ok(Relay { dir, task, over_budget })
    }

    /// The directory of the socket sqlx connects to.
    pub(super) fn socket_dir(&self) -> &Path {
        self.dir.path()
    }

    /// Whether the server was cut off for sending more than its budget.
    pub(super) fn went_over_budget(&self) -> bool {
        self.over_budget.load(Ordering::SeqCst)
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn local_failure(e: io::Error) -> Error {
    tracing::error!(error = %e, "cannot open the private socket for a postgres source");
    Error::internal()
}

/// Takes sqlx's one connection and forwards both ways until either side ends or the server
/// goes over its budget.
async fn serve<S>(listener: UnixListener, server: S, budget: Budget, over_budget: Arc<AtomicBool>)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let Ok((client, _)) = listener.accept().await else {
        return;
    };
    drop(listener);
    let (server_reads, mut server_writes) = tokio::io::split(server);
    let (mut client_reads, mut client_writes) = client.into_split();
    let upstream = async {
        forward_startup(&mut client_reads, &mut server_writes).await?;
        tokio::io::copy(&mut client_reads, &mut server_writes).await
    };
    tokio::select! {
        _ = upstream => {}
        stop = forward_messages(server_reads, &mut client_writes, budget) => {
            // Marked before the halves drop, so sqlx's failure is read as this.
            if stop == Stop::OverBudget {
                over_budget.store(true, Ordering::SeqCst);
            }
        }
    }
}

/// Reads sqlx's start-up message and sends it on with only the [`STARTUP_PARAMETERS`].
async fn forward_startup<R, W>(client: &mut R, server: &mut W) -> io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let length = client.read_u32().await?;
    if !(8..=MAX_STARTUP_BYTES).contains(&length) {
        return Err(io::ErrorKind::InvalidData.into());
    }
    let mut body = vec![0u8; length as usize - 4];
    client.read_exact(&mut body).await?;
    let startup = kept_startup(&body).ok_or(io::ErrorKind::InvalidData)?;
    server.write_all(&startup).await
}

/// The start-up message with the body `body` (protocol version, then name and value pairs, each
/// ending in a zero byte, then a zero byte) holding only its [`STARTUP_PARAMETERS`]; `None` for
/// anything but a version 3.0 start-up message.
fn kept_startup(body: &[u8]) -> Option<Vec<u8>> {
    let pairs = body.strip_prefix(&PROTOCOL_VERSION)?.strip_suffix(&[0, 0])?;
    let mut kept = PROTOCOL_VERSION.to_vec();
    let mut fields = pairs.split(|b| *b == 0);
    while let Some(name) = fields.next() {
        let value = fields.next()?;
        if name.is_empty() {
            return None;
        }
        if STARTUP_PARAMETERS.contains(&name) {
            for field in [name, value] {
                kept.extend_from_slice(field);
                kept.push(0);
            }
        }
    }
    kept.push(0);
    let length = u32::try_from(kept.len() + 4).ok()?;
    Some([length.to_be_bytes().as_slice(), &kept].concat())
}

/// Why the server's side stopped.
#[derive(Debug, PartialEq, Eq)]
enum Stop {
    /// The server or sqlx hung up, or the server broke the framing.
    Ended,
    OverBudget,
}

impl From<io::Error> for Stop {
    fn from(_: io::Error) -> Stop {
        Stop::Ended
    }
}

/// Forwards the server's messages to sqlx, whole, while they keep within the budget.
async fn forward_messages<R, W>(server: R, client: &mut W, budget: Budget) -> Stop
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut server = BufReader::with_capacity(BUFFER_BYTES, server);
    let mut client = BufWriter::with_capacity(BUFFER_BYTES, client);
    let mut sent = 0u64;
    loop {
        if let Err(stop) = forward_message(&mut server, &mut client, budget, &mut sent).await {
            return stop;
        }
    }
}

/// Forwards one message, unless its declared length, or the bytes `sent` before it, take the
/// server over the budget.
async fn forward_message<R, W>(
    server: &mut BufReader<R>,
    client: &mut BufWriter<W>,
    budget: Budget,
    sent: &mut u64,
) -> Result<(), Stop>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut header = [0u8; HEADER_BYTES];
    read_exactly(server, client, &mut header).await?;
    // The length counts itself, not the type byte.
    let length = u32::from_be_bytes([header[1], header[2], header[3], header[4]]);
    let Some(body) = length.checked_sub(4) else {
        return Err(Stop::Ended);
    };
    let size = 1 + u64::from(length);
    *sent = sent.saturating_add(size);
    if size > budget.message || *sent > budget.total {
        return Err(Stop::OverBudget);
    }
    client.write_all(&header).await?;
    pass(server, client, u64::from(body)).await
}

/// Fills `out` from the server.
async fn read_exactly<R, W>(server: &mut BufReader<R>, client: &mut BufWriter<W>, out: &mut [u8]) -> Result<(), Stop>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut filled = 0;
    while filled < out.len() {
        let bytes = next_bytes(server, client).await?;
        let n = bytes.len().min(out.len() - filled);
        out[filled..filled + n].copy_from_slice(&bytes[..n]);
        server.consume(n);
        filled += n;
    }
    Ok(())
}

/// Copies `count` bytes from the server to sqlx.
async fn pass<R, W>(server: &mut BufReader<R>, client: &mut BufWriter<W>, mut count: u64) -> Result<(), Stop>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    while count > 0 {
        let bytes = next_bytes(server, client).await?;
        let n = bytes.len().min(usize::try_from(count).unwrap_or(usize::MAX));
        client.write_all(&bytes[..n]).await?;
        server.consume(n);
        count -= n as u64;
    }
    Ok(())
}

/// The server's next bytes (never none: the end is [`Stop::Ended`]). When none are buffered,
/// what was forwarded so far goes to sqlx first, since the wait may be long.
async fn next_bytes<'a, R, W>(server: &'a mut BufReader<R>, client: &mut BufWriter<W>) -> Result<&'a [u8], Stop>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    if server.buffer().is_empty() {
        client.flush().await?;
    }
    let bytes = server.fill_buf().await?;
    if bytes.is_empty() {
        return Err(Stop::Ended);
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn budget(message: u64, total: u64) -> Budget {
        Budget { message, total }
    }

    /// Forwards `server`'s bytes through the framing check; answers why it stopped and what
    /// reached sqlx.
    async fn forwarded(server: &[u8], budget: Budget) -> (Stop, Vec<u8>) {
        let mut client = Vec::new();
        let stop = forward_messages(server, &mut client, budget).await;
        (stop, client)
    }

    fn message(kind: u8, body: &[u8]) -> Vec<u8> {
        let mut out = vec![kind];
        out.extend_from_slice(&(body.len() as u32 + 4).to_be_bytes());
        out.extend_from_slice(body);
        out
    }

    #[tokio::test]
    async fn whole_messages_pass_within_the_budget() {
        let conversation = [message(b'R', &[0, 0, 0, 0]), message(b'Z', b"I")].concat();
        assert_eq!(
            forwarded(&conversation, budget(9, 15)).await,
            (Stop::Ended, conversation.clone())
        );
        let (stop, passed) = forwarded(&conversation[..7], budget(9, 15)).await;
        assert_eq!((stop, passed.as_slice()), (Stop::Ended, &conversation[..7]));
    }

    #[tokio::test]
    async fn a_declared_length_past_the_budget_is_never_forwarded() {
        let lying = [b'R', 0xff, 0xff, 0xff, 0xff, 0, 0, 0].to_vec();
        assert_eq!(
            forwarded(&lying, budget(1 << 20, 1 << 30)).await,
            (Stop::OverBudget, Vec::new())
        );
        let notice = message(b'N', b"notice");
        let conversation = [notice.clone(), notice.clone()].concat();
        assert_eq!(
            forwarded(&conversation, budget(64, notice.len() as u64 + 3)).await.0,
            Stop::OverBudget,
            "the second message takes the conversation over its total"
        );
        assert_eq!(
            forwarded(&[b'R', 0, 0, 0, 3], budget(64, 64)).await,
            (Stop::Ended, Vec::new()),
            "a length shorter than itself"
        );
    }

    #[test]
    fn the_startup_keeps_only_the_credentials_and_sqlxs_parameters() {
        let body = |pairs: &[u8]| [&PROTOCOL_VERSION[..], pairs, b"\0"].concat();
        let message = |body: &[u8]| [&(body.len() as u32 + 4).to_be_bytes()[..], body].concat();
        let sent = body(b"user\0ada\0database\0sales\0TimeZone\0UTC\0options\0-c search_path=x\0");
        let kept = body(b"user\0ada\0database\0sales\0TimeZone\0UTC\0");
        assert_eq!(kept_startup(&sent), Some(message(&kept)));
        assert_eq!(kept_startup(&kept), Some(message(&kept)));
        let empty_value = body(b"user\0ada\0application_name\0\0");
        assert_eq!(kept_startup(&empty_value), Some(message(&empty_value)));
        for bad in [
            &[4, 210, 22, 47][..],
            b"\0\x02\0\0user\0ada\0\0",
            &body(b"user\0ada\0database\0")[..],
            &body(b"user\0ada\0\0x\0")[..],
            &body(b"user\0ada")[..],
        ] {
            assert_eq!(kept_startup(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn the_budget_covers_what_a_source_may_deliver() {
        let limits = Limits {
            max_bytes: 1000,
            max_rows: 10,
            timeout: Duration::from_secs(1),
        };
        assert_eq!(
            Budget::for_limits(&limits),
            budget(2000 + PROTOCOL_ALLOWANCE, 9000 + PROTOCOL_ALLOWANCE)
        );
        let unbounded = Limits {
            max_bytes: u64::MAX,
            ..limits
        };
        assert_eq!(Budget::for_limits(&unbounded), budget(u64::MAX, u64::MAX));
    }
}
