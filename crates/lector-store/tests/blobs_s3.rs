//! The S3 backend of the blob store against a local stand-in (`support/s3_stand_in.rs`), which
//! checks every request's SigV4 signature and payload hash.

#[path = "support/s3_stand_in.rs"]
mod s3_stand_in;

use bytes::Bytes;
use lector_core::{ErrorCode, Result};
use lector_store::Blobs;
use s3_stand_in::{SECRET_KEY, stand_in};
use std::io::Read;

fn blobs(port: u16, secret: &str) -> Blobs {
    Blobs::open_with_env("s3://lector-blobs/tenant/files", &s3_stand_in::env(port, secret)).unwrap()
}

fn chunks(total: usize, size: usize) -> impl futures_util::Stream<Item = Result<Bytes>> + Unpin + Send {
    let parts: Vec<Result<Bytes>> = (0..total.div_ceil(size))
        .map(|i| {
            let len = size.min(total - i * size);
            Ok(Bytes::from(
                (0..len).map(|j| ((i * size + j) % 251) as u8).collect::<Vec<_>>(),
            ))
        })
        .collect();
    futures_util::stream::iter(parts)
}

fn read_all(mut file: std::fs::File) -> Vec<u8> {
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).unwrap();
    bytes
}

#[tokio::test]
async fn blobs_round_trip_through_signed_requests() {
    let (port, bucket) = stand_in().await;
    let blobs = blobs(port, SECRET_KEY);

    // A streamed blob of several chunks arrives whole, under the prefix, in one PUT.
    let total = 3 * 1024 * 1024 + 17;
    let written = blobs
        .put_stream("uploads/7/a b.csv", chunks(total, 64 * 1024), 10 << 20)
        .await
        .unwrap();
    assert_eq!(written, total as u64);
    let expected: Vec<u8> = (0..total).map(|j| (j % 251) as u8).collect();
    {
        let bucket = bucket.lock().unwrap();
        assert_eq!(bucket.requests, 1);
        assert_eq!(
            bucket.objects.keys().collect::<Vec<_>>(),
            ["/lector-blobs/tenant/files/uploads/7/a%20b.csv"]
        );
    }
    assert_eq!(read_all(blobs.open_file("uploads/7/a b.csv").await.unwrap()), expected);

    blobs.put_bytes("models/m1", b"weights".to_vec()).await.unwrap();
    assert_eq!(read_all(blobs.open_file("models/m1").await.unwrap()), b"weights");

    blobs.delete("uploads/7/a b.csv").await.unwrap();
    let gone = blobs.open_file("uploads/7/a b.csv").await.unwrap_err();
    assert_eq!(gone.code, ErrorCode::NotFound);
    // Deleting again is no error.
    blobs.delete("uploads/7/a b.csv").await.unwrap();
    assert_eq!(bucket.lock().unwrap().objects.len(), 1);
}

#[tokio::test]
async fn a_blob_over_the_limit_is_refused_and_nothing_is_sent() {
    let (port, bucket) = stand_in().await;
    let blobs = blobs(port, SECRET_KEY);
    let err = blobs
        .put_stream("uploads/big", chunks(100_001, 10_000), 100_000)
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::PayloadTooLarge);
    {
        let bucket = bucket.lock().unwrap();
        assert_eq!(bucket.requests, 0);
        assert!(bucket.objects.is_empty());
    }
    // Exactly at the limit is fine.
    assert_eq!(
        blobs
            .put_stream("uploads/big", chunks(100_000, 10_000), 100_000)
            .await
            .unwrap(),
        100_000
    );
}

#[tokio::test]
async fn missing_blobs_and_refused_signatures() {
    let (port, bucket) = stand_in().await;
    let err = blobs(port, SECRET_KEY).open_file("nope").await.unwrap_err();
    assert_eq!(err.code, ErrorCode::NotFound);

    // A wrong secret key is refused by the store: the write fails (503), nothing is kept.
    let wrong = blobs(port, "not-the-secret");
    let err = wrong.put_bytes("x", b"1".to_vec()).await.unwrap_err();
    assert_eq!(err.code, ErrorCode::Unavailable);
    let err = wrong.put_stream("x", chunks(10, 3), 100).await.unwrap_err();
    assert_eq!(err.code, ErrorCode::Unavailable);
    assert!(bucket.lock().unwrap().objects.is_empty());
}

#[tokio::test]
async fn session_tokens_are_sent_and_signed() {
    let (port, bucket) = stand_in().await;
    let env = s3_stand_in::env(port, SECRET_KEY);
    let blobs = Blobs::open_with_env("s3://lector-blobs", &move |name| match name {
        "AWS_SESSION_TOKEN" => Some("session-token-1".into()),
        _ => env(name),
    })
    .unwrap();
    blobs.put_bytes("k", b"v".to_vec()).await.unwrap();
    assert_eq!(read_all(blobs.open_file("k").await.unwrap()), b"v");
    let bucket = bucket.lock().unwrap();
    assert_eq!(bucket.tokens, ["session-token-1", "session-token-1"]);
    assert!(bucket.objects.contains_key("/lector-blobs/k"));
}

