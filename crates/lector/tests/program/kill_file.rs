//! A worker process killed (SIGKILL) in the middle of an import from an uploaded file: another
//! worker reads the file again from the blob store, skips the rows the first one stored, and
//! the group ends with every row once.

use crate::common::{SHORT_LEASE_SECS, kill_midway, taken_over, worker};
use lector_store::testing::{TestDatabase, owner_with_project};
use lector_store::{Backend, Blobs, FileSource, ImportOptions, Store};
use serde_json::json;

const ROWS: usize = 20_000;

async fn killed_worker_imports_the_file_once(backend: Backend) {
    let Some(database) = TestDatabase::create(backend).await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let blobs = Blobs::open(&dir.path().join("blobs").display().to_string()).unwrap();
    let store = Store::open(&database.url, 2).await.unwrap().with_blobs(blobs);
    let (scope, _, project) = owner_with_project(&store, "Files", lector_core::ProjectType::Class).await;
    let mut csv = String::from("text,n\n");
    for n in 0..ROWS {
        csv.push_str(&format!("Row {n}. It has two sentences.,{n}\n"));
    }
    let chunks = futures_util::stream::iter(vec![Ok(bytes::Bytes::from(csv))]);
    let upload = store
        .save_upload(
            &scope,
            lector_store::UploadFor::Project(project.id),
            "rows.csv",
            "csv",
            chunks,
            50 << 20,
        )
        .await
        .unwrap();
    let options = ImportOptions {
        language: "en".into(),
        split: true,
        file: Some(FileSource {
            upload_id: upload.id,
            column_index: None,
            column_name: Some("text".into()),
            header_first: true,
            max_bytes: 50 << 20,
            max_rows: lector_core::config::DEFAULT_MAX_ROWS,
        }),
    };
    let group = store
        .start_file_import(&scope, project.id, "rows", &upload, options)
        .await
        .unwrap();
    let job_id = group.task_id.unwrap();

    kill_midway(worker(&database.url, dir.path(), SHORT_LEASE_SECS), &store, job_id).await;
    let halfway = store.group(&scope, project.id, group.id).await.unwrap().document_count;
    assert!(
        halfway > 0 && halfway < ROWS as i64,
        "{halfway} documents after the kill"
    );

    let job = taken_over(&database.url, dir.path(), SHORT_LEASE_SECS, &store, job_id).await;
    let result = job.result.unwrap();
    assert_eq!(result["documents"], ROWS, "{result}");
    assert_eq!(
        result["stored_by_this_run"].as_i64().unwrap() + halfway,
        ROWS as i64,
        "the second run stored only what the first had not: {result}"
    );
    let group = store.group(&scope, project.id, group.id).await.unwrap();
    assert_eq!((group.document_count, group.status.as_str()), (ROWS as i64, "CREATED"));
    let filter = lector_store::DocumentFilter {
        group_id: Some(group.id),
        ..Default::default()
    };
    let (last, _) = store
        .documents(&scope, project.id, &filter, ROWS as i64 - 1, 1)
        .await
        .unwrap();
    assert_eq!(last[0].text, format!("Row {}. It has two sentences.", ROWS - 1));
    assert_eq!(last[0].meta, json!({"n": (ROWS - 1).to_string()}));
    assert!(
        store
            .upload(&scope, project.id, upload.id)
            .await
            .unwrap()
            .used
            .is_some()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_worker_imports_the_file_once_on_sqlite() {
    killed_worker_imports_the_file_once(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_worker_imports_the_file_once_on_postgres() {
    killed_worker_imports_the_file_once(Backend::Postgres).await;
}
