//! Every uploaded document is read in a child process, `lector extract-sandbox`.
//!
//! PDF and image decoders are large and meet hostile input; a file that makes one loop, blow up
//! its memory or crash must fail its own request, never the server. The child holds itself to
//! an address-space and a processor-time limit (inherited by the OCR program it runs), starts
//! with an empty environment (no database address, no secrets), reads the file from its
//! standard input and answers one JSON value on its standard output. The parent bounds that
//! output and the wall-clock time, and turns every way the child can end into a clear problem.
//! The child's scratch files (page images for OCR) go in a directory the parent makes for each
//! run and removes once the child has ended, however it ended: a child killed for its time or
//! memory cleans up nothing itself.

use crate::annotate::page_images;
use crate::{ExtractConfig, ReadDocument, read_first_pages, sniffed, too_large};
use image::GrayImage;
use lector_core::{Error, ErrorCode, Result};
use serde::{Deserialize, Serialize};
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::Semaphore;

/// The argument that makes the `lector` program a sandbox child.
pub const SUBCOMMAND: &str = "extract-sandbox";
/// The environment variables the child's configuration and page count travel in.
const CONFIG_VAR: &str = "LECTOR_EXTRACT_SANDBOX_CONFIG";
const PAGES_VAR: &str = "LECTOR_EXTRACT_SANDBOX_PAGES";
/// Set to `images` for the pages as images (to annotate) instead of their words.
const MODE_VAR: &str = "LECTOR_EXTRACT_SANDBOX_MODE";
/// Most bytes of answer taken from a child: the words of the largest documents fit.
const MAX_ANSWER_BYTES: u64 = 256 * 1024 * 1024;
/// Most bytes of a child's error output kept for the log.
const MAX_STDERR_BYTES: u64 = 64 * 1024;
/// Variables of this process's environment a child keeps (it starts from an empty one): where
/// tesseract finds its language data, on an installation that says so. Without it, the start-up
/// check (run here) passed while every scan failed in the child.
const PASSED_TO_CHILD: [&str; 1] = ["TESSDATA_PREFIX"];

/// What a child answers.
#[derive(Debug, Serialize, Deserialize)]
enum Answer {
    Read(ReadDocument),
    /// Each page as a grey PNG, base64.
    Images(Vec<String>),
    Refused {
        code: ErrorCode,
        detail: String,
    },
}

/// The child's side: limits itself, reads standard input, answers on standard output.
pub fn child_main() -> std::process::ExitCode {
    let config: ExtractConfig = std::env::var(CONFIG_VAR)
        .ok()
        .and_then(|json| serde_json::from_str(&json).ok())
        .unwrap_or_default();
    let images = std::env::var(MODE_VAR).is_ok_and(|mode| mode == "images");
    let answer = limit_self(&config)
        .and_then(|()| read_stdin(&config))
        .and_then(|bytes| {
            if images {
                encoded_images(bytes, &config).map(Answer::Images)
            } else {
                let pages = std::env::var(PAGES_VAR).ok().and_then(|n| n.parse().ok());
                read_first_pages(bytes, &config, pages).map(Answer::Read)
            }
        });
    let answer = match answer {
        Ok(answer) => answer,
        Err(error) => Answer::Refused {
            code: error.code,
            detail: error.detail,
        },
    };
    let mut out = std::io::stdout().lock();
    match serde_json::to_writer(&mut out, &answer).and_then(|()| out.flush().map_err(serde_json::Error::io)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(_) => std::process::ExitCode::FAILURE,
    }
}

fn limit_self(config: &ExtractConfig) -> Result<()> {
    use rustix::process::{Resource, Rlimit, setrlimit};
    let memory = config.sandbox_memory_mib * 1024 * 1024;
    let cpu = config.sandbox_cpu_secs;
    for (resource, soft, hard) in [(Resource::As, memory, memory), (Resource::Cpu, cpu, cpu + 5)] {
        setrlimit(
            resource,
            Rlimit {
                current: Some(soft),
                maximum: Some(hard),
            },
        )
        .map_err(|error| {
            tracing::error!(%error, "the sandbox could not limit itself");
            Error::internal()
        })?;
    }
    Ok(())
}

/// The file's pages as images, each a grey PNG in base64.
fn encoded_images(bytes: Vec<u8>, config: &ExtractConfig) -> Result<Vec<String>> {
    use base64::Engine;
    let pages = page_images(bytes, config)?;
    if pages.len() > config.max_pages {
        return Err(too_large(format!(
            "the document has {} pages; at most {} are read",
            pages.len(),
            config.max_pages
        )));
    }
    pages
        .iter()
        .map(|page| {
            let mut png = Vec::new();
            page.write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
                .map_err(|_| Error::internal())?;
            Ok(base64::engine::general_purpose::STANDARD.encode(png))
        })
        .collect()
}

