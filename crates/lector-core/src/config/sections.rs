//! The sections of the configuration, each a table of `lector.toml` (`[http]`, `[uploads]`,
//! `[mail]`, ...) with its defaults: kept apart from [`super::Config`], which holds them and
//! checks them together.

use super::Secret;
use serde::{Deserialize, Serialize};
use std::net::IpAddr;
use std::path::PathBuf;

/// Limits on connections and request heads, against slow and greedy clients. Requests over a
/// size limit are answered with a problem (414, 431) like every other error; only heads beyond
/// the HTTP parser's own hard limits (a URI over 65,534 bytes, a head over 400 KiB or 200 header
/// lines) get its bare answer.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HttpConfig {
    /// Longest request target (path and query), in bytes; longer ones answer 414.
    pub max_uri_bytes: usize,
    /// Largest sum of header names and values, in bytes; larger heads answer 431.
    pub max_header_bytes: usize,
    /// Most header lines in a request; more answer 431.
    pub max_headers: usize,
    /// Seconds a client has to send a whole request head (HTTP/1); a slower one is disconnected.
    pub header_read_timeout_secs: u64,
    /// Seconds a connection may sit idle between requests before it is closed.
    pub keep_alive_timeout_secs: u64,
    /// Connections served at once; further clients wait in the listen queue.
    pub max_connections: usize,
    /// Connections one client address may hold at once; its further ones are closed at once, so
    /// one host cannot take every slot. Trusted proxies, which carry everyone's, are exempt.
    pub max_connections_per_peer: usize,
    /// MiB of large request bodies (over 4 MiB each, by `Content-Length`, or `max_body_bytes`
    /// without one) read and handled at once; further ones wait their turn. Bounds the memory
    /// that bulk uploads take together.
    pub large_bodies_mib: usize,
    /// Requests of one caller (one user, with all their access tokens and product keys) handled at once, each
    /// until its answer has been sent; the caller's further requests wait their turn, and
    /// beyond 64 waiting answer 429. Keeps one caller's burst of heavy requests from taking
    /// every database connection from everyone else. Requests without valid credentials take
    /// no turn.
    pub requests_per_caller: usize,
    /// Least pace, in bytes per second, at which a request body must arrive once it has had
    /// `body_grace_secs`, counted over the time the server waited for it; a slower body answers
    /// 408 and its HTTP/1 connection is closed (an HTTP/2 stream is reset). Bounds how long a
    /// body holds its share of `large_bodies_mib`, a connection and a caller's turn. 0 turns the
    /// check off.
    pub min_body_bytes_per_sec: u64,
    /// Seconds of waiting a request body is allowed whatever its pace: until then it is not
    /// late, and after it, it must have kept the pace on average since its start.
    pub body_grace_secs: u64,
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            max_uri_bytes: 16 * 1024,
            max_header_bytes: 32 * 1024,
            max_headers: 100,
            header_read_timeout_secs: 10,
            keep_alive_timeout_secs: 60,
            max_connections: 1024,
            max_connections_per_peer: 256,
            large_bodies_mib: 64,
            requests_per_caller: 3,
            min_body_bytes_per_sec: 8 * 1024,
            body_grace_secs: 10,
        }
    }
}

/// The HTTP parser's own limits, beyond which it answers without a body: `HttpConfig` must stay
/// below them.
pub const PARSER_MAX_URI_BYTES: usize = 65_534;
pub const PARSER_MAX_HEAD_BYTES: usize = 400 * 1024;
pub const PARSER_MAX_HEADERS: usize = 200;

/// Argon2id parameters. The defaults follow OWASP's recommendation; tests use cheaper ones.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PasswordHashing {
    pub memory_kib: u32,
    pub iterations: u32,
}

impl Default for PasswordHashing {
    fn default() -> Self {
        Self {
            memory_kib: 19 * 1024,
            iterations: 2,
        }
    }
}

