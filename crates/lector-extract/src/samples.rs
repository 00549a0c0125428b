//! Documents made to order, for tests and benchmarks: text PDFs written with pdf-writer,
//! their pages rendered to images (PNG, JPEG, WebP, one- or many-page TIFF) and scanned PDFs
//! that hold only those images. Everything a test reads, it makes here; no binary fixtures.
//! Only built with the `samples` feature.

use crate::DocumentFormat;
use crate::pdf::PdfDocument;
use image::{GrayImage, ImageEncoder};
use pdf_writer::{Content, Filter, Finish, Name, Pdf, Rect, Ref, Str};

/// A4 in points.
pub const A4: (f32, f32) = (595.0, 842.0);

/// Text set on a page: `x` from the left, `y` the baseline from the top, both in points.
#[derive(Debug, Clone)]
pub struct TextRun {
    pub x: f32,
    pub y: f32,
    pub size: f32,
    pub bold: bool,
    pub text: String,
}

impl TextRun {
    pub fn new(x: f32, y: f32, size: f32, text: impl Into<String>) -> Self {
        Self {
            x,
            y,
            size,
            bold: false,
            text: text.into(),
        }
    }

    pub fn bold(mut self) -> Self {
        self.bold = true;
        self
    }
}

/// A page's boxes in PDF user space (x0, y0, x1, y1; y upwards): `/MediaBox`, `/CropBox`.
#[derive(Debug, Clone, Copy)]
pub struct PageBoxes {
    pub media: [f32; 4],
    pub crop: Option<[f32; 4]>,
}

impl PageBoxes {
    pub const A4: Self = Self {
        media: [0.0, 0.0, A4.0, A4.1],
        crop: None,
    };
}

/// A PDF of A4 pages in Helvetica (WinAnsi: Latin-1 text and the euro sign).
pub fn text_pdf(pages: &[Vec<TextRun>]) -> Vec<u8> {
    text_pdf_in(pages, PageBoxes::A4)
}

/// [`text_pdf`] with other page boxes: the runs are set where they stand on A4 (baseline
/// `842 - y` in user space), so the boxes show them elsewhere or hide them.
pub fn text_pdf_in(pages: &[Vec<TextRun>], boxes: PageBoxes) -> Vec<u8> {
    let mut pdf = Pdf::new();
    let catalog = Ref::new(1);
    let tree = Ref::new(2);
    let (regular, bold) = (Ref::new(3), Ref::new(4));
    let page_ids: Vec<Ref> = (0..pages.len()).map(|i| Ref::new(10 + 2 * i as i32)).collect();
    pdf.catalog(catalog).pages(tree);
    pdf.pages(tree).kids(page_ids.iter().copied()).count(pages.len() as i32);
    for (font, name) in [(regular, &b"Helvetica"[..]), (bold, &b"Helvetica-Bold"[..])] {
        pdf.type1_font(font)
            .base_font(Name(name))
            .encoding_predefined(Name(b"WinAnsiEncoding"));
    }
    for (runs, &id) in pages.iter().zip(&page_ids) {
        let content_id = Ref::new(id.get() + 1);
        let mut page = pdf.page(id);
        let rect = |[x0, y0, x1, y1]: [f32; 4]| Rect::new(x0, y0, x1, y1);
        page.media_box(rect(boxes.media)).parent(tree).contents(content_id);
        if let Some(crop) = boxes.crop {
            page.crop_box(rect(crop));
        }
        let mut resources = page.resources();
        resources.fonts().pair(Name(b"F1"), regular).pair(Name(b"F2"), bold);
        resources.finish();
        page.finish();
        let mut content = Content::new();
        for run in runs {
            content.begin_text();
            content.set_font(Name(if run.bold { b"F2" } else { b"F1" }), run.size);
            content.next_line(run.x, A4.1 - run.y);
            content.show(Str(&win_ansi(&run.text)));
            content.end_text();
        }
        pdf.stream(content_id, &content.finish());
    }
    pdf.finish()
}

/// Text in Windows-1252, the bytes WinAnsiEncoding shows; other characters become `?`.
fn win_ansi(text: &str) -> Vec<u8> {
    text.chars()
        .map(|c| match c {
            '€' => 0x80,
            '–' => 0x96,
            '—' => 0x97,
            '‘' => 0x91,
            '’' => 0x92,
            '“' => 0x93,
            '”' => 0x94,
            c if (c as u32) < 0x80 || (0xA0..=0xFF).contains(&(c as u32)) => c as u32 as u8,
            _ => b'?',
        })
        .collect()
}

/// Every page of `pdf` rendered in grey at `dpi`.
pub fn render(pdf: &[u8], dpi: f32) -> Vec<GrayImage> {
    let config = crate::ExtractConfig::default();
    let document = PdfDocument::open(pdf.to_vec(), &config).expect("a readable PDF");
    (0..document.page_count())
        .map(|i| document.render(i, dpi, &config).expect("a rendered page"))
        .collect()
}

