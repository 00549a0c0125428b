//! Embeds each line of standard input with the MiniLM in DIR and prints one JSON array per
//! line, then the speed on standard error; with a batch size, that many lines go through the
//! encoder together:
//!
//! ```sh
//! cargo run --release -p lector-embed --example embed -- "$(scripts/fetch-minilm)" [BATCH] < sentences.txt
//! ```

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = PathBuf::from(std::env::args().nth(1).ok_or("usage: embed MODEL_DIR < lines")?);
    let batch: usize = std::env::args().nth(2).map_or(Ok(1), |b| b.parse())?;
    let model = lector_embed::MiniLm::load(&dir)?;
    let lines: Vec<String> = std::io::stdin().lock().lines().collect::<Result<_, _>>()?;
    let start = Instant::now();
    let vectors: Vec<Vec<f32>> = if batch > 1 {
        lines
            .chunks(batch)
            .flat_map(|chunk| model.embed_batch(&chunk.iter().map(String::as_str).collect::<Vec<_>>()))
            .collect()
    } else {
        lines.iter().map(|l| model.embed(l)).collect()
    };
    let seconds = start.elapsed().as_secs_f64();
    let mut out = std::io::stdout().lock();
    for v in &vectors {
        writeln!(out, "{}", serde_json::to_string(v)?)?;
    }
    eprintln!(
        "{} sentences in {seconds:.2} s: {:.1} sentences/s on one thread, batches of {batch}",
        lines.len(),
        lines.len() as f64 / seconds
    );
    Ok(())
}
