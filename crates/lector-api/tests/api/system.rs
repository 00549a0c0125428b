//! Operations: `/metrics` with the job queue and the database pool, `/health` naming the
//! dependency that is down, 503 with `Retry-After` while the database is unreachable and
//! recovery after it returns.

use crate::common::{Backend, TestApp};
use lector_store::MAIL_JOB;
use reqwest::Method;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;

backend_tests!(health_names_a_missing_blob_store);

/// The value of the sample `series` (name and labels as exposed) in an exposition text.
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .map(|value| value.trim().parse().expect("a number"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_show_the_queue_and_the_pool_on_sqlite() {
    metrics_show_the_queue_and_the_pool(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_show_the_queue_and_the_pool_on_postgres() {
    metrics_show_the_queue_and_the_pool(Backend::Postgres).await;
}

async fn metrics_show_the_queue_and_the_pool(backend: Backend) {
    // No workers run here, so the job this test queues waits until the test runs it.
    let Some(app) = TestApp::start_with(backend, |c| c.workers = 0).await else {
        return;
    };
    let root = app.superuser("root@example.org").await;
    let scrape = || async {
        let answer = app.get("/metrics", &root.token).await;
        assert_eq!(answer.status, 200, "{}", answer.text);
        answer.text
    };
    let before = scrape().await;
    assert_eq!(
        sample(&before, &format!("lector_jobs{{kind=\"{MAIL_JOB}\",state=\"QUEUED\"}}")),
        None,
        "{before}"
    );
    let max = sample(&before, "lector_database_pool_max_connections").expect("the pool's size");
    assert_eq!(max, f64::from(app.state.store.pool_capacity()));
    let idle = sample(&before, "lector_database_pool_connections{state=\"idle\"}").expect("idle connections");
    let in_use = sample(&before, "lector_database_pool_connections{state=\"in_use\"}").expect("busy connections");
    assert!(idle + in_use >= 1.0 && idle + in_use <= max, "{before}");

    // Creating a user without a password mails a first-login token: a mail job.
    app.post(
        "/users",
        &root.token,
        json!({"email": "bea@example.org", "first_name": "Bea", "last_name": "B"}),
    )
    .await
    .expect(201);
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let queued = scrape().await;
    assert_eq!(
        sample(&queued, &format!("lector_jobs{{kind=\"{MAIL_JOB}\",state=\"QUEUED\"}}")),
        Some(1.0),
        "{queued}"
    );
    let age = sample(
        &queued,
        &format!("lector_job_queue_oldest_age_seconds{{kind=\"{MAIL_JOB}\"}}"),
    )
    .expect("an age");
    assert!((1.0..60.0).contains(&age), "the job has waited over a second: {age}");
    assert_eq!(
        sample(
            &queued,
            &format!("lector_job_lease_reclaims_total{{kind=\"{MAIL_JOB}\"}}")
        ),
        None,
        "{queued}"
    );

    // A worker claims it and dies: its lease runs out and the reaper takes it back.
    let store = &app.state.store;
    let dead = store
        .claim_job("worker-that-died", -1)
        .await
        .unwrap()
        .expect("the mail job");
    store.reap_expired_leases().await.unwrap();
    let reclaimed = scrape().await;
    assert_eq!(
        sample(
            &reclaimed,
            &format!("lector_job_lease_reclaims_total{{kind=\"{MAIL_JOB}\"}}")
        ),
        Some(1.0),
        "{reclaimed}"
    );
    // Another worker runs it to the end.
    let lease = store.claim_job("worker", 30).await.unwrap().expect("queued again");
    assert!(lease.token > dead.token);
    assert!(store.finish_job(&lease, json!({}), None).await.unwrap());
    let done = scrape().await;
    assert_eq!(
        sample(&done, &format!("lector_jobs{{kind=\"{MAIL_JOB}\",state=\"DONE\"}}")),
        Some(1.0),
        "{done}"
    );
    assert_eq!(
        sample(&done, &format!("lector_jobs{{kind=\"{MAIL_JOB}\",state=\"QUEUED\"}}")),
        None,
        "{done}"
    );
    assert_eq!(
        sample(
            &done,
            &format!("lector_job_queue_oldest_age_seconds{{kind=\"{MAIL_JOB}\"}}")
        ),
        Some(0.0),
        "{done}"
    );
    assert_eq!(
        sample(
            &done,
            &format!("lector_job_lease_reclaims_total{{kind=\"{MAIL_JOB}\"}}")
        ),
        Some(1.0),
        "{done}"
    );
    // The request metrics are still there beside them.
    assert!(done.contains("lector_http_requests_total{"), "{done}");
    assert_eq!(done.matches("# EOF").count(), 1, "{done}");

    // A second mail job fails for good: counted as FAILED, the DONE one still counted.
    app.post(
        "/users",
        &root.token,
        json!({"email": "cy@example.org", "first_name": "Cy", "last_name": "C"}),
    )
    .await
    .expect(201);
    let lease = store
        .claim_job("worker", 30)
        .await
        .unwrap()
        .expect("the second mail job");
    assert!(
        store
            .fail_job(&lease, "the mail server refused it", false)
            .await
            .unwrap()
    );
    let failed = scrape().await;
    for (state, count) in [
        ("DONE", Some(1.0)),
        ("FAILED", Some(1.0)),
        ("QUEUED", None),
        ("RUNNING", None),
    ] {
        assert_eq!(
            sample(
                &failed,
                &format!("lector_jobs{{kind=\"{MAIL_JOB}\",state=\"{state}\"}}")
            ),
            count,
            "{state}: {failed}"
        );
    }
}

async fn health_names_a_missing_blob_store(app: TestApp) {
    let healthy = app.call(Method::GET, "/health", None, None).await.expect(200);
    assert_eq!(
        healthy,
        json!({"status": "ok", "database": "ok", "blob_store": "ok", "failing": []})
    );
    // The blob directory vanishes (an unmounted volume): the health check says which
    // dependency is down, and the database is still fine.
    let blobs = app.data_dir.path().join("blobs");
    let moved = app.data_dir.path().join("blobs-away");
    std::fs::rename(&blobs, &moved).unwrap();
    let down = app.call(Method::GET, "/health", None, None).await.expect(503);
    assert_eq!(down["status"], "unavailable");
    assert_eq!(down["blob_store"], "unreachable");
    assert_eq!(down["database"], "ok");
    assert_eq!(down["failing"], json!(["blob_store"]));
    // A balancer in front of nodes sharing one blob store asks for the database only: the node
    // stays in (it serves everything but files), and the body still says what fails.
    let serving = app
        .call(Method::GET, "/health?require=database", None, None)
        .await
        .expect(200);
    assert_eq!(serving["status"], "ok");
    assert_eq!(serving["failing"], json!(["blob_store"]));
    app.call(Method::GET, "/health?require=everything", None, None)
        .await
        .expect_problem(400, "invalid_parameter");
    // Something that is not a directory where the blobs go: nothing can be written there.
    std::fs::write(&blobs, b"not a directory").unwrap();
    let down = app.call(Method::GET, "/health", None, None).await.expect(503);
    assert_eq!(down["failing"], json!(["blob_store"]));
    std::fs::remove_file(&blobs).unwrap();
    std::fs::rename(&moved, &blobs).unwrap();
    app.call(Method::GET, "/health", None, None).await.expect(200);
}

/// A TCP proxy in front of a dependency (PostgreSQL, the S3 store) that the test can cut:
/// while cut, it drops every open connection and every new one, as a failed network between
/// the node and the dependency would.
struct CuttableProxy {
    address: std::net::SocketAddr,
    cut: Arc<AtomicBool>,
    /// Rung on a cut, so open connections end at once.
    cutting: Arc<Notify>,
    accept: tokio::task::JoinHandle<()>,
}

impl CuttableProxy {
    async fn start(upstream: String) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let cut = Arc::new(AtomicBool::new(false));
        let cutting = Arc::new(Notify::new());
        let accept = {
            let (cut, cutting) = (cut.clone(), cutting.clone());
            tokio::spawn(async move {
                loop {
                    let Ok((mut client, _)) = listener.accept().await else {
                        continue;
                    };
                    // Listening for a cut before looking at the flag: a cut between the two
                    // still ends this connection.
                    let cut_off = cutting.clone().notified_owned();
                    if cut.load(Ordering::SeqCst) {
                        drop(client);
                        continue;
                    }
                    let upstream = upstream.clone();
                    tokio::spawn(async move {
                        let Ok(mut server) = TcpStream::connect(&upstream).await else {
                            return;
                        };
                        tokio::select! {
                            _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
                            () = cut_off => {}
                        }
                    });
                }
            })
        };
        Self {
            address,
            cut,
            cutting,
            accept,
        }
    }

    fn cut(&self) {
        self.cut.store(true, Ordering::SeqCst);
        self.cutting.notify_waiters();
    }

    fn restore(&self) {
        self.cut.store(false, Ordering::SeqCst);
    }
}

impl Drop for CuttableProxy {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

/// `postgres://user@host:port/db` with `host:port` replaced by `address`; answers the new URL
/// and the old `host:port`.
fn through(url: &str, address: std::net::SocketAddr) -> (String, String) {
    let (scheme, rest) = url.split_once("://").unwrap();
    let (credentials, rest) = rest.rsplit_once('@').map_or(("", rest), |(c, r)| (c, r));
    let (host, path) = rest.split_once('/').unwrap();
    let at = if credentials.is_empty() { "" } else { "@" };
    (format!("{scheme}://{credentials}{at}{address}/{path}"), host.to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_database_answers_503_with_retry_after_and_recovers() {
    // The proxy stands in front of the test database's server; without one configured the
    // app does not start either (and fails loudly in CI).
    let Some(admin) = std::env::var("LECTOR_TEST_DATABASE_URL").ok().filter(|u| !u.is_empty()) else {
        assert!(TestApp::start(Backend::Postgres).await.is_none());
        return;
    };
    let (_, upstream) = through(&admin, "127.0.0.1:1".parse().unwrap());
    // Declared before the app, so it outlives the app's teardown.
    let proxy = CuttableProxy::start(upstream).await;
    let address = proxy.address;
    let app = TestApp::start_with(Backend::Postgres, move |config| {
        let url = config.database_url.as_ref().unwrap().expose().to_owned();
        config.database_url = Some(lector_core::config::Secret::new(through(&url, address).0));
    })
    .await
    .expect("a PostgreSQL app");
    let ada = app.register("ada@example.org").await;
    app.get("/organizations", &ada.token).await.expect(200);
    // The scraper's key reads /metrics once while the database answers.
    let root = app.superuser("root@example.org").await;
    let created = app
        .post(
            &format!("/users/{}/keys", root.user_id),
            &root.token,
            json!({"name": "prometheus"}),
        )
        .await
        .expect(201);
    let key = created["token"].as_str().unwrap().to_owned();
    let up = app.get("/metrics", &key).await;
    assert_eq!(up.status, 200, "{}", up.text);
    assert_eq!(sample(&up.text, "lector_database_up"), Some(1.0), "{}", up.text);

    proxy.cut();
    // While it does not, that key still reads this node's own series, the queue's left out;
    // any other token cannot be checked.
    let down = app.get("/metrics", &key).await;
    assert_eq!(down.status, 200, "{}", down.text);
    assert_eq!(sample(&down.text, "lector_database_up"), Some(0.0), "{}", down.text);
    assert!(down.text.contains("lector_http_requests_total{"), "{}", down.text);
    assert!(!down.text.contains("lector_jobs{"), "{}", down.text);
    app.get("/metrics", &root.token)
        .await
        .expect_problem(503, "unavailable");
    let started = Instant::now();
    let refused = app.get("/organizations", &ada.token).await;
    let retry_after: u64 = refused
        .headers
        .get("retry-after")
        .unwrap_or_else(|| panic!("a 503 says when to retry: {:?} {}", refused.headers, refused.text))
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=60).contains(&retry_after), "{retry_after}");
    let problem = refused.expect_problem(503, "unavailable");
    assert_eq!(problem["detail"], "the database is unreachable", "{problem}");
    assert!(problem["request_id"].is_string(), "{problem}");
    let health = app.call(Method::GET, "/health", None, None).await;
    assert!(health.headers.contains_key("retry-after"), "{:?}", health.headers);
    let health = health.expect(503);
    assert_eq!(health["database"], "unreachable", "{health}");
    assert_eq!(health["blob_store"], "ok", "{health}");
    assert_eq!(health["failing"], json!(["database"]), "{health}");
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "answers come within the pool's wait: {:?}",
        started.elapsed()
    );

    proxy.restore();
    let back = Instant::now();
    let health = wait_for(&app, "/health", None, 200).await;
    assert_eq!(health["status"], "ok", "{health}");
    wait_for(&app, "/organizations", Some(&ada.token), 200).await;
    assert!(
        back.elapsed() < Duration::from_secs(5),
        "the service recovers soon after the database returns: {:?}",
        back.elapsed()
    );
    // Nothing written before the outage is lost.
    app.login("ada@example.org", "password-123").await;
    let up = app.get("/metrics", &key).await;
    assert_eq!(sample(&up.text, "lector_database_up"), Some(1.0), "{}", up.text);

    // A revoked key is forgotten at its first refusal: the next outage does not let it in.
    app.delete(&format!("/users/{}/keys/{}", root.user_id, created["id"]), &root.token)
        .await
        .expect(200);
    app.get("/metrics", &key).await.expect_problem(401, "unauthorized");
    proxy.cut();
    app.get("/metrics", &key).await.expect_problem(503, "unavailable");
    proxy.restore();
    wait_for(&app, "/health", None, 200).await;
}

/// Polls `path` until it answers `status` (at most 20 s); answers the body.
async fn wait_for(app: &TestApp, path: &str, token: Option<&str>, status: u16) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let answer = app.call(Method::GET, path, token, None).await;
        if answer.status.as_u16() == status {
            return answer.body;
        }
        assert!(
            Instant::now() < deadline,
            "{path} still answers {}: {}",
            answer.status,
            answer.text
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_ids_go_round_trip() {
    let Some(app) = TestApp::start(Backend::Sqlite).await else {
        return;
    };
    let send = |id: Option<String>| {
        let mut request = app.client.get(app.url("/no/such/route"));
        if let Some(id) = id {
            request = request.header("x-request-id", id);
        }
        async move {
            let response = request.send().await.unwrap();
            let header = response.headers()["x-request-id"].to_str().unwrap().to_owned();
            let problem: Value = response.json().await.unwrap();
            (header, problem["request_id"].as_str().unwrap().to_owned())
        }
    };
    // A sane id from the client (a proxy's, say) comes back in the header and the problem.
    let (header, in_body) = send(Some("lb-7:req_0042.a".into())).await;
    assert_eq!(
        (header.as_str(), in_body.as_str()),
        ("lb-7:req_0042.a", "lb-7:req_0042.a")
    );
    // None, or one not fit for logs and headers: a fresh UUID, the same in both places.
    for id in [
        None,
        Some("x".repeat(129)),
        Some("two words".into()),
        Some("a\"b".into()),
    ] {
        let (header, in_body) = send(id.clone()).await;
        assert_eq!(header, in_body, "{id:?}");
        assert!(uuid::Uuid::parse_str(&header).is_ok(), "{id:?} became {header}");
    }
    let (first, _) = send(None).await;
    let (second, _) = send(None).await;
    assert_ne!(first, second, "each request gets its own id");
    // Successful answers carry it too.
    let ok = app
        .client
        .get(app.url("/health"))
        .header("x-request-id", "health-1")
        .send()
        .await
        .unwrap();
    assert_eq!(ok.headers()["x-request-id"], "health-1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uploads_answer_503_while_the_s3_store_is_cut_and_work_once_it_returns() {
    use crate::blobs_s3::s3_stand_in;
    let (port, _bucket) = s3_stand_in::stand_in().await;
    let proxy = CuttableProxy::start(format!("127.0.0.1:{port}")).await;
    let blobs = lector_store::Blobs::open_with_env(
        "s3://lector-blobs/api",
        &s3_stand_in::env(proxy.address.port(), s3_stand_in::SECRET_KEY),
    )
    .unwrap();
    let app = TestApp::start_with_blobs(Backend::Sqlite, blobs).await.expect("an app");
    let ada = app.register("ada@example.org").await;
    let project = app.project(&ada, "S3").await;
    let upload = || app.upload_file(&ada, project, "reviews.csv", b"text,stars\nGood food.,5\n");
    upload().await.expect(200);

    proxy.cut();
    let refused = upload().await;
    assert!(refused.headers.contains_key("retry-after"), "{:?}", refused.headers);
    let problem = refused.expect_problem(503, "unavailable");
    assert!(problem["detail"].as_str().unwrap().contains("blob store"), "{problem}");
    let health = app.call(Method::GET, "/health", None, None).await.expect(503);
    assert_eq!(health["failing"], json!(["blob_store"]), "{health}");
    assert_eq!(health["database"], "ok", "{health}");

    proxy.restore();
    wait_for(&app, "/health", None, 200).await;
    upload().await.expect(200);
}
