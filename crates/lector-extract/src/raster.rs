//! Image files as grey pages: PNG, JPEG and WebP give one page, TIFF one per image it holds.
//!
//! Sizes are checked from the header before any pixel is decoded, so a small file that claims
//! 60000×60000 pixels is refused at once; the decoders also run under allocation limits, so a
//! decompression bomb stops at the limit rather than at the end of memory.

use crate::{DocumentFormat, ExtractConfig, too_large};
use image::{DynamicImage, GrayImage, ImageReader};
use lector_core::{Error, ErrorCode, Result};
use std::io::Cursor;

/// The pages of an image file, in grey, with their resolution when the file states it.
pub fn decode_pages(bytes: &[u8], format: DocumentFormat, limits: &ExtractConfig) -> Result<Vec<GrayImage>> {
    match format {
        DocumentFormat::Tiff => decode_tiff(bytes, limits),
        DocumentFormat::Png | DocumentFormat::Jpeg | DocumentFormat::Webp => {
            Ok(vec![decode_single(bytes, format, limits)?])
        }
        DocumentFormat::Pdf => Err(Error::internal()),
    }
}

fn image_format(format: DocumentFormat) -> image::ImageFormat {
    match format {
        DocumentFormat::Png => image::ImageFormat::Png,
        DocumentFormat::Jpeg => image::ImageFormat::Jpeg,
        DocumentFormat::Webp => image::ImageFormat::WebP,
        DocumentFormat::Tiff => image::ImageFormat::Tiff,
        DocumentFormat::Pdf => image::ImageFormat::Png,
    }
}

fn decode_single(bytes: &[u8], format: DocumentFormat, limits: &ExtractConfig) -> Result<GrayImage> {
    let (width, height) = ImageReader::with_format(Cursor::new(bytes), image_format(format))
        .into_dimensions()
        .map_err(unreadable)?;
    check_size(width, height, limits)?;
    let mut reader = ImageReader::with_format(Cursor::new(bytes), image_format(format));
    reader.limits(decoder_limits(limits));
    let image = reader.decode().map_err(unreadable)?;
    Ok(image.into_luma8())
}

fn decoder_limits(limits: &ExtractConfig) -> image::Limits {
    let mut decoder = image::Limits::default();
    decoder.max_image_width = Some(limits.max_side);
    decoder.max_image_height = Some(limits.max_side);
    // Room for the decoded pixels in RGBA and one conversion beside them.
    decoder.max_alloc = Some(limits.max_pixels * 8);
    decoder
}

/// Refuses a page larger than the limits allow, naming the limit.
pub fn check_size(width: u32, height: u32, limits: &ExtractConfig) -> Result<()> {
    if width == 0 || height == 0 {
        return Err(Error::new(ErrorCode::ValidationFailed, "the image has no pixels"));
    }
    if width > limits.max_side || height > limits.max_side || u64::from(width) * u64::from(height) > limits.max_pixels {
        return Err(too_large(format!(
            "the image is {width}×{height} pixels; at most {} pixels a side and {} pixels a page are read",
            limits.max_side, limits.max_pixels
        )));
    }
    Ok(())
}

fn decode_tiff(bytes: &[u8], limits: &ExtractConfig) -> Result<Vec<GrayImage>> {
    use tiff::decoder::{Decoder, DecodingResult};
    let mut tiff_limits = tiff::decoder::Limits::default();
    tiff_limits.decoding_buffer_size = (limits.max_pixels * 8) as usize;
    tiff_limits.intermediate_buffer_size = (limits.max_pixels * 8) as usize;
    let mut decoder = Decoder::new(Cursor::new(bytes))
        .map_err(unreadable)?
        .with_limits(tiff_limits);
    let mut pages = Vec::new();
    loop {
        if pages.len() >= limits.max_pages {
            return Err(too_large(format!(
                "the image holds more than {} pages",
                limits.max_pages
            )));
        }
        let (width, height) = decoder.dimensions().map_err(unreadable)?;
        check_size(width, height, limits)?;
        let colour = decoder.colortype().map_err(unreadable)?;
        let data = match decoder.read_image().map_err(unreadable)? {
            DecodingResult::U8(data) => Samples::U8(data),
            DecodingResult::U16(data) => Samples::U16(data),
            _ => return Err(unsupported_tiff(colour)),
        };
        pages.push(tiff_page(width, height, colour, data)?);
        if !decoder.more_images() {
            return Ok(pages);
        }
        decoder.next_image().map_err(unreadable)?;
    }
}

