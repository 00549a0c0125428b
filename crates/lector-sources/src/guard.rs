//! The guard against server-side request forgery: a source reaches public addresses only,
//! unless the configuration allows private ones (all, or listed networks).
//!
//! The guard resolves a host itself, refuses it when any of its addresses is not permitted, and
//! hands the checked addresses to the connection, so DNS cannot answer differently between the
//! check and the connect (no rebinding window). IPv4 addresses embedded in IPv6 ones (mapped,
//! NAT64, 6to4) are judged as the IPv4 address they carry.

use lector_core::config::{SourcesConfig, parse_network};
use lector_core::{Error, Result};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// Which addresses sources may reach.
#[derive(Debug, Clone, Default)]
pub struct NetPolicy {
    allow_private: bool,
    allowed: Vec<(IpAddr, u8)>,
}

impl NetPolicy {
    pub fn from_config(config: &SourcesConfig) -> Result<Self, String> {
        let allowed = config
            .allowed_networks
            .iter()
            .map(|n| parse_network(n))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            allow_private: config.allow_private,
            allowed: allowed
                .into_iter()
                .map(|(ip, prefix)| canonical_network(ip, prefix))
                .collect(),
        })
    }

    /// Public addresses only.
    pub fn public_only() -> Self {
        Self::default()
    }

    /// Whether a source may connect to `ip`.
    pub fn permits(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        self.allow_private || is_public(ip) || self.allowed.iter().any(|(net, prefix)| contains(*net, *prefix, ip))
    }

    /// Resolves `host` (a name or an IP literal) and returns its addresses when every one of
    /// them is permitted.
    pub async fn resolve(&self, host: &str, port: u16) -> Result<Vec<SocketAddr>> {
        let addrs = self.lookup(host, port).await?;
        self.check(host, &addrs)?;
        Ok(addrs)
    }

    /// The addresses of `host` (a name or an IP literal), unchecked; 400 when it has none.
    pub(crate) async fn lookup(&self, host: &str, port: u16) -> Result<Vec<SocketAddr>> {
        let literal = host.trim_start_matches('[').trim_end_matches(']');
        let addrs: Vec<SocketAddr> = match literal.parse::<IpAddr>() {
            Ok(ip) => vec![SocketAddr::new(ip, port)],
            Err(_) => tokio::net::lookup_host((host, port))
                .await
                .map_err(|_| Error::bad_request(format!("the host {host} does not resolve")))?
                .take(MAX_ADDRESSES)
                .collect(),
        };
        if addrs.is_empty() {
            return Err(Error::bad_request(format!("the host {host} does not resolve")));
        }
        Ok(addrs)
    }

    /// The guard's refusal (400) when one of the addresses `host` resolved to is not permitted.
    pub(crate) fn check(&self, host: &str, addrs: &[SocketAddr]) -> Result<()> {
        if addrs.iter().any(|a| !self.permits(a.ip())) {
            tracing::info!(host, "a source was refused: the host resolves to a non-public address");
            return Err(Error::bad_request(format!(
                "the host {host} resolves to a private or reserved address, which sources may not reach"
            )));
        }
        Ok(())
    }
}

/// Addresses of one host the guard considers (and pins).
const MAX_ADDRESSES: usize = 16;

/// The IPv4 address an IPv6 address carries (mapped, NAT64 well-known prefix, 6to4), or itself.
pub fn canonical(ip: IpAddr) -> IpAddr {
    let IpAddr::V6(v6) = ip else { return ip };
    if let Some(v4) = v6.to_ipv4_mapped() {
        return IpAddr::V4(v4);
    }
    let s = v6.segments();
    let o = v6.octets();
    if s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0, 0, 0, 0] {
        return IpAddr::V4(Ipv4Addr::new(o[12], o[13], o[14], o[15]));
    }
    if s[0] == 0x2002 {
        return IpAddr::V4(Ipv4Addr::new(o[2], o[3], o[4], o[5]));
    }
    ip
}

fn canonical_network(ip: IpAddr, prefix: u8) -> (IpAddr, u8) {
    match (ip, canonical(ip)) {
        (IpAddr::V6(v6), IpAddr::V4(v4)) if v6.to_ipv4_mapped().is_some() => {
            (IpAddr::V4(v4), prefix.saturating_sub(96))
        }
        _ => (ip, prefix),
    }
}

fn contains(net: IpAddr, prefix: u8, ip: IpAddr) -> bool {
    match (net, ip) {
        (IpAddr::V4(net), IpAddr::V4(ip)) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
            u32::from(net) & mask == u32::from(ip) & mask
        }
        (IpAddr::V6(net), IpAddr::V6(ip)) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
            u128::from(net) & mask == u128::from(ip) & mask
        }
        _ => false,
    }
}

