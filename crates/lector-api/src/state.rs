//! What every handler shares: the store, the configuration, the token keys, the mailer and
//! the metrics. Built once at start-up by [`AppState::new`].

use crate::keys::AuthKeys;
use crate::metrics::Metrics;
use lector_core::config::Config;
use lector_jobs::Mailer;
use lector_store::{Blobs, Store};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

#[derive(Clone, Debug)]
pub struct AppState {
    pub store: Store,
    pub config: Arc<Config>,
    pub auth: Arc<AuthKeys>,
    pub mailer: Arc<Mailer>,
    pub metrics: Arc<Metrics>,
    /// The credential key, address policy and limits of external sources.
    pub sources: Arc<lector_sources::Sources>,
    /// Models loaded for analysis on this node.
    pub models: Arc<crate::model_cache::ModelCache>,
    /// The BASE models (sentence encoders) installed on this node.
    pub base_models: Arc<lector_embed::BaseModels>,
    /// Where uploaded PDFs and images are read: child processes under limits.
    pub sandbox: lector_extract::sandbox::Sandbox,
    /// Calls each workflow's webhook may take a minute on this node.
    pub webhook_limits: Arc<crate::workflow_runs::WebhookLimiter>,
    /// The production addresses this node served in the last second.
    pub webhook_hooks: Arc<crate::workflow_runs::HookCache>,
    /// Runs of `immediately` workflows this node may have going at once
    /// (`workflows.max_background_runs`); each run holds a place until it ends.
    pub background_runs: Arc<crate::background_runs::BackgroundRuns>,
    /// Runs of `last_step` workflows going on, their callers waiting or gone (at most
    /// `http.max_connections`).
    pub answering_runs: Arc<crate::background_runs::RunPlaces>,
    /// Finished executions on their way to the store, written in batches.
    pub execution_log: crate::execution_log::ExecutionLog,
    /// Where the web app's files come from.
    pub web_app: crate::web_app::WebApp,
    /// Each caller's requests in hand, which take turns (`http.requests_per_caller`).
    pub turns: crate::turns::Turns,
}

impl AppState {
    /// Opens the store (migrating it), loads or creates the token and credential keys, and builds
    /// the mailer. It publishes nothing: a serving node then calls
    /// [`AppState::publish_base_models`], a command (`lector user create`) does not.
    pub async fn new(config: Config) -> Result<Self, String> {
        config.validate()?;
        config.create_data_dir()?;
        let blobs = Blobs::from_config(&config).map_err(|e| format!("blob store: {}", e.detail))?;
        let store = Store::open_with(
            &config.database_url(),
            config.database_max_connections,
            config.idle_in_transaction(),
        )
        .await
        .map_err(|e| format!("database: {}", e.detail))?
        .with_blobs(blobs);
        let auth = AuthKeys::load(&config)?;
        let mailer = Mailer::new(&config.mail, &config.mail_outbox())?;
        let sources = lector_sources::Sources::new(&config)?;
        let base_models = Arc::new(lector_embed::BaseModels::new(config.base_models_dir()));
        let sandbox = lector_extract::sandbox::Sandbox::new(&config.extract).map_err(|e| e.detail)?;
        let execution_log = crate::execution_log::ExecutionLog::start(store.clone());
        let web_app = crate::web_app::WebApp::from_config(config.ui_dir.as_deref());
        let background_runs = Arc::new(crate::background_runs::BackgroundRuns::new(
            config.workflows.max_background_runs,
        ));
        let answering_runs = Arc::new(crate::background_runs::RunPlaces::new(config.http.max_connections));
        Ok(Self {
            store,
            config: Arc::new(config),
            auth: Arc::new(auth),
            mailer: Arc::new(mailer),
            metrics: Arc::new(Metrics::new()),
            sources: Arc::new(sources),
            models: Arc::new(crate::model_cache::ModelCache::new(
                crate::model_cache::DEFAULT_CAPACITY,
                base_models.clone(),
            )),
            base_models,
            sandbox,
            webhook_limits: Arc::default(),
            webhook_hooks: Arc::default(),
            background_runs,
            answering_runs,
            execution_log,
            web_app,
            turns: Default::default(),
        })
    }
}

/// The address of the connection a request came in on, put into request extensions by the
/// server's accept loop.
#[derive(Debug, Clone, Copy)]
pub struct PeerAddr(pub SocketAddr);

impl PeerAddr {
    /// The peer as the rules compare it: an IPv4 client reaching a dual-stack listener (`[::]`)
    /// arrives as `::ffff:a.b.c.d`, and is `a.b.c.d` here, so a trusted proxy or a per-address
    /// limit written in IPv4 applies to it.
    pub fn of(peer: SocketAddr) -> Self {
        Self(SocketAddr::new(peer.ip().to_canonical(), peer.port()))
    }
}

impl AppState {
    /// Publishes the BASE models installed on this node, for a node that serves: additive, so a
    /// node without some never takes them from the others (lector-store's `base_models`).
    pub async fn publish_base_models(&self) -> Result<(), String> {
        lector_jobs::publish_base_models(&self.store, &self.base_models)
            .await
            .map_err(|e| format!("base models: {}", e.detail))
    }

