//! Throughput figures for docs/BENCHMARKS.md: sentence segmentation in MB/s per language, and
//! CSV/XLSX reading in rows/s for a generated 100,000-row file (peak memory comes from running a
//! mode under `/usr/bin/time -v`, one file format per process).
//!
//! cargo run --release -p lector-text --example text_bench -- segment
//! cargo run --release -p lector-text --example text_bench -- generate DIR [ROWS]   (also writes bomb.xlsx)
//! cargo run --release -p lector-text --example text_bench -- csv|xlsx|jsonl|txt FILE [MAX_MIB]

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use lector_text::{ColumnRef, Format, Language, Limits, ReadOptions, Table, open_rows, split_sentences, write_table};

const EN_DATA: &str = "/work/shared/data/absa-rest16-en/train.jsonl";
const AR_DATA: &str = "/work/shared/data/absa-hotels-ar/train.dat";

/// German sentences written for this benchmark, with the abbreviations, ordinals, numbers and
/// quotes that make German segmentation hard.
const DE_SENTENCES: &[&str] = &[
    "Das Hotel liegt ca. 5 km vom Zentrum entfernt, z. B. mit dem Bus Nr. 12 gut erreichbar.",
    "Am 3. Oktober war das Restaurant geschlossen.",
    "Dr. Müller empfahl uns u.a. das Schnitzel mit Bratkartoffeln.",
    "Der Service war freundlich, die Preise (inkl. MwSt.) waren angemessen.",
    "Leider war das Zimmer sehr laut usw., trotzdem haben wir gut geschlafen.",
    "Die Kellnerin sagte: „Die Küche schließt um 22 Uhr.“ Wir bestellten schnell.",
    "Das Frühstück kostet 12,50 EUR bzw. 8,00 EUR für Kinder bis 12 J.",
    "Ist das wirklich alles?",
    "Wir kommen bestimmt wieder!",
    "Die Lage am Marktplatz ist ideal, d. h. alle Sehenswürdigkeiten sind zu Fuß erreichbar.",
    "Prof. Schmidt und Fr. Weber haben das Lokal im Jan. 2024 eröffnet.",
    "Die Portionen waren groß... vielleicht etwas zu groß.",
    "Der Wein kam aus der Pfalz, genauer gesagt aus Bad Dürkheim.",
    "Parkplätze gibt es hinter dem Haus, s. Skizze auf S. 3 der Broschüre.",
];

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("segment") => segment_bench(),
        Some("generate") => match args.get(1) {
            Some(dir) => generate(
                Path::new(dir),
                args.get(2).and_then(|n| n.parse().ok()).unwrap_or(100_000),
            ),
            None => Err("generate needs a directory".into()),
        },
        Some(mode @ ("csv" | "xlsx" | "jsonl" | "txt")) => match args.get(1) {
            Some(file) => {
                let mut limits = Limits::default();
                if let Some(mib) = args.get(2).and_then(|n| n.parse::<u64>().ok()) {
                    limits.max_bytes = mib << 20;
                }
                read_bench(mode, Path::new(file), &limits)
            }
            None => Err(format!("{mode} needs a file")),
        },
        _ => Err("usage: bench segment | generate DIR [ROWS] | csv|xlsx|jsonl|txt FILE [MAX_MIB]".into()),
    };
    if let Err(message) = result {
        eprintln!("{message}");
        std::process::exit(2);
    }
}

type Outcome = Result<(), String>;

fn english_texts() -> Result<Vec<String>, String> {
    let file = File::open(EN_DATA).map_err(|e| format!("{EN_DATA}: {e}"))?;
    let mut texts = Vec::new();
    for line in BufReader::new(file).lines() {
        let line = line.map_err(|e| e.to_string())?;
        let value: serde_json::Value = serde_json::from_str(&line).map_err(|e| e.to_string())?;
        if let Some(text) = value.get("text").and_then(|t| t.as_str()) {
            texts.push(text.to_owned());
        }
    }
    Ok(texts)
}

/// The hotel reviews of the Arabic ABSA set: lines of sentence (aspect as `$T$`), aspect,
/// polarity; the sentence is rebuilt and repeated sentences kept once.
fn arabic_texts() -> Result<Vec<String>, String> {
    let data = std::fs::read_to_string(AR_DATA).map_err(|e| format!("{AR_DATA}: {e}"))?;
    let lines: Vec<&str> = data.lines().collect();
    let mut texts: Vec<String> = Vec::new();
    for triple in lines.chunks(3) {
        if let [sentence, aspect, _] = triple {
            let text = sentence.replace("$T$", aspect);
            if texts.last() != Some(&text) {
                texts.push(text);
            }
        }
    }
    Ok(texts)
}