/// Fixed-window limits, kept in the database so several nodes share them.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RateLimits {
    /// Failed log-ins per client address per minute (successful ones are not counted).
    pub login_per_minute: i64,
    /// Failed log-ins per account (from any address) per `login_failure_window_secs`; past it,
    /// only addresses with no failures of their own may still try that account.
    pub login_failures_per_account: i64,
    /// Failed log-ins per account and client address per `login_failure_window_secs`.
    pub login_failures_per_account_address: i64,
    /// The window of the two per-account limits, in seconds.
    pub login_failure_window_secs: i64,
    /// Registrations per client address per hour.
    pub register_per_hour: i64,
    /// Password-reset mails per client address per hour.
    pub reset_mail_per_hour: i64,
    /// Password-reset mails per e-mail address per hour, from all clients: an address cannot be
    /// flooded with reset mails from many clients.
    pub reset_mails_per_recipient_per_hour: i64,
    /// Password-reset mails per e-mail address and client address per hour: keeping an address
    /// from its reset mails takes `reset_mails_per_recipient_per_hour` / this many clients.
    pub reset_mails_per_recipient_and_client_per_hour: i64,
    /// Invitation mails per workspace per hour.
    pub invitations_per_hour: i64,
    /// Invitation mails one user sends per hour, from all their workspaces together.
    pub invitations_per_user_per_hour: i64,
    /// Invitation mails per e-mail address per hour from one sender (invitations and resends
    /// alike): one account cannot flood an inbox from many workspaces.
    pub invitation_mails_per_recipient_and_sender_per_hour: i64,
    /// Invitation mails per e-mail address per hour from all senders: many accounts cannot
    /// flood it either, and keeping an address from its invitations takes
    /// this / `invitation_mails_per_recipient_and_sender_per_hour` accounts.
    pub invitation_mails_per_recipient_per_hour: i64,
    /// Workspaces one user creates per hour (superusers aside; only those made count): a
    /// deactivated workspace no longer counts toward a user's memberships, so this bounds how
    /// fast one account makes (and squats names with) new ones.
    pub workspaces_per_hour: i64,
}

impl RateLimits {
    /// The longest window any limit counts in, in seconds: a counter whose window started
    /// longer ago than this counts nothing any more.
    pub fn longest_window_secs(&self) -> i64 {
        self.login_failure_window_secs.max(3600)
    }
}

impl Default for RateLimits {
    fn default() -> Self {
        Self {
            login_per_minute: 20,
            login_failures_per_account: 10,
            login_failures_per_account_address: 5,
            login_failure_window_secs: 900,
            register_per_hour: 20,
            reset_mail_per_hour: 5,
            reset_mails_per_recipient_per_hour: 10,
            reset_mails_per_recipient_and_client_per_hour: 3,
            invitations_per_hour: 200,
            invitations_per_user_per_hour: 400,
            invitation_mails_per_recipient_and_sender_per_hour: 5,
            invitation_mails_per_recipient_per_hour: 20,
            workspaces_per_hour: 30,
        }
    }
}

/// The default of `uploads.max_rows`.
pub const DEFAULT_MAX_ROWS: u64 = 1_000_000;

/// Uploaded files (`upload_group_file`, `upload_classes_file` and the like).
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct UploadConfig {
    /// Largest uploaded file, in bytes; larger ones are answered 413. Requests are also bounded
    /// by `max_body_bytes`.
    pub max_bytes: u64,
    /// Most documents one import brings: the data rows of an imported file (documents, labelled
    /// segments, texts to analyse) or the documents of one `upload_documents` or
    /// `create_analysis` request. More is refused with a problem naming the limit.
    pub max_rows: u64,
    /// Uploads that nothing used are deleted this long after they arrived, in seconds; blobs
    /// that no row references (left by a crash between writing a file and its row) are deleted
    /// when they are older than this, and an hour at least.
    pub unused_ttl_secs: i64,
    /// How often this node's sweeper looks for them (and for finished jobs and spent counters
    /// past their time), in seconds; the first sweep comes at a random moment within the first
    /// period. 0 turns this node's sweeper off: on every node but the ones chosen to sweep, or
    /// on a restored copy that shares production's blob store.
    pub sweep_every_secs: u64,
}

