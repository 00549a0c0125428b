//! PDF pages through hayro: the words of a page's text layer with their positions, and the
//! page rendered to an image when it has no text (a scan) or when the caller wants a picture.
//!
//! hayro interprets a page into a [`Device`]; ours keeps every glyph the page draws (invisible
//! text too, which is where a scanned PDF keeps its OCR layer) with the box its advance and the
//! font's ascent and descent span, in page points with y downwards. The page is its visible
//! box, as viewers show it: the crop box within the media box, which hayro's initial transform
//! and render size follow; glyphs set outside it are not read. [`crate::layout`] then makes
//! words and lines of them. Pages without text are rendered at the resolution of the largest
//! image they draw (a 150-dpi scan is read at 150 dpi, as tesseract would read the scan itself).

mod decoded;

use crate::layout::{PlacedGlyph, lines_from_glyphs, on_page};
use crate::ocr::MAX_WORDS_PER_PAGE;
use crate::page::{Page, TextSource, keep_first_words};
use crate::{ExtractConfig, too_large};
use hayro::hayro_interpret::font::{Glyph, GlyphRun};
use hayro::hayro_interpret::hayro_syntax::Pdf;
use hayro::hayro_interpret::hayro_syntax::page::Page as PdfPage;
use hayro::hayro_interpret::kurbo::{BezPath, Point as KPoint, Rect};
use hayro::hayro_interpret::util::TransformExt;
use hayro::hayro_interpret::{
    BlendMode, ClipPath, Context, Device, DrawMode, DrawProps, Image, ImageDrawProps, InterpreterCache,
    InterpreterSettings, SoftMask, interpret_page,
};
use image::GrayImage;
use lector_core::{Error, ErrorCode, Result};
use std::sync::Arc;

/// Glyphs looked at on one page at most: a hostile page could draw millions.
const MAX_GLYPHS: usize = 200_000;
/// A page with fewer visible characters than this is treated as a scan and read by OCR.
const MIN_TEXT_CHARS: usize = 3;
/// The resolution pages without images are rendered at for OCR, and the bounds of any other.
const DEFAULT_DPI: f32 = 200.0;
const MIN_DPI: f32 = 100.0;
const MAX_DPI: f32 = 300.0;

/// An opened PDF.
pub struct PdfDocument {
    pdf: Pdf,
}

/// A page read from its text layer, or the image OCR must read instead.
pub enum PdfPageText {
    Text(Page),
    NeedsOcr {
        number: u32,
        width: f32,
        height: f32,
        image: GrayImage,
        dpi: u32,
    },
}

impl PdfDocument {
    /// Opens `bytes`, refusing more pages than `limits` allow.
    pub fn open(bytes: Vec<u8>, limits: &ExtractConfig) -> Result<Self> {
        let pdf = Pdf::new(Arc::new(bytes)).map_err(|error| {
            let why = match error {
                hayro::hayro_interpret::hayro_syntax::LoadPdfError::Decryption(_) => "it is encrypted with a password",
                hayro::hayro_interpret::hayro_syntax::LoadPdfError::Invalid => "it is damaged or not a PDF",
            };
            Error::new(
                ErrorCode::ValidationFailed,
                format!("the PDF could not be opened: {why}"),
            )
        })?;
        check_inflation(&pdf)?;
        let pages = pdf.pages().len();
        if pages == 0 {
            return Err(Error::new(ErrorCode::ValidationFailed, "the PDF has no pages"));
        }
        if pages > limits.max_pages {
            return Err(too_large(format!(
                "the document has {pages} pages; at most {} are read",
                limits.max_pages
            )));
        }
        Ok(Self { pdf })
    }

    pub fn page_count(&self) -> usize {
        self.pdf.pages().len()
    }

    /// Page `index`'s size (from 0) in points, as it is drawn (its crop box, turned).
    pub fn page_size(&self, index: usize) -> (f32, f32) {
        self.pdf.pages()[index].render_dimensions()
    }

