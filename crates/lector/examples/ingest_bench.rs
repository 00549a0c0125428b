//! End-to-end ingest through the HTTPS API: for each file format and row count, start a fresh
//! `lector serve` (SQLite in a temporary data directory), upload a generated file with
//! `upload_group_file`, create a group from it with `create_group`, and poll `get_project_task`
//! until the import is done. Reports rows/s from the start of the upload to the task's end, and
//! the server process's peak resident memory (`VmHWM` of `/proc/PID/status`) before the upload
//! and after the import, so memory growth with file size shows.
//!
//! ```sh
//! cargo build --release -p lector --example ingest_bench
//! target/release/examples/ingest_bench --lector target/release/lector --rows 50000,100000 --formats csv,xlsx
//! ```

#[path = "support/bench_server.rs"]
mod bench_server;

use bench_server::{Options, Setup, memory, table};
use lector_text::Format;

/// One run: answers (seconds for the upload, seconds for the whole ingest, peak KiB before the
/// upload, peak KiB after the import).
async fn run(options: &Options, format: Format, rows: usize, file: Vec<u8>) -> Result<(f64, f64, u64, u64), String> {
    let (_dir, data_dir) = bench_server::data_dir()?;
    let server = bench_server::start(&Setup {
        lector: &options.lector,
        data_dir: &data_dir,
        database_url: options.database_url.as_deref(),
        env: &[],
    })?;
    let token = server.register().await?;
    let project_id = server.project(&token).await?;
    let (before, _) = memory(server.pid());
    let (upload_secs, total_secs, group_id) = server.import(&token, project_id, format.extension(), file).await?;
    let (after, _) = memory(server.pid());
    let group = bench_server::call(
        server
            .client
            .get(server.url(&format!("/projects/{project_id}/groups/{group_id}")))
            .bearer_auth(&token),
    )
    .await?;
    if group["document_count"].as_u64() != Some(rows as u64) {
        return Err(format!("expected {rows} documents: {group}"));
    }
    Ok((upload_secs, total_secs, before, after))
}

fn main() -> std::process::ExitCode {
    let (options, runtime) = match bench_server::begin("ingest_bench", vec![100_000], vec![Format::Csv, Format::Xlsx]) {
        Ok(begun) => begun,
        Err(code) => return code,
    };
    println!(
        "| format | rows | file MiB | upload s | total s | rows/s | peak RSS before upload MiB | peak RSS after import MiB |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for &format in &options.formats {
        for &rows in &options.rows {
            let mut file = Vec::new();
            lector_text::write_table(format, &table(rows), &mut file).expect("write the file");
            let mib = file.len() as f64 / (1024.0 * 1024.0);
            match runtime.block_on(run(&options, format, rows, file)) {
                Ok((upload, total, before, after)) => println!(
                    "| {} | {rows} | {mib:.1} | {upload:.2} | {total:.2} | {:.0} | {:.0} | {:.0} |",
                    format.extension(),
                    rows as f64 / total,
                    before as f64 / 1024.0,
                    after as f64 / 1024.0
                ),
                Err(e) => {
                    eprintln!("ingest_bench: {} {rows}: {e}", format.extension());
                    return std::process::ExitCode::FAILURE;
                }
            }
        }
    }
    std::process::ExitCode::SUCCESS
}