/// A PDF whose pages are only the given images (JPEG inside), as a scanner makes them.
pub fn scanned_pdf(images: &[GrayImage], dpi: f32) -> Vec<u8> {
    let mut pdf = Pdf::new();
    let catalog = Ref::new(1);
    let tree = Ref::new(2);
    let page_ids: Vec<Ref> = (0..images.len()).map(|i| Ref::new(10 + 3 * i as i32)).collect();
    pdf.catalog(catalog).pages(tree);
    pdf.pages(tree)
        .kids(page_ids.iter().copied())
        .count(images.len() as i32);
    for (image, &id) in images.iter().zip(&page_ids) {
        let (content_id, image_id) = (Ref::new(id.get() + 1), Ref::new(id.get() + 2));
        let (w, h) = (image.width() as f32 * 72.0 / dpi, image.height() as f32 * 72.0 / dpi);
        let mut page = pdf.page(id);
        page.media_box(Rect::new(0.0, 0.0, w, h))
            .parent(tree)
            .contents(content_id);
        page.resources().x_objects().pair(Name(b"Im1"), image_id);
        page.finish();
        let jpeg = encode(image, DocumentFormat::Jpeg);
        let mut xobject = pdf.image_xobject(image_id, &jpeg);
        xobject.filter(Filter::DctDecode);
        xobject.width(image.width() as i32).height(image.height() as i32);
        xobject.color_space().device_gray();
        xobject.bits_per_component(8);
        xobject.finish();
        let mut content = Content::new();
        content.save_state();
        content.transform([w, 0.0, 0.0, h, 0.0, 0.0]);
        content.x_object(Name(b"Im1"));
        content.restore_state();
        pdf.stream(content_id, &content.finish());
    }
    pdf.finish()
}

/// One image in a file format (TIFF: a one-page TIFF).
pub fn encode(image: &GrayImage, format: DocumentFormat) -> Vec<u8> {
    let mut out = Vec::new();
    let (w, h, raw) = (image.width(), image.height(), image.as_raw());
    let grey = image::ExtendedColorType::L8;
    match format {
        DocumentFormat::Png => image::codecs::png::PngEncoder::new(&mut out).write_image(raw, w, h, grey),
        DocumentFormat::Jpeg => {
            image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 90).write_image(raw, w, h, grey)
        }
        DocumentFormat::Webp => {
            // The WebP encoder takes colour only.
            let rgb = image::DynamicImage::ImageLuma8(image.clone()).into_rgb8();
            image::codecs::webp::WebPEncoder::new_lossless(&mut out).write_image(
                rgb.as_raw(),
                w,
                h,
                image::ExtendedColorType::Rgb8,
            )
        }
        DocumentFormat::Tiff => return tiff_pages(std::slice::from_ref(image)),
        DocumentFormat::Pdf => panic!("a PDF is written with text_pdf or scanned_pdf"),
    }
    .expect("an encoded image");
    out
}

/// A TIFF holding every image as a page of its own.
pub fn tiff_pages(images: &[GrayImage]) -> Vec<u8> {
    let mut out = std::io::Cursor::new(Vec::new());
    let mut encoder = tiff::encoder::TiffEncoder::new(&mut out).expect("a TIFF encoder");
    for image in images {
        encoder
            .write_image::<tiff::encoder::colortype::Gray8>(image.width(), image.height(), image.as_raw())
            .expect("a TIFF page");
    }
    out.into_inner()
}

/// A scan's flaws on a clean page: turned by `degrees` about its centre, with speckle noise
/// of up to `noise` levels, both from `seed`.
pub fn degrade(image: &GrayImage, seed: u64, degrees: f32, noise: u8) -> GrayImage {
    let (w, h) = (image.width() as f32, image.height() as f32);
    let (sin, cos) = degrees.to_radians().sin_cos();
    let mut state = seed | 1;
    let mut next = move || {
        // xorshift64: deterministic and enough for speckle.
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    GrayImage::from_fn(image.width(), image.height(), |x, y| {
        let (dx, dy) = (x as f32 - w / 2.0, y as f32 - h / 2.0);
        let (sx, sy) = (cos * dx + sin * dy + w / 2.0, -sin * dx + cos * dy + h / 2.0);
        let value = if sx >= 0.0 && sy >= 0.0 && sx < w && sy < h {
            image.get_pixel(sx as u32, sy as u32).0[0]
        } else {
            255
        };
        let speckle = if noise == 0 {
            0
        } else {
            (next() % (u64::from(noise) * 2 + 1)) as i16 - i16::from(noise)
        };
        image::Luma([(i16::from(value) + speckle).clamp(0, 255) as u8])
    })
}

/// A one-page PDF whose content stream inflates to `bytes` bytes of spaces: a decompression
/// bomb a reader must stop at its memory limit.
pub fn bomb_pdf(bytes: usize) -> Vec<u8> {
    bomb_pdf_as(bytes, BombEncoding::Zlib)
}

/// How a sample bomb's content stream is compressed, and so which filters undo it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BombEncoding {
    /// `/FlateDecode`, zlib.
    Zlib,
    /// `/FlateDecode` without zlib's header, which readers take as raw deflate.
    RawDeflate,
    /// `[/ASCIIHexDecode /FlateDecode]`: hexadecimal digits of zlib.
    HexOfZlib,
    /// `/LZWDecode` with `/EarlyChange 0` in its parameters.
    LzwLateChange,
    /// `/RunLengthDecode`: runs of 128 spaces, two bytes each.
    RunLength,
}

