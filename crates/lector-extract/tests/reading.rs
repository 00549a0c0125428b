//! Reading documents made here: text PDFs from their text layer, scanned PDFs and every image
//! format through tesseract, in this process (the sandbox runs this same code in a child; its
//! own tests boot the server). Needs the `tesseract` program: `scripts/install-ocr`.

use lector_extract::samples::{self, PageBoxes, TextRun};
use lector_extract::{DocumentFormat, ExtractConfig, Page, TextSource, read_document};

fn invoice() -> Vec<u8> {
    samples::text_pdf(&[
        vec![
            TextRun::new(50.0, 80.0, 20.0, "Muster GmbH").bold(),
            TextRun::new(50.0, 140.0, 12.0, "Rechnung Nr. 2024-0017"),
            TextRun::new(50.0, 160.0, 12.0, "Datum: 14.03.2024"),
            TextRun::new(50.0, 300.0, 12.0, "Gesamtbetrag:"),
            TextRun::new(400.0, 300.0, 12.0, "1.234,50 €"),
            TextRun::new(50.0, 320.0, 12.0, "IBAN DE89 3704 0044 0532 0130 00"),
        ],
        vec![TextRun::new(50.0, 100.0, 14.0, "Seite zwei: Grüße aus Köln")],
    ])
}

fn config() -> ExtractConfig {
    ExtractConfig {
        ocr_threads: 2,
        ..ExtractConfig::default()
    }
}

fn require_tesseract() {
    let found = std::process::Command::new("tesseract")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(found, "these tests need the tesseract program: run scripts/install-ocr");
}

fn word_bounds(page: &Page, text: &str) -> (f32, f32, f32, f32) {
    let word = page.lines.iter().flat_map(|l| &l.words).find(|w| w.text == text);
    word.unwrap_or_else(|| panic!("no word {text:?} in {:?}", page.text()))
        .quad
        .bounds()
}

fn close(a: (f32, f32, f32, f32), b: (f32, f32, f32, f32), tolerance: f32) -> bool {
    (a.0 - b.0).abs() < tolerance
        && (a.1 - b.1).abs() < tolerance
        && (a.2 - b.2).abs() < tolerance
        && (a.3 - b.3).abs() < tolerance
}

#[test]
fn a_text_pdf_gives_its_words_lines_and_boxes_without_ocr() {
    let document = read_document(
        invoice(),
        &ExtractConfig {
            tesseract: "/nonexistent/tesseract".into(),
            ..config()
        },
    )
    .expect("a text PDF reads without OCR");
    assert_eq!(document.format, DocumentFormat::Pdf);
    assert_eq!(document.pages.len(), 2);
    let first = &document.pages[0];
    assert_eq!(first.source, TextSource::TextLayer);
    assert_eq!((first.width, first.height), samples::A4);
    let lines: Vec<String> = first.lines.iter().map(|l| l.text()).collect();
    assert_eq!(
        lines,
        [
            "Muster GmbH",
            "Rechnung Nr. 2024-0017",
            "Datum: 14.03.2024",
            "Gesamtbetrag:",
            "1.234,50 €",
            "IBAN DE89 3704 0044 0532 0130 00"
        ]
    );
    assert_eq!(document.pages[1].text(), "Seite zwei: Grüße aus Köln");
    // "Rechnung" starts at x = 50 pt on the 140 pt baseline of a 12 pt font.
    let (left, top, right, bottom) = word_bounds(first, "Rechnung");
    assert!((left - 50.0 / 595.0).abs() < 0.002, "left {left}");
    assert!(top < 140.0 / 842.0 && top > 128.0 / 842.0, "top {top}");
    assert!(bottom > 140.0 / 842.0 && bottom < 144.0 / 842.0, "bottom {bottom}");
    assert!(
        right > left + 40.0 / 595.0 && right < left + 60.0 / 595.0,
        "right {right}"
    );
    assert!(first.lines.iter().flat_map(|l| &l.words).all(|w| w.confidence == 1.0));
}

