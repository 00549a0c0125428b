//! Optical character recognition through the `tesseract` program.
//!
//! The program, not a binding: the build stays free of C libraries and of crates that download
//! at build time, and a crash in it is a failed read, never a dead server. Pages are written as
//! PNG files and read several per run (tesseract takes a list file), so its start-up and
//! language loading are paid once per run; runs go in parallel up to the configured threads,
//! each held to one OpenMP thread. The TSV output gives every word's box and confidence, and
//! its block, paragraph and line numbers give the lines in tesseract's reading order. Crops of
//! words left in doubt (`repair`) are read again as single lines, all of a document in one run.
//! Each image's file records its resolution, so one run reads pages scanned at several.

use crate::page::{Line, Quad, Word};
use image::GrayImage;
use lector_core::{Error, ErrorCode, Result};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Most words kept from one page, read by OCR or from a PDF's text layer; a page of dense print
/// has a few thousand. The words past it are dropped: finding fields costs more than linearly in
/// a page's words.
pub const MAX_WORDS_PER_PAGE: usize = 20_000;

/// How to run tesseract.
#[derive(Debug, Clone)]
pub struct Ocr {
    /// The program: `tesseract` on the `PATH` unless configured.
    pub program: PathBuf,
    /// Tesseract's language list, as `-l` takes it.
    pub languages: String,
    /// Most tesseract runs at once.
    pub threads: usize,
}

impl Ocr {
    pub fn new(config: &lector_core::config::ExtractConfig) -> Self {
        Self {
            program: config.tesseract.clone(),
            languages: config.languages.clone(),
            threads: config.ocr_runs(),
        }
    }
}

/// One image to read, with its resolution when known (tesseract guesses otherwise).
pub struct OcrImage<'a> {
    pub image: &'a GrayImage,
    pub dpi: Option<u32>,
}

