//! The served OpenAPI document: a snapshot (a route change shows up in review) and the
//! operations of API.md that exist so far, each at its method and path; no two schema types
//! share a name.

use crate::common::{Backend, TestApp};
use reqwest::Method;
use serde_json::Value;
use std::path::PathBuf;

/// operationId, method, path: API.md's rows for every operation served so far (contract.txt,
/// one operation a line, `#` for a comment).
fn contract() -> Vec<(&'static str, &'static str, &'static str)> {
    include_str!("contract.txt")
        .lines()
        .filter(|line| !line.trim().is_empty() && !line.starts_with('#'))
        .map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            assert_eq!(fields.len(), 3, "contract.txt: {line}");
            (fields[0], fields[1], fields[2])
        })
        .collect()
}

async fn served() -> Value {
    let app = TestApp::start(Backend::Sqlite).await.expect("app");
    app.call(Method::GET, "/openapi.json", None, None).await.expect(200)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_operation_is_served_at_its_contract_path() {
    let document = served().await;
    assert_eq!(document["openapi"], "3.1.0");
    let contract = contract();
    assert_eq!(contract.len(), 142, "contract.txt lists every operation");
    for (id, method, path) in contract {
        let operation = &document["paths"][path][method];
        assert_eq!(operation["operationId"], id, "{method} {path}");
        let public = lector_api::openapi::PUBLIC_OPERATIONS.contains(&id);
        assert_eq!(operation.get("security").is_none(), public, "{id}: security");
        assert!(
            operation["responses"]["default"].is_object(),
            "{id}: problem answer documented"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openapi_document_matches_its_snapshot() {
    let document = served().await;
    let rendered = serde_json::to_string_pretty(&document).unwrap() + "\n";
    let snapshot = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/api/snapshots/openapi.json");
    if std::env::var("LECTOR_UPDATE_SNAPSHOTS").is_ok_and(|v| v == "1") {
        std::fs::write(&snapshot, &rendered).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&snapshot)
        .unwrap_or_else(|_| panic!("{} is missing: run with LECTOR_UPDATE_SNAPSHOTS=1", snapshot.display()));
    assert!(
        expected == rendered,
        "the OpenAPI document changed; review it and run with LECTOR_UPDATE_SNAPSHOTS=1 to accept"
    );
}

/// utoipa names a component after its type and keeps one of two types of the same name,
/// silently: the document then describes one of them wrongly. Every `ToSchema` type of the API
/// has a name of its own.
#[test]
fn schema_names_are_unique() {
    let mut names: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    let mut files = vec![PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src")];
    while let Some(path) = files.pop() {
        if path.is_dir() {
            files.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
            continue;
        }
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let source = std::fs::read_to_string(&path).unwrap();
        let mut derives_schema = false;
        for line in source.lines().map(str::trim) {
            if line.starts_with("#[derive(") && line.contains("ToSchema") {
                derives_schema = true;
            } else if derives_schema && !line.starts_with('#') && !line.starts_with("///") {
                let words: Vec<&str> = line.split_whitespace().collect();
                if let Some(at) = words.iter().position(|w| *w == "struct" || *w == "enum") {
                    let name = words[at + 1]
                        .trim_end_matches(['{', ';', '('])
                        .split('<')
                        .next()
                        .unwrap();
                    names
                        .entry(name.to_owned())
                        .or_default()
                        .push(path.display().to_string());
                }
                derives_schema = false;
            }
        }
    }
    assert!(names.len() > 50, "the scan finds the API's types: {}", names.len());
    let twice: Vec<_> = names.iter().filter(|(_, places)| places.len() > 1).collect();
    assert!(twice.is_empty(), "ToSchema types sharing a name: {twice:?}");
}