impl Default for UploadConfig {
    fn default() -> Self {
        Self {
            max_bytes: 50 * 1024 * 1024,
            max_rows: DEFAULT_MAX_ROWS,
            unused_ttl_secs: 24 * 3600,
            sweep_every_secs: 3600,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MailConfig {
    /// Sender address of every mail.
    pub from: String,
    /// `smtps://user:pass@host:465` or `smtp://host:25?tls=required`; without it mail goes to
    /// the outbox folder `{data_dir}/mail`, one file per message.
    pub smtp_url: Option<Secret>,
}

impl Default for MailConfig {
    fn default() -> Self {
        Self {
            from: "Lector <lector@localhost>".into(),
            smtp_url: None,
        }
    }
}

/// Workflows' webhook addresses.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WorkflowConfig {
    /// How long a test address listens after `listen_workflow_test` (120 seconds, as the
    /// webhook component has it).
    pub test_window_secs: u64,
    /// Largest request body a webhook address takes, in bytes; larger ones are answered 413.
    pub max_body_bytes: usize,
    /// Runs of `immediately` workflows (answered at once, run after) going on at once on this
    /// node; a call past it is answered 503 with `Retry-After` and runs nothing.
    pub max_background_runs: usize,
}

impl Default for WorkflowConfig {
    fn default() -> Self {
        Self {
            test_window_secs: 120,
            max_body_bytes: 16 * 1024 * 1024,
            max_background_runs: 64,
        }
    }
}

/// Reading PDFs and images. Every file is read in a child process (`lector extract-sandbox`)
/// held to `sandbox_memory_mib` and `sandbox_cpu_secs`, so a crafted file fails its own request
/// and nothing else.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ExtractConfig {
    /// Largest document file read, in bytes; larger ones are answered 413.
    pub max_file_bytes: u64,
    /// Most pages read from one file (PDF pages, TIFF images).
    pub max_pages: usize,
    /// Most pixels on one page image, and on its longer side; larger images are answered 413.
    pub max_pixels: u64,
    pub max_side: u32,
    /// The OCR program.
    pub tesseract: PathBuf,
    /// Its languages, as `tesseract -l` takes them.
    pub languages: String,
    /// Most OCR runs at once for one file; 0 means one per core.
    pub ocr_threads: usize,
    /// Memory (address space) and processor time one read may use, OCR included.
    pub sandbox_memory_mib: u64,
    pub sandbox_cpu_secs: u64,
    /// The program files are read with, given the argument `extract-sandbox`; default this one.
    pub sandbox_program: Option<PathBuf>,
}

impl Default for ExtractConfig {
    fn default() -> Self {
        Self {
            max_file_bytes: 50 * 1024 * 1024,
            max_pages: 200,
            max_pixels: 40_000_000,
            max_side: 20_000,
            tesseract: PathBuf::from("tesseract"),
            languages: "eng+deu+ara".into(),
            ocr_threads: 0,
            sandbox_memory_mib: 2048,
            sandbox_cpu_secs: 120,
            sandbox_program: None,
        }
    }
}

impl ExtractConfig {
    pub(super) fn validate(&self) -> Result<(), String> {
        if self.max_file_bytes == 0 || self.max_pages == 0 || self.max_pixels == 0 || self.max_side == 0 {
            return Err("extract.max_file_bytes, max_pages, max_pixels and max_side must be positive".into());
        }
        if self.sandbox_memory_mib < 256 || self.sandbox_cpu_secs == 0 {
            return Err("extract.sandbox_memory_mib must be at least 256 and sandbox_cpu_secs positive".into());
        }
        if self.languages.is_empty()
            || !self
                .languages
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "+_".contains(c))
        {
            return Err("extract.languages must be tesseract language names joined by +".into());
        }
        Ok(())
    }

    /// OCR runs at once: the configured number, or one per core.
    pub fn ocr_runs(&self) -> usize {
        match self.ocr_threads {
            0 => std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
            n => n,
        }
    }
}

/// External sources: by default they reach public addresses only (the guard against
/// server-side request forgery), and every fetch is bounded in bytes, rows and time.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SourcesConfig {
    /// Let sources reach private, loopback, link-local and other non-public addresses.
    pub allow_private: bool,
    /// Non-public networks sources may reach all the same, as `10.1.2.0/24` or `10.1.2.3`.
    pub allowed_networks: Vec<String>,
    /// Largest file a source may deliver, in bytes.
    pub max_bytes: u64,
    /// Most rows a database query may deliver.
    pub max_rows: u64,
    /// Time one fetch may take, connecting included, in seconds.
    pub timeout_secs: u64,
    /// Fetches going on at once on this node (each may hold `max_bytes`, and a database
    /// query a blocking thread); one past it waits up to 10 seconds for its turn, then is
    /// answered 503 with `Retry-After`.
    pub max_concurrent_fetches: usize,
}

impl Default for SourcesConfig {
    fn default() -> Self {
        Self {
            allow_private: false,
            allowed_networks: Vec::new(),
            max_bytes: 50 * 1024 * 1024,
            max_rows: 100_000,
            timeout_secs: 30,
            max_concurrent_fetches: 8,
        }
    }
}

impl SourcesConfig {
    pub(super) fn validate(&self) -> Result<(), String> {
        for network in &self.allowed_networks {
            parse_network(network).map_err(|e| format!("sources.allowed_networks: {e}"))?;
        }
        if self.max_bytes == 0 || self.max_rows == 0 {
            return Err("sources.max_bytes and sources.max_rows must be at least 1".into());
        }
        if !(1..=3600).contains(&self.timeout_secs) {
            return Err("sources.timeout_secs must be between 1 and 3600".into());
        }
        if !(1..=1024).contains(&self.max_concurrent_fetches) {
            return Err("sources.max_concurrent_fetches must be between 1 and 1024".into());
        }
        Ok(())
    }
}

/// Parses `address` or `address/prefix` into the network's address and prefix length.
pub fn parse_network(text: &str) -> Result<(IpAddr, u8), String> {
    let (address, prefix) = match text.trim().split_once('/') {
        Some((address, prefix)) => (address, Some(prefix)),
        None => (text.trim(), None),
    };
    let address: IpAddr = address
        .parse()
        .map_err(|_| format!("{text:?} is not an IP address or network"))?;
    let max = if address.is_ipv4() { 32 } else { 128 };
    let prefix = match prefix {
        Some(p) => p
            .parse::<u8>()
            .ok()
            .filter(|p| *p <= max)
            .ok_or_else(|| format!("{text:?} has a bad prefix length"))?,
        None => max,
    };
    Ok((address, prefix))
}
