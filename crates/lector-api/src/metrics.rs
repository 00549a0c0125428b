//! Prometheus metrics: requests by route template, method and status, and their durations,
//! counted in this process; and, read at scrape time, the job queue (jobs by kind and state,
//! the age of the oldest runnable job per kind, leases reclaimed) from the store, which every
//! node shares, and this node's database pool.
//!
//! Routes are labelled by template (`/users/{user_id}`), never by raw path, and jobs by kind
//! and state, so label sets stay bounded. The queue's figures are the database's, so every API
//! node reports the same values (aggregate them with `max`, not `sum`).

use crate::error::ApiResult;
use crate::state::AppState;
use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::Response;
use lector_store::JobStatistics;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;
use std::time::Instant;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct JobLabels {
    kind: String,
    state: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabels {
    kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PoolLabels {
    /// `idle` or `in_use`.
    state: &'static str,
}

/// How long a scrape waits for the database (to check its token, then for the queue's
/// figures) before it counts it as down: two of these stay well inside Prometheus's default
/// 10 s scrape timeout, where the pool's own wait (10 s) would not.
pub const DATABASE_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

/// What the store and the pool say at scrape time.
#[derive(Debug, Clone)]
pub struct StoreFigures {
    /// `None` while the database does not answer: the queue's series are left out, and
    /// `lector_database_up` is 0.
    pub jobs: Option<JobStatistics>,
    /// Connections open in this node's pool.
    pub pool_size: u32,
    /// Of those, idle.
    pub pool_idle: usize,
    /// The most connections the pool opens.
    pub pool_max: u32,
}

/// Reads the store's figures and renders every metric: what `/metrics` answers.
pub async fn scrape(state: &AppState) -> ApiResult<String> {
    let jobs = match tokio::time::timeout(DATABASE_WAIT, state.store.job_statistics()).await {
        Ok(Ok(jobs)) => Some(jobs),
        Ok(Err(e)) if e.code == lector_core::ErrorCode::Unavailable => None,
        Ok(Err(e)) => return Err(e.into()),
        // Not answered in time: down, as far as this scrape can tell.
        Err(_) => None,
    };
    let (pool_size, pool_idle) = state.store.pool_usage();
    Ok(state.metrics.render(&StoreFigures {
        jobs,
        pool_size,
        pool_idle,
        pool_max: state.store.pool_capacity(),
    }))
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    method: String,
    route: String,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    method: String,
    route: String,
}

pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    durations: Family<RouteLabels, Histogram>,
    /// Ad-hoc analyses stopped because their client went away.
    abandoned_analyses: Counter,
    /// Who read them last ([`crate::auth::MetricsReader`]).
    pub reader: crate::auth::KnownMetricsReader,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("lector");
        let requests = Family::<RequestLabels, Counter>::default();
        let durations = Family::<RouteLabels, Histogram>::new_with_constructor(|| {
            Histogram::new(exponential_buckets(0.001, 2.0, 16))
        });
        registry.register("http_requests", "HTTP requests answered", requests.clone());
        registry.register(
            "http_request_duration_seconds",
            "Time to answer HTTP requests",
            durations.clone(),
        );
        let abandoned_analyses = Counter::default();
        registry.register(
            "adhoc_analyses_abandoned",
            "Ad-hoc analyses (/analyze) stopped because their client went away before the answer",
            abandoned_analyses.clone(),
        );
        Self {
            registry,
            requests,
            durations,
            abandoned_analyses,
            reader: Default::default(),
        }
    }

    /// Counts an ad-hoc analysis stopped because its client went away.
    pub fn count_abandoned_analysis(&self) {
        self.abandoned_analyses.inc();
    }

    /// The exposition text: this process's request metrics, then `store`'s figures.
    pub fn render(&self, store: &StoreFigures) -> String {
        let figures = store_registry(store);
        let mut text = String::new();
        let encoded = prometheus_client::encoding::text::encode_registry(&mut text, &self.registry)
            .and_then(|()| prometheus_client::encoding::text::encode_registry(&mut text, &figures))
            .and_then(|()| prometheus_client::encoding::text::encode_eof(&mut text));
        if let Err(e) = encoded {
            tracing::error!(error = %e, "cannot encode metrics");
        }
        text
    }
}