#[test]
fn s3_configuration_is_checked() {
    let no_keys = Blobs::open_with_env("s3://bucket/p", &|_| None).unwrap_err();
    assert!(no_keys.detail.contains("AWS_ACCESS_KEY_ID"), "{}", no_keys.detail);
    let env = |name: &str| {
        name.starts_with("AWS_")
            .then(|| "x".to_owned())
            .filter(|_| name != "AWS_ENDPOINT_URL")
    };
    assert!(Blobs::open_with_env("s3:///p", &env).is_err());
    let blobs = Blobs::open_with_env("s3://bucket/p", &env).unwrap();
    assert_eq!(blobs.location(), "s3://bucket/p");
}

#[tokio::test]
async fn listings_follow_continuation_tokens_and_keep_to_the_prefix() {
    let (port, bucket) = stand_in().await;
    let blobs = blobs(port, SECRET_KEY);
    let keys = [
        "uploads/a",
        "uploads/b & c",
        "uploads/d",
        "uploads/e",
        "uploads/f",
        "models/m/1.lector-model",
    ];
    for key in keys {
        blobs.put_bytes(key, b"x".to_vec()).await.unwrap();
    }
    // Another tenant's prefix in the same bucket is not listed.
    let other = Blobs::open_with_env("s3://lector-blobs/other", &s3_stand_in::env(port, SECRET_KEY)).unwrap();
    other.put_bytes("uploads/z", b"x".to_vec()).await.unwrap();
    let before = bucket.lock().unwrap().requests;

    let listed: Vec<lector_store::StoredBlob> = futures_util::TryStreamExt::try_collect(blobs.list("uploads"))
        .await
        .unwrap();
    let names: Vec<&str> = listed.iter().map(|b| b.key.as_str()).collect();
    assert_eq!(
        names,
        ["uploads/a", "uploads/b & c", "uploads/d", "uploads/e", "uploads/f"]
    );
    assert_eq!(
        listed[0].modified,
        lector_core::time::Timestamp::parse_rfc3339("2026-01-02T03:04:05Z").unwrap()
    );
    // Five keys at two a page: three signed requests.
    assert_eq!(bucket.lock().unwrap().requests - before, 3);
    let models: Vec<lector_store::StoredBlob> = futures_util::TryStreamExt::try_collect(blobs.list("models"))
        .await
        .unwrap();
    assert_eq!(models.len(), 1);

    // A refused listing is an error, not an empty list.
    let wrong = Blobs::open_with_env(
        "s3://lector-blobs/tenant/files",
        &s3_stand_in::env(port, "not-the-secret"),
    )
    .unwrap();
    let refused = futures_util::TryStreamExt::try_collect::<Vec<_>>(wrong.list("uploads"))
        .await
        .unwrap_err();
    assert_eq!(refused.code, ErrorCode::Unavailable);
}

#[tokio::test]
async fn the_health_check_asks_the_bucket_with_a_signed_listing() {
    let (port, bucket) = stand_in().await;
    blobs(port, SECRET_KEY).ping().await.unwrap();
    assert_eq!(bucket.lock().unwrap().requests, 1, "one request per check");
    // Refused credentials wait for an operator: 503, no retry suggested.
    let refused = blobs(port, "not-the-secret").ping().await.unwrap_err();
    assert_eq!(refused.code, ErrorCode::Unavailable);
    assert_eq!(refused.retry_after, None);
    // A store that does not answer at all is a passing outage: 503 with a retry.
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let nobody = closed.local_addr().unwrap().port();
    drop(closed);
    let down = blobs(nobody, SECRET_KEY).ping().await.unwrap_err();
    assert_eq!(down.code, ErrorCode::Unavailable);
    assert_eq!(down.retry_after, Some(lector_core::error::DEPENDENCY_RETRY_SECS));
}

/// A bucket that answers "slow down" is asked again, the body sent whole each time; one that
/// keeps answering so fails the write as unavailable (503) after three tries.
#[tokio::test]
async fn a_busy_bucket_is_asked_again() {
    let (port, bucket) = stand_in().await;
    let blobs = blobs(port, SECRET_KEY);
    bucket.lock().unwrap().slow_down = 2;
    let total = 200 * 1024 + 3;
    blobs
        .put_stream("uploads/busy", chunks(total, 64 * 1024), 10 << 20)
        .await
        .expect("written on the third try");
    assert_eq!(bucket.lock().unwrap().requests, 3);
    let expected: Vec<u8> = (0..total).map(|j| (j % 251) as u8).collect();
    bucket.lock().unwrap().slow_down = 1;
    assert_eq!(read_all(blobs.open_file("uploads/busy").await.unwrap()), expected);
    bucket.lock().unwrap().slow_down = 1;
    blobs.put_bytes("models/m2", b"weights".to_vec()).await.unwrap();

    bucket.lock().unwrap().slow_down = 3;
    let error = blobs.put_bytes("models/m3", b"never".to_vec()).await.unwrap_err();
    assert_eq!(error.code, ErrorCode::Unavailable, "{}", error.detail);
    assert!(blobs.open_file("models/m3").await.is_err());
}