/// The text of a page read as a viewer shows it: within its crop box (defaulting to the media
/// box), with boxes relative to that box, and drawn at that box's size.
#[test]
fn only_the_visible_box_of_a_page_is_read() {
    let no_ocr = ExtractConfig {
        tesseract: "/nonexistent/tesseract".into(),
        ..config()
    };
    // User space: baselines at 702 (shown) and 140 (under the crop box's bottom, 400).
    let runs = vec![
        TextRun::new(50.0, 140.0, 12.0, "Rechnung Nr. 2024-0017"),
        TextRun::new(50.0, 702.0, 12.0, "IBAN DE89 3704 0044 0532 0130 00"),
    ];
    let cropped = samples::text_pdf_in(
        std::slice::from_ref(&runs),
        PageBoxes {
            crop: Some([0.0, 400.0, 595.0, 842.0]),
            ..PageBoxes::A4
        },
    );
    let document = read_document(cropped.clone(), &no_ocr).expect("a text PDF");
    let page = &document.pages[0];
    assert_eq!((page.width, page.height), (595.0, 442.0));
    assert_eq!(page.text(), "Rechnung Nr. 2024-0017");
    let (left, top, _, bottom) = word_bounds(page, "Rechnung");
    assert!((left - 50.0 / 595.0).abs() < 0.002, "left {left}");
    assert!(top > 128.0 / 442.0 && bottom < 144.0 / 442.0, "{top} {bottom}");
    assert_eq!(samples::render(&cropped, 72.0)[0].dimensions(), (595, 442));

    // A media box off the origin: what lies beyond it is not read, the rest is placed in it.
    let runs = vec![
        TextRun::new(50.0, 100.0, 12.0, "oben 2024"),
        TextRun::new(450.0, 500.0, 12.0, "rechts 2024"),
        TextRun::new(50.0, 500.0, 12.0, "Sichtbar 2024"),
    ];
    let shifted = samples::text_pdf_in(
        &[runs],
        PageBoxes {
            media: [-200.0, -300.0, 395.0, 542.0],
            crop: None,
        },
    );
    let document = read_document(shifted.clone(), &no_ocr).expect("a text PDF");
    let page = &document.pages[0];
    assert_eq!((page.width, page.height), (595.0, 842.0));
    assert_eq!(page.text(), "Sichtbar 2024");
    // x 50 is 250 from the box's left; baseline 342 is 200 under its top (542).
    let (left, top, _, bottom) = word_bounds(page, "Sichtbar");
    assert!((left - 250.0 / 595.0).abs() < 0.002, "left {left}");
    assert!(top > 188.0 / 842.0 && bottom < 204.0 / 842.0, "{top} {bottom}");
    assert_eq!(samples::render(&shifted, 72.0)[0].dimensions(), (595, 842));
}

#[test]
fn a_scanned_pdf_is_read_by_ocr_with_boxes_where_the_text_was() {
    require_tesseract();
    let text = read_document(invoice(), &config()).unwrap();
    let scan = samples::scanned_pdf(&samples::render(&invoice(), 150.0), 150.0);
    let document = read_document(scan, &config()).expect("a scanned PDF reads");
    assert_eq!(document.pages.len(), 2);
    let page = &document.pages[0];
    assert_eq!(page.source, TextSource::Ocr);
    let read = page.text();
    for expected in [
        "Muster GmbH",
        "Rechnung Nr. 2024-0017",
        "Datum: 14.03.2024",
        "DE89 3704 0044 0532 0130 00",
    ] {
        assert!(read.contains(expected), "{expected:?} not in {read:?}");
    }
    assert!(
        document.pages[1].text().contains("Grüße aus Köln"),
        "{:?}",
        document.pages[1].text()
    );
    for word in ["Rechnung", "2024-0017", "Gesamtbetrag:"] {
        let (ocr, layer) = (word_bounds(page, word), word_bounds(&text.pages[0], word));
        assert!(close(ocr, layer, 0.015), "{word}: OCR {ocr:?}, text layer {layer:?}");
    }
    let confidences: Vec<f32> = page.lines.iter().flat_map(|l| &l.words).map(|w| w.confidence).collect();
    assert!(confidences.iter().all(|c| (0.0..=1.0).contains(c)));
    assert!(
        confidences.iter().sum::<f32>() / confidences.len() as f32 > 0.8,
        "{confidences:?}"
    );
}

