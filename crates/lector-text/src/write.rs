//! Writing tables back out as CSV, TXT, JSON, JSONL or XLSX, for downloads.
//!
//! Every file written here reads back through [`crate::read_table`] to the same header and cells,
//! so a downloaded labeling session can be uploaded again unchanged. Cells are always written as
//! text (a "007" stays "007"); XLSX cells become inline strings, so no shared-string table is
//! needed, and a sheet can be written as its rows come; characters XML cannot hold are written
//! as the workbook format's `_xHHHH_` escapes. Excel holds at most 32,767 characters in a cell;
//! a longer document is still written whole (our reader reads it back whole), not cut. A sheet
//! holds [`XLSX_MAX_ROWS`] rows; the row past them fails the writer.
//! CSV cells that a spreadsheet would run as a formula get a leading `'` ([`crate::formula`]),
//! which the CSV reader removes again.

use std::io::Write;

use zip::CompressionMethod;
use zip::write::{SimpleFileOptions, StreamWriter, ZipWriter};

use crate::error::{Limit, Location, Result, TextError};
use crate::read::Format;
use crate::table::Table;

/// Writes `table` in `format` to `out`. TXT holds one column: the first, with line breaks inside
/// a cell turned into spaces.
pub fn write_table(format: Format, table: &Table, mut out: impl Write) -> Result<()> {
    let mut writer = RowWriter::new(format, table.header.clone())?;
    let mut bytes = writer.start()?;
    for row in &table.rows {
        bytes.extend(writer.row(row)?);
        if bytes.len() >= 1 << 16 {
            out.write_all(&bytes).map_err(TextError::Io)?;
            bytes.clear();
        }
    }
    bytes.extend(writer.finish()?);
    out.write_all(&bytes).map_err(TextError::Io)?;
    out.flush().map_err(TextError::Io)
}

/// Writes a table one row at a time, for downloads streamed as they are read: every format,
/// the same bytes [`write_table`] writes (it is built on this). Each call answers the bytes it
/// adds. XLSX is written as a streamed zip (sizes in data descriptors after each part, as a
/// writer that cannot seek back must), its sheet deflated as the rows come, so it too holds
/// no more than a row and the compressor's window.
pub struct RowWriter {
    format: Format,
    header: Vec<String>,
    rows: u64,
    xlsx: Option<XlsxSheet>,
}

impl std::fmt::Debug for RowWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RowWriter")
            .field("format", &self.format)
            .field("rows", &self.rows)
            .finish_non_exhaustive()
    }
}

impl RowWriter {
    pub fn new(format: Format, header: Vec<String>) -> Result<Self> {
        Ok(Self {
            format,
            header,
            rows: 0,
            xlsx: None,
        })
    }

    /// What comes before the first row: the CSV header, JSON's opening bracket, XLSX's fixed
    /// parts and its header row.
    pub fn start(&mut self) -> Result<Vec<u8>> {
        match self.format {
            Format::Csv => csv_record(&self.header),
            Format::Json => Ok(b"[".to_vec()),
            Format::Xlsx => {
                let mut sheet = XlsxSheet::start()?;
                sheet.row(&self.header)?;
                let bytes = sheet.take();
                self.xlsx = Some(sheet);
                Ok(bytes)
            }
            _ => Ok(Vec::new()),
        }
    }

    /// One row.
    pub fn row(&mut self, row: &[String]) -> Result<Vec<u8>> {
        self.rows += 1;
        match self.format {
            Format::Csv => csv_record(row),
            Format::Txt => {
                let text = row
                    .first()
                    .map_or(String::new(), |cell| cell.replace(['\r', '\n'], " "));
                Ok(format!("{text}\n").into_bytes())
            }
            Format::Json => {
                let mut out = if self.rows > 1 { b",\n".to_vec() } else { Vec::new() };
                write_object(&self.header, row, &mut out)?;
                Ok(out)
            }
            Format::Jsonl => {
                let mut out = Vec::new();
                write_object(&self.header, row, &mut out)?;
                out.push(b'\n');
                Ok(out)
            }
            Format::Xlsx => {
                let sheet = self.sheet()?;
                sheet.row(row)?;
                Ok(sheet.take())
            }
        }
    }

