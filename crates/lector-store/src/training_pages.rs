//! The pages a training learns a LABEL model's fields from: the pages of its sessions with the
//! labels tagged on them, and the approved extraction reviews' pages with the values their
//! reviewers gave.
//!
//! Both are read within one [`PageBudget`], of pages and of the characters of their layouts
//! together. A review keeps a whole document's layout (up to 4 MiB of JSON), so a count of
//! pages alone let one training hold gigabytes: the sizes are read first (of at most four times
//! the pages left), and only the pages that fit are read whole, one at a time.

use crate::jobs::Lease;
use crate::{Store, db};
use lector_core::Result;
use sqlx::Row;

/// A page of a session (a segment read from a PDF or image) with the labels tagged on parts of
/// its text, as character ranges of the page's text.
#[derive(Debug, Clone, PartialEq)]
pub struct TrainingPage {
    pub segment_id: i64,
    /// The page's words and boxes (JSON, `lector_extract::Page`).
    pub layout: String,
    pub spans: Vec<(String, usize, usize)>,
}

/// A submitted review's pages and the values its reviewer gave, to learn from.
#[derive(Debug, Clone, PartialEq)]
pub struct ReviewedPages {
    /// JSON, a list of `lector_extract::Page`.
    pub pages: String,
    /// `{field: value}`.
    pub corrected: serde_json::Value,
}

/// Most pages (annotated or reviewed) one training reads to learn fields from.
pub const MAX_TRAINING_PAGES: usize = 2000;

/// Most characters of layout JSON (annotated and reviewed pages together) one training reads
/// to learn fields from; parsed, they take a few times that in memory.
pub const MAX_TRAINING_LAYOUT_CHARS: u64 = 64 * 1024 * 1024;

/// What a training may still read: pages (a review counts as one), and characters of layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageBudget {
    pub pages: usize,
    pub chars: u64,
}

impl PageBudget {
    /// One training's budget.
    pub const TRAINING: Self = Self {
        pages: MAX_TRAINING_PAGES,
        chars: MAX_TRAINING_LAYOUT_CHARS,
    };

    pub fn is_spent(&self) -> bool {
        self.pages == 0 || self.chars == 0
    }

    /// How many sizes to read for the pages left: a few times as many, so that those too large
    /// for what is left can be passed over, but never every layout of a large project (the
    /// database reads each value to measure it).
    fn sizes_to_read(&self) -> i64 {
        i64::try_from(self.pages.saturating_mul(4)).unwrap_or(i64::MAX)
    }

    /// Of `sizes` (an id and its layout's characters), in their order, the ids that fit, taken
    /// out of the budget; one larger than what is left is passed over for the smaller ones after
    /// it.
    fn take(&mut self, sizes: impl IntoIterator<Item = (i64, u64)>) -> Vec<i64> {
        let mut chosen = Vec::new();
        for (id, size) in sizes {
            if self.is_spent() {
                break;
            }
            if size <= self.chars {
                self.pages -= 1;
                self.chars -= size;
                chosen.push(id);
            }
        }
        chosen
    }
}

/// `(id, size)` of each row of a query selecting `id` and `size`.
fn sizes_of(rows: &[sqlx::any::AnyRow]) -> Result<Vec<(i64, u64)>> {
    rows.iter()
        .map(|row| {
            let size: i64 = row.try_get("size").map_err(db)?;
            Ok((row.try_get("id").map_err(db)?, u64::try_from(size).unwrap_or(0)))
        })
        .collect()
}

impl Store {
    /// The pages of a session that carry a layout, in segment order, with the spans tagged with
    /// labels on them; as many as `budget` holds, taken out of it.
    pub async fn training_pages(
        &self,
        lease: &Lease,
        session_id: i64,
        budget: &mut PageBudget,
    ) -> Result<Vec<TrainingPage>> {
        if budget.is_spent() {
            return Ok(Vec::new());
        }
        let rows = sqlx::query(
            "SELECT g.id, CAST(LENGTH(g.layout) AS BIGINT) AS size \
             FROM segment_statuses st JOIN segments g ON g.id = st.segment_id JOIN sessions s ON s.id = st.session_id \
             WHERE st.session_id = $1 AND s.project_id = $2 AND g.layout IS NOT NULL ORDER BY g.id LIMIT $3",
        )
        .bind(session_id)
        .bind(lease.job.project_id)
        .bind(budget.sizes_to_read())
        .fetch_all(&self.pool)
        .await
        .map_err(db)?;
        let mut pages = Vec::new();
        for segment_id in budget.take(sizes_of(&rows)?) {
            if let Some(page) = self.training_page(session_id, segment_id).await? {
                pages.push(page);
            }
        }
        Ok(pages)
    }