/// Reviews of three to six sentences, drawn deterministically from [`DE_SENTENCES`].
fn german_texts() -> Vec<String> {
    let mut state: u64 = 42;
    (0..20_000)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let count = 3 + (state >> 33) as usize % 4;
            (0..count)
                .map(|k| DE_SENTENCES[((state >> 20) as usize + k * 5) % DE_SENTENCES.len()])
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

fn segment_bench() -> Outcome {
    let corpora = [
        (Language::En, "absa-rest16-en train.jsonl texts", english_texts()?),
        (Language::De, "generated German reviews", german_texts()),
        (Language::Ar, "absa-hotels-ar train.dat sentences", arabic_texts()?),
    ];
    println!("language | corpus | documents | MB | sentences | seconds | MB/s");
    for (language, name, texts) in corpora {
        let bytes: usize = texts.iter().map(String::len).sum();
        // Warm up, then repeat until at least two seconds have been measured.
        let mut sentences = texts.iter().map(|t| split_sentences(t, language).len()).sum::<usize>();
        let started = Instant::now();
        let mut rounds = 0u32;
        while started.elapsed() < Duration::from_secs(2) {
            sentences = texts.iter().map(|t| split_sentences(t, language).len()).sum::<usize>();
            rounds += 1;
        }
        let seconds = started.elapsed().as_secs_f64();
        let mb = bytes as f64 / 1e6;
        println!(
            "{} | {name} | {} | {mb:.2} | {sentences} | {seconds:.2} ({rounds} rounds) | {:.2}",
            language.code(),
            texts.len(),
            mb * f64::from(rounds) / seconds
        );
    }
    Ok(())
}

/// Writes reviews.csv, reviews.jsonl and reviews.xlsx with `rows` rows (id, text, label, stars).
fn generate(dir: &Path, rows: usize) -> Outcome {
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    let english = english_texts()?;
    let labels = ["positive", "negative", "neutral"];
    let row = |i: usize| {
        vec![
            i.to_string(),
            english[i % english.len()].clone(),
            labels[i % 3].to_owned(),
            (1 + i % 5).to_string(),
        ]
    };
    let csv_path: PathBuf = dir.join("reviews.csv");
    let mut csv = BufWriter::new(File::create(&csv_path).map_err(|e| e.to_string())?);
    let mut jsonl = BufWriter::new(File::create(dir.join("reviews.jsonl")).map_err(|e| e.to_string())?);
    writeln!(csv, "id,text,label,stars").map_err(|e| e.to_string())?;
    for i in 0..rows {
        let cells = row(i);
        let quoted = format!("\"{}\"", cells[1].replace('"', "\"\""));
        writeln!(csv, "{},{quoted},{},{}", cells[0], cells[2], cells[3]).map_err(|e| e.to_string())?;
        let object = serde_json::json!({"id": i, "text": cells[1], "label": cells[2], "stars": 1 + i % 5});
        writeln!(jsonl, "{object}").map_err(|e| e.to_string())?;
    }
    csv.flush().map_err(|e| e.to_string())?;
    jsonl.flush().map_err(|e| e.to_string())?;
    let table = Table {
        header: ["id", "text", "label", "stars"].map(str::to_owned).to_vec(),
        rows: (0..rows).map(row).collect(),
    };
    let xlsx = BufWriter::new(File::create(dir.join("reviews.xlsx")).map_err(|e| e.to_string())?);
    write_table(Format::Xlsx, &table, xlsx).map_err(|e| e.to_string())?;
    write_bomb(&dir.join("bomb.xlsx"))?;
    for name in ["reviews.csv", "reviews.jsonl", "reviews.xlsx", "bomb.xlsx"] {
        let size = std::fs::metadata(dir.join(name)).map_err(|e| e.to_string())?.len();
        let what = if name == "bomb.xlsx" {
            "1 GiB of zeros".to_owned()
        } else {
            format!("{rows} rows")
        };
        println!("{name}: {what}, {:.1} MB", size as f64 / 1e6);
    }
    Ok(())
}

/// A workbook whose sheet is 1 GiB of zeros (about 1 MB compressed): a zip bomb.
fn write_bomb(path: &Path) -> Outcome {
    use zip::write::{SimpleFileOptions, ZipWriter};
    let mut zip = ZipWriter::new(BufWriter::new(File::create(path).map_err(|e| e.to_string())?));
    let options = SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .large_file(true);
    zip.start_file("xl/worksheets/sheet1.xml", options)
        .map_err(|e| e.to_string())?;
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..1024 {
        zip.write_all(&zeros).map_err(|e| e.to_string())?;
    }
    zip.finish()
        .map_err(|e| e.to_string())?
        .flush()
        .map_err(|e| e.to_string())
}

/// Reads a file the way the ingest job does: stream rows in batches of 1,000, pick the text
/// column by name and segment nothing (segmentation is measured on its own).
fn read_bench(mode: &str, path: &Path, limits: &Limits) -> Outcome {
    let format = Format::from_extension(mode).ok_or("unknown format")?;
    let started = Instant::now();
    let file = File::open(path).map_err(|e| e.to_string())?;
    let mut rows = match open_rows(format, file, ReadOptions::default(), limits) {
        Ok(rows) => rows,
        Err(error) => {
            let seconds = started.elapsed().as_secs_f64();
            println!(
                "{mode}: refused after {seconds:.4} s with status {}: {error}",
                error.status()
            );
            return Ok(());
        }
    };
    let text = ColumnRef::Name("text".into())
        .resolve(rows.header())
        .map_err(|e| e.to_string())?;
    let (mut count, mut chars) = (0usize, 0usize);
    loop {
        let batch = rows.next_batch(1_000).map_err(|e| e.to_string())?;
        if batch.is_empty() {
            break;
        }
        count += batch.len();
        chars += batch.iter().map(|row| row.cells[text].len()).sum::<usize>();
    }
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "{mode}: {count} rows ({chars} text bytes) in {seconds:.3} s = {:.0} rows/s",
        count as f64 / seconds
    );
    Ok(())
}