/// Whether an address is globally reachable: not private, loopback, link-local, shared (CGNAT),
/// multicast, unspecified, documentation, benchmarking or otherwise reserved.
pub fn is_public(ip: IpAddr) -> bool {
    match canonical(ip) {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

const V4_RESERVED: &[([u8; 4], u8)] = &[
    ([0, 0, 0, 0], 8),       // "this network", unspecified
    ([10, 0, 0, 0], 8),      // private
    ([100, 64, 0, 0], 10),   // shared address space (CGNAT)
    ([127, 0, 0, 0], 8),     // loopback
    ([169, 254, 0, 0], 16),  // link-local (cloud metadata lives here)
    ([172, 16, 0, 0], 12),   // private
    ([192, 0, 0, 0], 24),    // IETF protocol assignments
    ([192, 0, 2, 0], 24),    // documentation
    ([192, 88, 99, 0], 24),  // 6to4 relay anycast
    ([192, 168, 0, 0], 16),  // private
    ([198, 18, 0, 0], 15),   // benchmarking
    ([198, 51, 100, 0], 24), // documentation
    ([203, 0, 113, 0], 24),  // documentation
    ([224, 0, 0, 0], 4),     // multicast
    ([240, 0, 0, 0], 4),     // reserved, broadcast
];

fn is_public_v4(ip: Ipv4Addr) -> bool {
    !V4_RESERVED
        .iter()
        .any(|(net, prefix)| contains(IpAddr::from(*net), *prefix, IpAddr::V4(ip)))
}

const V6_RESERVED: &[(&str, u8)] = &[
    ("2001::", 23),     // IETF protocol assignments (Teredo, benchmarking, ORCHID)
    ("2001:db8::", 32), // documentation
    ("3fff::", 20),     // documentation
];

fn is_public_v6(ip: Ipv6Addr) -> bool {
    // Only global unicast (2000::/3) is public; that leaves out unspecified, loopback,
    // IPv4-compatible, NAT64 local use, discard, unique-local, link-local, site-local and
    // multicast. The IPv4-carrying forms were judged by their IPv4 address already.
    let global_unicast = ip.segments()[0] & 0xe000 == 0x2000;
    global_unicast
        && !V6_RESERVED.iter().any(|(net, prefix)| {
            let net: Ipv6Addr = net.parse().expect("a valid network");
            contains(IpAddr::V6(net), *prefix, IpAddr::V6(ip))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn non_public_addresses_are_refused() {
        for text in [
            "0.0.0.0",
            "10.1.2.3",
            "100.64.0.1",
            "100.127.255.255",
            "127.0.0.1",
            "127.255.0.9",
            "169.254.169.254",
            "172.16.0.1",
            "172.31.255.255",
            "192.0.0.8",
            "192.0.2.1",
            "192.168.1.1",
            "198.18.0.1",
            "198.51.100.7",
            "203.0.113.9",
            "224.0.0.1",
            "239.255.255.250",
            "240.0.0.1",
            "255.255.255.255",
            // IPv6
            "::",
            "::1",
            "::127.0.0.1",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "fec0::1",
            "ff02::1",
            "100::1",
            "2001:db8::1",
            "2001::1",
            "2001:2::1",
            "3fff::1",
            "64:ff9b:1::1",
            // IPv4 carried in IPv6: mapped, NAT64, 6to4
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::ffff:169.254.169.254",
            "64:ff9b::a00:1",
            "64:ff9b::7f00:1",
            "2002:a00:1::",
            "2002:7f00:1::1",
        ] {
            assert!(!is_public(ip(text)), "{text} must not be public");
            assert!(!NetPolicy::public_only().permits(ip(text)), "{text}");
        }
    }

    #[test]
    fn public_addresses_pass() {
        for text in [
            "1.1.1.1",
            "8.8.8.8",
            "100.63.255.255",
            "100.128.0.0",
            "172.15.255.255",
            "172.32.0.0",
            "192.169.0.1",
            "2606:4700:4700::1111",
            "2a00:1450:4001::200e",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "2002:808:808::",
        ] {
            assert!(is_public(ip(text)), "{text} is public");
        }
    }

    #[test]
    fn configuration_opens_private_networks() {
        let config = SourcesConfig {
            allowed_networks: vec!["10.1.0.0/16".into(), "127.0.0.1".into(), "fd00::/8".into()],
            ..SourcesConfig::default()
        };
        let policy = NetPolicy::from_config(&config).unwrap();
        assert!(policy.permits(ip("10.1.200.3")));
        assert!(
            policy.permits(ip("::ffff:10.1.0.9")),
            "mapped forms of an allowed address"
        );
        assert!(policy.permits(ip("127.0.0.1")));
        assert!(policy.permits(ip("fd12::1")));
        assert!(!policy.permits(ip("10.2.0.1")));
        assert!(!policy.permits(ip("127.0.0.2")));
        assert!(!policy.permits(ip("169.254.169.254")));
        let open = NetPolicy::from_config(&SourcesConfig {
            allow_private: true,
            ..SourcesConfig::default()
        })
        .unwrap();
        assert!(open.permits(ip("169.254.169.254")) && open.permits(ip("::1")));
    }

    #[tokio::test]
    async fn names_are_resolved_and_checked() {
        let policy = NetPolicy::public_only();
        let err = policy.resolve("localhost", 80).await.unwrap_err();
        assert_eq!(err.status(), 400);
        assert!(err.detail.contains("private or reserved"), "{}", err.detail);
        let err = policy.resolve("[::1]", 80).await.unwrap_err();
        assert!(err.detail.contains("private or reserved"), "{}", err.detail);
        assert!(
            policy
                .resolve("name.invalid", 80)
                .await
                .unwrap_err()
                .detail
                .contains("does not resolve")
        );
        let allowed = NetPolicy::from_config(&SourcesConfig {
            allowed_networks: vec!["127.0.0.0/8".into(), "::1".into()],
            ..SourcesConfig::default()
        })
        .unwrap();
        let addrs = allowed.resolve("127.0.0.1", 8080).await.unwrap();
        assert_eq!(addrs, vec![SocketAddr::from(([127, 0, 0, 1], 8080))]);
    }
}