    /// Page `index` (from 0): its words, or its image when it has no text.
    pub fn page_text(&self, index: usize, limits: &ExtractConfig) -> Result<PdfPageText> {
        let page = &self.pdf.pages()[index];
        let (width, height) = page.render_dimensions();
        let mut collector = Collector::default();
        interpret(page, &mut collector);
        let number = index as u32 + 1;
        let glyphs = on_page(collector.glyphs, width, height);
        let visible: usize = glyphs.iter().map(|g| g.text.trim().chars().count()).sum();
        if visible >= MIN_TEXT_CHARS {
            let mut lines = lines_from_glyphs(glyphs, width, height);
            keep_first_words(&mut lines, MAX_WORDS_PER_PAGE);
            return Ok(PdfPageText::Text(Page {
                number,
                width,
                height,
                source: TextSource::TextLayer,
                lines,
            }));
        }
        let dpi = collector.image_dpi.map_or(DEFAULT_DPI, |d| d.clamp(MIN_DPI, MAX_DPI));
        let image = self.render(index, dpi, limits)?;
        Ok(PdfPageText::NeedsOcr {
            number,
            width,
            height,
            image,
            dpi: dpi.round() as u32,
        })
    }

    /// Page `index` rendered in grey at `dpi`, within the pixel limits.
    pub fn render(&self, index: usize, dpi: f32, limits: &ExtractConfig) -> Result<GrayImage> {
        let page = &self.pdf.pages()[index];
        let (width, height) = page.render_dimensions();
        let mut scale = dpi / 72.0;
        let pixels = f64::from(width * scale) * f64::from(height * scale);
        if pixels > limits.max_pixels as f64 {
            scale *= (limits.max_pixels as f64 / pixels).sqrt() as f32;
        }
        let side = (width.max(height) * scale).max(1.0);
        if side > f32::from(u16::MAX) {
            scale *= f32::from(u16::MAX) / side;
        }
        let settings = hayro::PixmapSettings {
            x_scale: scale,
            y_scale: scale,
            bg_color: hayro::vello_cpu::color::palette::css::WHITE,
        };
        let cache = hayro::RenderCache::new();
        let pixmap = hayro::render(
            page,
            &cache,
            &InterpreterSettings::default(),
            &hayro::RenderSettings::default(),
            &settings,
        );
        let (w, h) = (u32::from(pixmap.width()), u32::from(pixmap.height()));
        let grey: Vec<u8> = pixmap
            .data()
            .iter()
            .map(|p| {
                // Premultiplied over white: what is not covered shows the white page.
                let white = 255 - u32::from(p.a);
                let luma = (299 * u32::from(p.r) + 587 * u32::from(p.g) + 114 * u32::from(p.b)) / 1000;
                (luma + white).min(255) as u8
            })
            .collect();
        GrayImage::from_raw(w, h, grey).ok_or_else(Error::internal)
    }
}

/// A page's content (its drawing instructions) inflates to at most this; a bomb hides there.
const MAX_PAGE_CONTENT: u64 = 32 << 20;
/// Any other compressed stream may inflate this far whatever its ratio…
const BOMB_FLOOR: u64 = 64 << 20;
/// …and beyond it to at most this many times its compressed size.
const BOMB_RATIO: u64 = 50;
/// All the compressed streams of a file together inflate to at most this.
const MAX_INFLATED: u64 = 1 << 30;

/// Refuses a decompression bomb before hayro decodes it whole. Every page's content is
/// decoded into nothing, counting, up to its limit; so is every other stream whose filters
/// can expand it (Flate, LZW, run-length, anywhere in its chain: `decoded`), up to its budget. A bomb is found after tens of megabytes, where reading it would fill the
/// sandbox's memory over seconds.
fn check_inflation(pdf: &Pdf) -> Result<()> {
    use hayro::hayro_interpret::hayro_syntax::object::dict::keys::CONTENTS;
    use hayro::hayro_interpret::hayro_syntax::object::{Array, Object, Stream};
    let bomb = |what: String| Error::new(ErrorCode::ValidationFailed, format!("{what}: a decompression bomb"));
    let expands = |stream: &Stream<'_>| decoded::expands(&stream.filters());
    for (index, page) in pdf.pages().iter().enumerate() {
        let mut contents: Vec<Stream<'_>> = page.raw().get::<Stream<'_>>(CONTENTS).into_iter().collect();
        if let Some(array) = page.raw().get::<Array<'_>>(CONTENTS) {
            contents.extend(array.iter::<Stream<'_>>());
        }
        let mut size = 0u64;
        for stream in contents.iter().filter(|s| expands(s)) {
            size += decoded::decoded_size(&stream.raw_data(), &stream.filters(), MAX_PAGE_CONTENT + 1 - size);
            if size > MAX_PAGE_CONTENT {
                return Err(bomb(format!(
                    "the content of page {} inflates past {} MiB",
                    index + 1,
                    MAX_PAGE_CONTENT >> 20
                )));
            }
        }
    }
    let mut total = 0u64;
    for object in pdf.objects() {
        let Object::Stream(stream) = object else {
            continue;
        };
        if !expands(&stream) {
            continue;
        }
        let raw = stream.raw_data();
        let budget = BOMB_FLOOR.max(raw.len() as u64 * BOMB_RATIO).min(MAX_INFLATED - total);
        let inflated = decoded::decoded_size(&raw, &stream.filters(), budget + 1);
        if inflated > budget {
            return Err(bomb(format!(
                "a compressed stream inflates past {} MiB and {BOMB_RATIO} times its size, or past {} MiB in all",
                BOMB_FLOOR >> 20,
                MAX_INFLATED >> 20
            )));
        }
        total += inflated;
    }
    Ok(())
}

