//! The web app: the single-page app built from `ui/` into `ui/dist`, served at `/`.
//!
//! The built files are embedded in the binary (a release build carries them; a debug build reads
//! them from `ui/dist` as it runs), so `lector serve` serves the app on a machine without npm.
//! `ui_dir` (`LECTOR_UI_DIR`) serves another build from a directory instead, for working on the
//! app without rebuilding the server.
//!
//! What is served where:
//! - `/` and every path under `/app/` (the app's own routes): `index.html`, never cached
//!   (`no-cache`, revalidated by its `ETag`), with a strict Content-Security-Policy;
//! - `/assets/…`: the hashed files the build names, cached for a year as immutable;
//! - any other file of the build (a favicon): revalidated like `index.html`.
//!
//! Everything else falls through to the API's JSON 404, so an API path never answers HTML.

use crate::error::not_found_fallback;
use crate::state::AppState;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use std::borrow::Cow;
use std::path::{Component, Path, PathBuf};

/// The build in `ui/dist` when this crate was compiled.
#[derive(rust_embed::Embed)]
#[folder = "../../ui/dist"]
#[allow_missing = true]
struct Embedded;

/// What the app's pages may load: only this origin's scripts, styles and API; images also from
/// data and blob addresses (annotated pages, charts); no frames, no plugins, no inline code.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; style-src 'self'; \
     img-src 'self' data: blob:; font-src 'self'; connect-src 'self'; object-src 'none'; \
     frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

/// Hashed build output, named anew whenever its content changes.
const IMMUTABLE: &str = "public, max-age=31536000, immutable";
/// Files under a stable name: kept, but asked about again before each use.
const REVALIDATE: &str = "no-cache";

/// Where the app's files come from.
#[derive(Debug, Clone)]
pub enum WebApp {
    /// The build embedded in the binary.
    Embedded,
    /// A build in a directory (`ui_dir`).
    Directory(PathBuf),
}

/// One file of the build.
struct File {
    bytes: Cow<'static, [u8]>,
    etag: String,
}

impl WebApp {
    /// The configured source: `ui_dir` when set, else the embedded build.
    pub fn from_config(ui_dir: Option<&Path>) -> Self {
        ui_dir.map_or(Self::Embedded, |dir| Self::Directory(dir.to_owned()))
    }

    /// A file of the build by its relative path (`assets/index-3f2a.js`), if there is one.
    async fn file(&self, path: &str) -> Option<File> {
        if !is_plain_relative(path) {
            return None;
        }
        match self {
            Self::Embedded => Embedded::get(path).map(|found| File {
                etag: etag_of(&found.metadata.sha256_hash()),
                bytes: found.data,
            }),
            Self::Directory(dir) => {
                let bytes = tokio::fs::read(dir.join(path)).await.ok()?;
                let digest: [u8; 32] = <sha2::Sha256 as sha2::Digest>::digest(&bytes).into();
                Some(File {
                    etag: etag_of(&digest),
                    bytes: Cow::Owned(bytes),
                })
            }
        }
    }
}

/// A path of plain names only: nothing absolute, no `..`, no empty or hidden parts.
fn is_plain_relative(path: &str) -> bool {
    !path.is_empty()
        && !path.contains('\\')
        && path.split('/').all(|part| !part.is_empty() && !part.starts_with('.'))
        && Path::new(path).components().all(|c| matches!(c, Component::Normal(_)))
}

fn etag_of(digest: &[u8; 32]) -> String {
    let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    format!("\"{hex}\"")
}

/// The media type of a build file, by its extension.
fn media_type(path: &str) -> &'static str {
    match path.rsplit_once('.').map(|(_, ext)| ext) {
        Some("html") => "text/html; charset=utf-8",
        Some("js" | "mjs") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("json" | "map") => "application/json",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("ico") => "image/x-icon",
        Some("webp") => "image/webp",
        Some("woff2") => "font/woff2",
        Some("txt") => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

/// The fallback of the router: the app's pages and files for GET and HEAD, else the API's 404.
pub async fn serve_or_not_found(State(state): State<AppState>, request: Request) -> Response {
    let method = request.method();
    if method != Method::GET && method != Method::HEAD {
        return not_found_fallback().await.into_response();
    }
    let path = request.uri().path();
    let wanted = if path == "/" || path == "/app" || path.starts_with("/app/") {
        "index.html"
    } else {
        path.trim_start_matches('/')
    };
    let Some(file) = state.web_app.file(wanted).await else {
        return not_found_fallback().await.into_response();
    };
    let cache = if wanted.starts_with("assets/") {
        IMMUTABLE
    } else {
        REVALIDATE
    };
    answer(request.headers(), wanted, file, cache, method == Method::HEAD)
}

fn answer(asked: &HeaderMap, path: &str, file: File, cache: &'static str, head_only: bool) -> Response {
    let fresh = asked
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|tags| tags.split(',').any(|t| t.trim() == file.etag || t.trim() == "*"));
    let status = if fresh {
        StatusCode::NOT_MODIFIED
    } else {
        StatusCode::OK
    };
    let mut response = if fresh || head_only {
        status.into_response()
    } else {
        (status, file.bytes.into_owned()).into_response()
    };
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(media_type(path)));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    if let Ok(etag) = HeaderValue::from_str(&file.etag) {
        headers.insert(header::ETAG, etag);
    }
    if path.ends_with(".html") {
        headers.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(CONTENT_SECURITY_POLICY),
        );
        headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_relative_paths_reach_the_files() {
        assert!(is_plain_relative("index.html"));
        assert!(is_plain_relative("assets/index-3f2a.js"));
        for bad in [
            "",
            "/etc/passwd",
            "../Cargo.toml",
            "assets/../../x",
            "a//b",
            ".env",
            "a\\b",
            "assets/",
        ] {
            assert!(!is_plain_relative(bad), "{bad}");
        }
    }

    #[test]
    fn media_types_follow_the_extension() {
        assert_eq!(media_type("assets/app.js"), "text/javascript; charset=utf-8");
        assert_eq!(media_type("index.html"), "text/html; charset=utf-8");
        assert_eq!(media_type("LICENSE"), "application/octet-stream");
    }
}