    /// The client's address: the peer, or in proxy mode, when the peer is a trusted proxy, the
    /// address the proxies report (see [`forwarded_client`]).
    pub fn client_ip(&self, parts: &axum::http::request::Parts) -> Option<IpAddr> {
        let peer = parts.extensions.get::<PeerAddr>().map(|p| p.0.ip())?;
        if self.config.tls == lector_core::config::TlsMode::Proxy && self.config.trusted_proxies.contains(&peer) {
            return Some(forwarded_client(peer, &self.config.trusted_proxies, &parts.headers));
        }
        Some(peer)
    }

    /// The client as the rate limits count it ([`rate_key`]), `unknown` without an address.
    pub fn client_key(&self, parts: &axum::http::request::Parts) -> String {
        self.client_ip(parts).map_or_else(|| "unknown".into(), rate_key)
    }
}

/// An address as the rate limits count it: an IPv4 address itself, an IPv6 one by the /64 it
/// is in. A host given IPv6 is usually given a whole /64 (2^64 addresses), so a limit per
/// address would let it start afresh with every request.
fn rate_key(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => {
                let [a, b, c, d, ..] = v6.segments();
                format!("{}/64", std::net::Ipv6Addr::new(a, b, c, d, 0, 0, 0, 0))
            }
        },
    }
}

/// The client behind a trusted proxy `peer`: `X-Forwarded-For` read from the right, where each
/// proxy appends the address it was called from, skipping the trusted proxies themselves. The
/// first address that is not a trusted proxy is the client; everything left of it was written
/// by the client and may be forged. An entry that is not an address ends the walk at the last
/// trusted hop.
fn forwarded_client(peer: IpAddr, trusted: &[IpAddr], headers: &axum::http::HeaderMap) -> IpAddr {
    let entries: Vec<&str> = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .collect();
    let mut client = peer;
    for entry in entries.into_iter().rev() {
        let Ok(hop) = entry.trim().parse::<IpAddr>().map(|hop| hop.to_canonical()) else {
            break;
        };
        client = hop;
        if !trusted.contains(&hop) {
            break;
        }
    }
    client
}

#[cfg(test)]
mod tests {
    use super::forwarded_client;
    use axum::http::HeaderMap;
    use std::net::IpAddr;

    fn client(trusted: &[&str], values: &[&str]) -> String {
        let peer: IpAddr = "127.0.0.1".parse().unwrap();
        let trusted: Vec<IpAddr> = trusted.iter().map(|t| t.parse().unwrap()).collect();
        let mut headers = HeaderMap::new();
        for value in values {
            headers.append("x-forwarded-for", value.parse().unwrap());
        }
        forwarded_client(peer, &trusted, &headers).to_string()
    }

    #[test]
    fn the_client_is_the_right_most_hop_a_trusted_proxy_appended() {
        let proxy = ["127.0.0.1"];
        assert_eq!(client(&proxy, &["198.51.100.7"]), "198.51.100.7");
        // What the client wrote itself, left of what the proxy appended, does not count.
        assert_eq!(client(&proxy, &["10.1.2.3, 198.51.100.7"]), "198.51.100.7");
        assert_eq!(client(&proxy, &["10.1.2.3", "198.51.100.7"]), "198.51.100.7");
        assert_eq!(client(&proxy, &["garbage, 198.51.100.7"]), "198.51.100.7");
        // A chain of trusted proxies is walked through.
        let chain = ["127.0.0.1", "10.0.0.5"];
        assert_eq!(client(&chain, &["203.0.113.9, 198.51.100.7, 10.0.0.5"]), "198.51.100.7");
        // Nothing usable: the nearest trusted hop.
        assert_eq!(client(&proxy, &[]), "127.0.0.1");
        assert_eq!(client(&proxy, &["198.51.100.7, unknown"]), "127.0.0.1");
        assert_eq!(client(&chain, &["unknown, 10.0.0.5"]), "10.0.0.5");
        // A dual-stack proxy's IPv4 hops, written IPv6-mapped, are the IPv4 addresses.
        assert_eq!(
            client(&chain, &["::ffff:198.51.100.7, ::ffff:10.0.0.5"]),
            "198.51.100.7"
        );
    }

    #[test]
    fn rate_limits_count_an_ipv6_client_by_its_64() {
        let key = |ip: &str| super::rate_key(ip.parse().unwrap());
        assert_eq!(key("198.51.100.7"), "198.51.100.7");
        assert_eq!(key("::ffff:198.51.100.7"), "198.51.100.7");
        assert_eq!(key("2001:db8:1:2:3:4:5:6"), "2001:db8:1:2::/64");
        assert_eq!(key("2001:db8:1:2::ffff"), key("2001:db8:1:2:3:4:5:6"));
        assert_ne!(key("2001:db8:1:3::1"), key("2001:db8:1:2::1"));
    }

    #[test]
    fn an_ipv4_peer_on_a_dual_stack_listener_is_its_ipv4_address() {
        let mapped: std::net::SocketAddr = "[::ffff:127.0.0.1]:4000".parse().unwrap();
        assert_eq!(super::PeerAddr::of(mapped).0.to_string(), "127.0.0.1:4000");
        let v6: std::net::SocketAddr = "[2001:db8::1]:4000".parse().unwrap();
        assert_eq!(super::PeerAddr::of(v6).0, v6);
    }
}