impl Ocr {
    /// The lines of each image, in order. The images are written under `scratch`.
    pub fn read(&self, images: &[OcrImage<'_>], scratch: &Path) -> Result<Vec<Vec<Line>>> {
        let how = Run {
            languages: self.languages.clone(),
            psm: "3",
        };
        self.read_in_runs(images, "page", self.threads, &how, scratch)
    }

    /// Reads each crop as one line of text (`--psm 7`), all in one run, with the
    /// [`Ocr::latin_languages`]: the words of each crop, their boxes relative to the crop.
    pub fn read_crops(&self, crops: &[OcrImage<'_>], scratch: &Path) -> Result<Vec<Vec<Word>>> {
        let how = Run {
            languages: self.latin_languages(),
            psm: "7",
        };
        let lines = self.read_in_runs(crops, "crop", 1, &how, scratch)?;
        Ok(lines
            .into_iter()
            .map(|lines| lines.into_iter().flat_map(|l| l.words).collect())
            .collect())
    }

    /// Writes `images` under `scratch`, each with its resolution, and reads them in up to
    /// `threads` runs at once: the lines of each image, in order.
    fn read_in_runs(
        &self,
        images: &[OcrImage<'_>],
        kind: &str,
        threads: usize,
        how: &Run<'_>,
        scratch: &Path,
    ) -> Result<Vec<Vec<Line>>> {
        if images.is_empty() {
            return Ok(Vec::new());
        }
        let mut paths = Vec::with_capacity(images.len());
        for (i, image) in images.iter().enumerate() {
            let path = scratch.join(format!("{kind}-{:05}.png", i + 1));
            write_png(image, &path)?;
            paths.push(path);
        }
        let per_run = images.len().div_ceil(threads.clamp(1, images.len()));
        let outputs: Vec<Result<Vec<Vec<Line>>>> = std::thread::scope(|scope| {
            let handles: Vec<_> = paths
                .chunks(per_run)
                .enumerate()
                .map(|(run, chunk)| {
                    let list = scratch.join(format!("{kind}-run-{run}.txt"));
                    scope.spawn(move || self.run(chunk, &list, how))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|_| Err(Error::internal())))
                .collect()
        });
        let mut lines = Vec::with_capacity(images.len());
        for output in outputs {
            lines.extend(output?);
        }
        Ok(lines)
    }

    /// English alone when it is configured, else every configured language: what a crop holds
    /// (an IBAN, an amount) is Latin letters and digits, and one language loads fast.
    fn latin_languages(&self) -> String {
        if self.languages.split('+').any(|l| l == "eng") {
            "eng".into()
        } else {
            self.languages.clone()
        }
    }

    /// One tesseract run over `images`, listed in `list`.
    fn run(&self, images: &[PathBuf], list: &Path, how: &Run<'_>) -> Result<Vec<Vec<Line>>> {
        let names: Vec<String> = images.iter().map(|p| p.display().to_string()).collect();
        std::fs::write(list, names.join("\n") + "\n").map_err(|e| scratch_error(&e))?;
        let mut command = Command::new(&self.program);
        command
            .arg(list)
            .arg("stdout")
            .args(["-l", &how.languages, "--psm", how.psm]);
        command
            .arg("tsv")
            .env("OMP_THREAD_LIMIT", "1")
            .stdin(Stdio::null())
            .stderr(Stdio::piped());
        let output = command.output().map_err(|e| missing_program(&self.program, &e))?;
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            let last = stderr.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
            return Err(Error::new(
                ErrorCode::ValidationFailed,
                format!("the page images could not be read by OCR: {last}"),
            ));
        }
        let text = String::from_utf8_lossy(&output.stdout);
        Ok(parse_tsv(&text, images.len()))
    }
}

/// How one tesseract run reads its images (each image's resolution is in its file).
struct Run<'a> {
    languages: String,
    /// Tesseract's page segmentation mode: 3 for whole pages, 7 for one line.
    psm: &'a str,
}

/// Writes the image as a PNG file that records its resolution when known: tesseract takes each
/// image's from its file (with `--dpi` it would take one for a whole run, and a PDF may mix
/// scans of 300 and 150 dpi), and estimates it where the file records none.
fn write_png(image: &OcrImage<'_>, path: &Path) -> Result<()> {
    let file = std::fs::File::create(path).map_err(|e| scratch_error(&e))?;
    let mut encoder = png::Encoder::new(std::io::BufWriter::new(file), image.image.width(), image.image.height());
    encoder.set_color(png::ColorType::Grayscale);
    encoder.set_depth(png::BitDepth::Eight);
    encoder.set_compression(png::Compression::Fast);
    encoder.set_filter(png::Filter::Sub);
    encoder.set_pixel_dims(image.dpi.map(|dpi| {
        // Pixels per metre, as PNG records them.
        let per_metre = (f64::from(dpi) / 0.0254).round() as u32;
        png::PixelDimensions {
            xppu: per_metre,
            yppu: per_metre,
            unit: png::Unit::Meter,
        }
    }));
    // `finish` writes the end and flushes, so a full scratch disk is an error here.
    let written = encoder.write_header().and_then(|mut writer| {
        writer.write_image_data(image.image.as_raw())?;
        writer.finish()
    });
    written.map_err(|e| scratch_error(&std::io::Error::other(e)))
}

fn scratch_error(error: &std::io::Error) -> Error {
    tracing::error!(%error, "OCR scratch files");
    Error::internal()
}

fn missing_program(program: &Path, error: &std::io::Error) -> Error {
    tracing::warn!(%error, program = %program.display(), "tesseract could not be started");
    Error::unavailable(not_installed(program))
}

fn not_installed(program: &Path) -> String {
    format!(
        "OCR is not installed on this server ({} could not be started): install Debian's \
         tesseract-ocr, tesseract-ocr-deu and tesseract-ocr-ara, or set extract.tesseract",
        program.display()
    )
}

impl Ocr {
    /// What keeps this node from reading scans, if anything: the program does not start, or
    /// it lacks one of the configured languages (every read would then fail). Asked at start-up,
    /// so that the operator reads it in the log before the first scan fails.
    pub fn installation_problem(&self) -> Option<String> {
        let listed = match Command::new(&self.program)
            .arg("--list-langs")
            .stdin(Stdio::null())
            .output()
        {
            // Older versions list them on standard error.
            Ok(output) => format!(
                "{}\n{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            ),
            Err(_) => return Some(not_installed(&self.program)),
        };
        let missing = missing_languages(&listed, &self.languages);
        (!missing.is_empty()).then(|| {
            let packages: Vec<String> = missing.iter().map(|l| format!("tesseract-ocr-{l}")).collect();
            format!(
                "OCR lacks the language data {} named in extract.languages ({}): install Debian's {}, \
                 or leave them out of extract.languages",
                missing.join(", "),
                self.languages,
                packages.join(", ")
            )
        })
    }
}

/// The languages of `wanted` (joined by `+`) that `tesseract --list-langs` did not list.
fn missing_languages<'a>(listed: &str, wanted: &'a str) -> Vec<&'a str> {
    let installed: std::collections::HashSet<&str> = listed.lines().map(str::trim).collect();
    wanted
        .split('+')
        .filter(|language| !installed.contains(language))
        .collect()
}

