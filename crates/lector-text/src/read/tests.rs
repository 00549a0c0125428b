//! Reader tests per format, through the public entry points.

use super::xlsx_fixture::{sheet_xml, xlsx_bytes, xlsx_with_sheet};
use super::*;
use crate::table::ColumnRef;

fn read(format: Format, bytes: &[u8]) -> Result<Table> {
    read_table(format, bytes, ReadOptions::default(), &Limits::default())
}

/// Asserts that reading went over `limit`.
fn assert_over(error: &TextError, limit: Limit) {
    assert!(
        matches!(error, TextError::TooLarge { limit: over, .. } if *over == limit),
        "{error}"
    );
}

fn strings(rows: &[&[&str]]) -> Vec<Vec<String>> {
    rows.iter()
        .map(|row| row.iter().map(|c| c.to_string()).collect())
        .collect()
}

#[test]
fn csv_with_comma_bom_crlf_and_quoted_newlines() {
    let bytes = b"\xEF\xBB\xBFtext,label\r\n\"Hello, world.\nSecond line.\",pos\r\nplain,neg\r\n";
    let table = read(Format::Csv, bytes).unwrap();
    assert_eq!(table.header, ["text", "label"]);
    assert_eq!(
        table.rows,
        strings(&[&["Hello, world.\nSecond line.", "pos"], &["plain", "neg"]])
    );
}

#[test]
fn csv_with_semicolons_and_tabs() {
    let table = read(Format::Csv, "name;preis\nÖl;3,5\nCafé;2\n".as_bytes()).unwrap();
    assert_eq!(table.rows, strings(&[&["Öl", "3,5"], &["Café", "2"]]));
    let table = super::read_table(
        Format::Csv,
        &b"a\tb\n1\t2\n"[..],
        ReadOptions::default(),
        &Limits::default(),
    );
    assert_eq!(table.unwrap().header, ["a", "b"]);
}

#[test]
fn single_column_csv_keeps_commas_in_its_text() {
    let table = read(Format::Csv, b"text\nHello, world.\n\"Quoted; with \"\"quotes\"\"\"\n").unwrap();
    assert_eq!(table.header, ["text"]);
    assert_eq!(table.rows, strings(&[&["Hello, world."], &["Quoted; with \"quotes\""]]));
    assert_eq!(read(Format::Csv, b"").unwrap(), Table::default());
}

#[test]
fn csv_without_header_names_columns_by_index() {
    let options = ReadOptions { header_first: false };
    let table = read_table(Format::Csv, &b"a,b\nc,d\n"[..], options, &Limits::default()).unwrap();
    assert_eq!(table.header, ["0", "1"]);
    assert_eq!(table.rows.len(), 2);
    assert_eq!(table.column(&ColumnRef::Name("1".into())).unwrap(), ["b", "d"]);
}

#[test]
fn csv_ragged_row_names_its_line() {
    let error = read(Format::Csv, b"a,b\n1,2\n\"x\ny\",2,3\n").unwrap_err();
    assert_eq!(error.status(), 422);
    assert_eq!(error.location(), Some(&Location::Line(3)));
    assert!(error.to_string().contains("3 fields but the header has 2"), "{error}");
}

#[test]
fn csv_in_latin1_is_refused_naming_the_line() {
    let error = read(Format::Csv, b"name,city\nJ\xFCrgen,K\xF6ln\n").unwrap_err();
    assert_eq!(error.status(), 422);
    assert_eq!(error.location(), Some(&Location::Line(2)));
    assert!(error.to_string().contains("not UTF-8"), "{error}");
}