fn interpret<'a>(page: &'a PdfPage<'a>, device: &mut Collector) {
    let (width, height) = page.render_dimensions();
    let cache = InterpreterCache::new();
    let mut context = Context::new(
        page.initial_transform(true).to_kurbo(),
        Rect::new(0.0, 0.0, f64::from(width), f64::from(height)),
        &cache,
        page.xref(),
        InterpreterSettings::default(),
    );
    interpret_page(page, &mut context, device);
}

/// Keeps the glyphs a page draws, and the resolution of the largest image it draws.
#[derive(Default)]
struct Collector {
    glyphs: Vec<PlacedGlyph>,
    image_dpi: Option<f32>,
    largest_image: f64,
}

/// The part of the em square a line of text occupies, in the 1000 units hayro's glyphs use.
const DESCENT: f64 = -220.0;
const ASCENT: f64 = 780.0;

impl<'a> Device<'a> for Collector {
    fn draw_glyph_run(&mut self, run: &GlyphRun<'_, 'a>, props: DrawProps<'a>, _mode: &DrawMode) {
        for glyph in run.glyphs() {
            if self.glyphs.len() >= MAX_GLYPHS {
                return;
            }
            let Some(text) = glyph.as_unicode().map(|u| match u {
                hayro::hayro_interpret::hayro_cmap::BfString::Char(c) => c.to_string(),
                hayro::hayro_interpret::hayro_cmap::BfString::String(s) => s,
            }) else {
                continue;
            };
            if text.chars().any(char::is_control) {
                continue;
            }
            let advance = match &**glyph {
                Glyph::Outline(outline) => outline.advance_width(),
                Glyph::Type3(type3) => type3.advance_width(),
            }
            .filter(|a| a.is_finite() && *a > 0.0)
            .unwrap_or(500.0);
            let to_page = props.transform * glyph.transform();
            let corners = [
                (0.0, DESCENT),
                (f64::from(advance), DESCENT),
                (f64::from(advance), ASCENT),
                (0.0, ASCENT),
            ]
            .map(|(x, y)| to_page * KPoint::new(x, y));
            let xs = corners.map(|p| p.x as f32);
            let ys = corners.map(|p| p.y as f32);
            self.glyphs.push(PlacedGlyph {
                text,
                left: xs.into_iter().fold(f32::INFINITY, f32::min),
                right: xs.into_iter().fold(f32::NEG_INFINITY, f32::max),
                top: ys.into_iter().fold(f32::INFINITY, f32::min),
                bottom: ys.into_iter().fold(f32::NEG_INFINITY, f32::max),
            });
        }
    }

    fn draw_image(&mut self, image: Image<'a, '_>, props: ImageDrawProps<'a>) {
        // An image fills the unit square of its transform; its width in points gives its dpi.
        let on_page = props.transform.transform_rect_bbox(Rect::new(0.0, 0.0, 1.0, 1.0));
        let area = on_page.area();
        if area > self.largest_image && on_page.width() > 1.0 {
            self.largest_image = area;
            self.image_dpi = Some((f64::from(image.width()) / on_page.width() * 72.0) as f32);
        }
    }

    fn draw_path(&mut self, _: &BezPath, _: DrawProps<'a>, _: &DrawMode) {}
    fn push_clip_path(&mut self, _: &ClipPath) {}
    fn push_transparency_group(&mut self, _: f32, _: Option<SoftMask<'a>>, _: BlendMode) {}
    fn pop_clip(&mut self) {}
    fn pop_transparency_group(&mut self) {}
}
