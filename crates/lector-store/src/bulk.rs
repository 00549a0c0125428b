//! Bulk inserts of documents and their segments, the hot path of every import: multi-row
//! `INSERT … VALUES` statements, with anonymous placeholders on SQLite and numbered ones on
//! PostgreSQL (see [`crate::placeholders`]).
//!
//! Tried and not kept: one JSON array per statement on PostgreSQL, unpacked by
//! `json_to_recordset` (a constant statement text, one parameter); and binary
//! `COPY … FROM STDIN` through a PostgreSQL connection beside the `Any` pool, with the ids
//! taken from the sequence first. Measured in pairs against this on the loaded development
//! machine neither was faster (docs/BENCHMARKS.md): PostgreSQL spends its time on each row,
//! not on receiving the statement. What did help there is not waiting for the disk at each
//! batch's commit (`Store::begin_redoable_write`), checking the foreign keys of documents
//! and segments once per statement instead of once per row (migration 0018), and a plain
//! INSERT of documents: the callers give only free places (an import skips the places a
//! re-run finds filled, under its fence), and `ON CONFLICT … DO NOTHING` made PostgreSQL
//! insert each row speculatively, about a fifth of the documents' insert time.

use crate::documents::{NewDocument, NewSegment};
use crate::{Backend, db, placeholders};
use lector_core::Result;
use sqlx::{Any, Row, Transaction};
use std::collections::HashMap;

/// Rows per multi-row INSERT, documents (7 parameters each) and segments (5 each): well under
/// SQLite's 32,766 and PostgreSQL's 65,535 bound parameters.
const DOCUMENT_ROWS_PER_INSERT: usize = 500;
const SEGMENT_ROWS_PER_INSERT: usize = 1000;

/// Inserts documents at their places in a group, then their segments. The places must be
/// free: a place taken fails the batch (the group's unique place), it is never overwritten.
/// `ids` are the documents' ids where they were reserved beforehand (one per document, in
/// order), or empty for the database to assign them. Answers how many documents were stored.
pub(crate) async fn insert_grouped_batch(
    tx: &mut Transaction<'static, Any>,
    backend: Backend,
    project_id: i64,
    group_id: i64,
    documents: &[(i64, &NewDocument)],
    ids: &[i64],
) -> Result<usize> {
    let created = lector_core::time::Timestamp::now().micros();
    let place = Place {
        project_id,
        group_id,
        created,
    };
    let ids = insert_documents(tx, place, documents, ids, backend).await?;
    let segments: Vec<(i64, i64, &NewSegment)> = documents
        .iter()
        .filter_map(|(position, document)| ids.get(position).map(|id| (*id, document)))
        .flat_map(|(id, document)| {
            document
                .segments
                .iter()
                .enumerate()
                .map(move |(index, segment)| (id, index as i64, segment))
        })
        .collect();
    insert_segments(tx, &segments, backend).await?;
    Ok(ids.len())
}

/// What every document of a batch shares.
#[derive(Debug, Clone, Copy)]
struct Place {
    project_id: i64,
    group_id: i64,
    created: i64,
}

/// The ids of the documents stored, by their group position.
type StoredIds = HashMap<i64, i64>;

async fn insert_documents(
    tx: &mut Transaction<'static, Any>,
    place: Place,
    documents: &[(i64, &NewDocument)],
    reserved: &[i64],
    backend: Backend,
) -> Result<StoredIds> {
    let mut ids = HashMap::with_capacity(documents.len());
    let (id_column, width) = if reserved.is_empty() { ("", 7) } else { ("id, ", 8) };
    for (n, chunk) in documents.chunks(DOCUMENT_ROWS_PER_INSERT).enumerate() {
        let sql = format!(
            "INSERT INTO documents ({id_column}project_id, group_id, group_position, text, meta, language, created) \
             VALUES {} RETURNING id, group_position",
            placeholders(chunk.len(), width, backend)
        );
        let mut query = sqlx::query(&sql);
        let chunk_ids = reserved.get(n * DOCUMENT_ROWS_PER_INSERT..).unwrap_or_default();
        for (i, (position, document)) in chunk.iter().enumerate() {
            if let Some(id) = chunk_ids.get(i) {
                query = query.bind(*id);
            }
            query = query
                .bind(place.project_id)
                .bind(place.group_id)
                .bind(*position)
                .bind(&document.text)
                .bind(document.meta.to_string())
                .bind(&document.language)
                .bind(place.created);
        }
        collect_ids(query.fetch_all(&mut **tx).await.map_err(db)?, &mut ids)?;
    }
    Ok(ids)
}

fn collect_ids(rows: Vec<sqlx::any::AnyRow>, ids: &mut StoredIds) -> Result<()> {
    for row in rows {
        let id: i64 = row.try_get("id").map_err(db)?;
        let position: i64 = row.try_get("group_position").map_err(db)?;
        ids.insert(position, id);
    }
    Ok(())
}

async fn insert_segments(
    tx: &mut Transaction<'static, Any>,
    segments: &[(i64, i64, &NewSegment)],
    backend: Backend,
) -> Result<()> {
    for chunk in segments.chunks(SEGMENT_ROWS_PER_INSERT) {
        let sql = format!(
            "INSERT INTO segments (document_id, position, span_start, span_end, text, layout) VALUES {}",
            placeholders(chunk.len(), 6, backend)
        );
        let mut query = sqlx::query(&sql);
        for (document_id, position, segment) in chunk {
            query = query
                .bind(*document_id)
                .bind(*position)
                .bind(segment.start)
                .bind(segment.end)
                .bind(&segment.text)
                .bind(&segment.layout);
        }
        query.execute(&mut **tx).await.map_err(db)?;
    }
    Ok(())
}
