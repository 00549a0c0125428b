//! The check every JSON request body passes before it is deserialised (syntax, server-owned
//! fields, characters), over any bytes.
#![no_main]

use lector_core::body::{BodyKeys, check_json_body};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let keys = BodyKeys {
        immutable: &["id", "created"],
        free: &["description"],
        document: &["text"],
    };
    let _ = check_json_body(data, keys);
});
