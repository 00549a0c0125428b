//! What the kill tests share: a `lector worker` process with a short lease.

use std::process::{Child, Command, Stdio};

/// Starts `lector worker` with one worker and a 2-second lease on `url`, quiet.
pub fn worker(url: &str, dir: &std::path::Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_lector"))
        .args(["worker", "--workers", "1", "--data-dir"])
        .arg(dir)
        .env("LECTOR_DATABASE_URL", url)
        .env("LECTOR_JOB_LEASE_SECS", "2")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start a worker")
}
