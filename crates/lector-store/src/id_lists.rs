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
    let mut found = Vec::with_capacity(ids.len());
    for chunk in ids.chunks(500) {
        let mut params: Vec<Param> = first.into_iter().map(Param::Int).collect();
        let places = numbered(params.len() + 1, chunk.len());
        let sql = format!("{select} IN ({places})");
        params.extend(chunk.iter().map(|id| Param::Int(*id)));
        let rows = Param::bind_all(sqlx::query(&sql), params)
            .fetch_all(&mut **tx)
            .await
            .map_err(db)?;
        found.extend(rows);
    }
    Ok(found)
}
