//! Annotated pages: a page's image with every match drawn on it, a coloured box around its
//! words and its label above, as a PNG data URI (SPEC's `annotated_pages`). Page images come
//! from [`page_images`] in the sandbox; drawing happens here, on images already decoded.
//! Shapes and text are drawn with `embedded-graphics` on the page's pixels.

use crate::page::Quad;
use crate::{DocumentFormat, ExtractConfig, pdf, raster, sniffed};
use base64::Engine;
use embedded_graphics::Drawable;
use embedded_graphics::mono_font::MonoTextStyleBuilder;
use embedded_graphics::mono_font::iso_8859_1::FONT_7X13;
use embedded_graphics::pixelcolor::{Rgb888, RgbColor};
use embedded_graphics::prelude::{DrawTarget, OriginDimensions, Pixel, Point, Primitive, Size};
use embedded_graphics::primitives::{PrimitiveStyle, Rectangle};
use embedded_graphics::text::{Baseline, Text};
use image::{GrayImage, RgbImage};
use lector_core::Result;

/// The resolution PDF pages are drawn at for annotation.
pub const ANNOTATION_DPI: f32 = 100.0;
/// The longest side of an annotated image page, in pixels; larger images are scaled down.
pub const MAX_ANNOTATED_SIDE: u32 = 1600;

/// One match to draw: its label and where its words stand.
#[derive(Debug, Clone, PartialEq)]
pub struct Mark {
    pub label: String,
    pub quad: Quad,
}

/// Colours the labels take in turn, dark enough to read white text on.
const COLOURS: [(u8, u8, u8); 6] = [
    (214, 39, 40),
    (31, 119, 180),
    (44, 160, 44),
    (148, 103, 189),
    (255, 127, 14),
    (23, 190, 207),
];

/// Every page of a PDF or image file as a grey image for annotation, its longer side at most
/// [`MAX_ANNOTATED_SIDE`]: PDF pages rendered at [`ANNOTATION_DPI`], or less for a page so
/// large that it would be longer (a page of a few bytes may claim a 5000-point box), image
/// pages scaled down. Runs in the sandbox.
pub fn page_images(bytes: Vec<u8>, config: &ExtractConfig) -> Result<Vec<GrayImage>> {
    let format = sniffed(&bytes)?;
    match format {
        DocumentFormat::Pdf => {
            let pdf = pdf::PdfDocument::open(bytes, config)?;
            (0..pdf.page_count())
                .map(|index| {
                    let dpi = annotation_dpi(pdf.page_size(index));
                    // The renderer rounds sizes up: a pixel too many is scaled away.
                    pdf.render(index, dpi, config).map(scaled_down)
                })
                .collect()
        }
        _ => Ok(raster::decode_pages(&bytes, format, config)?
            .into_iter()
            .map(scaled_down)
            .collect()),
    }
}

/// The resolution a PDF page of `(width, height)` points is drawn at: [`ANNOTATION_DPI`], or
/// the one that makes its longer side [`MAX_ANNOTATED_SIDE`] pixels.
fn annotation_dpi((width, height): (f32, f32)) -> f32 {
    let longer = width.max(height);
    if longer * ANNOTATION_DPI / 72.0 <= MAX_ANNOTATED_SIDE as f32 {
        return ANNOTATION_DPI;
    }
    MAX_ANNOTATED_SIDE as f32 * 72.0 / longer
}

fn scaled_down(image: GrayImage) -> GrayImage {
    let side = image.width().max(image.height());
    if side <= MAX_ANNOTATED_SIDE {
        return image;
    }
    let scale = MAX_ANNOTATED_SIDE as f32 / side as f32;
    let width = ((image.width() as f32 * scale).round() as u32).max(1);
    let height = ((image.height() as f32 * scale).round() as u32).max(1);
    image::imageops::resize(&image, width, height, image::imageops::FilterType::Triangle)
}

/// `page` with `marks` drawn on it, as a PNG data URI. Labels take colours in the order of
/// `labels` (the model's), so one field has one colour on every page.
pub fn annotated_page(page: &GrayImage, marks: &[Mark], labels: &[String]) -> String {
    let mut image: RgbImage = image::DynamicImage::ImageLuma8(page.clone()).into_rgb8();
    let (width, height) = (image.width() as f32, image.height() as f32);
    let mut canvas = Canvas(&mut image);
    for mark in marks {
        let index = labels.iter().position(|l| *l == mark.label).unwrap_or(0);
        let (r, g, b) = COLOURS[index % COLOURS.len()];
        let colour = Rgb888::new(r, g, b);
        let (left, top, right, bottom) = mark.quad.clamped().bounds();
        let (x, y) = ((left * width) as i32 - 2, (top * height) as i32 - 2);
        let size = Size::new(
            ((right - left) * width) as u32 + 4,
            ((bottom - top) * height) as u32 + 4,
        );
        let _ = Rectangle::new(Point::new(x, y), size)
            .into_styled(PrimitiveStyle::with_stroke(colour, 2))
            .draw(&mut canvas);
        let style = MonoTextStyleBuilder::new()
            .font(&FONT_7X13)
            .text_color(Rgb888::WHITE)
            .background_color(colour)
            .build();
        let label_y = if y >= 14 { y - 1 } else { y + size.height as i32 + 14 };
        let _ = Text::with_baseline(&mark.label, Point::new(x, label_y), style, Baseline::Bottom).draw(&mut canvas);
    }
    let mut png = Vec::new();
    image
        .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
        .expect("a PNG is written to memory");
    format!(
        "data:image/png;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(png)
    )
}