/// The lines of `pages` pages from tesseract's TSV output (page numbers count from 1).
pub fn parse_tsv(tsv: &str, pages: usize) -> Vec<Vec<Line>> {
    let mut out: Vec<Vec<Line>> = vec![Vec::new(); pages];
    let mut sizes = vec![(1.0f32, 1.0f32); pages];
    let mut counts = vec![0usize; pages];
    let mut last_key = None;
    for row in tsv.lines().skip(1) {
        let fields: Vec<&str> = row.splitn(12, '\t').collect();
        let [
            level,
            page,
            block,
            par,
            line,
            _word,
            left,
            top,
            width,
            height,
            conf,
            text,
        ] = fields[..]
        else {
            continue;
        };
        let num = |s: &str| s.trim().parse::<f32>().unwrap_or(0.0);
        let Some(index) = page
            .parse::<usize>()
            .ok()
            .and_then(|p| p.checked_sub(1))
            .filter(|&p| p < pages)
        else {
            continue;
        };
        match level {
            "1" => sizes[index] = (num(width).max(1.0), num(height).max(1.0)),
            "5" if !text.trim().is_empty() && counts[index] < MAX_WORDS_PER_PAGE => {
                counts[index] += 1;
                let (w, h) = sizes[index];
                let (l, t) = (num(left), num(top));
                let quad = Quad::rect(l / w, t / h, (l + num(width)) / w, (t + num(height)) / h).clamped();
                let word = Word {
                    text: text.trim().to_string(),
                    quad,
                    confidence: (num(conf) / 100.0).clamp(0.0, 1.0),
                };
                let key = (index, block, par, line);
                if last_key != Some(key) || out[index].is_empty() {
                    out[index].push(Line { words: Vec::new() });
                    last_key = Some(key);
                }
                out[index].last_mut().expect("a line was pushed").words.push(word);
            }
            _ => {}
        }
    }
    out.into_iter().map(in_reading_order).collect()
}

/// A page's lines in reading order: row by row from the top, left to right within a row, as a
/// PDF's text layer is read (`layout.rs`). Tesseract answers block by block, so a label in one
/// block and its value in the next, on one row, came many lines apart.
fn in_reading_order(lines: Vec<Line>) -> Vec<Line> {
    let bounds = |line: &Line| {
        line.words.iter().map(|w| w.quad.bounds()).fold(
            (f32::MAX, f32::MAX, f32::MIN, f32::MIN),
            |(l, t, r, b), (l2, t2, r2, b2)| (l.min(l2), t.min(t2), r.max(r2), b.max(b2)),
        )
    };
    let mut placed: Vec<((f32, f32, f32, f32), Line)> = lines
        .into_iter()
        .filter(|line| !line.words.is_empty())
        .map(|line| (bounds(&line), line))
        .collect();
    placed.sort_by(|(a, _), (b, _)| (a.1 + a.3).total_cmp(&(b.1 + b.3)));
    // A line whose middle lies within the first line of a row (top to bottom) is on that row.
    let mut rows: Vec<Row> = Vec::new();
    for ((left, top, _, bottom), line) in placed {
        let middle = (top + bottom) / 2.0;
        match rows.last_mut() {
            Some(row) if middle >= row.top && middle <= row.bottom => row.lines.push((left, line)),
            _ => rows.push(Row {
                top,
                bottom,
                lines: vec![(left, line)],
            }),
        }
    }
    rows.into_iter()
        .flat_map(|mut row| {
            row.lines.sort_by(|(a, _), (b, _)| a.total_cmp(b));
            row.lines.into_iter().map(|(_, line)| line)
        })
        .collect()
}

/// Lines on one row of a page: the first one's top and bottom, and each line with its left.
struct Row {
    top: f32,
    bottom: f32,
    lines: Vec<(f32, Line)>,
}

#[cfg(test)]
mod tests {
    use super::*;

    const TSV: &str = "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext
1\t1\t0\t0\t0\t0\t0\t0\t1000\t2000\t-1\t
2\t1\t1\t0\t0\t0\t100\t100\t500\t40\t-1\t
5\t1\t1\t1\t1\t1\t100\t100\t200\t40\t96.5\tRechnung
5\t1\t1\t1\t1\t2\t320\t100\t100\t40\t91\tNr.
5\t1\t1\t1\t2\t1\t100\t200\t300\t40\t88\t2024-0017
5\t1\t2\t1\t1\t1\t100\t300\t300\t40\t95\t \t
1\t2\t0\t0\t0\t0\t0\t0\t500\t500\t-1\t
5\t2\t1\t1\t1\t1\t50\t50\t100\t50\t70\tTotal
";

    #[test]
    fn words_lines_and_pages_from_tsv() {
        let pages = parse_tsv(TSV, 2);
        assert_eq!(pages.len(), 2);
        let first: Vec<String> = pages[0].iter().map(Line::text).collect();
        assert_eq!(first, ["Rechnung Nr.", "2024-0017"]);
        let word = &pages[0][0].words[0];
        assert_eq!(word.quad.bounds(), (0.1, 0.05, 0.3, 0.07));
        assert!((word.confidence - 0.965).abs() < 1e-6);
        assert_eq!(pages[1][0].text(), "Total");
        assert_eq!(pages[1][0].words[0].quad.bounds(), (0.1, 0.1, 0.3, 0.2));
    }

