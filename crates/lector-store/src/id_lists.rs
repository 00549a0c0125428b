//! Reading rows by a list of ids (`column IN (…)`), a bounded number of ids per statement so
//! that no list passes the backends' limits on parameters.

use crate::{Param, db, numbered};
use lector_core::Result;
use sqlx::{Any, Row, Transaction};

/// The `id`s `select` (`SELECT id FROM … WHERE … column`, with `$1` bound to `first` when
/// given) answers for `column IN ids`, asked 500 ids at a time.
pub(crate) async fn ids_where_in(
    tx: &mut Transaction<'static, Any>,
    select: &str,
    first: Option<i64>,
    ids: &[i64],
) -> Result<Vec<i64>> {
    let rows = rows_where_in(tx, select, first, ids).await?;
    rows.iter().map(|row| row.try_get::<i64, _>("id").map_err(db)).collect()
}

/// The rows `select` (`SELECT … FROM … WHERE … column`, with `$1` bound to `first` when given)
/// answers for `column IN ids`, asked 500 ids at a time.
pub(crate) async fn rows_where_in(
    tx: &mut Transaction<'static, Any>,
    select: &str,
    first: Option<i64>,
    ids: &[i64],
) -> Result<Vec<sqlx::any::AnyRow>> {
    rows_where_in_then(tx, select, first, ids, "").await
}

/// [`ids_where_in`] (without `first`) that also holds the rows answered with a share lock on
/// PostgreSQL (`FOR SHARE`): their updates and deletions wait for this transaction, and it
/// waits for those under way. SQLite's writers take turns anyway.
pub(crate) async fn ids_where_in_held(
    tx: &mut Transaction<'static, Any>,
    select: &str,
    ids: &[i64],
) -> Result<Vec<i64>> {
    // In the order of their ids, as other writers of several rows take them: across the
    // statements of a long list too.
    let lock = if tx.backend_name() == "PostgreSQL" {
        " ORDER BY id FOR SHARE"
    } else {
        ""
    };
    let mut ids = ids.to_vec();
    ids.sort_unstable();
    ids.dedup();
    let rows = rows_where_in_then(tx, select, None, &ids, lock).await?;
    rows.iter().map(|row| row.try_get::<i64, _>("id").map_err(db)).collect()
}

async fn rows_where_in_then(
    tx: &mut Transaction<'static, Any>,
    select: &str,
    first: Option<i64>,
    ids: &[i64],
    then: &str,
) -> Result<Vec<sqlx::any::AnyRow>> {
    let mut found = Vec::with_capacity(ids.len());
    for chunk in ids.chunks(500) {
        let mut params: Vec<Param> = first.into_iter().map(Param::Int).collect();
        let places = numbered(params.len() + 1, chunk.len());
        let sql = format!("{select} IN ({places}){then}");
        params.extend(chunk.iter().map(|id| Param::Int(*id)));
        let rows = Param::bind_all(sqlx::query(&sql), params)
            .fetch_all(&mut **tx)
            .await
            .map_err(db)?;
        found.extend(rows);
    }
    Ok(found)
}
