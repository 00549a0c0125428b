//! The one configuration type of Lector.
//!
//! Loaded in layers by the binary (defaults, `lector.toml`, `LECTOR_*` environment, command-line
//! flags) and validated once at start-up. Every field has a default, so `lector serve` runs with
//! no configuration at all. Secrets are [`Secret`]s: they never print.

mod sections;

pub use sections::*;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::net::IpAddr;
use std::path::PathBuf;

/// A value that must not appear in logs or in `print-config`.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

impl Serialize for Secret {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str("[redacted]")
    }
}

impl<'de> Deserialize<'de> for Secret {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(Secret)
    }
}

/// How the listener speaks to clients.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum TlsMode {
    /// Terminate TLS here: the configured certificate, or a self-signed one kept in the data
    /// directory. Plain HTTP on the port gets a 400 telling the client to use https.
    #[default]
    On,
    /// Plain HTTP behind a TLS-terminating proxy: only requests from a trusted proxy that say
    /// `X-Forwarded-Proto: https` are served.
    Proxy,
}

/// How log lines are written (to standard error).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// One readable line per event, with the fields of its spans.
    #[default]
    Text,
    /// One JSON object per line: `timestamp`, `level`, `fields`, `target`, and `span`/`spans`
    /// with the request's `request_id` or the job's `job.id` and `job.kind`.
    Json,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Address and port to listen on.
    pub listen: String,
    /// Where the SQLite database, blobs, the TLS certificate, the JWT key and the mail outbox live.
    pub data_dir: PathBuf,
    /// `on` (TLS here) or `proxy` (plain HTTP behind a trusted TLS proxy).
    pub tls: TlsMode,
    /// PEM certificate chain; with `tls_key`, replaces the self-signed certificate.
    pub tls_cert: Option<PathBuf>,
    /// PEM private key for `tls_cert`.
    pub tls_key: Option<PathBuf>,
    /// Proxy addresses trusted in `proxy` mode.
    pub trusted_proxies: Vec<IpAddr>,
    /// The address clients use, for links in mails; defaults to `https://{listen}`.
    pub public_url: Option<String>,
    /// `postgres://…` or `sqlite://…`; default: SQLite at `{data_dir}/lector.db`.
    pub database_url: Option<Secret>,
    /// Connections in the database pool.
    pub database_max_connections: u32,
    /// HS256 key for access tokens, at least 32 bytes; default: 256 random bits kept in the data directory.
    pub jwt_secret: Option<Secret>,
    /// Lifetime of access tokens, in seconds.
    pub token_lifetime_secs: i64,
    /// Lifetime of password-reset tokens, in seconds.
    pub reset_token_lifetime_secs: i64,
    /// Lifetime of invitation and first-time-login tokens, in seconds.
    pub invitation_lifetime_secs: i64,
    /// Largest request body accepted, in bytes (uploads included).
    pub max_body_bytes: usize,
    /// Cost of password hashing.
    pub password_hashing: PasswordHashing,
    /// Attempts allowed per client address and window.
    pub rate_limits: RateLimits,
    /// Outgoing mail.
    pub mail: MailConfig,
    /// `text` (for people) or `json` (one object per line, for log collectors).
    pub log_format: LogFormat,
    /// Job workers embedded in `lector serve` (0 for an API-only node).
    pub workers: usize,
    /// How long a worker's claim on a job lasts without a heartbeat, in seconds; after that the
    /// job runs again elsewhere.
    pub job_lease_secs: i64,
    /// Jobs that ended are deleted this long afterwards, in seconds (default 30 days), except
    /// the training, analysis or import that a living model, analysis or group names as its task.
    pub finished_jobs_kept_secs: i64,
    /// Key that seals credential secrets at rest, at least 32 bytes; default: 256 random bits
    /// kept in the data directory.
    pub credential_key: Option<Secret>,
    /// External sources (http, postgres, s3): which addresses they may reach and their limits.
    pub sources: SourcesConfig,
    /// Where uploaded files are kept: `s3://bucket/prefix` (credentials from the usual `AWS_*`
    /// variables) or a local directory (a path or `file:///path`); default `{data_dir}/blobs`.
    pub blob_url: Option<String>,
    /// Uploaded files: their size limit and when unused ones are swept.
    pub uploads: UploadConfig,
    /// Limits on connections and request heads.
    pub http: HttpConfig,
    /// Where the BASE models (sentence encoders) are installed, one directory each, by
    /// `lector base-models install`; default `{data_dir}/base-models`. Every node reads its own.
    pub base_models_dir: Option<PathBuf>,
    /// Reading PDFs and images: limits, OCR and the sandbox every file is read in.
    pub extract: ExtractConfig,
    /// Workflows' webhook addresses: the test window and the size of what they take.
    pub workflows: WorkflowConfig,
    /// Serve the web app from this directory (a build of `ui/`) instead of the copy embedded in
    /// the binary; for working on the app without rebuilding the server.
    pub ui_dir: Option<PathBuf>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:8443".into(),
            data_dir: PathBuf::from("lector-data"),
            tls: TlsMode::On,
            tls_cert: None,
            tls_key: None,
            trusted_proxies: vec![IpAddr::from([127, 0, 0, 1])],
            public_url: None,
            database_url: None,
            database_max_connections: 10,
            jwt_secret: None,
            token_lifetime_secs: 24 * 3600,
            reset_token_lifetime_secs: 3600,
            invitation_lifetime_secs: 7 * 24 * 3600,
            max_body_bytes: 50 * 1024 * 1024,
            password_hashing: PasswordHashing::default(),
            rate_limits: RateLimits::default(),
            mail: MailConfig::default(),
            log_format: LogFormat::Text,
            workers: 2,
            job_lease_secs: 30,
            finished_jobs_kept_secs: 30 * 24 * 3600,
            credential_key: None,
            sources: SourcesConfig::default(),
            blob_url: None,
            uploads: UploadConfig::default(),
            http: HttpConfig::default(),
            base_models_dir: None,
            extract: ExtractConfig::default(),
            workflows: WorkflowConfig::default(),
            ui_dir: None,
        }
    }
}

