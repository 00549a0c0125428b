//! An artifact's header, brought up to date for a download.
//!
//! Models trained before artifacts carried their language and field model
//! ([`ModelInfo::language`], [`ModelInfo::field_model`]) have them only beside the file, in the
//! service's database, and a model's language can be changed after training; so a file
//! uploaded elsewhere lost both, or had the old language. A download gives the file with its
//! header brought up to date. The file is not read whole: the caller reads its
//! start ([`HEAD_PREFIX_BYTES`], then [`header_len`] bytes), writes the [`completed_head`] in its
//! place and streams the old body after it unchanged, taking the new checksum over both as they
//! pass ([`Checksum`]).

use super::{MAGIC, MAX_HEADER, put_u32};
use crate::artifact::MAX_FIELD_MODEL_BYTES;
use crate::error::{Error, Result};
use crate::features::{FNV_SEED, fnv1a};
use crate::model::ModelInfo;

/// Bytes before an artifact's header: magic, format version, header length.
pub const HEAD_PREFIX_BYTES: usize = 16;

/// Bytes after an artifact's body: its checksum.
pub const CHECKSUM_BYTES: usize = 8;

/// The length of the header that follows an artifact's first [`HEAD_PREFIX_BYTES`] bytes.
pub fn header_len(prefix: &[u8]) -> Result<usize> {
    if prefix.len() < HEAD_PREFIX_BYTES || &prefix[..8] != MAGIC {
        return Err(Error::artifact("not a Lector model (bad magic)"));
    }
    let len = u32::from_le_bytes([prefix[12], prefix[13], prefix[14], prefix[15]]) as usize;
    if len > MAX_HEADER {
        return Err(Error::artifact("header too large"));
    }
    Ok(len)
}

/// An artifact's start (`head`: its prefix and header) with `language` written into its header
/// where it records another or none (a model's language can change after training), and
/// `field_model` where it records none and it is within [`MAX_FIELD_MODEL_BYTES`]; `None` when
/// there is nothing to change, or the header is not one this build writes again (the file is
/// then given as it is).
pub fn completed_head(head: &[u8], language: Option<&str>, field_model: Option<&str>) -> Option<Vec<u8>> {
    let header = head.get(HEAD_PREFIX_BYTES..)?;
    let mut info: ModelInfo = serde_json::from_slice(header).ok()?;
    let mut added = false;
    if language.is_some() && info.language.as_deref() != language {
        info.language = language.map(str::to_owned);
        added = true;
    }
    // A field model past what a header may hold stays out of the file, as training leaves it.
    let field_model = field_model.filter(|f| f.len() <= MAX_FIELD_MODEL_BYTES);
    if info.field_model.is_none() && field_model.is_some() {
        info.field_model = field_model.map(str::to_owned);
        added = true;
    }
    if !added {
        return None;
    }
    let header = serde_json::to_vec(&info).ok().filter(|h| h.len() <= MAX_HEADER)?;
    let mut out = Vec::with_capacity(HEAD_PREFIX_BYTES + header.len());
    out.extend_from_slice(&head[..12]);
    put_u32(&mut out, u32::try_from(header.len()).ok()?);
    out.extend_from_slice(&header);
    Some(out)
}

/// An artifact's checksum, taken over its bytes as they pass.
#[derive(Debug, Clone, Copy)]
pub struct Checksum(u64);

impl Default for Checksum {
    fn default() -> Self {
        Self(FNV_SEED)
    }
}

impl Checksum {
    pub fn update(&mut self, bytes: &[u8]) {
        self.0 = fnv1a(self.0, bytes);
    }

    /// The artifact's last [`CHECKSUM_BYTES`] bytes.
    pub fn to_bytes(self) -> [u8; CHECKSUM_BYTES] {
        self.0.to_le_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Model;
    use crate::artifact::tests::small_model;

    /// The artifact with its head replaced as a download writes it: head, old body, checksum.
    fn reframed(bytes: &[u8], head: &[u8]) -> Vec<u8> {
        let old_head = HEAD_PREFIX_BYTES + header_len(bytes).unwrap();
        let mut sum = Checksum::default();
        let mut out = head.to_vec();
        out.extend_from_slice(&bytes[old_head..bytes.len() - CHECKSUM_BYTES]);
        sum.update(&out);
        out.extend_from_slice(&sum.to_bytes());
        out
    }

    #[test]
    fn an_old_header_is_completed_and_predicts_the_same() {
        let model = small_model();
        let bytes = model.to_bytes();
        let head_len = HEAD_PREFIX_BYTES + header_len(&bytes).unwrap();
        let head = completed_head(&bytes[..head_len], Some("de"), Some("{\"fields\":[]}")).unwrap();
        let completed = Model::from_bytes(&reframed(&bytes, &head)).unwrap();
        assert_eq!(completed.info.language.as_deref(), Some("de"));
        assert_eq!(completed.info.field_model.as_deref(), Some("{\"fields\":[]}"));
        assert_eq!(completed.predict("good"), model.predict("good"));
        // A header that records them keeps its field model; nothing to change, nothing written.
        let again = completed.to_bytes();
        let head_len = HEAD_PREFIX_BYTES + header_len(&again).unwrap();
        assert_eq!(completed_head(&again[..head_len], Some("de"), Some("{}")), None);
        // A language changed since is written.
        let changed = completed_head(&again[..head_len], Some("ar"), Some("{}")).unwrap();
        let changed = Model::from_bytes(&reframed(&again, &changed)).unwrap();
        assert_eq!(changed.info.language.as_deref(), Some("ar"));
        assert_eq!(changed.info.field_model.as_deref(), Some("{\"fields\":[]}"));
        let old_head_len = HEAD_PREFIX_BYTES + header_len(&bytes).unwrap();
        assert_eq!(completed_head(&bytes[..old_head_len], None, None), None);
        // A field model larger than a header may hold stays out, as training leaves it.
        let huge = " ".repeat(MAX_FIELD_MODEL_BYTES + 1);
        assert_eq!(completed_head(&bytes[..old_head_len], None, Some(&huge)), None);
    }

    #[test]
    fn a_foreign_start_is_refused() {
        assert!(header_len(b"NOTAMODEL-------").is_err());
        assert!(header_len(b"LECTORML").is_err());
    }
}
