//! Optical character recognition through the `tesseract` program.
//!
//! The program, not a binding: the build stays free of C libraries and of crates that download
//! at build time, and a crash in it is a failed read, never a dead server. Pages are written as
//! PNG files and read several per run (tesseract takes a list file), so its start-up and
//! language loading are paid once per run; runs go in parallel up to the configured threads,
//! each held to one OpenMP thread. The TSV output gives every word's box and confidence, and
//! its block, paragraph and line numbers give the lines in tesseract's reading order. Crops of
//! words left in doubt (`repair`) are read again as single lines, all of a document's crops of
//! one resolution in one run. A run's images share one resolution, since `--dpi` is one per run.

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
        let how = |dpi| Run::pages(&self.languages, dpi);
        self.read_in_runs(images, "page", self.threads, &how, scratch)
    }

    /// Reads each crop as one line of text (`--psm 7`) with the [`Ocr::latin_languages`], one
    /// run for the crops of each resolution: the words of each crop, their boxes relative to
    /// the crop.
    pub fn read_crops(&self, crops: &[OcrImage<'_>], scratch: &Path) -> Result<Vec<Vec<Word>>> {
        let how = |dpi| Run {
            languages: self.latin_languages(),
            psm: "7",
            dpi,
        };
        let lines = self.read_in_runs(crops, "crop", 1, &how, scratch)?;
        Ok(lines
            .into_iter()
            .map(|lines| lines.into_iter().flat_map(|l| l.words).collect())
            .collect())
    }

    /// Writes `images` under `scratch` and reads them in the runs [`plan_runs`] makes (each run
    /// told its images' resolution), at most `threads` runs at once: the lines of each image,
    /// in order.
    fn read_in_runs(
        &self,
        images: &[OcrImage<'_>],
        kind: &str,
        threads: usize,
        how: &(dyn Fn(Option<u32>) -> Run<'static> + Sync),
        scratch: &Path,
    ) -> Result<Vec<Vec<Line>>> {
        let mut paths = Vec::with_capacity(images.len());
        for (i, image) in images.iter().enumerate() {
            let path = scratch.join(format!("{kind}-{:05}.png", i + 1));
            write_png(image.image, &path)?;
            paths.push(path);
        }
        let dpis: Vec<Option<u32>> = images.iter().map(|i| i.dpi).collect();
        let runs = plan_runs(&dpis, threads);
        let next = std::sync::atomic::AtomicUsize::new(0);
        let take_runs = || {
            let mut read = Vec::new();
            loop {
                let r = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(run) = runs.get(r) else { return Ok(read) };
                let listed: Vec<PathBuf> = run.images.iter().map(|&i| paths[i].clone()).collect();
                let list = scratch.join(format!("{kind}-run-{r}.txt"));
                read.push((r, self.run(&listed, &list, &how(run.dpi))?));
            }
        };
        let outputs: Vec<Result<Vec<RunRead>>> = std::thread::scope(|scope| {
            let workers: Vec<_> = (0..threads.clamp(1, runs.len().max(1)))
                .map(|_| scope.spawn(take_runs))
                .collect();
            workers
                .into_iter()
                .map(|w| w.join().unwrap_or_else(|_| Err(Error::internal())))
                .collect()
        });
        let mut lines = vec![Vec::new(); images.len()];
        for output in outputs {
            for (r, read) in output? {
                for (&image, image_lines) in runs[r].images.iter().zip(read) {
                    lines[image] = image_lines;
                }
            }
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
        if let Some(dpi) = how.dpi {
            command.args(["--dpi", &dpi.to_string()]);
        }
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

/// How one tesseract run reads its images.
struct Run<'a> {
    languages: String,
    /// Tesseract's page segmentation mode: 3 for whole pages, 7 for one line.
    psm: &'a str,
    dpi: Option<u32>,
}

impl Run<'_> {
    fn pages(languages: &str, dpi: Option<u32>) -> Self {
        Self {
            languages: languages.to_owned(),
            psm: "3",
            dpi,
        }
    }
}

/// A planned run's number and the lines of each of its images.
type RunRead = (usize, Vec<Vec<Line>>);

/// One tesseract run's images (indexes into the images read), all of one resolution.
#[derive(Debug, PartialEq, Eq)]
struct PlannedRun {
    dpi: Option<u32>,
    images: Vec<usize>,
}

/// Splits images of the given resolutions into runs: `--dpi` is one per run, so images of one
/// resolution go together (a PDF may mix scans of 300 and 150 dpi), and each resolution's images
/// are cut into pieces of a `threads`-th of them all, so that the runs share the threads.
fn plan_runs(dpis: &[Option<u32>], threads: usize) -> Vec<PlannedRun> {
    let per_run = dpis.len().div_ceil(threads.max(1)).max(1);
    let mut by_dpi: Vec<PlannedRun> = Vec::new();
    for (i, &dpi) in dpis.iter().enumerate() {
        match by_dpi.iter_mut().find(|run| run.dpi == dpi) {
            Some(run) => run.images.push(i),
            None => by_dpi.push(PlannedRun { dpi, images: vec![i] }),
        }
    }
    by_dpi
        .into_iter()
        .flat_map(|group| {
            group
                .images
                .chunks(per_run)
                .map(|images| PlannedRun {
                    dpi: group.dpi,
                    images: images.to_vec(),
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

fn write_png(image: &GrayImage, path: &Path) -> Result<()> {
    use image::ImageEncoder;
    use image::codecs::png::{CompressionType, FilterType, PngEncoder};
    let file = std::fs::File::create(path).map_err(|e| scratch_error(&e))?;
    let encoder = PngEncoder::new_with_quality(std::io::BufWriter::new(file), CompressionType::Fast, FilterType::Sub);
    encoder
        .write_image(
            image.as_raw(),
            image.width(),
            image.height(),
            image::ExtendedColorType::L8,
        )
        .map_err(|e| scratch_error(&std::io::Error::other(e)))
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

    #[test]
    fn runs_keep_to_one_resolution_and_share_the_threads() {
        let run = |dpi, images: &[usize]| PlannedRun {
            dpi,
            images: images.to_vec(),
        };
        let dpis = [Some(300), Some(300), Some(150), Some(300), None, Some(150)];
        assert_eq!(
            plan_runs(&dpis, 2),
            [run(Some(300), &[0, 1, 3]), run(Some(150), &[2, 5]), run(None, &[4]),]
        );
        assert_eq!(
            plan_runs(&[Some(300); 5], 2),
            [run(Some(300), &[0, 1, 2]), run(Some(300), &[3, 4])]
        );
        assert_eq!(plan_runs(&[None; 3], 8).len(), 3);
        assert!(plan_runs(&[], 4).is_empty());
    }

    /// A stand-in for tesseract that records each run's `--dpi` and listed images in `runs.log`
    /// and reads nothing.
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
        assert_eq!(
            read,
            [
                "150 page-00002.png",
                "300 crop-00002.png",
                "300 page-00001.png",
                "300 page-00003.png",
                "600 crop-00001.png",
                "none page-00004.png",
            ]
        );
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
