//! What the end-to-end benchmarks share: a `lector serve` child on a data directory (fresh, or
//! kept to restart on), its HTTPS calls, the generated review table, an import of a file into
//! a group, and the child's memory as `/proc` reports it.

#![allow(dead_code)]

use lector_text::Table;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A review-like table: a text of two sentences (about 110 characters) and a star rating.
pub fn table(rows: usize) -> Table {
    let foods = ["soup", "pasta", "curry", "salad", "fish", "bread", "cake", "coffee"];
    let verdicts = [
        "was excellent",
        "arrived cold",
        "tasted fine",
        "was far too salty",
        "was fresh",
    ];
    Table {
        header: vec!["text".into(), "stars".into()],
        rows: (0..rows)
            .map(|n| {
                vec![
                    format!(
                        "Visit {n}: the {} {} and the staff were friendly. We would come back on a weekday evening.",
                        foods[n % foods.len()],
                        verdicts[n % verdicts.len()]
                    ),
                    ((n % 5) + 1).to_string(),
                ]
            })
            .collect(),
    }
}

/// The flags both benchmarks take: `--lector PATH --rows N,N --formats csv,xlsx
/// --database-url URL`.
pub struct Options {
    pub lector: PathBuf,
    pub rows: Vec<usize>,
    pub formats: Vec<lector_text::Format>,
    pub database_url: Option<String>,
}

impl Options {
    /// Reads the command line over the given defaults.
    pub fn parse(rows: Vec<usize>, formats: Vec<lector_text::Format>) -> Result<Self, String> {
        let mut options = Options {
            lector: PathBuf::from("target/release/lector"),
            rows,
            formats,
            database_url: None,
        };
        let mut args = std::env::args().skip(1);
        while let Some(flag) = args.next() {
            let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
            match flag.as_str() {
                "--lector" => options.lector = value.into(),
                "--rows" => {
                    options.rows = value
                        .split(',')
                        .map(|n| n.trim().parse().map_err(|e| format!("--rows: {e}")))
                        .collect::<Result<_, _>>()?
                }
                "--formats" => {
                    options.formats = value
                        .split(',')
                        .map(|f| {
                            lector_text::Format::from_extension(f.trim()).ok_or_else(|| format!("--formats: {f}?"))
                        })
                        .collect::<Result<_, _>>()?
                }
                "--database-url" => options.database_url = Some(value),
                other => return Err(format!("unknown flag {other}")),
            }
        }
        Ok(options)
    }
}

/// The benchmark `name`'s options over these defaults and the runtime it runs on (one worker
/// thread, rustls on ring); a bad command line is said on stderr and ends the program with 2.
pub fn begin(
    name: &str,
    rows: Vec<usize>,
    formats: Vec<lector_text::Format>,
) -> Result<(Options, tokio::runtime::Runtime), std::process::ExitCode> {
    let options = Options::parse(rows, formats).map_err(|e| {
        eprintln!("{name}: {e}");
        std::process::ExitCode::from(2)
    })?;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    Ok((options, runtime))
}

/// A process's peak and current resident memory in KiB (`VmHWM`, `VmRSS`).
pub fn memory(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    (field("VmHWM:"), field("VmRSS:"))
}

/// A running `lector serve`, killed when dropped.
pub struct Server {
    pub child: Child,
    pub base: String,
    pub client: reqwest::Client,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// How to start a server: the binary, its data directory, the database (SQLite in the data
/// directory when `None`) and more `LECTOR_*` settings.
pub struct Setup<'a> {
    pub lector: &'a Path,
    pub data_dir: &'a Path,
    pub database_url: Option<&'a str>,
    pub env: &'a [(&'a str, &'a str)],
}