fn read_stdin(config: &ExtractConfig) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    std::io::stdin()
        .lock()
        .take(config.max_file_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(|_| Error::internal())?;
    Ok(bytes)
}

/// What a child is asked for.
#[derive(Debug, Clone, Copy)]
enum Request {
    /// The words of every page, or of the first pages.
    Read(Option<usize>),
    /// Every page as an image.
    Images,
}

/// The parent's side: runs children, a bounded number at once.
#[derive(Clone)]
pub struct Sandbox {
    program: PathBuf,
    config: Arc<ExtractConfig>,
    slots: Arc<Semaphore>,
    /// How long a child may run before it is killed.
    wall_clock: Duration,
    /// Where each child's scratch directory is made: the system's temporary directory.
    scratch_in: PathBuf,
    /// Most bytes of answer taken from a child ([`MAX_ANSWER_BYTES`]).
    max_answer_bytes: u64,
    /// What a child keeps of this process's environment ([`PASSED_TO_CHILD`]).
    passed: Vec<(&'static str, std::ffi::OsString)>,
}

impl std::fmt::Debug for Sandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sandbox")
            .field("program", &self.program)
            .finish_non_exhaustive()
    }
}

/// This very program as it was started. On Linux that is `/proc/self/exe`, which names the
/// running image even after an upgrade has put a new binary at its path: a child started from
/// the path would be the new version, which may not speak this one's protocol.
fn this_program() -> Result<PathBuf> {
    let running = std::path::Path::new("/proc/self/exe");
    if cfg!(target_os = "linux") && running.exists() {
        return Ok(running.to_path_buf());
    }
    std::env::current_exe().map_err(|error| {
        tracing::error!(%error, "the sandbox program: this program's path");
        Error::internal()
    })
}

impl Sandbox {
    /// A sandbox running `config.sandbox_program`, or this very program, `extract-sandbox`.
    pub fn new(config: &ExtractConfig) -> Result<Self> {
        let program = match &config.sandbox_program {
            Some(program) => program.clone(),
            None => this_program()?,
        };
        let slots = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
        Ok(Self {
            program,
            config: Arc::new(config.clone()),
            slots: Arc::new(Semaphore::new(slots)),
            wall_clock: Duration::from_secs(config.sandbox_cpu_secs + 10),
            scratch_in: std::env::temp_dir(),
            max_answer_bytes: MAX_ANSWER_BYTES,
            passed: PASSED_TO_CHILD
                .iter()
                .filter_map(|name| Some((*name, std::env::var_os(name)?)))
                .collect(),
        })
    }

    pub fn config(&self) -> &ExtractConfig {
        &self.config
    }

    /// Reads `bytes` in a child, every page. Refusals (413, 415, 422, 503) name their reason; a child that
    /// dies, runs out of time or memory, or answers too much fails this read with 422.
    pub async fn read(&self, bytes: Vec<u8>) -> Result<ReadDocument> {
        self.read_first_pages(bytes, None).await
    }

    /// Like [`Sandbox::read`], reading only the first `pages` pages when given (a preview).
    pub async fn read_first_pages(&self, bytes: Vec<u8>, pages: Option<usize>) -> Result<ReadDocument> {
        match self.ask(bytes, Request::Read(pages)).await? {
            Answer::Read(document) => Ok(document),
            _ => Err(Error::internal()),
        }
    }

    /// Every page of `bytes` as a grey image (`annotate::page_images`), drawn in a child.
    pub async fn page_images(&self, bytes: Vec<u8>) -> Result<Vec<GrayImage>> {
        use base64::Engine;
        let Answer::Images(pages) = self.ask(bytes, Request::Images).await? else {
            return Err(Error::internal());
        };
        pages
            .iter()
            .map(|page| {
                let png = base64::engine::general_purpose::STANDARD
                    .decode(page)
                    .map_err(|_| Error::internal())?;
                image::load_from_memory_with_format(&png, image::ImageFormat::Png)
                    .map(|image| image.into_luma8())
                    .map_err(|_| Error::internal())
            })
            .collect()
    }

    async fn ask(&self, bytes: Vec<u8>, request: Request) -> Result<Answer> {
        if bytes.len() as u64 > self.config.max_file_bytes {
            return Err(too_large(format!(
                "the file has {} bytes; at most {} are read",
                bytes.len(),
                self.config.max_file_bytes
            )));
        }
        sniffed(&bytes)?;
        let _slot = self.slots.acquire().await.map_err(|_| Error::internal())?;
        self.run(bytes, request).await
    }

    fn too_slow(&self) -> Error {
        Error::new(
            ErrorCode::ValidationFailed,
            format!(
                "reading the file took longer than the {} s allowed",
                self.config.sandbox_cpu_secs
            ),
        )
    }

