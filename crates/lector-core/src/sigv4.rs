//! AWS Signature Version 4 for S3 requests, shared by the S3 source (`lector-sources`) and the
//! blob store (`lector-store`).
//!
//! Signing is a few HMAC-SHA256 rounds over the canonical request, done here rather than with an
//! AWS SDK or object_store's `aws` feature, which bring aws-lc (no aws-lc in the server,
//! DESIGN.md section 10). It lives in `lector-core` because it is pure computation both crates
//! need, and neither should depend on the other for it.

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

/// SHA-256 of an empty body (a GET or DELETE).
pub const EMPTY_SHA256: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/// The credential that signs: access key, secret key and the region of the bucket.
#[derive(Clone, Copy)]
pub struct Signer<'a> {
    pub access_key_id: &'a str,
    pub secret_access_key: &'a str,
    pub region: &'a str,
}

impl std::fmt::Debug for Signer<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signer")
            .field("access_key_id", &self.access_key_id)
            .field("region", &self.region)
            .finish_non_exhaustive()
    }
}

impl Signer<'_> {
    /// The `Authorization` header of a signed S3 request. `headers` are the signed ones,
    /// lower-case names, sorted by name; `payload_hash` is [`sha256_hex`] of the body (or
    /// [`EMPTY_SHA256`]); `amz_date` is the request's `x-amz-date` ([`amz_date`]).
    pub fn authorization(
        &self,
        method: &str,
        canonical_uri: &str,
        canonical_query: &str,
        headers: &[(String, String)],
        payload_hash: &str,
        amz_date: &str,
    ) -> String {
        let date = &amz_date[..8.min(amz_date.len())];
        let scope = format!("{date}/{}/s3/aws4_request", self.region);
        let canonical_headers: String = headers.iter().map(|(n, v)| format!("{n}:{}\n", v.trim())).collect();
        let signed_headers = headers.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>().join(";");
        let canonical_request = format!(
            "{method}\n{canonical_uri}\n{canonical_query}\n{canonical_headers}\n{signed_headers}\n{payload_hash}"
        );
        let string_to_sign = format!(
            "AWS4-HMAC-SHA256\n{amz_date}\n{scope}\n{}",
            sha256_hex(canonical_request.as_bytes())
        );
        let mut key = hmac(format!("AWS4{}", self.secret_access_key).as_bytes(), date);
        for part in [self.region, "s3", "aws4_request"] {
            key = hmac(&key, part);
        }
        let signature = hex(&hmac(&key, &string_to_sign));
        format!(
            "AWS4-HMAC-SHA256 Credential={}/{scope}, SignedHeaders={signed_headers}, Signature={signature}",
            self.access_key_id
        )
    }
}

/// The `x-amz-date` of a request made at `now` (`YYYYMMDDTHHMMSSZ`, UTC).
pub fn amz_date(now: time::OffsetDateTime) -> String {
    let now = now.to_offset(time::UtcOffset::UTC);
    format!(
        "{:04}{:02}{:02}T{:02}{:02}{:02}Z",
        now.year(),
        u8::from(now.month()),
        now.day(),
        now.hour(),
        now.minute(),
        now.second()
    )
}

/// The `Host` header value (and signed `host`) of a URL's host and port.
pub fn host_header(host: &str, port: Option<u16>) -> String {
    match port {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    }
}

/// Percent-encodes all but the unreserved characters (and `/` in paths), as SigV4 wants.
pub fn uri_encode(text: &str, encode_slash: bool) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => out.push(byte as char),
            b'/' if !encode_slash => out.push('/'),
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

/// Lower-case hex SHA-256 of some bytes (the payload hash of a request with a body).
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// Lower-case hex of bytes (for a digest computed incrementally).
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

type HmacSha256 = Hmac<Sha256>;

fn hmac(key: &[u8], data: &str) -> Vec<u8> {
    let mut mac = HmacSha256::new_from_slice(key).expect("HMAC takes keys of any length");
    mac.update(data.as_bytes());
    mac.finalize().into_bytes().to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLE: Signer<'static> = Signer {
        access_key_id: "AKIAIOSFODNN7EXAMPLE",
        secret_access_key: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        region: "us-east-1",
    };

    #[test]
    fn signature_matches_the_published_get_object_example() {
        // The "GET Object" example of the AWS Signature Version 4 documentation for S3.
        let headers = [
            ("host", "examplebucket.s3.amazonaws.com"),
            ("range", "bytes=0-9"),
            ("x-amz-content-sha256", EMPTY_SHA256),
            ("x-amz-date", "20130524T000000Z"),
        ]
        .map(|(n, v)| (n.to_owned(), v.to_owned()));
        let header = EXAMPLE.authorization("GET", "/test.txt", "", &headers, EMPTY_SHA256, "20130524T000000Z");
        assert_eq!(
            header,
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, \
             SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, \
             Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
        );
    }

    #[test]
    fn signature_matches_the_published_put_object_example() {
        // The "PUT Object" example of the same documentation.
        let body = b"Welcome to Amazon S3.";
        let hash = sha256_hex(body);
        assert_eq!(hash, "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072");
        let headers = [
            ("date", "Fri, 24 May 2013 00:00:00 GMT"),
            ("host", "examplebucket.s3.amazonaws.com"),
            ("x-amz-content-sha256", hash.as_str()),
            ("x-amz-date", "20130524T000000Z"),
            ("x-amz-storage-class", "REDUCED_REDUNDANCY"),
        ]
        .map(|(n, v)| (n.to_owned(), v.to_owned()));
        let header = EXAMPLE.authorization("PUT", "/test%24file.text", "", &headers, &hash, "20130524T000000Z");
        assert!(
            header.ends_with("Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd"),
            "{header}"
        );
    }

    #[test]
    fn dates_and_encoding() {
        let t = time::macros::datetime!(2013-05-24 01:02:03 UTC);
        assert_eq!(amz_date(t), "20130524T010203Z");
        assert_eq!(uri_encode("in/a b+c.csv", false), "in/a%20b%2Bc.csv");
        assert_eq!(uri_encode("a/b", true), "a%2Fb");
        assert_eq!(host_header("h", Some(9000)), "h:9000");
    }
}
