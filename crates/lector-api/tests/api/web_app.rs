//! The web app through HTTPS: `index.html` at `/` and under `/app/`, never cached and with its
//! Content-Security-Policy; hashed assets immutable; `ETag` revalidation; API paths keep their
//! JSON answers; `ui_dir` serves another build. The files do not touch the database, so these
//! run on SQLite only.

use crate::common::{Backend, TestApp};
use reqwest::{Method, header};

/// The first `/assets/…` file `index.html` names.
fn first_asset(index: &str) -> String {
    let start = index.find("/assets/").expect("index.html loads a file under /assets/");
    let end = index[start..].find('"').expect("a quoted address") + start;
    index[start..end].to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_app_is_served_at_the_root_and_under_app() {
    let Some(app) = TestApp::start(Backend::Sqlite).await else {
        return;
    };
    let root = app.client.get(app.url("/")).send().await.unwrap();
    assert_eq!(root.status(), 200);
    let headers = root.headers().clone();
    assert_eq!(headers[header::CONTENT_TYPE], "text/html; charset=utf-8");
    assert_eq!(headers[header::CACHE_CONTROL], "no-cache");
    let policy = headers[header::CONTENT_SECURITY_POLICY].to_str().unwrap();
    for directive in ["default-src 'self'", "script-src 'self'", "frame-ancestors 'none'"] {
        assert!(policy.contains(directive), "{policy}");
    }
    assert!(!policy.contains("unsafe-inline"), "{policy}");
    let index = root.text().await.unwrap();
    assert!(index.contains("<html"), "{index}");

    // The app's own routes, however deep, get the same page; the router in the page takes over.
    for path in ["/app", "/app/", "/app/projects/3/annotations/1", "/app/no/such/page"] {
        let page = app.client.get(app.url(path)).send().await.unwrap();
        assert_eq!(page.status(), 200, "{path}");
        assert_eq!(page.headers()[header::CACHE_CONTROL], "no-cache", "{path}");
        assert_eq!(page.text().await.unwrap(), index, "{path}");
    }

    // A hashed asset is cached for good.
    let asset = first_asset(&index);
    let file = app.client.get(app.url(&asset)).send().await.unwrap();
    assert_eq!(file.status(), 200, "{asset}");
    assert_eq!(
        file.headers()[header::CACHE_CONTROL],
        "public, max-age=31536000, immutable"
    );
    assert!(
        file.headers()[header::CONTENT_TYPE]
            .to_str()
            .unwrap()
            .starts_with(if asset.ends_with(".css") {
                "text/css"
            } else {
                "text/javascript"
            }),
        "{asset}"
    );
    assert!(!file.bytes().await.unwrap().is_empty());

    // Revalidation: the same ETag answers 304 without a body; HEAD answers the headers only.
    let etag = headers[header::ETAG].clone();
    let again = app
        .client
        .get(app.url("/"))
        .header(header::IF_NONE_MATCH, etag.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 304);
    assert!(again.bytes().await.unwrap().is_empty());
    let head = app.client.head(app.url("/app/x")).send().await.unwrap();
    assert_eq!(head.status(), 200);
    assert_eq!(head.headers()[header::ETAG], etag);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_paths_keep_their_json_answers() {
    let Some(app) = TestApp::start(Backend::Sqlite).await else {
        return;
    };
    let ada = app.register("ada@example.org").await;
    for path in ["/no/such/route", "/assets/missing-1234.js", "/apps", "/projects/999999"] {
        let answer = app.call(Method::GET, path, Some(&ada.token), None).await;
        assert_eq!(answer.status, 404, "{path}: {}", answer.text);
        assert_eq!(answer.body["code"], "not_found", "{path}: {}", answer.text);
    }
    // Paths that try to leave the build's directory find nothing.
    for path in ["/..%2fCargo.toml", "/assets/..%2f..%2fCargo.toml", "/.gitignore"] {
        let answer = app.call(Method::GET, path, None, None).await;
        assert_eq!(answer.status, 404, "{path}: {}", answer.text);
    }
    // Only GET and HEAD reach the app.
    let posted = app.call(Method::POST, "/app/projects", Some(&ada.token), None).await;
    assert_eq!(posted.status, 404, "{}", posted.text);
    // The API's own pages are untouched.
    app.call(Method::GET, "/health", None, None).await.expect(200);
    app.call(Method::GET, "/projects", Some(&ada.token), None)
        .await
        .expect(200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ui_dir_serves_another_build() {
    let build = tempfile::tempdir().unwrap();
    std::fs::create_dir(build.path().join("assets")).unwrap();
    std::fs::write(
        build.path().join("index.html"),
        "<!doctype html><html><script type=\"module\" src=\"/assets/main-abc123.js\"></script></html>",
    )
    .unwrap();
    std::fs::write(build.path().join("assets/main-abc123.js"), "console.log(1)").unwrap();
    std::fs::write(build.path().join("favicon.svg"), "<svg/>").unwrap();
    let dir = build.path().to_owned();
    let Some(app) = TestApp::start_with(Backend::Sqlite, |c| c.ui_dir = Some(dir)).await else {
        return;
    };
    let index = app.client.get(app.url("/app/projects")).send().await.unwrap();
    assert_eq!(index.status(), 200);
    assert!(index.text().await.unwrap().contains("main-abc123.js"));
    let script = app.client.get(app.url("/assets/main-abc123.js")).send().await.unwrap();
    assert_eq!(
        script.headers()[header::CACHE_CONTROL],
        "public, max-age=31536000, immutable"
    );
    assert_eq!(script.text().await.unwrap(), "console.log(1)");
    let icon = app.client.get(app.url("/favicon.svg")).send().await.unwrap();
    assert_eq!(icon.headers()[header::CONTENT_TYPE], "image/svg+xml");
    assert_eq!(icon.headers()[header::CACHE_CONTROL], "no-cache");
}