    async fn run(&self, bytes: Vec<u8>, request: Request) -> Result<Answer> {
        let (mode, pages) = match request {
            Request::Read(pages) => ("read", pages),
            Request::Images => ("images", None),
        };
        let config = serde_json::to_string(&*self.config).map_err(|_| Error::internal())?;
        let scratch = tempfile::Builder::new()
            .prefix("lector-sandbox-")
            .tempdir_in(&self.scratch_in)
            .map_err(|error| {
                tracing::error!(%error, "a scratch directory for the extraction sandbox");
                Error::internal()
            })?;
        let mut command = tokio::process::Command::new(&self.program);
        command
            .arg(SUBCOMMAND)
            .env_clear()
            .env(CONFIG_VAR, config)
            .env(
                "PATH",
                std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()),
            )
            .env("TMPDIR", scratch.path())
            .env(PAGES_VAR, pages.map(|n| n.to_string()).unwrap_or_default())
            .env(MODE_VAR, mode)
            .envs(self.passed.iter().cloned())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own process group, so what it starts (tesseract) is killed with it.
            .process_group(0)
            .kill_on_drop(true);
        let child = command.spawn().map_err(|error| {
            tracing::error!(%error, program = %self.program.display(), "the extraction sandbox could not start");
            Error::unavailable("documents cannot be read on this server now: its reader could not start")
        })?;
        let mut running = Running {
            child: Some(child),
            scratch: Some(scratch),
        };
        let child = running.child.as_mut().ok_or_else(Error::internal)?;
        let (Some(mut stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(Error::internal());
        };
        let feed = async move {
            // A child that stops reading (it refused the file) closes the pipe: not an error here.
            let _ = stdin.write_all(&bytes).await;
            drop(stdin);
        };
        // The answer's pipe is closed once its bound is read: a child with more to say then
        // fails its next write and ends, instead of waiting on a full pipe until the wall
        // clock. Error output past its bound is read and dropped: it does not fail a read.
        let answer = read_bounded(stdout, self.max_answer_bytes + 1);
        let errors = async {
            let mut stderr = stderr;
            let kept = read_bounded(&mut stderr, MAX_STDERR_BYTES).await;
            let _ = tokio::io::copy(&mut stderr, &mut tokio::io::sink()).await;
            kept
        };
        let ended = tokio::time::timeout(self.wall_clock, async {
            tokio::join!(feed, answer, errors, child.wait())
        })
        .await;
        running.end().await;
        let Ok((_, answer, (_, errors), status)) = ended else {
            return Err(self.too_slow());
        };
        let status = status.map_err(|_| Error::internal())?;
        let (read_out, answer) = answer;
        if read_out.is_err() {
            return Err(Error::internal());
        }
        if answer.len() as u64 > self.max_answer_bytes {
            return Err(too_large("the document holds more text than one read may give".into()));
        }
        if status.success()
            && let Ok(answer) = serde_json::from_slice::<Answer>(&answer)
        {
            return match answer {
                Answer::Refused { code, detail } => Err(Error::new(code, detail)),
                answer => Ok(answer),
            };
        }
        Err(self.died(status, &String::from_utf8_lossy(&errors)))
    }

    /// The problem for a child that ended without an answer.
    fn died(&self, status: std::process::ExitStatus, stderr: &str) -> Error {
        use std::os::unix::process::ExitStatusExt;
        tracing::warn!(%status, stderr = %stderr.trim(), "the extraction sandbox ended without an answer");
        const SIGKILL: i32 = 9;
        const SIGXCPU: i32 = 24;
        let detail = if stderr.contains("memory allocation") || stderr.contains("out of memory") {
            format!(
                "reading the file needed more than the {} MiB of memory allowed",
                self.config.sandbox_memory_mib
            )
        } else if matches!(status.signal(), Some(SIGXCPU | SIGKILL)) {
            format!(
                "reading the file took longer than the {} s allowed",
                self.config.sandbox_cpu_secs
            )
        } else {
            "the file could not be read: it is damaged or built to break readers".to_string()
        };
        Error::new(ErrorCode::ValidationFailed, detail)
    }
}

/// A child at work and its scratch directory (its `TMPDIR`). However a run ends, the child and
/// its process group (a tesseract it started) are killed and reaped before the directory and
/// all in it are removed: by [`Running::end`] when the run ends in its course, else (the
/// request dropped mid-run) on a task of its own.
struct Running {
    child: Option<tokio::process::Child>,
    scratch: Option<tempfile::TempDir>,
}

impl Running {
    async fn end(&mut self) {
        if let Some(mut child) = self.child.take() {
            kill_group(&child);
            let _ = child.kill().await;
        }
        self.scratch.take();
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let (Some(mut child), scratch) = (self.child.take(), self.scratch.take()) else {
            return;
        };
        kill_group(&child);
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    let _ = child.kill().await;
                    drop(scratch);
                });
            }
            Err(_) => {
                let _ = child.start_kill();
            }
        }
    }
}

