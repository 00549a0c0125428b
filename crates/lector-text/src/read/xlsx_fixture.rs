//! Workbooks for the reader tests: cells that look like numbers are written as numbers (to test
//! numeric cells, unlike [`crate::write_table`], which keeps every cell text), and raw sheet XML can
//! be packed as it is, so tests can craft broken sheets.

use std::fmt::Write as _;

/// A workbook whose first sheet holds `rows`.
pub fn xlsx_bytes(rows: &[Vec<String>]) -> Vec<u8> {
    xlsx_with_sheet(&sheet_xml(rows))
}

/// The sheet XML for `rows`.
pub fn sheet_xml(rows: &[Vec<String>]) -> String {
    let mut xml = String::from(
        r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>"#,
    );
    for (r, row) in rows.iter().enumerate() {
        let _ = write!(xml, r#"<row r="{}">"#, r + 1);
        for (c, value) in row.iter().enumerate() {
            let name = super::cell_name(r as u32, c as u32);
            if value.parse::<f64>().is_ok_and(f64::is_finite) {
                let _ = write!(xml, r#"<c r="{name}"><v>{value}</v></c>"#);
            } else {
                let escaped = value.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
                let _ = write!(xml, r#"<c r="{name}" t="inlineStr"><is><t>{escaped}</t></is></c>"#);
            }
        }
        xml.push_str("</row>");
    }
    xml.push_str("</sheetData></worksheet>");
    xml
}

/// A workbook with the given sheet XML as its first sheet.
pub fn xlsx_with_sheet(sheet: &str) -> Vec<u8> {
    crate::write::workbook(sheet).expect("an in-memory workbook")
}