/// Starts `lector serve` on a free loopback port and waits until it logs its address.
pub fn start(setup: &Setup<'_>) -> Result<Server, String> {
    let mut command = Command::new(setup.lector);
    command
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(setup.data_dir)
        .env_remove("LECTOR_DATABASE_URL")
        .env("LECTOR_PASSWORD_HASHING__MEMORY_KIB", "1024")
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if let Some(url) = setup.database_url {
        command.env("LECTOR_DATABASE_URL", url);
    }
    for (name, value) in setup.env {
        command.env(name, value);
    }
    let mut child = command
        .spawn()
        .map_err(|e| format!("{}: {e}", setup.lector.display()))?;
    let stderr = child.stderr.take().ok_or("no stderr")?;
    let (found, address) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(rest) = line.split("address=").nth(1) {
                let _ = found.send(rest.split_whitespace().next().unwrap_or_default().to_owned());
            }
        }
    });
    let address = address
        .recv_timeout(Duration::from_secs(60))
        .map_err(|_| "the server did not log its address".to_owned())?;
    let client = reqwest::Client::builder()
        .danger_accept_invalid_certs(true)
        .build()
        .map_err(|e| e.to_string())?;
    Ok(Server {
        child,
        base: format!("https://{address}"),
        client,
    })
}

/// Answers a request's JSON body, or its status and body as the error.
pub async fn call(request: reqwest::RequestBuilder) -> Result<Value, String> {
    let response = request.send().await.map_err(|e| e.to_string())?;
    let status = response.status();
    let text = response.text().await.map_err(|e| e.to_string())?;
    if !status.is_success() {
        return Err(format!("{status}: {text}"));
    }
    serde_json::from_str(&text).map_err(|e| format!("{e}: {text}"))
}

pub const EMAIL: &str = "bench@example.org";
pub const PASSWORD: &str = "password-123";

impl Server {
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Registers the bench's user; answers its token.
    pub async fn register(&self) -> Result<String, String> {
        let body = json!({"email": EMAIL, "password": PASSWORD, "first_name": "B", "last_name": "B"});
        let session = call(self.client.post(self.url("/auth/register")).json(&body)).await?;
        Ok(session["auth_token"].as_str().ok_or("no token")?.to_owned())
    }

    /// Logs the bench's user in (on a restarted server); answers its token.
    pub async fn login(&self) -> Result<String, String> {
        let body = json!({"email": EMAIL, "password": PASSWORD});
        let session = call(self.client.post(self.url("/auth/login")).json(&body)).await?;
        Ok(session["auth_token"].as_str().ok_or("no token")?.to_owned())
    }

    /// A CLASS project; answers its id.
    pub async fn project(&self, token: &str) -> Result<i64, String> {
        let body = json!({"name": "Bench", "type": "CLASS"});
        let project = call(self.client.post(self.url("/projects")).bearer_auth(token).json(&body)).await?;
        project["id"].as_i64().ok_or_else(|| "no project id".into())
    }

    /// Uploads `file` (named with `extension`) and fills a group from its `text` column,
    /// waiting for the import; answers (seconds for the upload, seconds in all, the group's id).
    pub async fn import(
        &self,
        token: &str,
        project: i64,
        extension: &str,
        file: Vec<u8>,
    ) -> Result<(f64, f64, i64), String> {
        let boundary = "lector-bench-boundary";
        let mut body = format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"bench.{extension}\"\r\n\
             Content-Type: application/octet-stream\r\n\r\n"
        )
        .into_bytes();
        body.extend_from_slice(&file);
        body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
        drop(file);
        let started = Instant::now();
        let uploaded = call(
            self.client
                .post(self.url(&format!("/projects/{project}/groups/upload")))
                .bearer_auth(token)
                .header("content-type", format!("multipart/form-data; boundary={boundary}"))
                .body(body),
        )
        .await?;
        let upload_secs = started.elapsed().as_secs_f64();
        let group = call(
            self.client
                .post(self.url(&format!("/projects/{project}/groups")))
                .bearer_auth(token)
                .json(&json!({"name": "bench", "file_id": uploaded["id"], "column_name": "text"})),
        )
        .await?;
        let task_id = group["task_id"].as_i64().ok_or("no task id")?;
        loop {
            let task = call(
                self.client
                    .get(self.url(&format!("/projects/{project}/tasks/{task_id}")))
                    .bearer_auth(token),
            )
            .await?;
            match task["status"].as_str() {
                Some("DONE") => break,
                Some("FAILED") => return Err(format!("the import failed: {task}")),
                _ => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
        let group_id = group["id"].as_i64().ok_or("no group id")?;
        Ok((upload_secs, started.elapsed().as_secs_f64(), group_id))
    }
}

/// A fresh temporary data directory, kept until dropped.
pub fn data_dir() -> Result<(tempfile::TempDir, PathBuf), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let path = dir.path().to_owned();
    Ok((dir, path))
}
