//! The blob store: bytes that never go into table rows (uploaded files, later model artifacts
//! and page images), kept by `object_store` in a local directory or, through [`crate::s3`], in
//! an S3 bucket.
//!
//! Writes stream in bounded parts, so a large upload never sits in memory whole, and stop at a
//! byte limit. Reads hand out a [`std::fs::File`]: the stored file itself for a local directory,
//! a temporary copy for S3, so the synchronous file readers of `lector-text` (XLSX needs `Seek`)
//! can take it on a blocking thread.

use crate::s3::S3;
use bytes::Bytes;
use futures_util::stream::BoxStream;
use futures_util::{Stream, StreamExt};
use lector_core::config::Config;
use lector_core::time::Timestamp;
use lector_core::{Error, ErrorCode, Result};
use object_store::path::Path;
use object_store::{GetResultPayload, ObjectStore, ObjectStoreExt, WriteMultipart};
use std::io::{Seek, Write};
use std::sync::Arc;

/// Parts of at most this many bytes are buffered while a blob is written.
const PART_BYTES: usize = 5 * 1024 * 1024;
/// Parts in flight at once while writing (bounds a writer's memory to about twice [`PART_BYTES`]).
const PARTS_IN_FLIGHT: usize = 2;

/// A stored blob: its key and when it was last written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredBlob {
    pub key: String,
    pub modified: Timestamp,
}

/// Where blobs live. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Blobs {
    backend: Backend,
    location: String,
}

#[derive(Clone, Debug)]
enum Backend {
    /// The store and the directory it keeps its files in.
    Local(Arc<dyn ObjectStore>, std::path::PathBuf),
    S3(Arc<S3>),
}

impl Blobs {
    /// The blob store a configuration names (`blob_url`, default `{data_dir}/blobs`).
    pub fn from_config(config: &Config) -> Result<Self> {
        Self::open(&config.blob_url())
    }

    /// Opens `s3://bucket/prefix` (credentials from the `AWS_*` variables of the process) or a
    /// local directory (`file:///path` or a plain path, created if missing).
    pub fn open(url: &str) -> Result<Self> {
        Self::open_with_env(url, &|name| std::env::var(name).ok())
    }