/// The page's pixels as `embedded-graphics` draws on them; pixels off the page are dropped.
struct Canvas<'a>(&'a mut RgbImage);

impl OriginDimensions for Canvas<'_> {
    fn size(&self) -> Size {
        Size::new(self.0.width(), self.0.height())
    }
}

impl DrawTarget for Canvas<'_> {
    type Color = Rgb888;
    type Error = std::convert::Infallible;

    fn draw_iter<I: IntoIterator<Item = Pixel<Rgb888>>>(&mut self, pixels: I) -> std::result::Result<(), Self::Error> {
        let (width, height) = (self.0.width(), self.0.height());
        for Pixel(point, colour) in pixels {
            if let (Ok(x), Ok(y)) = (u32::try_from(point.x), u32::try_from(point.y))
                && x < width
                && y < height
            {
                self.0.put_pixel(x, y, image::Rgb([colour.r(), colour.g(), colour.b()]));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(uri: &str) -> RgbImage {
        let data = uri.strip_prefix("data:image/png;base64,").expect("a PNG data URI");
        let png = base64::engine::general_purpose::STANDARD.decode(data).unwrap();
        image::load_from_memory(&png).unwrap().into_rgb8()
    }

    #[test]
    fn matches_are_boxed_in_their_label_colour() {
        let page = GrayImage::from_pixel(200, 100, image::Luma([255]));
        let labels = vec!["total".to_owned(), "date".to_owned()];
        let marks = [Mark {
            label: "date".into(),
            quad: Quad::rect(0.5, 0.5, 0.75, 0.7),
        }];
        let drawn = decode(&annotated_page(&page, &marks, &labels));
        assert_eq!(drawn.dimensions(), (200, 100));
        let (r, g, b) = COLOURS[1];
        // The box's left edge, just outside the words (x = 100 - 2).
        assert_eq!(drawn.get_pixel(98, 60).0, [r, g, b]);
        // Inside the box the page is untouched; far away too.
        assert_eq!(drawn.get_pixel(125, 60).0, [255, 255, 255]);
        assert_eq!(drawn.get_pixel(5, 95).0, [255, 255, 255]);
        // The label stands above the box, on its colour.
        let above = (98..160).flat_map(|x| (36..48).map(move |y| (x, y)));
        assert!(above.clone().any(|(x, y)| drawn.get_pixel(x, y).0 == [r, g, b]));
        assert!({ above }.any(|(x, y)| drawn.get_pixel(x, y).0 == [255, 255, 255]));
    }

    #[test]
    fn a_page_without_matches_is_the_page() {
        let page = GrayImage::from_pixel(30, 20, image::Luma([128]));
        let drawn = decode(&annotated_page(&page, &[], &[]));
        assert!(drawn.pixels().all(|p| p.0 == [128, 128, 128]));
    }

    #[test]
    fn large_pdf_pages_are_drawn_no_larger_than_images() {
        use crate::samples::{self, PageBoxes, TextRun};
        // A few hundred bytes a page claiming 5000 × 5000 points: 6944 pixels a side at 100
        // dpi (48 Mpx, 40 after the pixel limit) before; at most 1600 now.
        let huge = PageBoxes {
            media: [0.0, 0.0, 5000.0, 5000.0],
            crop: None,
        };
        let wide = PageBoxes {
            media: [0.0, 0.0, 5000.0, 500.0],
            crop: None,
        };
        let pages = vec![vec![TextRun::new(72.0, 100.0, 12.0, "Invoice RE-1")]; 3];
        for (boxes, expected) in [(huge, (1600, 1600)), (wide, (1600, 160)), (PageBoxes::A4, (827, 1169))] {
            let pdf = samples::text_pdf_in(&pages, boxes);
            assert!(pdf.len() < 4096, "{} bytes", pdf.len());
            let images = page_images(pdf, &ExtractConfig::default()).unwrap();
            assert_eq!(images.len(), 3);
            for image in images {
                let (width, height) = image.dimensions();
                assert!(width.max(height) <= MAX_ANNOTATED_SIDE, "{width}×{height}");
                assert!(
                    width.abs_diff(expected.0) <= 1 && height.abs_diff(expected.1) <= 1,
                    "{width}×{height}, not {expected:?}"
                );
            }
        }
    }

    #[test]
    fn large_images_are_scaled_down() {
        let page = GrayImage::new(3200, 1000);
        let small = scaled_down(page);
        assert_eq!(small.dimensions(), (MAX_ANNOTATED_SIDE, 500));
    }
}