    #[test]
    fn lines_are_read_row_by_row_across_blocks() {
        // Two blocks side by side, as tesseract answers them: the left column first.
        let tsv = "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext
1\t1\t0\t0\t0\t0\t0\t0\t1000\t1000\t-1\t
5\t1\t1\t1\t1\t1\t50\t100\t200\t40\t90\tInvoice:
5\t1\t1\t1\t2\t1\t50\t200\t200\t40\t90\tTotal:
5\t1\t2\t1\t1\t1\t600\t104\t200\t40\t90\tRE-17
5\t1\t2\t1\t2\t1\t600\t198\t200\t40\t90\t12.50
";
        let lines: Vec<String> = parse_tsv(tsv, 1)[0].iter().map(Line::text).collect();
        assert_eq!(lines, ["Invoice:", "RE-17", "Total:", "12.50"]);
    }

    /// A stand-in for tesseract that records, for each image it is given, the `--dpi` of its run
    /// (`none` without one) and the file in `runs.log`, and reads nothing.
    fn recording_tesseract(dir: &Path) -> Ocr {
        use std::os::unix::fs::PermissionsExt;
        let program = dir.join("tesseract");
        let script = "#!/bin/sh\nlist=\"$1\"; dpi=none\nwhile [ $# -gt 0 ]; do [ \"$1\" = --dpi ] && dpi=\"$2\"; shift; done\n\
                      for image in $(cat \"$list\"); do echo \"$dpi $(basename $image)\"; done >> \"$(dirname \"$list\")/runs.log\"\n\
                      printf 'level\\tpage_num\\n'\n";
        std::fs::write(&program, script).unwrap();
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
        Ocr {
            program,
            languages: "eng".into(),
            threads: 2,
        }
    }

    /// The resolution a written image's file records, in dots per inch.
    fn recorded_dpi(path: &Path) -> Option<u32> {
        let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
        let reader = decoder.read_info().unwrap();
        let dims = reader.info().pixel_dims?;
        assert_eq!(dims.unit, png::Unit::Meter);
        Some((f64::from(dims.yppu) * 0.0254).round() as u32)
    }

    /// Tesseract's `--dpi` is one for a whole run: each image's resolution goes in its file
    /// instead, so one run reads pages scanned at several.
    #[test]
    fn each_page_is_read_at_its_own_resolution() {
        let scratch = tempfile::tempdir().unwrap();
        let ocr = recording_tesseract(scratch.path());
        let image = GrayImage::new(4, 4);
        let dpis = [Some(300), Some(150), Some(300), None];
        let images: Vec<OcrImage<'_>> = dpis.iter().map(|&dpi| OcrImage { image: &image, dpi }).collect();
        assert_eq!(ocr.read(&images, scratch.path()).unwrap().len(), 4);
        let crops: Vec<OcrImage<'_>> = [Some(600), Some(300)]
            .iter()
            .map(|&dpi| OcrImage { image: &image, dpi })
            .collect();
        assert_eq!(ocr.read_crops(&crops, scratch.path()).unwrap().len(), 2);
        let log = std::fs::read_to_string(scratch.path().join("runs.log")).unwrap();
        let mut read: Vec<&str> = log.lines().collect();
        read.sort_unstable();
        let files = [
            "crop-00001",
            "crop-00002",
            "page-00001",
            "page-00002",
            "page-00003",
            "page-00004",
        ];
        let told: Vec<String> = files.iter().map(|f| format!("none {f}.png")).collect();
        assert_eq!(read, told, "no run is told one resolution for all its images");
        let recorded: Vec<Option<u32>> = files
            .iter()
            .map(|f| recorded_dpi(&scratch.path().join(format!("{f}.png"))))
            .collect();
        assert_eq!(recorded, [Some(600), Some(300), Some(300), Some(150), Some(300), None]);
    }

    #[test]
    fn rubbish_rows_are_skipped() {
        let pages = parse_tsv("header\nnot\ta\trow\n5\t9\t1\t1\t1\t1\t0\t0\t1\t1\t90\tfar\n", 1);
        assert!(pages[0].is_empty());
    }

    #[test]
    fn missing_languages_are_named_and_a_missing_program_says_so() {
        let listed = "List of available languages in \"/usr/share/tesseract-ocr/5/tessdata/\" (3):\neng\nosd\ndeu\n";
        assert_eq!(missing_languages(listed, "eng+deu+ara"), ["ara"]);
        assert!(missing_languages(listed, "eng+deu").is_empty());
        let absent = Ocr {
            program: PathBuf::from("/nonexistent/tesseract"),
            languages: "eng".into(),
            threads: 1,
        };
        let said = absent
            .installation_problem()
            .expect("a program that is not there is a problem");
        assert!(said.contains("/nonexistent/tesseract could not be started"), "{said}");
    }
}
