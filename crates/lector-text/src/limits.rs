//! Bounds for every reader, so an upload can cost the server only so much memory and time.
//!
//! The defaults suit uploads through the API; the ingest job and tests pass their own values.
//! Checking happens while reading, never after a whole file has been expanded in memory.

/// Upper bounds applied while reading a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Bytes of the file as uploaded (default 50 MiB).
    pub max_bytes: u64,
    /// Data rows, not counting the header (default 1,000,000).
    pub max_rows: u64,
    /// Columns of a row (default 1,000).
    pub max_columns: usize,
    /// Cells of a sheet (XLSX, counted by its first pass) or of a table loaded whole (JSON,
    /// `read_table`) (default 20,000,000).
    pub max_cells: u64,
    /// Characters (code points) of one cell (default 1 Mi).
    pub max_cell_chars: usize,
    /// Nesting depth of a JSON document; the top-level array counts as 1 (default 32).
    pub max_json_depth: usize,
    /// Sum of the declared uncompressed sizes of an XLSX archive's members (default 256 MiB).
    pub max_decompressed_bytes: u64,
    /// Uncompressed/compressed ratio of one XLSX member bigger than [`RATIO_FLOOR`] (default 200).
    pub max_compression_ratio: u64,
}

/// Members smaller than this are not ratio-checked: tiny XML parts compress very well legitimately.
pub const RATIO_FLOOR: u64 = 1 << 20;

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_bytes: 50 * 1024 * 1024,
            max_rows: 1_000_000,
            max_columns: 1_000,
            max_cells: 20_000_000,
            max_cell_chars: 1 << 20,
            max_json_depth: 32,
            max_decompressed_bytes: 256 * 1024 * 1024,
            max_compression_ratio: 200,
        }
    }
}
