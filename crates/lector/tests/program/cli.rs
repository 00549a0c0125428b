//! The `lector` binary as a newcomer runs it: serve with no configuration (HTTPS, a
//! self-signed certificate, graceful stop on SIGTERM), migrate, openapi, print-config and
//! user create.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn lector(dir: &std::path::Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_lector"));
    command
        .current_dir(dir)
        .env_remove("LECTOR_DATABASE_URL")
        .env("RUST_LOG", "info");
    command
}

#[test]
fn serve_answers_https_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = lector(dir.path())
        .args(["serve", "--listen", "127.0.0.1:0"])
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    // Read the log on a thread, so a server that never logs its address fails the test
    // instead of hanging it.
    let stderr = child.stderr.take().unwrap();
    let (found, address) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(rest) = line.split("address=").nth(1) {
                let _ = found.send(rest.split_whitespace().next().unwrap_or_default().to_owned());
            }
        }
    });
    let address = match address.recv_timeout(Duration::from_secs(30)) {
        Ok(address) => address,
        Err(_) => {
            let _ = child.kill();
            panic!("the server did not log its address");
        }
    };
    assert!(
        dir.path().join("lector-data/tls/cert.pem").exists(),
        "a self-signed certificate is kept"
    );
    assert!(
        dir.path().join("lector-data/lector.db").exists(),
        "SQLite is the default"
    );

    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let health = runtime.block_on(async {
        let client = reqwest::Client::builder()
            .danger_accept_invalid_certs(true)
            .build()
            .unwrap();
        client
            .get(format!("https://{address}/health"))
            .send()
            .await
            .unwrap()
            .status()
    });
    assert_eq!(health, 200);
    // The client's connection closes with its runtime, so the drain has nothing to wait for.
    drop(runtime);

    let pid = child.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "serve did not stop on SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "a graceful stop exits 0: {status}");
}