enum Samples {
    U8(Vec<u8>),
    U16(Vec<u16>),
}

fn tiff_page(width: u32, height: u32, colour: tiff::ColorType, data: Samples) -> Result<GrayImage> {
    use tiff::ColorType;
    let image = match (colour, data) {
        (ColorType::Gray(1), Samples::U8(packed)) => return Ok(unpack_bilevel(width, height, &packed)),
        (ColorType::Gray(8), Samples::U8(d)) => GrayImage::from_raw(width, height, d).map(DynamicImage::ImageLuma8),
        (ColorType::GrayA(8), Samples::U8(d)) => {
            image::GrayAlphaImage::from_raw(width, height, d).map(DynamicImage::ImageLumaA8)
        }
        (ColorType::RGB(8), Samples::U8(d)) => image::RgbImage::from_raw(width, height, d).map(DynamicImage::ImageRgb8),
        (ColorType::RGBA(8), Samples::U8(d)) => {
            image::RgbaImage::from_raw(width, height, d).map(DynamicImage::ImageRgba8)
        }
        (ColorType::Gray(16), Samples::U16(d)) => {
            image::ImageBuffer::from_raw(width, height, d).map(DynamicImage::ImageLuma16)
        }
        (ColorType::RGB(16), Samples::U16(d)) => {
            image::ImageBuffer::from_raw(width, height, d).map(DynamicImage::ImageRgb16)
        }
        (colour, _) => return Err(unsupported_tiff(colour)),
    };
    image
        .map(DynamicImage::into_luma8)
        .ok_or_else(|| unreadable("the pixel data is shorter than the image"))
}

/// One bit a pixel, rows padded to whole bytes, 1 for white (black-is-zero).
fn unpack_bilevel(width: u32, height: u32, packed: &[u8]) -> GrayImage {
    let stride = width.div_ceil(8) as usize;
    GrayImage::from_fn(width, height, |x, y| {
        let byte = packed
            .get(y as usize * stride + x as usize / 8)
            .copied()
            .unwrap_or(0xFF);
        let bit = (byte >> (7 - (x % 8))) & 1;
        image::Luma([if bit == 1 { 255 } else { 0 }])
    })
}

fn unsupported_tiff(colour: tiff::ColorType) -> Error {
    Error::new(
        ErrorCode::ValidationFailed,
        format!("TIFF images of colour type {colour:?} are not read"),
    )
}

fn unreadable(error: impl std::fmt::Display) -> Error {
    Error::new(
        ErrorCode::ValidationFailed,
        format!("the image could not be read: {error}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_huge_header_is_refused_before_decoding() {
        // A PNG whose IHDR claims 60000×60000 pixels, with a few bytes of pixel data.
        let mut ihdr = 60_000u32.to_be_bytes().to_vec();
        ihdr.extend_from_slice(&60_000u32.to_be_bytes());
        ihdr.extend_from_slice(&[8, 0, 0, 0, 0]);
        let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
        for (kind, data) in [
            (&b"IHDR"[..], &ihdr[..]),
            (b"IDAT", &[0x78, 0x9c, 0x03, 0, 0, 0, 0, 1]),
            (b"IEND", &[]),
        ] {
            png.extend_from_slice(&(data.len() as u32).to_be_bytes());
            let start = png.len();
            png.extend_from_slice(kind);
            png.extend_from_slice(data);
            let crc = crc32(&png[start..]);
            png.extend_from_slice(&crc.to_be_bytes());
        }
        let error = decode_pages(&png, DocumentFormat::Png, &ExtractConfig::default()).unwrap_err();
        assert_eq!(error.code, ErrorCode::PayloadTooLarge, "{}", error.detail);
        assert!(error.detail.contains("60000×60000"), "{}", error.detail);
    }

    fn crc32(bytes: &[u8]) -> u32 {
        let mut crc = !0u32;
        for &b in bytes {
            crc ^= u32::from(b);
            for _ in 0..8 {
                crc = if crc & 1 == 1 {
                    (crc >> 1) ^ 0xEDB8_8320
                } else {
                    crc >> 1
                };
            }
        }
        !crc
    }

    #[test]
    fn bilevel_rows_unpack_with_padding() {
        // 10 pixels a row: two bytes, the last 6 bits padding.
        let image = unpack_bilevel(10, 1, &[0b1010_0000, 0b0100_0000]);
        let row: Vec<u8> = image.pixels().map(|p| p.0[0]).collect();
        assert_eq!(row, [255, 0, 255, 0, 0, 0, 0, 0, 0, 255]);
    }
}
