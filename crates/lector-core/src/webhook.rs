//! How Lector signs the webhooks it sends, so a receiver can check that a request came from
//! this server and was not replayed: `Lector-Signature: t=<unix seconds>,v1=<hex>`, where the
//! hex is HMAC-SHA256 with the configuration's secret over `<t>.<body>` (docs/WEBHOOKS.md).

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The header the signature travels in.
pub const SIGNATURE_HEADER: &str = "Lector-Signature";

/// The signature header's value for `body` sent at `timestamp` (unix seconds).
pub fn signature(secret: &str, timestamp: i64, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes a key of any length");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    format!("t={timestamp},v1={}", crate::sigv4::hex(&mac.finalize().into_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signs_the_time_and_the_body() {
        // printf '1700000000.{"id":"x"}' | openssl dgst -sha256 -hmac whsec_test
        assert_eq!(
            signature("whsec_test", 1_700_000_000, br#"{"id":"x"}"#),
            "t=1700000000,v1=80e8d098018f757aa814ab1abb924f35d304affa1d93d29611a54696207eb7c3"
        );
    }
}
