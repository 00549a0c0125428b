//! Downloads through the HTTPS API against the size of what is downloaded: for each document
//! count, one server imports a generated file into a group; then, for each format, a fresh
//! server on the same data directory (so nothing of the import is in its memory) downloads the
//! group (`download_group`), reading the body as it comes and keeping none of it. Reports the
//! file's size, the time and the server's peak resident memory (`VmHWM`) before and after the
//! download, so a download that grew with the group would show.
//!
//! ```sh
//! cargo build --release -p lector --bin lector --example download_bench
//! target/release/examples/download_bench --lector target/release/lector --rows 10000,100000,1000000 --formats csv,jsonl,xlsx
//! ```

#[path = "support/bench_server.rs"]
mod bench_server;

use bench_server::{Options, Setup, memory, table};
use lector_text::Format;
use std::time::Instant;

/// Large files are this benchmark's point: the upload limits are raised for it.
const LIMITS: [(&str, &str); 2] = [
    ("LECTOR_MAX_BODY_BYTES", "2147483648"),
    ("LECTOR_UPLOADS__MAX_BYTES", "2147483648"),
];

/// One download's figures.
struct Downloaded {
    bytes: u64,
    secs: f64,
    peak_before_kib: u64,
    peak_after_kib: u64,
}

/// Imports `rows` documents into a group on a server of its own; answers the data directory
/// (kept while the value lives) and the group's path.
async fn imported(options: &Options, rows: usize) -> Result<(tempfile::TempDir, String), String> {
    let (dir, data_dir) = bench_server::data_dir()?;
    let server = bench_server::start(&Setup {
        lector: &options.lector,
        data_dir: &data_dir,
        database_url: options.database_url.as_deref(),
        env: &LIMITS,
    })?;
    let token = server.register().await?;
    let project = server.project(&token).await?;
    let mut file = Vec::new();
    lector_text::write_table(Format::Csv, &table(rows), &mut file).map_err(|e| e.to_string())?;
    let (_, secs, group) = server.import(&token, project, "csv", file).await?;
    eprintln!("download_bench: imported {rows} documents in {secs:.1} s");
    Ok((dir, format!("/projects/{project}/groups/{group}")))
}

/// Downloads the group in `format` from a fresh server on the data directory.
async fn download(
    options: &Options,
    data_dir: &std::path::Path,
    group: &str,
    format: Format,
) -> Result<Downloaded, String> {
    let server = bench_server::start(&Setup {
        lector: &options.lector,
        data_dir,
        database_url: options.database_url.as_deref(),
        env: &LIMITS,
    })?;
    let token = server.login().await?;
    let (peak_before_kib, _) = memory(server.pid());
    let started = Instant::now();
    let mut response = server
        .client
        .get(server.url(&format!("{group}/download?format={}", format.extension())))
        .bearer_auth(&token)
        .send()
        .await
        .map_err(|e| e.to_string())?;
    if !response.status().is_success() {
        return Err(format!("download: {}", response.status()));
    }
    let mut bytes = 0u64;
    while let Some(chunk) = response.chunk().await.map_err(|e| format!("download: {e}"))? {
        bytes += chunk.len() as u64;
    }
    let secs = started.elapsed().as_secs_f64();
    let (peak_after_kib, _) = memory(server.pid());
    Ok(Downloaded {
        bytes,
        secs,
        peak_before_kib,
        peak_after_kib,
    })
}

async fn run(options: &Options) -> Result<(), String> {
    println!("| documents | format | file MiB | download s | MiB/s | peak RSS before MiB | peak RSS after MiB |");
    println!("|---|---|---|---|---|---|---|");
    for &rows in &options.rows {
        let (dir, group) = imported(options, rows).await?;
        for &format in &options.formats {
            let d = download(options, dir.path(), &group, format).await?;
            let mib = d.bytes as f64 / (1024.0 * 1024.0);
            println!(
                "| {rows} | {} | {mib:.1} | {:.2} | {:.1} | {:.0} | {:.0} |",
                format.extension(),
                d.secs,
                mib / d.secs,
                d.peak_before_kib as f64 / 1024.0,
                d.peak_after_kib as f64 / 1024.0
            );
        }
    }
    Ok(())
}

fn main() -> std::process::ExitCode {
    let formats = vec![Format::Csv, Format::Jsonl, Format::Xlsx];
    let (options, runtime) = match bench_server::begin("download_bench", vec![10_000, 100_000], formats) {
        Ok(begun) => begun,
        Err(code) => return code,
    };
    match runtime.block_on(run(&options)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("download_bench: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
