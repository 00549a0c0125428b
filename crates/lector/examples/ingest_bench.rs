//! End-to-end ingest through the HTTPS API: for each file format and row count, start a fresh
//! `lector serve` (SQLite in a temporary data directory), upload a generated file with
//! `upload_group_file`, create a group from it with `create_group`, and poll `get_project_task`
//! until the import is done. Reports rows/s from the start of the upload to the task's end, and
//! the server process's peak resident memory (`VmHWM` of `/proc/PID/status`) before the upload
//! and after the import, so memory growth with file size shows.
//!
//! ```sh
//! cargo build --release -p lector --example ingest_bench
//! target/release/examples/ingest_bench --lector target/release/lector --rows 50000,100000 --formats csv,xlsx
//! ```

use lector_text::{Format, Table};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

struct Options {
    lector: PathBuf,
    rows: Vec<usize>,
    formats: Vec<Format>,
    database_url: Option<String>,
}

fn options() -> Result<Options, String> {
    let mut options = Options {
        lector: PathBuf::from("target/release/lector"),
        rows: vec![100_000],
        formats: vec![Format::Csv, Format::Xlsx],
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
                    .map(|f| Format::from_extension(f.trim()).ok_or_else(|| format!("--formats: {f}?")))
                    .collect::<Result<_, _>>()?
            }
            "--database-url" => options.database_url = Some(value),
            other => return Err(format!("unknown flag {other}")),
        }
    }
    Ok(options)
}

/// A review-like table: a text of two sentences (about 110 characters) and a star rating.
fn table(rows: usize) -> Table {
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

/// The server's peak and current resident memory in KiB.
fn memory(pid: u32) -> (u64, u64) {
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

struct Server {
    child: Child,
    base: String,
    _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(options: &Options) -> Result<Server, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let mut command = Command::new(&options.lector);
    command
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path())
        .env_remove("LECTOR_DATABASE_URL")
        .env("LECTOR_PASSWORD_HASHING__MEMORY_KIB", "1024")
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if let Some(url) = &options.database_url {
        command.env("LECTOR_DATABASE_URL", url);
    }
    let mut child = command
        .spawn()
        .map_err(|e| format!("{}: {e}", options.lector.display()))?;
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
    Ok(Server {
        child,
        base: format!("https://{address}"),
        _dir: dir,
    })
}

async fn call(request: reqwest::RequestBuilder) -> Result<Value, String> {
    let response = request.send().await.map_err(|e| e.to_string())?;
    let status = response.status();
    let text = response.text().await.map_err(|e| e.to_string())?;
    if !status.is_success() {
        return Err(format!("{status}: {text}"));
    }
    serde_json::from_str(&text).map_err(|e| format!("{e}: {text}"))
}

/// One run: answers (seconds for the upload, seconds for the whole ingest, peak KiB before the
/// upload, peak KiB after the import).
async fn run(options: &Options, format: Format, rows: usize, file: Vec<u8>) -> Result<(f64, f64, u64, u64), String> {
    let server = start(options)?;
    let pid = server.child.id();
    let client = reqwest::Client::builder()
        .danger_accept_invalid_certs(true)
        .build()
        .map_err(|e| e.to_string())?;
    let url = |path: &str| format!("{}{path}", server.base);
    let register =
        json!({"email": "bench@example.org", "password": "password-123", "first_name": "B", "last_name": "B"});
    let session = call(client.post(url("/auth/register")).json(&register)).await?;
    let token = session["auth_token"].as_str().ok_or("no token")?.to_owned();
    let project = call(
        client
            .post(url("/projects"))
            .bearer_auth(&token)
            .json(&json!({"name": "Bench", "type": "CLASS"})),
    )
    .await?;
    let project_id = project["id"].as_i64().ok_or("no project id")?;
    let (before, _) = memory(pid);

    let extension = lector_text_extension(format);
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
        client
            .post(url(&format!("/projects/{project_id}/groups/upload")))
            .bearer_auth(&token)
            .header("content-type", format!("multipart/form-data; boundary={boundary}"))
            .body(body),
    )
    .await?;
    let upload_secs = started.elapsed().as_secs_f64();
    let group = call(
        client
            .post(url(&format!("/projects/{project_id}/groups")))
            .bearer_auth(&token)
            .json(&json!({"name": "bench", "file_id": uploaded["id"], "column_name": "text"})),
    )
    .await?;
    let task_id = group["task_id"].as_i64().ok_or("no task id")?;
    loop {
        let task = call(
            client
                .get(url(&format!("/projects/{project_id}/tasks/{task_id}")))
                .bearer_auth(&token),
        )
        .await?;
        match task["status"].as_str() {
            Some("DONE") => break,
            Some("FAILED") => return Err(format!("the import failed: {task}")),
            _ => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
    let total_secs = started.elapsed().as_secs_f64();
    let (after, _) = memory(pid);
    let group = call(
        client
            .get(url(&format!("/projects/{project_id}/groups/{}", group["id"])))
            .bearer_auth(&token),
    )
    .await?;
    if group["document_count"].as_u64() != Some(rows as u64) {
        return Err(format!("expected {rows} documents: {group}"));
    }
    Ok((upload_secs, total_secs, before, after))
}

fn lector_text_extension(format: Format) -> &'static str {
    match format {
        Format::Csv => "csv",
        Format::Txt => "txt",
        Format::Json => "json",
        Format::Jsonl => "jsonl",
        Format::Xlsx => "xlsx",
    }
}

fn main() -> std::process::ExitCode {
    let options = match options() {
        Ok(options) => options,
        Err(e) => {
            eprintln!("ingest_bench: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    println!(
        "| format | rows | file MiB | upload s | total s | rows/s | peak RSS before upload MiB | peak RSS after import MiB |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for &format in &options.formats {
        for &rows in &options.rows {
            let mut file = Vec::new();
            lector_text::write_table(format, &table(rows), &mut file).expect("write the file");
            let mib = file.len() as f64 / (1024.0 * 1024.0);
            match runtime.block_on(run(&options, format, rows, file)) {
                Ok((upload, total, before, after)) => println!(
                    "| {} | {rows} | {mib:.1} | {upload:.2} | {total:.2} | {:.0} | {:.0} | {:.0} |",
                    lector_text_extension(format),
                    rows as f64 / total,
                    before as f64 / 1024.0,
                    after as f64 / 1024.0
                ),
                Err(e) => {
                    eprintln!("ingest_bench: {} {rows}: {e}", lector_text_extension(format));
                    return std::process::ExitCode::FAILURE;
                }
            }
        }
    }
    std::process::ExitCode::SUCCESS
}
