//! The extraction benchmark: generated invoices (four layouts, English and German) read as text
//! PDFs and as 150-dpi scans with noise and a slight turn; field precision, recall and F1 of
//! the built-in fields (before any training), of a model trained on half the invoices and
//! scored on the other half (alone, and beside the built-in fields as the service runs it), and
//! pages per second against running the tesseract program alone on the same scan images.
//!
//! `cargo bench -p lector-extract --features samples --bench invoices -- [COUNT] [SEED]`
//! (defaults 200 and 42); needs tesseract (`scripts/install-ocr`). Figures: docs/BENCHMARKS.md.

use lector_extract::builtin::{Builtin, Found, find};
use lector_extract::extraction::{FieldSetting, extract};
use lector_extract::invoices::{Invoice, Truth, invoices};
use lector_extract::learned::{Annotation, FieldModel, locate_all};
use lector_extract::{DocumentFormat, ExtractConfig, ReadDocument, read_document, samples};
use std::time::{Duration, Instant};

/// The labels a project would give the fields.
const LABELS: [&str; 5] = ["invoice_number", "date", "total", "iban", "vendor"];

const FIELDS: [(&str, Builtin); 5] = [
    ("invoice number", Builtin::InvoiceNumber),
    ("date", Builtin::Date),
    ("total", Builtin::Total),
    ("IBAN", Builtin::Iban),
    ("vendor name", Builtin::Vendor),
];

fn truth_of(truth: &Truth, field: Builtin) -> &str {
    match field {
        Builtin::InvoiceNumber => &truth.invoice_number,
        Builtin::Date => &truth.date,
        Builtin::Total => &truth.total,
        Builtin::Iban => &truth.iban,
        _ => &truth.vendor,
    }
}

/// Correct, predicted and true counts per field.
#[derive(Default, Clone, Copy)]
struct Counts {
    correct: usize,
    predicted: usize,
    truths: usize,
}

impl Counts {
    fn scores(self) -> (f64, f64, f64) {
        let p = self.correct as f64 / self.predicted.max(1) as f64;
        let r = self.correct as f64 / self.truths.max(1) as f64;
        let f = if p + r == 0.0 { 0.0 } else { 2.0 * p * r / (p + r) };
        (p, r, f)
    }
}

/// Trains on `read` as an annotator would tag it: each true value where it stands on the page
/// (a total where it ends the invoice, not an equal line item above it).
fn train(read: &[&(ReadDocument, &Invoice)]) -> FieldModel {
    let lessons: Vec<(&lector_extract::Page, Vec<Annotation>)> = read
        .iter()
        .map(|(document, invoice)| {
            let page = &document.pages[0];
            let annotations = FIELDS
                .iter()
                .zip(LABELS)
                .filter_map(|((_, field), label)| {
                    let places = locate_all(page, truth_of(&invoice.truth, *field));
                    let place = if *field == Builtin::Total {
                        places.last()
                    } else {
                        places.first()
                    };
                    place.map(|&(start, end)| Annotation {
                        label: label.to_owned(),
                        start,
                        end,
                    })
                })
                .collect();
            (page, annotations)
        })
        .collect();
    let labels: Vec<String> = LABELS.iter().map(|l| l.to_string()).collect();
    FieldModel::train(lessons.iter().map(|(page, a)| (*page, &a[..])), &labels)
}

/// Whether invoice `i` is in the half a model is trained on: every other block of eight, each
/// block holding every layout in both languages.
fn taught(i: usize) -> bool {
    (i / (2 * lector_extract::invoices::LAYOUTS)) % 2 == 1
}

/// Scores the half not taught with `find_field` after training on the taught half.
fn score_halves(
    read: &[(ReadDocument, &Invoice)],
    misses: &mut Vec<String>,
    find_field: impl Fn(&FieldModel, usize, &ReadDocument) -> Option<Found>,
) -> Vec<Counts> {
    let (taught, tested): (Vec<_>, Vec<_>) = read.iter().enumerate().partition(|(i, _)| taught(*i));
    let model = train(&taught.iter().map(|(_, r)| *r).collect::<Vec<_>>());
    let tested: Vec<&(ReadDocument, &Invoice)> = tested.into_iter().map(|(_, r)| r).collect();
    score(&tested, misses, |f, document| find_field(&model, f, document))
}

fn score(
    read: &[&(ReadDocument, &Invoice)],
    misses: &mut Vec<String>,
    find_field: impl Fn(usize, &ReadDocument) -> Option<Found>,
) -> Vec<Counts> {
    FIELDS
        .iter()
        .enumerate()
        .map(|(f, (name, field))| {
            let mut counts = Counts::default();
            for (document, invoice) in read {
                let truth = truth_of(&invoice.truth, *field);
                counts.truths += 1;
                if let Some(found) = find_field(f, document) {
                    counts.predicted += 1;
                    if found.converted.value == truth {
                        counts.correct += 1;
                    } else if misses.len() < 12 {
                        misses.push(format!(
                            "{name} (layout {}, {}): {:?} for {truth:?}, from {:?}",
                            invoice.layout,
                            if invoice.german { "de" } else { "en" },
                            found.converted.value,
                            found.text
                        ));
                    }
                } else if misses.len() < 12 {
                    let page = document.pages[0].text().replace('\n', " | ");
                    misses.push(format!(
                        "{name} (layout {}): nothing for {truth:?} in {page:?}",
                        invoice.layout
                    ));
                }
            }
            counts
        })
        .collect()
}

