//! Document extraction for Lector: recognising the input formats now; PDF and image decoding,
//! OCR and field matching belong here too. Knows nothing of HTTP or SQL.

/// The document formats extraction accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DocumentFormat {
    Pdf,
    Jpeg,
    Png,
    Tiff,
    Webp,
}

/// Recognises a format by its leading bytes, never by the file name a client sent.
pub fn sniff(bytes: &[u8]) -> Option<DocumentFormat> {
    match bytes {
        [b'%', b'P', b'D', b'F', b'-', ..] => Some(DocumentFormat::Pdf),
        [0xFF, 0xD8, 0xFF, ..] => Some(DocumentFormat::Jpeg),
        [0x89, b'P', b'N', b'G', b'\r', b'\n', 0x1A, b'\n', ..] => Some(DocumentFormat::Png),
        [b'I', b'I', 42, 0, ..] | [b'M', b'M', 0, 42, ..] => Some(DocumentFormat::Tiff),
        [b'R', b'I', b'F', b'F', _, _, _, _, b'W', b'E', b'B', b'P', ..] => Some(DocumentFormat::Webp),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniffs_by_magic_bytes() {
        assert_eq!(sniff(b"%PDF-1.7\n"), Some(DocumentFormat::Pdf));
        assert_eq!(sniff(b"\x89PNG\r\n\x1a\n...."), Some(DocumentFormat::Png));
        assert_eq!(sniff(b"RIFF\0\0\0\0WEBPVP8 "), Some(DocumentFormat::Webp));
        assert_eq!(sniff(b"hello"), None);
    }
}