#[test]
fn preview_keeps_the_first_rows_checks_the_rest_and_selects_columns() {
    let mut csv = String::from("id,text\n");
    for i in 0..1_000 {
        csv.push_str(&format!("{i},row {i}\n"));
    }
    let broken = format!("{csv}broken,row,at,the,end\n");
    let refused = preview(
        Format::Csv,
        broken.as_bytes(),
        3,
        ReadOptions::default(),
        &Limits::default(),
    )
    .unwrap_err();
    assert!(refused.to_string().contains("line 1002"), "{refused}");
    let few = Limits {
        max_rows: 999,
        ..Limits::default()
    };
    let refused = preview(Format::Csv, csv.as_bytes(), 3, ReadOptions::default(), &few).unwrap_err();
    assert_eq!(refused.status(), 413, "{refused}");
    let preview = preview(
        Format::Csv,
        csv.as_bytes(),
        3,
        ReadOptions::default(),
        &Limits::default(),
    )
    .unwrap();
    assert_eq!(
        preview.rows,
        strings(&[&["id", "text"], &["0", "row 0"], &["1", "row 1"], &["2", "row 2"]])
    );
    assert_eq!(preview.data_rows, 1_000);
    let header = &preview.rows[0];
    assert_eq!(ColumnRef::Name("text".into()).resolve(header).unwrap(), 1);
    assert_eq!(ColumnRef::Index(0).resolve(header).unwrap(), 0);
    // Named by neither: the `text` column where there is one, else the first.
    assert_eq!(ColumnRef::chosen(None, None).resolve(header).unwrap(), 1);
    assert_eq!(
        ColumnRef::chosen(None, None)
            .resolve(&strings(&[&[" Text ", "id"]])[0])
            .unwrap(),
        0
    );
    assert_eq!(
        ColumnRef::chosen(None, None)
            .resolve(&strings(&[&["id", "body"]])[0])
            .unwrap(),
        0
    );
    assert!(ColumnRef::chosen(None, None).resolve(&[]).is_err());
    assert_eq!(ColumnRef::chosen(Some(0), None), ColumnRef::Index(0));
    assert_eq!(ColumnRef::chosen(Some(0), Some("text")), ColumnRef::Name("text".into()));
    assert_eq!(
        ColumnRef::Name("label".into()).resolve(header).unwrap_err().status(),
        422
    );
}

#[test]
fn streaming_reads_batches_with_line_numbers() {
    let csv: String = std::iter::once("text\n".to_string())
        .chain((0..10).map(|i| format!("doc {i}\n")))
        .collect();
    let mut rows = open_rows(Format::Csv, csv.as_bytes(), ReadOptions::default(), &Limits::default()).unwrap();
    let first = rows.next_batch(4).unwrap();
    assert_eq!(first.len(), 4);
    assert_eq!(
        first[0],
        Row {
            number: 2,
            cells: vec!["doc 0".into()]
        }
    );
    assert_eq!(rows.next_batch(100).unwrap().len(), 6);
    assert!(rows.next_batch(100).unwrap().is_empty());
    assert_eq!(rows.rows_read(), 10);
}

#[test]
fn over_limit_files_are_413() {
    let small = Limits {
        max_bytes: 10,
        ..Limits::default()
    };
    for format in [Format::Csv, Format::Txt, Format::Json, Format::Jsonl, Format::Xlsx] {
        let error = read_table(format, &b"0123456789abcdef"[..], ReadOptions::default(), &small).unwrap_err();
        assert_eq!(error.status(), 413, "{format:?}: {error}");
    }
    let rows = Limits {
        max_rows: 2,
        ..Limits::default()
    };
    let error = read_table(
        Format::Txt,
        &b"a\nb\nc\nd\n"[..],
        ReadOptions { header_first: false },
        &rows,
    )
    .unwrap_err();
    assert_eq!(error.status(), 413);
    assert_eq!(error.location(), Some(&Location::Line(3)));
    // A JSON array is refused at its first item past the limit, whatever follows it.
    let error = read_table(
        Format::Json,
        &b"[\"a\", \"b\", \"c\", 1, {]"[..],
        ReadOptions::default(),
        &rows,
    )
    .unwrap_err();
    assert_eq!(error.status(), 413, "{error}");
    assert_eq!(error.location(), Some(&Location::JsonPath("$[2]".into())));
    let table = read_table(Format::Json, &b"[\"a\", \"b\"]"[..], ReadOptions::default(), &rows).unwrap();
    assert_eq!(table.rows.len(), 2);
    let cells = Limits {
        max_cell_chars: 3,
        ..Limits::default()
    };
    let error = read_table(
        Format::Csv,
        "a,b\nÖÖÖ,ÖÖÖÖ\n".as_bytes(),
        ReadOptions::default(),
        &cells,
    )
    .unwrap_err();
    assert_eq!(error.status(), 413);
    let columns = Limits {
        max_columns: 2,
        ..Limits::default()
    };
    let error = read_table(Format::Csv, &b"a,b,c\n"[..], ReadOptions::default(), &columns).unwrap_err();
    assert_eq!(error.status(), 413);
}