#[test]
fn migrate_openapi_print_config_and_user_create() {
    let dir = tempfile::tempdir().unwrap();
    let before = lector(dir.path()).args(["migrate", "--status"]).output().unwrap();
    let said = String::from_utf8_lossy(&before.stdout);
    assert!(before.status.success(), "{}", String::from_utf8_lossy(&before.stderr));
    assert!(
        said.contains(": 0 steps applied, ") && said.contains("pending: 0001 accounts"),
        "{said}"
    );
    let migrate = lector(dir.path()).arg("migrate").output().unwrap();
    assert!(migrate.status.success(), "{}", String::from_utf8_lossy(&migrate.stderr));
    let said = String::from_utf8_lossy(&migrate.stdout);
    assert!(
        said.contains("lector.db is up to date"),
        "it names the database: {said}"
    );
    let after = lector(dir.path()).args(["migrate", "--status"]).output().unwrap();
    let said = String::from_utf8_lossy(&after.stdout);
    assert!(
        said.contains(" steps applied, 0 pending") && !said.contains("pending:"),
        "{said}"
    );

    let openapi = lector(dir.path()).arg("openapi").output().unwrap();
    let document: serde_json::Value = serde_json::from_slice(&openapi.stdout).unwrap();
    assert_eq!(document["paths"]["/auth/register"]["post"]["operationId"], "register");

    let config = lector(dir.path())
        .arg("print-config")
        .env("LECTOR_JWT_SECRET", "a-secret-that-is-long-enough-to-be-accepted")
        .env("LECTOR_LISTEN", "127.0.0.1:9443")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&config.stdout);
    assert!(text.contains("listen = \"127.0.0.1:9443\""), "{text}");
    assert!(
        text.contains("# database in force: sqlite://lector-data/lector.db\n"),
        "{text}"
    );
    assert!(text.contains("[redacted]") && !text.contains("long-enough"), "{text}");
    let short = lector(dir.path())
        .arg("print-config")
        .env("LECTOR_JWT_SECRET", "short")
        .output()
        .unwrap();
    assert!(!short.status.success(), "a short JWT key refuses start-up");

    let created = lector(dir.path())
        .args(["user", "create", "--email", "admin@example.org", "--superuser"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&created.stdout);
    assert!(created.status.success(), "{}", String::from_utf8_lossy(&created.stderr));
    assert!(text.contains("first-time-login token: "), "{text}");
    assert!(text.contains("admin@example.org) in sqlite:"), "{text}");
    let again = lector(dir.path())
        .args(["user", "create", "--email", "admin@example.org"])
        .output()
        .unwrap();
    assert!(!again.status.success(), "the e-mail is taken");

    // A password kept out of the process list: read from standard input.
    let create_with = |email: &str, input: &str| {
        let mut child = lector(dir.path())
            .args(["user", "create", "--email", email, "--password-stdin"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::io::Write::write_all(&mut child.stdin.take().unwrap(), input.as_bytes()).unwrap();
        child.wait_with_output().unwrap()
    };
    let piped = create_with("bob@example.org", "a-password-from-stdin\n");
    let text = String::from_utf8_lossy(&piped.stdout);
    assert!(piped.status.success(), "{}", String::from_utf8_lossy(&piped.stderr));
    assert!(
        text.contains("bob@example.org) in sqlite:") && !text.contains("token"),
        "a password given, no first-time token: {text}"
    );
    let empty = create_with("eve@example.org", "");
    assert!(!empty.status.success());
    assert!(
        String::from_utf8_lossy(&empty.stderr).contains("standard input holds no password"),
        "{}",
        String::from_utf8_lossy(&empty.stderr)
    );
    let both = lector(dir.path())
        .args([
            "user",
            "create",
            "--email",
            "eve@example.org",
            "--password",
            "x",
            "--password-stdin",
        ])
        .output()
        .unwrap();
    assert_eq!(both.status.code(), Some(2), "one way to give a password");
}

/// A worker whose blob store does not answer (here an S3 endpoint nothing listens on) stops at
/// once, saying so, instead of failing the jobs it would take.
#[test]
fn a_worker_without_its_blob_store_does_not_start() {
    let dir = tempfile::tempdir().unwrap();
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let worker = lector(dir.path())
        .arg("worker")
        .envs(s3_unreachable(&endpoint))
        .output()
        .unwrap();
    assert_eq!(worker.status.code(), Some(1));
    let said = String::from_utf8_lossy(&worker.stderr);
    assert!(
        said.contains("lector: blob store ") && said.contains("unavailable"),
        "{said}"
    );
    assert!(
        said.contains("OCR is not installed on this server (/nonexistent/tesseract could not be started)"),
        "a missing OCR program is named at start-up: {said}"
    );

    // A JSON log stays JSON to its last line, the one that says why the process stopped.
    let json = lector(dir.path())
        .args(["worker", "--log-format", "json"])
        .envs(s3_unreachable(&endpoint))
        .output()
        .unwrap();
    assert_eq!(json.status.code(), Some(1));
    let said = String::from_utf8_lossy(&json.stderr);
    let last: serde_json::Value = serde_json::from_str(said.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("the last line is not JSON ({e}): {said}"));
    assert_eq!(last["level"], "ERROR");
    assert!(
        last["fields"]["error"].as_str().unwrap().starts_with("blob store "),
        "{last}"
    );
}

/// The variables of an S3 blob store at `endpoint`, and an OCR program that is not there.
fn s3_unreachable(endpoint: &str) -> Vec<(&'static str, String)> {
    [
        ("LECTOR_BLOB_URL", "s3://lector-blobs/test"),
        ("AWS_ENDPOINT_URL", endpoint),
        ("AWS_ACCESS_KEY_ID", "test"),
        ("AWS_SECRET_ACCESS_KEY", "test"),
        ("AWS_REGION", "us-east-1"),
        ("LECTOR_EXTRACT__TESSERACT", "/nonexistent/tesseract"),
    ]
    .map(|(name, value)| (name, value.to_owned()))
    .to_vec()
}

/// A database that refuses the connection is named with the server's own reason, not only
/// "unreachable": here a PostgreSQL database that does not exist.
#[tokio::test]
async fn a_refused_connection_says_why() {
    let Some(database) = lector_store::testing::TestDatabase::create(lector_store::Backend::Postgres).await else {
        return;
    };
    let missing = match database.url.split_once('?') {
        Some((base, query)) => format!("{base}_gone?{query}"),
        None => format!("{}_gone", database.url),
    };
    let dir = tempfile::tempdir().unwrap();
    let migrate = lector(dir.path())
        .arg("migrate")
        .env("LECTOR_DATABASE_URL", &missing)
        .output()
        .unwrap();
    assert_eq!(migrate.status.code(), Some(1));
    let said = String::from_utf8_lossy(&migrate.stderr);
    assert!(
        said.contains("cannot connect to the database: ") && said.contains("does not exist"),
        "{said}"
    );
    // A worker warns, before it connects, that its files stay on this machine.
    let worker = lector(dir.path())
        .arg("worker")
        .env("LECTOR_DATABASE_URL", &missing)
        .env("LECTOR_BLOB_URL", dir.path().join("blobs"))
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&worker.stderr);
    assert!(
        said.contains("the database is PostgreSQL but uploaded files are kept in this node's directory"),
        "{said}"
    );
}

#[test]
fn json_logs_carry_request_and_job_ids() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = lector(dir.path())
        .args(["serve", "--listen", "127.0.0.1:0", "--log-format", "json"])
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (lines, logged) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = lines.send(line);
        }
    });
    // Every line is one JSON object; waits for the first that `wanted` picks.
    let next = |wanted: &dyn Fn(&serde_json::Value) -> bool| -> serde_json::Value {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = logged.recv_timeout(left).expect("the line looked for was logged");
            let event: serde_json::Value =
                serde_json::from_str(&line).unwrap_or_else(|e| panic!("not a JSON line ({e}): {line}"));
            if wanted(&event) {
                return event;
            }
        }
    };
    let serving = next(&|e| e["fields"]["message"] == "lector is serving");
    let address = serving["fields"]["address"].as_str().unwrap().to_owned();

    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let client = reqwest::Client::builder()
            .danger_accept_invalid_certs(true)
            .build()
            .unwrap();
        let health = client
            .get(format!("https://{address}/health"))
            .header("x-request-id", "json-log-check-1")
            .send()
            .await
            .unwrap();
        assert_eq!(health.headers()["x-request-id"], "json-log-check-1");
        let body = serde_json::json!({"email": "ada@example.org", "password": "password-123",
            "first_name": "Ada", "last_name": "L"});
        let register = client
            .post(format!("https://{address}/auth/register"))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(register.status(), 200);
        // A reset mail is a job the embedded workers run.
        let mail = client
            .post(format!("https://{address}/password/email"))
            .json(&serde_json::json!({"email": "ada@example.org"}))
            .send()
            .await
            .unwrap();
        assert_eq!(mail.status(), 200);
    });
    drop(runtime);

    // The request's line names its id, in its span and in the list of spans.
    let answered = next(&|e| e["span"]["request_id"] == "json-log-check-1");
    assert_eq!(answered["span"]["name"], "request");
    assert_eq!(answered["span"]["uri"], "/health");
    assert_eq!(answered["spans"][0]["request_id"], "json-log-check-1");
    // The job's lines name the job and its kind.
    let started = next(&|e| e["fields"]["message"] == "job started");
    assert_eq!(started["span"]["name"], "job");
    assert_eq!(started["span"]["job.kind"], "send_password_reset");
    let job_id = started["span"]["job.id"].as_i64().expect("a job id");
    let ended = next(&|e| e["fields"]["message"] == "job ended");
    assert_eq!(ended["span"]["job.id"], job_id);

    let pid = child.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    assert!(child.wait().unwrap().success());
}