#[test]
fn every_image_format_is_read_and_a_tiff_gives_every_page() {
    require_tesseract();
    let pages = samples::render(&invoice(), 150.0);
    for format in [DocumentFormat::Png, DocumentFormat::Jpeg, DocumentFormat::Webp] {
        let document = read_document(samples::encode(&pages[0], format), &config()).unwrap();
        assert_eq!(document.format, format);
        assert_eq!(document.pages.len(), 1);
        assert_eq!(
            (document.pages[0].width, document.pages[0].height),
            (pages[0].width() as f32, pages[0].height() as f32)
        );
        let read = document.pages[0].text();
        assert!(read.contains("Rechnung Nr. 2024-0017"), "{format:?}: {read:?}");
    }
    let document = read_document(samples::tiff_pages(&pages), &config()).unwrap();
    assert_eq!(document.format, DocumentFormat::Tiff);
    let texts: Vec<String> = document.pages.iter().map(Page::text).collect();
    assert_eq!(texts.len(), 2);
    assert!(
        texts[0].contains("Muster GmbH") && texts[1].contains("Seite zwei"),
        "{texts:?}"
    );
    assert_eq!(document.pages.iter().map(|p| p.number).collect::<Vec<_>>(), [1, 2]);
}

#[test]
fn a_turned_noisy_scan_still_reads() {
    require_tesseract();
    let page = samples::render(&invoice(), 150.0).remove(0);
    let scan = samples::degrade(&page, 7, 1.5, 40);
    let document = read_document(samples::encode(&scan, DocumentFormat::Png), &config()).unwrap();
    let read = document.pages[0].text();
    assert!(read.contains("2024-0017") && read.contains("Muster GmbH"), "{read:?}");
}

#[test]
fn limits_and_refusals_name_their_reason() {
    let small = ExtractConfig {
        max_pages: 1,
        ..config()
    };
    let error = read_document(invoice(), &small).unwrap_err();
    assert_eq!(error.status(), 413);
    assert!(
        error.detail.contains("2 pages") && error.detail.contains("at most 1"),
        "{}",
        error.detail
    );

    let tiny = ExtractConfig {
        max_file_bytes: 100,
        ..config()
    };
    assert_eq!(read_document(invoice(), &tiny).unwrap_err().status(), 413);

    let error = read_document(b"PK\x03\x04 a zip, not a document".to_vec(), &config()).unwrap_err();
    assert_eq!(error.status(), 415);

    let mut truncated = invoice();
    truncated.truncate(truncated.len() / 3);
    let error = read_document(truncated, &config()).unwrap_err();
    assert_eq!(error.status(), 422, "{}", error.detail);

    use samples::BombEncoding::*;
    for encoding in [Zlib, RawDeflate, HexOfZlib, LzwLateChange, RunLength] {
        let error = read_document(samples::bomb_pdf_as(100 << 20, encoding), &config()).unwrap_err();
        assert_eq!(error.status(), 422, "{encoding:?}");
        assert!(
            error.detail.contains("decompression bomb"),
            "{encoding:?}: {}",
            error.detail
        );
    }

    let error = read_document(samples::png_claiming(60_000, 60_000), &config()).unwrap_err();
    assert_eq!(error.status(), 413, "{}", error.detail);

    let page = samples::render(&invoice(), 100.0).remove(0);
    let png = samples::encode(&page, DocumentFormat::Png);
    let no_ocr = ExtractConfig {
        tesseract: "/nonexistent/tesseract".into(),
        ..config()
    };
    let error = read_document(png, &no_ocr).unwrap_err();
    assert_eq!(error.status(), 503);
    assert!(error.detail.contains("tesseract-ocr"), "{}", error.detail);
}

#[test]
fn a_text_layer_keeps_at_most_the_ocr_word_cap() {
    use lector_extract::ocr::MAX_WORDS_PER_PAGE;
    // 250 lines of 100 words: 25,000 words on one page, more than OCR would keep of it; the
    // font small enough for the longest line to end on the page (text beyond it is not read).
    let runs: Vec<TextRun> = (0..250)
        .map(|line| {
            let words: Vec<String> = (0..100).map(|w| format!("w{}", line * 100 + w)).collect();
            TextRun::new(20.0, 20.0 + line as f32 * 3.2, 1.4, words.join(" "))
        })
        .collect();
    let read = read_document(samples::text_pdf(&[runs]), &config()).unwrap();
    let page = &read.pages[0];
    assert_eq!(page.source, TextSource::TextLayer);
    assert_eq!(page.word_count(), MAX_WORDS_PER_PAGE);
    let first = &page.lines[0].words;
    assert_eq!((first[0].text.as_str(), first[99].text.as_str()), ("w0", "w99"));
    let last = page.lines.last().unwrap().words.last().unwrap();
    assert_eq!(last.text, format!("w{}", MAX_WORDS_PER_PAGE - 1));
}