/// [`bomb_pdf`] with its content compressed as `encoding` says.
pub fn bomb_pdf_as(bytes: usize, encoding: BombEncoding) -> Vec<u8> {
    use std::io::Write;
    let spaces = vec![b' '; bytes];
    let compressed = match encoding {
        BombEncoding::Zlib | BombEncoding::HexOfZlib => {
            let mut zlib = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
            zlib.write_all(&spaces).expect("compressing in memory");
            zlib.finish().expect("compressing in memory")
        }
        BombEncoding::RawDeflate => {
            let mut deflate = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
            deflate.write_all(&spaces).expect("compressing in memory");
            deflate.finish().expect("compressing in memory")
        }
        BombEncoding::LzwLateChange => weezl::encode::Encoder::new(weezl::BitOrder::Msb, 8)
            .encode(&spaces)
            .expect("compressing in memory"),
        BombEncoding::RunLength => {
            let mut runs: Vec<u8> = [129, b' '].repeat(bytes.div_ceil(128));
            runs.push(128);
            runs
        }
    };
    let data = match encoding {
        BombEncoding::HexOfZlib => compressed
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
            .into_bytes(),
        _ => compressed,
    };
    let mut pdf = Pdf::new();
    let (catalog, tree, page, content) = (Ref::new(1), Ref::new(2), Ref::new(3), Ref::new(4));
    pdf.catalog(catalog).pages(tree);
    pdf.pages(tree).kids([page]).count(1);
    pdf.page(page)
        .media_box(Rect::new(0.0, 0.0, A4.0, A4.1))
        .parent(tree)
        .contents(content);
    let mut stream = pdf.stream(content, &data);
    match encoding {
        BombEncoding::Zlib | BombEncoding::RawDeflate => {
            stream.filter(Filter::FlateDecode);
        }
        BombEncoding::HexOfZlib => {
            stream
                .insert(Name(b"Filter"))
                .array()
                .items([Name(b"ASCIIHexDecode"), Name(b"FlateDecode")]);
        }
        BombEncoding::LzwLateChange => {
            stream.filter(Filter::LzwDecode);
            stream.insert(Name(b"DecodeParms")).dict().pair(Name(b"EarlyChange"), 0);
        }
        BombEncoding::RunLength => {
            stream.filter(Filter::RunLengthDecode);
        }
    }
    stream.finish();
    pdf.finish()
}

/// A one-page PDF whose page holds arrays nested `depth` deep, for readers that recurse.
pub fn nested_pdf(depth: usize) -> Vec<u8> {
    let nested = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    let content = "BT /F1 12 Tf 50 700 Td (Hello) Tj ET";
    format!(
        "%PDF-1.7\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n\
         2 0 obj << /Type /Pages /Kids [3 0 R] /Count 1 >> endobj\n\
         3 0 obj << /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents 4 0 R \
         /Resources << /Font << /F1 5 0 R >> >> /Annots {nested} >> endobj\n\
         4 0 obj << /Length {} >> stream\n{content}\nendstream endobj\n\
         5 0 obj << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> endobj\n\
         trailer << /Root 1 0 R >>\n%%EOF\n",
        content.len()
    )
    .into_bytes()
}

/// A small PNG whose header claims `width` × `height` pixels (its checksum made right), for
/// readers that must refuse it before decoding.
pub fn png_claiming(width: u32, height: u32) -> Vec<u8> {
    let mut png = encode(&GrayImage::new(8, 8), DocumentFormat::Png);
    png[16..20].copy_from_slice(&width.to_be_bytes());
    png[20..24].copy_from_slice(&height.to_be_bytes());
    let crc = crc32(&png[12..29]);
    png[29..33].copy_from_slice(&crc.to_be_bytes());
    png
}

fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = flate2::Crc::new();
    crc.update(bytes);
    crc.sum()
}