/// How many of `read` hold each field's true value in their read text at all: the most any
/// matcher can find (OCR misreads the rest).
fn print_held(kind: &str, read: &[&(ReadDocument, &Invoice)]) {
    println!("\nTrue values the read text holds, {kind}, the scored half\n\n| field | held | share |\n|---|---|---|");
    for (name, field) in FIELDS {
        let held = read
            .iter()
            .filter(|(document, invoice)| !locate_all(&document.pages[0], truth_of(&invoice.truth, field)).is_empty())
            .count();
        println!(
            "| {name} | {held}/{} | {:.3} |",
            read.len(),
            held as f64 / read.len() as f64
        );
    }
}

fn print_scores(title: &str, counts: &[Counts]) {
    println!("\n{title}\n\n| field | precision | recall | F1 |\n|---|---|---|---|");
    let mut f1s = Vec::new();
    for ((name, _), c) in FIELDS.iter().zip(counts) {
        let (p, r, f) = c.scores();
        f1s.push(f);
        println!("| {name} | {p:.3} | {r:.3} | {f:.3} |");
    }
    println!("| mean | | | {:.3} |", f1s.iter().sum::<f64>() / f1s.len() as f64);
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let count: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(200);
    let seed: u64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(42);
    let all = invoices(count, seed);
    let one_core = ExtractConfig {
        ocr_threads: 1,
        ..ExtractConfig::default()
    };

    let started = Instant::now();
    let text: Vec<(ReadDocument, &Invoice)> = all
        .iter()
        .map(|i| (read_document(i.pdf.clone(), &one_core).expect("a text PDF reads"), i))
        .collect();
    let text_time = started.elapsed();

    let scans: Vec<Vec<u8>> = all
        .iter()
        .enumerate()
        .map(|(n, invoice)| {
            let page = samples::render(&invoice.pdf, 150.0).remove(0);
            let turn = ((n * 37) % 31) as f32 / 10.0 - 1.5;
            samples::encode(&samples::degrade(&page, seed + n as u64, turn, 30), DocumentFormat::Png)
        })
        .collect();
    let started = Instant::now();
    let scanned: Vec<(ReadDocument, &Invoice)> = scans
        .iter()
        .zip(&all)
        .map(|(png, i)| (read_document(png.clone(), &one_core).expect("a scan reads"), i))
        .collect();
    let scan_time = started.elapsed();
    let tesseract_time = tesseract_alone(&scans, &one_core);

    println!(
        "{count} invoices (seed {seed}), {} layouts, English and German, one page each",
        lector_extract::invoices::LAYOUTS
    );
    println!("\n| reading | pages/s | time |\n|---|---|---|");
    let rate = |t: Duration| count as f64 / t.as_secs_f64();
    println!(
        "| text PDFs, one core | {:.1} | {:.2} s |",
        rate(text_time),
        text_time.as_secs_f64()
    );
    println!(
        "| scans (PNG, 150 dpi), one OCR run at a time | {:.2} | {:.2} s |",
        rate(scan_time),
        scan_time.as_secs_f64()
    );
    println!(
        "| the tesseract program alone on the same PNGs | {:.2} | {:.2} s |",
        rate(tesseract_time),
        tesseract_time.as_secs_f64()
    );
    println!(
        "\nscans against tesseract alone: {:+.1} %",
        100.0 * (scan_time.as_secs_f64() / tesseract_time.as_secs_f64() - 1.0)
    );
    let mut misses = Vec::new();
    let built_in = |f: usize, document: &ReadDocument| find(FIELDS[f].1, document);
    let learned = |model: &FieldModel, f: usize, document: &ReadDocument| {
        model
            .field(LABELS[f])
            .and_then(|field| field.find(&document.pages, FIELDS[f].1.data_type()))
    };
    let both = |model: &FieldModel, f: usize, document: &ReadDocument| {
        let setting = FieldSetting::for_label(LABELS[f]);
        extract(document, &[setting], Some(model)).fields.remove(0).found
    };
    for (kind, read) in [("text PDFs", &text), ("scans", &scanned)] {
        let all: Vec<&(ReadDocument, &Invoice)> = read.iter().collect();
        print_scores(
            &format!("Built-in fields, {kind}, all invoices (before any training)"),
            &score(&all, &mut misses, built_in),
        );
        let scored: Vec<&(ReadDocument, &Invoice)> = read
            .iter()
            .enumerate()
            .filter(|(i, _)| !taught(*i))
            .map(|(_, r)| r)
            .collect();
        print_scores(
            &format!("Built-in fields, {kind}, the scored half (before any training)"),
            &score(&scored, &mut misses, built_in),
        );
        print_held(kind, &scored);
        print_scores(
            &format!("Learnt fields alone, {kind}, trained on the other half"),
            &score_halves(read, &mut misses, learned),
        );
        print_scores(
            &format!("Learnt and built-in fields (as the service runs), {kind}, trained on the other half"),
            &score_halves(read, &mut misses, both),
        );
    }
    println!("\nFirst misses:");
    for miss in misses {
        println!("- {miss}");
    }
}

/// Runs `tesseract IMAGE stdout -l LANGS tsv` on each scan, one at a time, as a user would.
fn tesseract_alone(scans: &[Vec<u8>], config: &ExtractConfig) -> Duration {
    let dir = tempfile::tempdir().expect("a scratch directory");
    let paths: Vec<_> = scans
        .iter()
        .enumerate()
        .map(|(i, png)| {
            let path = dir.path().join(format!("scan-{i}.png"));
            std::fs::write(&path, png).expect("writing a scan");
            path
        })
        .collect();
    let started = Instant::now();
    for path in &paths {
        let status = std::process::Command::new(&config.tesseract)
            .arg(path)
            .arg("stdout")
            .args(["-l", &config.languages, "tsv"])
            .env("OMP_THREAD_LIMIT", "1")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .expect("tesseract runs");
        assert!(status.success());
    }
    started.elapsed()
}
