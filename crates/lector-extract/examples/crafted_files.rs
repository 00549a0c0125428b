//! Writes the crafted files the extraction tests send (a truncated PDF, a decompression bomb,
//! deeply nested arrays, a PNG claiming 60000×60000 pixels) and a good invoice into a folder,
//! to time `lector extract-sandbox` on them by hand (docs/SECURITY.md):
//! `cargo run -p lector-extract --features samples --example crafted_files -- DIR`.

use lector_extract::samples::{self, TextRun};

fn main() -> std::io::Result<()> {
    let dir = std::path::PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| "crafted".into()));
    std::fs::create_dir_all(&dir)?;
    let good = samples::text_pdf(&[vec![TextRun::new(50.0, 100.0, 12.0, "Rechnung Nr. 2024-0017")]]);
    let mut truncated = good.clone();
    truncated.truncate(truncated.len() / 3);
    for (name, bytes) in [
        ("good.pdf", good),
        ("truncated.pdf", truncated),
        ("bomb.pdf", samples::bomb_pdf(600 << 20)),
        ("nested.pdf", samples::nested_pdf(200_000)),
        ("huge.png", samples::png_claiming(60_000, 60_000)),
    ] {
        std::fs::write(dir.join(name), bytes)?;
    }
    Ok(())
}