#[test]
fn txt_is_one_document_per_line() {
    let bytes = "Erster Satz. Zweiter.\r\n\n  \nالجملة الثانية\n".as_bytes();
    let options = ReadOptions { header_first: false };
    let table = read_table(Format::Txt, bytes, options, &Limits::default()).unwrap();
    assert_eq!(table.header, ["0"]);
    assert_eq!(table.rows, strings(&[&["Erster Satz. Zweiter."], &["الجملة الثانية"]]));
    let with_header = read(Format::Txt, b"text\none\ntwo\n").unwrap();
    assert_eq!(with_header.header, ["text"]);
    assert_eq!(with_header.rows.len(), 2);
    let error = read(Format::Txt, b"ok\n\xFF\n").unwrap_err();
    assert_eq!(error.location(), Some(&Location::Line(2)));
}

#[test]
fn json_objects_keep_key_order_and_union_keys() {
    let bytes = br#"[{"text": "Hi.", "stars": 5, "ok": true, "meta": {"a": [1]}}, {"text": "Yo.", "extra": null}]"#;
    let table = read(Format::Json, bytes).unwrap();
    assert_eq!(table.header, ["text", "stars", "ok", "meta", "extra"]);
    assert_eq!(
        table.rows,
        strings(&[&["Hi.", "5", "true", r#"{"a":[1]}"#, ""], &["Yo.", "", "", "", ""]])
    );
}

#[test]
fn json_strings_give_one_column() {
    let table = read(Format::Json, "[\"Café.\", \"Öl.\"]".as_bytes()).unwrap();
    assert_eq!(table.header, ["0"]);
    assert_eq!(table.rows, strings(&[&["Café."], &["Öl."]]));
    assert_eq!(table.column(&ColumnRef::Index(0)).unwrap(), ["Café.", "Öl."]);
}

#[test]
fn malformed_json_names_the_position_or_path() {
    let error = read(Format::Json, b"[{\"text\": \"a\"},\n {\"text\": }]").unwrap_err();
    assert_eq!(error.status(), 422);
    assert!(
        matches!(error.location(), Some(Location::JsonText { line: 2, .. })),
        "{error}"
    );
    let error = read(Format::Json, br#"[{"text": "a"}, 5]"#).unwrap_err();
    assert_eq!(error.location(), Some(&Location::JsonPath("$[1]".into())));
    let error = read(Format::Json, br#"{"text": "a"}"#).unwrap_err();
    assert_eq!(error.location(), Some(&Location::JsonPath("$".into())));
    let error = read(Format::Json, br#"["a", {"text": "b"}]"#).unwrap_err();
    assert_eq!(error.location(), Some(&Location::JsonPath("$[1]".into())));
}

#[test]
fn deep_json_is_refused_with_its_path() {
    let deep = format!(r#"[{{"text": "a", "meta": {}1{}}}]"#, "[".repeat(40), "]".repeat(40));
    let error = read(Format::Json, deep.as_bytes()).unwrap_err();
    assert_eq!(error.status(), 413);
    assert_eq!(error.location(), Some(&Location::JsonPath("$[0].meta".into())));
    let very_deep = format!("[{}]", "[".repeat(10_000));
    assert_eq!(read(Format::Json, very_deep.as_bytes()).unwrap_err().status(), 422);
}

#[test]
fn jsonl_streams_and_names_lines() {
    let bytes = "{\"text\": \"Café.\", \"label\": \"pos\"}\n\n{\"label\": \"neg\", \"text\": \"Öl.\"}\n".as_bytes();
    let table = read(Format::Jsonl, bytes).unwrap();
    assert_eq!(table.header, ["text", "label"]);
    assert_eq!(table.rows, strings(&[&["Café.", "pos"], &["Öl.", "neg"]]));

    let error = table_err(Format::Jsonl, b"{\"text\": \"a\"}\n{\"text\": \"b\", \"other\": 1}\n");
    assert_eq!(error.location(), Some(&Location::Line(2)));
    let error = table_err(Format::Jsonl, b"{\"text\": \"a\"}\n\n{\"text\": \n");
    assert!(
        matches!(error.location(), Some(Location::JsonText { line: 3, .. })),
        "{error}"
    );
    let strings_only = read(Format::Jsonl, b"\"one\"\n\"two\"\n").unwrap();
    assert_eq!(strings_only.header, ["0"]);
    assert_eq!(strings_only.rows.len(), 2);
}

fn table_err(format: Format, bytes: &[u8]) -> TextError {
    read(format, bytes).unwrap_err()
}

#[test]
fn xlsx_first_sheet_with_numbers_and_header() {
    let rows = strings(&[&["text", "stars"], &["Café & Öl", "5"], &["Nice.", "3.5"]]);
    let bytes = xlsx_bytes(&rows);
    let table = read(Format::Xlsx, &bytes).unwrap();
    assert_eq!(table.header, ["text", "stars"]);
    assert_eq!(table.rows, strings(&[&["Café & Öl", "5"], &["Nice.", "3.5"]]));
    let options = ReadOptions { header_first: false };
    let table = read_table(Format::Xlsx, &bytes[..], options, &Limits::default()).unwrap();
    assert_eq!(table.header, ["0", "1"]);
    assert_eq!(table.rows.len(), 3);
    let preview = preview(Format::Xlsx, &bytes[..], 1, ReadOptions::default(), &Limits::default()).unwrap();
    assert_eq!(preview.rows, strings(&[&["text", "stars"], &["Café & Öl", "5"]]));
    assert_eq!(preview.data_rows, 2);
}

#[test]
fn xlsx_sparse_rows_are_padded_and_blank_rows_skipped() {
    let sheet = sheet_xml(&strings(&[&["a", "b", "c"]])).replace(
        "</sheetData>",
        r#"<row r="3"><c r="C3" t="inlineStr"><is><t>z</t></is></c></row></sheetData>"#,
    );
    let table = read(Format::Xlsx, &xlsx_with_sheet(&sheet)).unwrap();
    assert_eq!(table.rows, strings(&[&["", "", "z"]]));
    assert_eq!(
        open_rows(
            Format::Xlsx,
            &xlsx_with_sheet(&sheet)[..],
            ReadOptions::default(),
            &Limits::default()
        )
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .number,
        3
    );
}

#[test]
fn xlsx_cell_over_the_limit_names_the_cell() {
    let rows = strings(&[&["text", "label"], &["ok", "x"], &["fine", "much too long"]]);
    let limits = Limits {
        max_cell_chars: 5,
        ..Limits::default()
    };
    let error = read_table(Format::Xlsx, &xlsx_bytes(&rows)[..], ReadOptions::default(), &limits).unwrap_err();
    assert_eq!(error.status(), 413);
    assert_eq!(error.location(), Some(&Location::Cell("B3".into())));
}

#[test]
fn truncated_or_corrupt_xlsx_is_422() {
    let bytes = xlsx_bytes(&strings(&[&["text"], &["a"]]));
    for broken in [
        &bytes[..bytes.len() / 2],
        &b"PK\x03\x04 not really a zip"[..],
        &b"text\nplain csv\n"[..],
    ] {
        let error = read(Format::Xlsx, broken).unwrap_err();
        assert_eq!(error.status(), 422, "{error}");
    }
    let bad_xml = xlsx_with_sheet(
        "<worksheet><sheetData><row r=\"1\"><c r=\"A1\" t=\"inlineStr\"><is><t>a</t></is></c></row><row",
    );
    let error = read(Format::Xlsx, &bad_xml).unwrap_err();
    assert_eq!(error.status(), 422, "{error}");
}

#[test]
fn xlsx_zip_bomb_is_refused_from_the_directory_quickly() {
    use std::io::Write;
    use zip::write::{SimpleFileOptions, ZipWriter};
    // A member of 8 MiB of zeros compresses about 1000:1.
    let mut zip = ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    zip.start_file("xl/worksheets/sheet1.xml", options).unwrap();
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..8 {
        zip.write_all(&zeros).unwrap();
    }
    let bomb = zip.finish().unwrap().into_inner();
    assert!(bomb.len() < 64 * 1024, "bomb is {} bytes", bomb.len());

    let started = std::time::Instant::now();
    let error = read(Format::Xlsx, &bomb).unwrap_err();
    assert!(
        started.elapsed() < std::time::Duration::from_millis(100),
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(error.status(), 413);
    assert_over(&error, Limit::CompressionRatio);
    assert_eq!(
        error.location(),
        Some(&Location::ZipEntry("xl/worksheets/sheet1.xml".into()))
    );

    let tight = Limits {
        max_decompressed_bytes: 1 << 20,
        ..Limits::default()
    };
    let error = read_table(Format::Xlsx, &bomb[..], ReadOptions::default(), &tight).unwrap_err();
    assert_over(&error, Limit::DecompressedSize);
}

#[test]
fn formats_from_file_names() {
    assert_eq!(Format::from_file_name("reviews.CSV"), Some(Format::Csv));
    assert_eq!(Format::from_file_name("a.b.jsonl"), Some(Format::Jsonl));
    assert_eq!(Format::from_file_name("book.xlsx"), Some(Format::Xlsx));
    assert_eq!(Format::from_file_name("noextension"), None);
    assert_eq!(Format::from_file_name("old.xls"), None);
}

#[test]
fn garbage_never_panics() {
    let mut state: u64 = 0x2545_F491_4F6C_DD1D;
    for round in 0..400u64 {
        let bytes: Vec<u8> = (0..round % 97)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                b"a,;\t\"\n\r{}[]:\xC3\xA9\xFF0 "[(state % 17) as usize]
            })
            .collect();
        for format in [Format::Csv, Format::Txt, Format::Json, Format::Jsonl, Format::Xlsx] {
            let _ = read(format, &bytes);
        }
    }
}

/// Sets the declared uncompressed size of `member` in both its local and central headers.
fn patch_declared_size(zip: &mut [u8], member: &str, size: u32) {
    let name = member.as_bytes();
    let mut at = 0;
    while at + 46 + name.len() <= zip.len() {
        let signature = &zip[at..at + 4];
        let (size_offset, name_offset) = match signature {
            b"PK\x03\x04" => (22, 30),
            b"PK\x01\x02" => (24, 46),
            _ => {
                at += 1;
                continue;
            }
        };
        if &zip[at + name_offset..at + name_offset + name.len()] == name {
            zip[at + size_offset..at + size_offset + 4].copy_from_slice(&size.to_le_bytes());
        }
        at += 4;
    }
}

#[test]
fn xlsx_declaring_a_huge_member_is_refused_before_decompression() {
    let mut bytes = xlsx_bytes(&strings(&[&["text"], &["a"]]));
    patch_declared_size(&mut bytes, "xl/worksheets/sheet1.xml", 0xFFFF_FFF0);
    let started = std::time::Instant::now();
    let error = read(Format::Xlsx, &bytes).unwrap_err();
    assert!(started.elapsed() < std::time::Duration::from_millis(100));
    assert_over(&error, Limit::DecompressedSize);
}

#[test]
fn xlsx_member_bigger_than_declared_is_cut_at_the_declared_size() {
    let rows: Vec<Vec<String>> = (0..2_000).map(|i| vec![format!("row {i}")]).collect();
    let mut bytes = xlsx_bytes(&rows);
    patch_declared_size(&mut bytes, "xl/worksheets/sheet1.xml", 200);
    let error = read(Format::Xlsx, &bytes).unwrap_err();
    assert_eq!(error.status(), 422, "{error}");
}

#[test]
fn damaged_xlsx_bytes_never_panic() {
    let rows: Vec<Vec<String>> = (0..50).map(|i| vec![format!("row {i}"), i.to_string()]).collect();
    let good = xlsx_bytes(&rows);
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    for _ in 0..300 {
        let mut bytes = good.clone();
        for _ in 0..4 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let at = (state % bytes.len() as u64) as usize;
            bytes[at] ^= (state >> 56) as u8 | 1;
        }
        if let Err(error) = read(Format::Xlsx, &bytes) {
            assert!(matches!(error.status(), 413 | 422), "{error}");
        }
    }
}