    /// [`Blobs::open`] with the `AWS_*` variables answered by `env` (AWS_ACCESS_KEY_ID,
    /// AWS_SECRET_ACCESS_KEY, AWS_REGION, AWS_ENDPOINT_URL, AWS_SESSION_TOKEN).
    pub fn open_with_env(url: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<Self> {
        let backend = if let Some(rest) = url.strip_prefix("s3://") {
            Backend::S3(Arc::new(S3::open(rest, env)?))
        } else if url.contains("://") && !url.starts_with("file://") {
            return Err(Error::bad_request(format!(
                "blob_url {url:?}: use s3://bucket/prefix or a local directory"
            )));
        } else {
            let dir = url.strip_prefix("file://").unwrap_or(url);
            std::fs::create_dir_all(dir).map_err(|e| Error::bad_request(format!("blob directory {dir}: {e}")))?;
            let local = object_store::local::LocalFileSystem::new_with_prefix(dir)
                .map_err(|e| Error::bad_request(format!("blob directory {dir}: {e}")))?;
            // A blob is on disk before the row that names it commits (fsync: file and folder).
            Backend::Local(
                Arc::new(local.with_automatic_cleanup(true).with_fsync(true)),
                dir.into(),
            )
        };
        Ok(Self {
            backend,
            location: url.to_owned(),
        })
    }

    /// Where the blobs are, for logs.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// Whether the store answers (for `/health`): this process can create a file in the local
    /// directory (an unnamed one, gone when closed: ownership, a read-only mount or a full
    /// inode table all show), or the S3 bucket answers a one-key listing. Cheap enough for every
    /// check.
    pub async fn ping(&self) -> Result<()> {
        match &self.backend {
            Backend::S3(s3) => s3.ping().await,
            Backend::Local(_, dir) => {
                let probe = dir.clone();
                let written = tokio::task::spawn_blocking(move || tempfile::tempfile_in(probe)).await;
                match written {
                    Ok(Ok(_)) => Ok(()),
                    Ok(Err(e)) => {
                        tracing::error!(error = %e, dir = %dir.display(), "cannot write to the blob directory");
                        Err(Error::dependency_down("the blob directory is unavailable"))
                    }
                    Err(_) => Err(Error::internal()),
                }
            }
        }
    }

    /// Writes a blob from a stream of chunks, refusing (413, nothing kept) one over `max_bytes`.
    /// Answers the number of bytes written.
    pub async fn put_stream<S>(&self, key: &str, mut chunks: S, max_bytes: u64) -> Result<u64>
    where
        S: Stream<Item = Result<Bytes>> + Unpin + Send,
    {
        let store = match &self.backend {
            Backend::Local(store, _) => store,
            Backend::S3(s3) => return s3.put_stream(key, chunks, max_bytes).await,
        };
        let path = Path::from(key);
        let upload = store.put_multipart(&path).await.map_err(failed("start a blob"))?;
        let mut writer = WriteMultipart::new_with_chunk_size(upload, PART_BYTES);
        let mut written: u64 = 0;
        while let Some(chunk) = chunks.next().await {
            let chunk = match chunk {
                Ok(chunk) => chunk,
                Err(e) => {
                    abort(writer).await;
                    return Err(e);
                }
            };
            written += chunk.len() as u64;
            if written > max_bytes {
                abort(writer).await;
                return Err(Error::new(
                    ErrorCode::PayloadTooLarge,
                    format!("the file is over the limit of {max_bytes} bytes"),
                ));
            }
            if let Err(e) = writer.wait_for_capacity(PARTS_IN_FLIGHT).await {
                tracing::error!(error = %e, "cannot write a blob");
                return Err(Error::internal());
            }
            writer.put(chunk);
        }
        writer.finish().await.map_err(failed("finish a blob"))?;
        Ok(written)
    }

    /// Writes a blob from bytes in memory.
    pub async fn put_bytes(&self, key: &str, bytes: Vec<u8>) -> Result<()> {
        let store = match &self.backend {
            Backend::Local(store, _) => store,
            Backend::S3(s3) => return s3.put_bytes(key, bytes).await,
        };
        store
            .put(&Path::from(key), bytes.into())
            .await
            .map(|_| ())
            .map_err(failed("write a blob"))
    }

    /// Opens a blob for reading: the file itself when the store is a local directory, otherwise
    /// a temporary copy (deleted when the file is closed). A missing blob answers 404.
    pub async fn open_file(&self, key: &str) -> Result<std::fs::File> {
        let store = match &self.backend {
            Backend::Local(store, _) => store,
            Backend::S3(s3) => return s3.open_file(key).await,
        };
        let got = store.get(&Path::from(key)).await.map_err(|e| match e {
            object_store::Error::NotFound { .. } => Error::not_found("file"),
            e => failed("read a blob")(e),
        })?;
        match got.payload {
            GetResultPayload::File(file, _) => Ok(file),
            GetResultPayload::Stream(mut stream) => {
                let mut copy = tempfile::tempfile().map_err(io_failed)?;
                while let Some(chunk) = stream.next().await {
                    let chunk = chunk.map_err(failed("read a blob"))?;
                    copy = tokio::task::spawn_blocking(move || copy.write_all(&chunk).map(|_| copy))
                        .await
                        .map_err(|_| Error::internal())?
                        .map_err(io_failed)?;
                }
                copy.rewind().map_err(io_failed)?;
                Ok(copy)
            }
        }
    }

    /// Every blob whose key starts with `prefix` (a folder, such as `uploads`), as the store
    /// hands them out: a page at a time from S3, as the directory is walked locally. Nothing is
    /// held beyond a page, so a sweep over millions of blobs stays small.
    pub fn list<'a>(&'a self, prefix: &'a str) -> BoxStream<'a, Result<StoredBlob>> {
        match &self.backend {
            Backend::S3(s3) => s3.list(prefix),
            Backend::Local(store, _) => store
                .list(Some(&Path::from(prefix)))
                .map(|found| {
                    let meta = found.map_err(failed("list blobs"))?;
                    Ok(StoredBlob {
                        key: meta.location.to_string(),
                        modified: Timestamp(meta.last_modified.timestamp_micros()),
                    })
                })
                .boxed(),
        }
    }

    /// Writes left half-done under `prefix` before `cutoff`, by the key each was for: a local
    /// write goes to `key#N` and is renamed into place, so a crash in between leaves that file,
    /// which listings skip. None on S3, which keeps no half-written objects.
    pub async fn staged_before(&self, prefix: &str, cutoff: Timestamp) -> Result<Vec<(String, std::path::PathBuf)>> {
        let Backend::Local(_, dir) = &self.backend else {
            return Ok(Vec::new());
        };
        let (dir, prefix) = (dir.clone(), prefix.to_owned());
        tokio::task::spawn_blocking(move || staged_files(&dir, &prefix, cutoff))
            .await
            .map_err(failed("list half-written blobs"))
    }

    /// Deletes a blob; a missing one is no error.
    pub async fn delete(&self, key: &str) -> Result<()> {
        let store = match &self.backend {
            Backend::Local(store, _) => store,
            Backend::S3(s3) => return s3.delete(key).await,
        };
        match store.delete(&Path::from(key)).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(failed("delete a blob")(e)),
        }
    }
}

/// The `key#N` files under `dir/prefix` last written before `cutoff`.
fn staged_files(dir: &std::path::Path, prefix: &str, cutoff: Timestamp) -> Vec<(String, std::path::PathBuf)> {
    let mut found = Vec::new();
    let mut folders = vec![dir.join(prefix)];
    while let Some(folder) = folders.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(meta) = entry.metadata() else { continue };
            if meta.is_dir() {
                folders.push(path);
                continue;
            }
            let modified = meta
                .modified()
                .ok()
                .and_then(|m| m.duration_since(std::time::UNIX_EPOCH).ok())
                .map(|d| Timestamp(d.as_micros() as i64));
            let Some(relative) = path.strip_prefix(dir).ok().and_then(|p| p.to_str()) else {
                continue;
            };
            let key = relative
                .rsplit_once('#')
                .filter(|(_, n)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
                .map(|(key, _)| key.to_owned());
            if let (Some(key), Some(modified)) = (key, modified)
                && modified < cutoff
            {
                found.push((key, path));
            }
        }
    }
    found
}

async fn abort(writer: WriteMultipart) {
    if let Err(e) = writer.abort().await {
        tracing::warn!(error = %e, "cannot abort a blob upload");
    }
}

/// The error of a blob operation (`what`) the store did not complete, on either backend (a
/// local directory, S3): logged with its cause, answered as 503.
pub(crate) fn failed<E: std::fmt::Display>(what: &'static str) -> impl Fn(E) -> Error {
    move |e| {
        tracing::error!(error = %e, "cannot {what}");
        Error::dependency_down(format!("cannot {what}: the blob store is unavailable"))
    }
}

/// A failure of the temporary file a blob is copied through (either backend).
pub(crate) fn io_failed(e: std::io::Error) -> Error {
    tracing::error!(error = %e, "temporary file for a blob");
    Error::internal()
}
