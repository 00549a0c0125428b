//! A reader for the safetensors format, enough for little-endian `F32` tensors: an 8-byte
//! little-endian header length, a JSON header naming each tensor's dtype, shape and byte
//! range, then the raw data. Every range and shape is checked against the file, so a corrupt
//! or foreign file gives an error, never a panic.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::error::{Error, Result};

/// The header may not be larger than this (the MiniLM's is about 10 KiB).
const MAX_HEADER: u64 = 16 << 20;

#[derive(Debug)]
struct Entry {
    dtype: String,
    shape: Vec<usize>,
    start: usize,
    end: usize,
}

/// A safetensors file held in memory.
#[derive(Debug)]
pub struct Tensors {
    data: Vec<u8>,
    offset: usize,
    entries: BTreeMap<String, Entry>,
}

impl Tensors {
    pub fn parse(data: Vec<u8>) -> Result<Self> {
        let bad = |m: &str| Error::Format(format!("not a safetensors file: {m}"));
        let head: [u8; 8] = data
            .get(..8)
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| bad("too short"))?;
        let n = u64::from_le_bytes(head);
        if n > MAX_HEADER || 8 + n > data.len() as u64 {
            return Err(bad("header length out of range"));
        }
        let offset = 8 + n as usize;
        let header: Value = serde_json::from_slice(&data[8..offset]).map_err(|e| bad(&e.to_string()))?;
        let map = header.as_object().ok_or_else(|| bad("header is not an object"))?;
        let mut entries = BTreeMap::new();
        for (name, v) in map.iter().filter(|(k, _)| *k != "__metadata__") {
            let dtype = v["dtype"]
                .as_str()
                .ok_or_else(|| bad("a tensor has no dtype"))?
                .to_owned();
            let shape = v["shape"]
                .as_array()
                .ok_or_else(|| bad("a tensor has no shape"))?
                .iter()
                .map(|d| d.as_u64().map(|d| d as usize))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| bad("a shape is not a list of sizes"))?;
            let range = v["data_offsets"]
                .as_array()
                .filter(|a| a.len() == 2)
                .and_then(|a| Some((a[0].as_u64()? as usize, a[1].as_u64()? as usize)))
                .ok_or_else(|| bad("a tensor has no data_offsets"))?;
            if range.0 > range.1 || range.1 > data.len() - offset {
                return Err(bad(&format!("{name} lies outside the file")));
            }
            entries.insert(
                name.clone(),
                Entry {
                    dtype,
                    shape,
                    start: range.0,
                    end: range.1,
                },
            );
        }
        Ok(Self { data, offset, entries })
    }

    /// The `F32` tensor `name`, which must have shape `shape`, as a flat row-major vector.
    pub fn f32(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>> {
        let e = self
            .entries
            .get(name)
            .ok_or_else(|| Error::Format(format!("the weights have no tensor {name}")))?;
        if e.dtype != "F32" || e.shape != shape {
            return Err(Error::Format(format!(
                "tensor {name} is {} {:?}, expected F32 {shape:?}",
                e.dtype, e.shape
            )));
        }
        let count: usize = shape.iter().product();
        let bytes = &self.data[self.offset + e.start..self.offset + e.end];
        if bytes.len() != count * 4 {
            return Err(Error::Format(format!(
                "tensor {name} has {} bytes for {count} values",
                bytes.len()
            )));
        }
        Ok(bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect())
    }
}

/// Writes `tensors` (name, shape, values) as a safetensors file: for tests and tools.
pub fn write_f32(tensors: &[(&str, Vec<usize>, Vec<f32>)]) -> Vec<u8> {
    let mut header = serde_json::Map::new();
    let mut data = Vec::new();
    for (name, shape, values) in tensors {
        let start = data.len();
        for v in values {
            data.extend_from_slice(&v.to_le_bytes());
        }
        header.insert(
            (*name).to_owned(),
            serde_json::json!({"dtype": "F32", "shape": shape, "data_offsets": [start, data.len()]}),
        );
    }
    let header = Value::Object(header).to_string().into_bytes();
    let mut out = (header.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(&header);
    out.extend_from_slice(&data);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_checks_shapes() {
        let bytes = write_f32(&[("a", vec![2, 2], vec![1.0, 2.0, 3.0, 4.0]), ("b", vec![1], vec![-1.5])]);
        let t = Tensors::parse(bytes).unwrap();
        assert_eq!(t.f32("a", &[2, 2]).unwrap(), [1.0, 2.0, 3.0, 4.0]);
        assert_eq!(t.f32("b", &[1]).unwrap(), [-1.5]);
        assert!(t.f32("a", &[4]).is_err());
        assert!(t.f32("c", &[1]).is_err());
    }

    #[test]
    fn refuses_corrupt_files() {
        assert!(Tensors::parse(vec![1, 2, 3]).is_err());
        assert!(Tensors::parse(u64::MAX.to_le_bytes().to_vec()).is_err());
        let mut bytes = write_f32(&[("a", vec![2], vec![1.0, 2.0])]);
        bytes.truncate(bytes.len() - 4);
        assert!(Tensors::parse(bytes).is_err());
        let mut bytes = write_f32(&[("a", vec![2], vec![1.0, 2.0])]);
        bytes[8] = b'!';
        assert!(Tensors::parse(bytes).is_err());
    }
}