    /// One page of a session, with its labelled spans; `None` if its layout went meanwhile.
    async fn training_page(&self, session_id: i64, segment_id: i64) -> Result<Option<TrainingPage>> {
        let Some(row) = sqlx::query("SELECT span_start, layout FROM segments WHERE id = $1 AND layout IS NOT NULL")
            .bind(segment_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(db)?
        else {
            return Ok(None);
        };
        let page_start: i64 = row.try_get("span_start").map_err(db)?;
        let spans = sqlx::query(
            "SELECT l.name, t.span_start, t.span_end FROM segment_tags t JOIN labels l ON l.id = t.label_id \
             WHERE t.segment_id = $1 AND t.session_id = $2 AND t.span_start IS NOT NULL AND t.span_end IS NOT NULL \
             ORDER BY t.id",
        )
        .bind(segment_id)
        .bind(session_id)
        .fetch_all(&self.pool)
        .await
        .map_err(db)?;
        // Tags count in the document's code points; the page's text starts at its segment.
        let relative = |at: i64| usize::try_from(at - page_start).unwrap_or(0);
        let spans = spans
            .iter()
            .map(|span| {
                let (start, end): (i64, i64) = (
                    span.try_get("span_start").map_err(db)?,
                    span.try_get("span_end").map_err(db)?,
                );
                Ok((span.try_get("name").map_err(db)?, relative(start), relative(end)))
            })
            .collect::<Result<_>>()?;
        Ok(Some(TrainingPage {
            segment_id,
            layout: row.try_get("layout").map_err(db)?,
            spans,
        }))
    }

    /// The approved reviews of the project's HITL configurations that kept their pages and
    /// have values to learn, newest first; as many as `budget` holds, taken out of it.
    pub async fn reviewed_pages(&self, lease: &Lease, budget: &mut PageBudget) -> Result<Vec<ReviewedPages>> {
        if budget.is_spent() {
            return Ok(Vec::new());
        }
        let rows = sqlx::query(
            "SELECT r.id, CAST(LENGTH(r.pages) AS BIGINT) AS size FROM hitl_reviews r JOIN hitls h ON h.id = r.hitl_id \
             WHERE h.project_id = $1 AND r.status = 'APPROVED' AND r.pages IS NOT NULL AND r.corrected IS NOT NULL \
             AND r.corrected <> '{}' ORDER BY r.id DESC LIMIT $2",
        )
        .bind(lease.job.project_id)
        .bind(budget.sizes_to_read())
        .fetch_all(&self.pool)
        .await
        .map_err(db)?;
        let mut reviewed = Vec::new();
        for review_id in budget.take(sizes_of(&rows)?) {
            let row = sqlx::query("SELECT pages, corrected FROM hitl_reviews WHERE id = $1 AND pages IS NOT NULL")
                .bind(review_id)
                .fetch_optional(&self.pool)
                .await
                .map_err(db)?;
            let Some(row) = row else { continue };
            let corrected: Option<String> = row.try_get("corrected").map_err(db)?;
            reviewed.push(ReviewedPages {
                pages: row.try_get("pages").map_err(db)?,
                corrected: corrected
                    .and_then(|c| serde_json::from_str(&c).ok())
                    .unwrap_or(serde_json::Value::Null),
            });
        }
        Ok(reviewed)
    }
}

#[cfg(test)]
mod tests {
    use super::PageBudget;

    #[test]
    fn a_budget_takes_what_fits_in_order() {
        let mut budget = PageBudget { pages: 3, chars: 100 };
        // 70 fits; 50 would not after it and is passed over; 20 and 5 fit; the count ends the rest.
        let chosen = budget.take([(1, 70), (2, 50), (3, 20), (4, 5), (5, 1)]);
        assert_eq!(chosen, vec![1, 3, 4]);
        assert_eq!(budget, PageBudget { pages: 0, chars: 5 });
        assert!(budget.is_spent());
    }

    #[test]
    fn a_budget_is_shared_by_what_reads_from_it() {
        let mut budget = PageBudget { pages: 10, chars: 100 };
        assert_eq!(budget.take([(1, 60)]), vec![1]);
        assert_eq!(budget.take([(2, 60), (3, 40)]), vec![3]);
        assert!(budget.is_spent());
        assert!(budget.take([(4, 0)]).is_empty(), "no characters left");
    }
}