impl Config {
    /// The database URL in force: the configured one or SQLite in the data directory.
    pub fn database_url(&self) -> String {
        match &self.database_url {
            Some(url) => url.expose().to_owned(),
            None => format!("sqlite://{}?mode=rwc", self.data_dir.join("lector.db").display()),
        }
    }

    /// How long a PostgreSQL session may sit idle inside a transaction before the server ends
    /// it: twice the job lease, so the write a paused worker left open is rolled back, and its
    /// job's row freed for another worker, soon after its lease ran out.
    pub fn idle_in_transaction(&self) -> std::time::Duration {
        std::time::Duration::from_secs(2 * self.job_lease_secs.max(1) as u64)
    }

    /// The BASE models' directory in force.
    pub fn base_models_dir(&self) -> PathBuf {
        self.base_models_dir
            .clone()
            .unwrap_or_else(|| self.data_dir.join("base-models"))
    }

    pub fn mail_outbox(&self) -> PathBuf {
        self.data_dir.join("mail")
    }

    /// Creates the data directory when it is missing, readable by this user only: it holds the
    /// database, the keys, the blobs and the mail outbox, whose mails carry one-time tokens.
    /// An existing directory keeps the permissions its operator gave it.
    pub fn create_data_dir(&self) -> Result<(), String> {
        use std::os::unix::fs::DirBuilderExt;
        if self.data_dir.is_dir() {
            return Ok(());
        }
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.data_dir)
            .map_err(|e| format!("data directory {}: {e}", self.data_dir.display()))
    }

    /// The blob store in force: the configured URL or the `blobs` folder of the data directory.
    pub fn blob_url(&self) -> String {
        match &self.blob_url {
            Some(url) => url.clone(),
            None => self.data_dir.join("blobs").display().to_string(),
        }
    }

    pub fn public_url(&self) -> String {
        self.public_url
            .clone()
            .unwrap_or_else(|| format!("https://{}", self.listen))
            .trim_end_matches('/')
            .to_owned()
    }

    /// Problems that must stop start-up.
    pub fn validate(&self) -> Result<(), String> {
        if let Some(key) = &self.jwt_secret
            && key.expose().len() < 32
        {
            return Err("jwt_secret must be at least 32 bytes".into());
        }
        if self.tls_cert.is_some() != self.tls_key.is_some() {
            return Err("tls_cert and tls_key go together".into());
        }
        if self.token_lifetime_secs <= 0 || self.reset_token_lifetime_secs <= 0 || self.invitation_lifetime_secs <= 0 {
            return Err("token lifetimes must be positive".into());
        }
        if !(2..=3600).contains(&self.job_lease_secs) {
            return Err("job_lease_secs must be between 2 and 3600".into());
        }
        if self.finished_jobs_kept_secs < 3600 {
            return Err("finished_jobs_kept_secs must be at least 3600 (an hour)".into());
        }
        if self.uploads.max_bytes == 0 || self.uploads.max_rows == 0 || self.uploads.unused_ttl_secs <= 0 {
            return Err("uploads.max_bytes, uploads.max_rows and uploads.unused_ttl_secs must be positive".into());
        }
        if self.database_max_connections == 0 {
            return Err("database_max_connections must be at least 1".into());
        }
        if let Some(key) = &self.credential_key
            && key.expose().len() < 32
        {
            return Err("credential_key must be at least 32 bytes".into());
        }
        self.sources.validate()?;
        self.extract.validate()?;
        if self.workflows.test_window_secs == 0
            || self.workflows.max_body_bytes == 0
            || self.workflows.max_background_runs == 0
        {
            return Err(
                "workflows.test_window_secs, workflows.max_body_bytes and workflows.max_background_runs must be \
                 positive"
                    .into(),
            );
        }
        let http = self.http;
        if http.max_uri_bytes >= PARSER_MAX_URI_BYTES
            || http.max_uri_bytes + http.max_header_bytes >= PARSER_MAX_HEAD_BYTES
            || http.max_headers >= PARSER_MAX_HEADERS
        {
            return Err(format!(
                "http.max_uri_bytes must stay below {PARSER_MAX_URI_BYTES}, with http.max_header_bytes below \
                 {PARSER_MAX_HEAD_BYTES} together, and http.max_headers below {PARSER_MAX_HEADERS}"
            ));
        }
        if http.header_read_timeout_secs == 0
            || http.keep_alive_timeout_secs == 0
            || http.max_connections == 0
            || http.max_connections_per_peer == 0
            || http.large_bodies_mib == 0
            || http.requests_per_caller == 0
        {
            return Err(
                "http.header_read_timeout_secs, http.keep_alive_timeout_secs, http.max_connections, \
                 http.max_connections_per_peer, http.large_bodies_mib and http.requests_per_caller must be positive"
                    .into(),
            );
        }
        if http.min_body_bytes_per_sec > 0 && http.body_grace_secs == 0 {
            return Err("http.body_grace_secs must be positive while http.min_body_bytes_per_sec is".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    /// A new data directory is this user's alone.
    #[test]
    fn a_new_data_directory_is_private() {
        use std::os::unix::fs::PermissionsExt;
        let parent = std::env::temp_dir().join(format!("lector-data-dir-{}", std::process::id()));
        let config = Config {
            data_dir: parent.join("data"),
            ..Config::default()
        };
        config.create_data_dir().unwrap();
        let mode = std::fs::metadata(&config.data_dir).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700, "{mode:o}");
        config.create_data_dir().expect("an existing one is kept");
        std::fs::remove_dir_all(&parent).unwrap();
    }

    use super::*;

    #[test]
    fn secrets_never_print() {
        let c = Config {
            jwt_secret: Some(Secret::new("x".repeat(40))),
            ..Config::default()
        };
        assert!(!format!("{c:?}").contains("xxxx"));
        assert!(!serde_json::to_string(&c).unwrap().contains("xxxx"));
    }

    #[test]
    fn networks_parse_and_bad_ones_refuse_start() {
        assert_eq!(parse_network("10.1.0.0/16"), Ok((IpAddr::from([10, 1, 0, 0]), 16)));
        assert_eq!(parse_network("::1"), Ok(("::1".parse().unwrap(), 128)));
        for bad in ["10.0.0.0/33", "example.org", "::/129", "1.2.3.4/x"] {
            assert!(parse_network(bad).is_err(), "{bad}");
        }
        let mut c = Config::default();
        c.sources.allowed_networks = vec!["10.0.0.0/40".into()];
        assert!(c.validate().is_err());
        let c = Config {
            credential_key: Some(Secret::new("short")),
            ..Config::default()
        };
        assert!(c.validate().is_err());
    }

    #[test]
    fn fetches_at_once_are_bounded_at_start() {
        for (fetches, starts) in [(0, false), (1, true), (1024, true), (1025, false)] {
            let mut c = Config::default();
            c.sources.max_concurrent_fetches = fetches;
            assert_eq!(c.validate().is_ok(), starts, "{fetches} fetches at once");
        }
    }

    #[test]
    fn short_jwt_keys_refuse_start() {
        let c = Config {
            jwt_secret: Some(Secret::new("short")),
            ..Config::default()
        };
        assert!(c.validate().is_err());
        assert!(Config::default().validate().is_ok());
    }
}