/// A registry of this scrape's store figures, built afresh so that a kind or state that has
/// no jobs any more leaves no stale series behind.
fn store_registry(store: &StoreFigures) -> Registry {
    let mut registry = Registry::with_prefix("lector");
    let up = Gauge::<i64>::default();
    up.set(i64::from(store.jobs.is_some()));
    registry.register(
        "database_up",
        "Whether the database answered this scrape (1) or not (0: the job series are left out)",
        up,
    );
    if let Some(jobs) = &store.jobs {
        register_queue(&mut registry, jobs);
    }
    let pool = Family::<PoolLabels, Gauge>::default();
    let idle = i64::try_from(store.pool_idle).unwrap_or(i64::MAX);
    pool.get_or_create(&PoolLabels { state: "idle" }).set(idle);
    pool.get_or_create(&PoolLabels { state: "in_use" })
        .set((i64::from(store.pool_size) - idle).max(0));
    let pool_max = Gauge::<i64>::default();
    pool_max.set(i64::from(store.pool_max));
    registry.register(
        "database_pool_connections",
        "Connections in this node's database pool, idle or in use",
        pool,
    );
    registry.register(
        "database_pool_max_connections",
        "The most connections this node's database pool opens",
        pool_max,
    );
    registry
}

/// The queue's series: jobs by kind and state, the oldest wait, the leases taken back.
fn register_queue(registry: &mut Registry, statistics: &JobStatistics) {
    let jobs = Family::<JobLabels, Gauge>::default();
    let oldest = Family::<KindLabels, Gauge<f64, AtomicU64>>::default();
    let reclaims = Family::<KindLabels, Counter>::default();
    for count in &statistics.jobs {
        let labels = JobLabels {
            kind: count.kind.clone(),
            state: count.state.as_str().to_owned(),
        };
        jobs.get_or_create(&labels)
            .set(count.jobs.try_into().unwrap_or(i64::MAX));
        // Every kind the queue has seen reports an age, 0 when none of its jobs waits.
        oldest
            .get_or_create(&KindLabels {
                kind: count.kind.clone(),
            })
            .set(0.0);
    }
    for (kind, seconds) in &statistics.oldest_queued_secs {
        oldest.get_or_create(&KindLabels { kind: kind.clone() }).set(*seconds);
    }
    for (kind, count) in &statistics.lease_reclaims {
        reclaims
            .get_or_create(&KindLabels { kind: kind.clone() })
            .inc_by(*count);
    }
    registry.register(
        "jobs",
        "Jobs by kind and state (the whole installation): queued and running now, done and failed since it began",
        jobs,
    );
    registry.register(
        "job_queue_oldest_age_seconds",
        "How long the oldest runnable queued job of each kind has waited since it became runnable or was last put back",
        oldest,
    );
    registry.register(
        "job_lease_reclaims",
        "Leases taken back from workers that stopped renewing them or died, by kind of job",
        reclaims,
    );
}

/// Counts and times every request.
pub async fn record(State(metrics): State<std::sync::Arc<Metrics>>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = method_label(request.method()).to_owned();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_else(|| "unmatched".to_owned());
    let response = next.run(request).await;
    let status = response.status().as_u16();
    metrics
        .requests
        .get_or_create(&RequestLabels {
            method: method.clone(),
            route: route.clone(),
            status,
        })
        .inc();
    metrics
        .durations
        .get_or_create(&RouteLabels { method, route })
        .observe(started.elapsed().as_secs_f64());
    response
}

/// The method as a label: only the standard methods name themselves, anything else is `other`,
/// so a client inventing methods cannot grow the label set without bound.
fn method_label(method: &axum::http::Method) -> &'static str {
    use axum::http::Method;
    const KNOWN: [Method; 9] = [
        Method::GET,
        Method::HEAD,
        Method::POST,
        Method::PUT,
        Method::DELETE,
        Method::PATCH,
        Method::OPTIONS,
        Method::CONNECT,
        Method::TRACE,
    ];
    KNOWN
        .iter()
        .find(|known| *known == method)
        .map_or("other", |known| known.as_str())
}

#[cfg(test)]
mod tests {
    use super::method_label;
    use axum::http::Method;

    #[test]
    fn unknown_methods_share_one_label() {
        assert_eq!(method_label(&Method::GET), "GET");
        assert_eq!(method_label(&Method::from_bytes(b"PROPFIND").unwrap()), "other");
        assert_eq!(method_label(&Method::from_bytes(b"X-RANDOM-123").unwrap()), "other");
    }
}