    /// What comes after the last row: JSON's closing bracket, the end of XLSX's sheet and its
    /// zip's central directory.
    pub fn finish(&mut self) -> Result<Vec<u8>> {
        match self.format {
            Format::Json => Ok(b"]\n".to_vec()),
            Format::Xlsx => {
                let sheet = self.xlsx.take().ok_or_else(not_started)?;
                sheet.finish()
            }
            _ => Ok(Vec::new()),
        }
    }

    fn sheet(&mut self) -> Result<&mut XlsxSheet> {
        self.xlsx.as_mut().ok_or_else(not_started)
    }
}

fn not_started() -> TextError {
    TextError::malformed(Location::File, "the XLSX writer was not started")
}

/// The bytes a streamed zip has written and nobody has taken yet.
#[derive(Clone, Default)]
struct Written(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl Written {
    fn take(&self) -> Vec<u8> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

impl Write for Written {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Rows a sheet holds (its header among them): Excel's limit, 2^20.
pub const XLSX_MAX_ROWS: u32 = 1 << 20;

/// A workbook of one sheet written as a stream: the fixed parts first, then the sheet's rows
/// as inline strings as they come.
struct XlsxSheet {
    zip: ZipWriter<StreamWriter<Written>>,
    written: Written,
    rows: u32,
}

impl XlsxSheet {
    fn start() -> Result<Self> {
        let written = Written::default();
        let mut zip = ZipWriter::new_stream(written.clone());
        let options = SimpleFileOptions::default().compression_method(CompressionMethod::Deflated);
        for (name, body) in [
            ("[Content_Types].xml", CONTENT_TYPES),
            ("_rels/.rels", ROOT_RELS),
            ("xl/workbook.xml", WORKBOOK),
            ("xl/_rels/workbook.xml.rels", WORKBOOK_RELS),
            ("xl/worksheets/sheet1.xml", SHEET_START),
        ] {
            zip.start_file(name, options).map_err(zip_failed)?;
            zip.write_all(body.as_bytes()).map_err(TextError::Io)?;
        }
        Ok(Self { zip, written, rows: 0 })
    }

    fn row(&mut self, row: &[String]) -> Result<()> {
        // Past the sheet's last row a workbook is damaged (Excel cuts it when it repairs it):
        // the download fails there rather than end in a file that is not whole.
        if self.rows >= XLSX_MAX_ROWS {
            return Err(TextError::too_large(Limit::Rows, XLSX_MAX_ROWS as u64, None));
        }
        let xml = row_xml(self.rows, row);
        self.rows += 1;
        self.zip.write_all(xml.as_bytes()).map_err(TextError::Io)
    }

    fn take(&self) -> Vec<u8> {
        self.written.take()
    }

    fn finish(mut self) -> Result<Vec<u8>> {
        self.zip.write_all(SHEET_END.as_bytes()).map_err(TextError::Io)?;
        self.zip.finish().map_err(zip_failed)?;
        Ok(self.written.take())
    }
}

fn zip_failed(e: zip::result::ZipError) -> TextError {
    TextError::malformed(Location::File, format!("cannot write XLSX: {e}"))
}

/// One sheet row (`index` from 0) of inline strings; empty cells are left out.
fn row_xml(index: u32, row: &[String]) -> String {
    let number = index + 1;
    let mut xml = format!(r#"<row r="{number}">"#);
    for (column, value) in row.iter().enumerate() {
        if value.is_empty() {
            continue;
        }
        let name = crate::read::cell_name(index, column as u32);
        xml.push_str(&format!(
            r#"<c r="{name}" t="inlineStr"><is><t xml:space="preserve">{}</t></is></c>"#,
            escape(value)
        ));
    }
    xml.push_str("</row>");
    xml
}

/// A CSV record, each cell through the formula escape ([`crate::formula`]).
fn csv_record(cells: &[String]) -> Result<Vec<u8>> {
    let failed = |e: csv::Error| TextError::Io(std::io::Error::other(e.to_string()));
    let mut writer = csv::WriterBuilder::new().buffer_capacity(256).from_writer(Vec::new());
    let neutral = cells.iter().map(|c| crate::formula::neutralize(c).into_owned());
    writer.write_record(neutral).map_err(failed)?;
    writer
        .into_inner()
        .map_err(|e| TextError::Io(std::io::Error::other(e.to_string())))
}

/// One object with the header's keys in order (serde_json's map would sort them).
fn write_object(header: &[String], row: &[String], out: &mut impl Write) -> Result<()> {
    let mut line = String::from("{");
    for (index, name) in header.iter().enumerate() {
        if index > 0 {
            line.push_str(", ");
        }
        let value = row.get(index).map_or("", String::as_str);
        let pair = serde_json::to_string(name).and_then(|n| serde_json::to_string(value).map(|v| (n, v)));
        let (name, value) = pair.map_err(|e| TextError::Io(std::io::Error::other(e)))?;
        line.push_str(&name);
        line.push_str(": ");
        line.push_str(&value);
    }
    line.push('}');
    out.write_all(line.as_bytes()).map_err(TextError::Io)
}

const CONTENT_TYPES: &str = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/><Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/></Types>"#;
const ROOT_RELS: &str = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>"#;
const WORKBOOK: &str = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets><sheet name="Sheet1" sheetId="1" r:id="rId1"/></sheets></workbook>"#;
const WORKBOOK_RELS: &str = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/></Relationships>"#;
const SHEET_START: &str = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>"#;
const SHEET_END: &str = "</sheetData></worksheet>";

/// Packs a sheet's XML with the parts every workbook needs, in one seekable zip (for tests that
/// need a workbook of a hand-written sheet).
#[cfg(test)]
pub(crate) fn workbook(sheet: &str) -> Result<Vec<u8>> {
    let failed = |e: zip::result::ZipError| TextError::malformed(Location::File, format!("cannot write XLSX: {e}"));
    let mut zip = ZipWriter::new(std::io::Cursor::new(Vec::new()));
    // Zip64 headers only when a part needs them: plain headers keep the declared sizes where every
    // reader (and our zip-bomb check) looks first.
    let large = sheet.len() >= u32::MAX as usize;
    let options = SimpleFileOptions::default()
        .compression_method(CompressionMethod::Deflated)
        .large_file(large);
    for (name, body) in [
        ("[Content_Types].xml", CONTENT_TYPES),
        ("_rels/.rels", ROOT_RELS),
        ("xl/workbook.xml", WORKBOOK),
        ("xl/_rels/workbook.xml.rels", WORKBOOK_RELS),
        ("xl/worksheets/sheet1.xml", sheet),
    ] {
        zip.start_file(name, options).map_err(failed)?;
        zip.write_all(body.as_bytes()).map_err(TextError::Io)?;
    }
    Ok(zip.finish().map_err(failed)?.into_inner())
}

/// A cell's text in a sheet's XML. Markup characters become entities; what XML 1.0 cannot
/// hold (control characters, such as a PDF's form feeds between pages) or would change (a
/// carriage return, which XML readers turn into a line feed) is written as the workbook's own
/// escape, `_xHHHH_` (ECMA-376's ST_Xstring), which Excel, LibreOffice and our reader turn
/// back into the character; and text that already reads as such an escape has its `_`
/// escaped (`_x005F_`), so it reads back as written.
fn escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for (at, c) in text.char_indices() {
        match c {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '\t' | '\n' => escaped.push(c),
            '_' if reads_as_escape(&text[at..]) => escaped.push_str("_x005F_"),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => {
                escaped.push_str(&format!("_x{:04X}_", c as u32));
            }
            c => escaped.push(c),
        }
    }
    escaped
}

/// Whether `text` starts with `_xHHHH_` (four hexadecimal digits, either case).
fn reads_as_escape(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.len() >= 7 && bytes.starts_with(b"_x") && bytes[2..6].iter().all(u8::is_ascii_hexdigit) && bytes[6] == b'_'
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Limits, ReadOptions, read_table};

    fn sample() -> Table {
        Table {
            header: vec!["text".into(), "class".into(), "label".into(), "ä b".into()],
            rows: vec![
                vec![
                    "Café, \"quoted\"; & <tag>".into(),
                    "food".into(),
                    "positive".into(),
                    "007".into(),
                ],
                vec!["  two\nlines  ".into(), "".into(), "negative".into(), "3.50".into()],
                vec!["الخدمة سيئة؟".into(), "service".into(), "".into(), "".into()],
                vec!["=HYPERLINK(\"x\")".into(), "+1".into(), "'-2".into(), "@me\tand".into()],
            ],
        }
    }

    #[test]
    fn every_format_reads_back_unchanged() {
        for format in [Format::Csv, Format::Json, Format::Jsonl, Format::Xlsx] {
            let mut bytes = Vec::new();
            write_table(format, &sample(), &mut bytes).unwrap();
            let back = read_table(format, &bytes[..], ReadOptions::default(), &Limits::default()).unwrap();
            assert_eq!(back, sample(), "{format:?}");
        }
    }

    #[test]
    fn txt_keeps_the_first_column_one_line_each() {
        let mut bytes = Vec::new();
        write_table(Format::Txt, &sample(), &mut bytes).unwrap();
        let back = read_table(
            Format::Txt,
            &bytes[..],
            ReadOptions { header_first: false },
            &Limits::default(),
        )
        .unwrap();
        assert_eq!(
            back.column(&crate::ColumnRef::Index(0)).unwrap(),
            [
                "Café, \"quoted\"; & <tag>",
                "  two lines  ",
                "الخدمة سيئة؟",
                "=HYPERLINK(\"x\")"
            ]
        );
    }

    #[test]
    fn csv_cells_never_start_a_formula() {
        let mut bytes = Vec::new();
        write_table(Format::Csv, &sample(), &mut bytes).unwrap();
        let text = String::from_utf8(bytes).unwrap();
        let formula = text.lines().last().unwrap();
        assert_eq!(formula, "\"'=HYPERLINK(\"\"x\"\")\",'+1,''-2,'@me\tand");
    }

    #[test]
    fn a_sheet_ends_at_its_last_row() {
        let mut writer = RowWriter::new(Format::Xlsx, vec!["text".into()]).unwrap();
        writer.start().unwrap();
        let row = vec!["a".to_owned()];
        for _ in 1..XLSX_MAX_ROWS {
            writer.row(&row).unwrap();
        }
        let refused = writer.row(&row).unwrap_err();
        assert!(
            matches!(
                refused,
                TextError::TooLarge {
                    limit: Limit::Rows,
                    max: 1_048_576,
                    ..
                }
            ),
            "{refused:?}"
        );
    }

    #[test]
    fn xml_holds_control_characters_as_the_workbooks_escapes() {
        assert_eq!(escape("a\u{1}b\tc&\r\n"), "a_x0001_b\tc&amp;_x000D_\n");
        assert_eq!(escape("_x00e9_ _x12_ _y0041_"), "_x005F_x00e9_ _x12_ _y0041_");
    }

    #[test]
    fn an_xlsx_cell_reads_back_with_its_control_characters_and_escape_lookalikes() {
        let table = Table {
            header: vec!["text".into(), "_x0041_".into()],
            rows: vec![vec![
                "Page 1\u{c}Page 2\r\nend\u{1}\u{FFFF}".into(),
                "_x000D_ and _X0041_ and _x00".into(),
            ]],
        };
        let mut bytes = Vec::new();
        write_table(Format::Xlsx, &table, &mut bytes).unwrap();
        let back = read_table(Format::Xlsx, &bytes[..], ReadOptions::default(), &Limits::default()).unwrap();
        assert_eq!(back, table);
    }
}