#[test]
fn built_in_fields_are_found_on_the_text_pdf_and_on_its_scan() {
    use lector_extract::builtin::{Builtin, find};
    require_tesseract();
    let scan = samples::encode(
        &samples::degrade(&samples::render(&invoice(), 150.0).remove(0), 3, 0.8, 25),
        DocumentFormat::Png,
    );
    for document in [
        read_document(invoice(), &config()).unwrap(),
        read_document(scan, &config()).unwrap(),
    ] {
        let value = |field| find(field, &document).map(|f| f.converted.value);
        let source = document.pages[0].source;
        assert_eq!(
            value(Builtin::InvoiceNumber).as_deref(),
            Some("2024-0017"),
            "{source:?}"
        );
        assert_eq!(value(Builtin::Date).as_deref(), Some("2024-03-14"), "{source:?}");
        assert_eq!(value(Builtin::Total).as_deref(), Some("1234.50"), "{source:?}");
        assert_eq!(
            value(Builtin::Iban).as_deref(),
            Some("DE89 3704 0044 0532 0130 00"),
            "{source:?}"
        );
        assert_eq!(value(Builtin::Vendor).as_deref(), Some("Muster GmbH"), "{source:?}");
    }
}

#[test]
fn crops_are_read_as_single_lines_in_one_run() {
    use lector_extract::ocr::{Ocr, OcrImage};
    require_tesseract();
    let page = samples::render(
        &samples::text_pdf(&[vec![
            TextRun::new(50.0, 100.0, 10.0, "DE02 1082 7193 6217 2051 58"),
            TextRun::new(50.0, 200.0, 11.0, "5,558.36 EUR").bold(),
        ]]),
        150.0,
    )
    .remove(0);
    // Each line's strip, as `repair` cuts them: 150 dpi is 2.08 pixels a point.
    let strip = |top: u32| image::imageops::crop_imm(&page, 90, top, 500, 40).to_image();
    let crops = [strip(185), strip(395)];
    let scratch = tempfile::tempdir().unwrap();
    let crops = crops.map(|image| (image, None));
    let crops: Vec<OcrImage<'_>> = crops.iter().map(|(image, dpi)| OcrImage { image, dpi: *dpi }).collect();
    let read = Ocr::new(&config()).read_crops(&crops, scratch.path()).unwrap();
    let texts: Vec<String> = read
        .iter()
        .map(|words| words.iter().map(|w| w.text.as_str()).collect::<Vec<_>>().join(" "))
        .collect();
    assert_eq!(texts, ["DE02 1082 7193 6217 2051 58", "5,558.36 EUR"]);
    let (left, top, right, bottom) = read[0][0].quad.bounds();
    assert!(
        left < right && top < bottom && right <= 1.0,
        "boxes relative to the crop"
    );
}

/// A scanned form of labels on the left and values far to the right reads row by row, each
/// label beside its value, as its text layer does: tesseract finds the two columns as blocks
/// and answers one after the other.
#[test]
fn a_scanned_form_reads_row_by_row() {
    require_tesseract();
    let rows = [
        ("Invoice number:", "RE-2024-0017"),
        ("Invoice date:", "14.03.2024"),
        ("Customer:", "Muster GmbH"),
        ("Total amount:", "1.234,50 EUR"),
        ("Due date:", "28.03.2024"),
    ];
    let runs: Vec<TextRun> = rows
        .iter()
        .enumerate()
        .flat_map(|(n, (label, value))| {
            let y = 120.0 + 40.0 * n as f32;
            [
                TextRun::new(50.0, y, 14.0, *label),
                TextRun::new(380.0, y, 14.0, *value),
            ]
        })
        .collect();
    let form = samples::text_pdf(&[runs]);
    let scan = samples::scanned_pdf(&samples::render(&form, 200.0), 200.0);
    let document = read_document(scan, &config()).expect("a scanned form reads");
    let lines: Vec<String> = document.pages[0].lines.iter().map(|l| l.text()).collect();
    let expected: Vec<&str> = rows.iter().flat_map(|(label, value)| [*label, *value]).collect();
    assert_eq!(lines, expected);
}