/// Kills the child's process group while the child is not yet reaped (`id` is `None` after),
/// so the group's id cannot have passed to another process.
fn kill_group(child: &tokio::process::Child) {
    use rustix::process::{Pid, Signal, kill_process_group};
    if let Some(pid) = child.id().and_then(|id| Pid::from_raw(id as i32))
        && pid != Pid::INIT
    {
        let _ = kill_process_group(pid, Signal::KILL);
    }
}

/// Up to `limit` bytes of a child's pipe; a pipe given by value is closed when this ends.
async fn read_bounded(pipe: impl tokio::io::AsyncRead + Unpin, limit: u64) -> (std::io::Result<usize>, Vec<u8>) {
    let mut bytes = Vec::new();
    let read = pipe.take(limit).read_to_end(&mut bytes).await;
    (read, bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// A sandbox whose child is a shell script, its scratch directories made under `scratch_in`.
    fn scripted(dir: &std::path::Path, script: &str) -> Sandbox {
        std::fs::create_dir(dir).unwrap();
        let program = dir.join("child.sh");
        std::fs::write(&program, format!("#!/bin/sh\n{script}\n")).unwrap();
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
        let config = ExtractConfig {
            sandbox_program: Some(program),
            ..ExtractConfig::default()
        };
        let mut sandbox = Sandbox::new(&config).unwrap();
        sandbox.scratch_in = dir.join("scratch");
        std::fs::create_dir(&sandbox.scratch_in).unwrap();
        sandbox
    }

    fn left_in(dir: &std::path::Path) -> Vec<PathBuf> {
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect()
    }

    #[tokio::test]
    async fn a_killed_child_leaves_no_scratch_files() {
        let dir = tempfile::tempdir().unwrap();
        // A child that writes a page image in its TMPDIR, then dies as its limits kill it.
        let sandbox = scripted(
            &dir.path().join("dies"),
            "mkdir \"$TMPDIR/ocr\" && cat > \"$TMPDIR/ocr/page-1.png\"\nkill -9 $$",
        );
        let error = sandbox.read(b"%PDF-1.7 a page".to_vec()).await.unwrap_err();
        assert_eq!(error.code, ErrorCode::ValidationFailed);
        assert!(error.detail.contains("took longer"), "{}", error.detail);
        assert_eq!(left_in(&sandbox.scratch_in), Vec::<PathBuf>::new());

        // A child that never ends (nor the program it started) is killed at the wall clock.
        let mut sandbox = scripted(
            &dir.path().join("hangs"),
            "cat > \"$TMPDIR/page-1.png\"\nsleep 1000\nsleep 1000",
        );
        sandbox.wall_clock = Duration::from_secs(2);
        let error = sandbox.read(b"%PDF-1.7 a page".to_vec()).await.unwrap_err();
        assert!(error.detail.contains("took longer"), "{}", error.detail);
        assert_eq!(left_in(&sandbox.scratch_in), Vec::<PathBuf>::new());
    }

    /// Where tesseract finds its language data reaches the child, whose environment starts
    /// empty: the child here answers with what it was given.
    #[tokio::test]
    async fn the_child_keeps_where_ocr_finds_its_languages() {
        let dir = tempfile::tempdir().unwrap();
        let answer = r#"printf '{"Refused":{"code":"bad_request","detail":"data in %s"}}' "$TESSDATA_PREFIX""#;
        let mut sandbox = scripted(&dir.path().join("ocr"), &format!("cat > /dev/null\n{answer}"));
        sandbox.passed = vec![("TESSDATA_PREFIX", "/opt/tessdata".into())];
        let error = sandbox.read(b"%PDF-1.7 a page".to_vec()).await.unwrap_err();
        assert_eq!(error.detail, "data in /opt/tessdata");
    }

    /// A child with more to say than one read may give is cut off and the read refused as too
    /// large (413). Before, the child waited on the full pipe and the read ended at the wall
    /// clock, blamed on the time the file took.
    #[tokio::test]
    async fn an_answer_over_its_bound_is_too_large_not_too_slow() {
        let dir = tempfile::tempdir().unwrap();
        let mut sandbox = scripted(
            &dir.path().join("talks"),
            "cat > /dev/null
exec cat /dev/zero",
        );
        sandbox.max_answer_bytes = 1024 * 1024;
        sandbox.wall_clock = Duration::from_secs(60);
        let error = sandbox.read(b"%PDF-1.7 a page".to_vec()).await.unwrap_err();
        assert_eq!(error.code, ErrorCode::PayloadTooLarge, "{}", error.detail);
    }
}
