//! Downloads written as they are read: the response's body is fed, through a bounded channel,
//! by a task that pages through the rows (with a keyset) and writes each page with
//! [`lector_text::RowWriter`], so memory holds a few pages whatever the file's length. Every
//! format streams, XLSX as a zip whose parts carry their sizes after their data.
//!
//! Once the first bytes are sent the status is 200: a failure later ends the body early (the
//! client sees a cut-off transfer) and goes to the log.

use axum::body::Body;
use axum::http::{HeaderValue, header};
use axum::response::Response;
use bytes::Bytes;
use lector_core::{Error, Result};
use lector_text::{Format, RowWriter};
use tokio::sync::mpsc;

/// Chunks waiting between the writing task and the client at most.
const CHUNKS_IN_FLIGHT: usize = 4;
/// Bytes a chunk gathers before it is sent, so a page of wide rows is not held whole.
const CHUNK_BYTES: usize = 4 << 20;

/// The writing end of a streamed download.
pub(crate) struct RowSink {
    sender: mpsc::Sender<std::io::Result<Bytes>>,
    writer: RowWriter,
    /// Bytes written and not sent yet: fewer than [`CHUNK_BYTES`] between calls.
    pending: Vec<u8>,
}

impl RowSink {
    /// Writes rows and sends them on ([`RowSink::row`]), then what is pending; false when the
    /// client has gone (stop producing).
    pub(crate) async fn rows(&mut self, rows: impl IntoIterator<Item = Vec<String>>) -> bool {
        for row in rows {
            if !self.row(&row).await {
                return false;
            }
        }
        self.flush().await
    }

    /// Writes a row, and sends what is written on once it makes a chunk of about
    /// [`CHUNK_BYTES`] (so memory holds [`CHUNKS_IN_FLIGHT`] chunks and the one being written);
    /// false when the client has gone or the row could not be written (the body is then ended
    /// early).
    pub(crate) async fn row(&mut self, row: &[String]) -> bool {
        match self.writer.row(row) {
            Ok(more) => self.pending.extend(more),
            Err(e) => {
                self.fail(Error::from(e)).await;
                return false;
            }
        }
        self.pending.len() < CHUNK_BYTES || self.flush().await
    }

    /// Sends what is written and not sent yet; false when the client has gone.
    pub(crate) async fn flush(&mut self) -> bool {
        let bytes = std::mem::take(&mut self.pending);
        bytes.is_empty() || self.sender.send(Ok(Bytes::from(bytes))).await.is_ok()
    }

    /// Ends the file.
    pub(crate) async fn finish(mut self) {
        if !self.flush().await {
            return;
        }
        match self.writer.finish() {
            Ok(end) if end.is_empty() => {}
            Ok(end) => {
                let _ = self.sender.send(Ok(Bytes::from(end))).await;
            }
            Err(e) => self.fail(Error::from(e)).await,
        }
    }

    /// Writes the pages `page` reads (called with the keyset, `i64::MIN` first) until the last;
    /// false when the client has gone or a page failed (the body is then ended early).
    pub(crate) async fn pages<P, F>(&mut self, mut page: P) -> bool
    where
        P: FnMut(i64) -> F,
        F: std::future::Future<Output = Result<Page>>,
    {
        let mut after = Some(i64::MIN);
        while let Some(from) = after {
            match page(from).await {
                Ok((rows, next)) => {
                    if !self.rows(rows).await {
                        return false;
                    }
                    after = next;
                }
                Err(e) => {
                    self.fail(e).await;
                    return false;
                }
            }
        }
        true
    }

    /// Ends the body early: the error is logged, the client sees a cut-off transfer.
    pub(crate) async fn fail(&self, error: Error) {
        tracing::error!(error = %error.detail, "a streamed download failed");
        let _ = self
            .sender
            .send(Err(std::io::Error::other("the download failed")))
            .await;
    }
}

/// A download response whose body the returned sink fills (from a spawned task).
pub(crate) fn streamed_response(format: Format, stem: &str, header: Vec<String>) -> Result<(Response, RowSink)> {
    let mut writer = RowWriter::new(format, header).map_err(Error::from)?;
    let start = writer.start().map_err(Error::from)?;
    let (sender, receiver) = mpsc::channel(CHUNKS_IN_FLIGHT);
    let first = futures_util::stream::once(async move { Ok::<_, std::io::Error>(Bytes::from(start)) });
    let rest = futures_util::stream::unfold(receiver, |mut receiver| async move {
        receiver.recv().await.map(|chunk| (chunk, receiver))
    });
    let body = Body::from_stream(futures_util::StreamExt::chain(first, rest));
    let mut response = Response::new(body);
    set_download_headers(&mut response, format, stem);
    let sink = RowSink {
        sender,
        writer,
        pending: Vec::new(),
    };
    Ok((response, sink))
}

/// The content type and file name of a download.
pub(crate) fn set_download_headers(response: &mut Response, format: Format, stem: &str) {
    let content_type = match format {
        Format::Csv => "text/csv; charset=utf-8",
        Format::Txt => "text/plain; charset=utf-8",
        Format::Json => "application/json",
        Format::Jsonl => "application/x-ndjson",
        Format::Xlsx => "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    };
    let disposition = format!("attachment; filename=\"{stem}.{}\"", format.extension());
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    if let Ok(value) = HeaderValue::from_str(&disposition) {
        headers.insert(header::CONTENT_DISPOSITION, value);
    }
}

/// Documents read per page of a paged download (an analysis's, a session's).
pub(crate) const DOCUMENTS_PER_PAGE: i64 = 500;

/// One page of a download: its rows and the keyset of the next page (`None` after the last).
pub(crate) type Page = (Vec<Vec<String>>, Option<i64>);

/// A download read page by page through `page` (called with the keyset, `i64::MIN` first),
/// streamed as it is read.
pub(crate) async fn paged_download<P, F>(format: Format, stem: &str, header: Vec<String>, page: P) -> Result<Response>
where
    P: FnMut(i64) -> F + Send + 'static,
    F: std::future::Future<Output = Result<Page>> + Send,
{
    let (response, mut sink) = streamed_response(format, stem, header)?;
    tokio::spawn(async move {
        if sink.pages(page).await {
            sink.finish().await;
        }
    });
    Ok(response)
}
