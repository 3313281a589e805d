//! Which hosts a blob fetch may reach. Blob URLs are chosen by whoever posts an order, so an
//! agent that fetched any URL could be pointed at its own loopback services, a cloud
//! metadata endpoint (169.254.169.254) or its private network. By default only public
//! addresses are reached: a URL naming a private or local address is refused, a host name
//! is resolved by a resolver that drops such addresses (so a name cannot be re-pointed at
//! one between check and connect), and redirects are not followed. Localnets and tests
//! opt in to private hosts.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// What a [`BlobFetcher`](super::BlobFetcher) may reach.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FetchPolicy {
    /// Reach loopback, private, link-local and other non-public addresses too.
    pub allow_private_hosts: bool,
    /// A stalled transfer is abandoned after this long without bytes.
    pub read_timeout: Duration,
}

impl FetchPolicy {
    /// Public hosts only, or any host too when `allow_private_hosts` (an agent's
    /// `allow_private_blob_hosts` setting); a stalled transfer is cut after 30 s.
    pub fn new(allow_private_hosts: bool) -> FetchPolicy {
        FetchPolicy {
            allow_private_hosts,
            read_timeout: Duration::from_secs(30),
        }
    }

    /// Public hosts only: what agents use unless configured otherwise.
    pub fn public_hosts() -> FetchPolicy {
        FetchPolicy::new(false)
    }

    /// Any host, loopback included: localnets, tests, and a client's own tools.
    pub fn any_host() -> FetchPolicy {
        FetchPolicy::new(true)
    }

    /// An HTTP client that reaches only what this policy allows: without private hosts it
    /// resolves names to public addresses only, follows no redirect (one could lead to a
    /// private address literal) and uses no proxy (which would resolve names out of sight).
    /// Callers still check each URL with [`FetchPolicy::refuse`] for address literals.
    pub fn http_client(&self) -> reqwest::Result<reqwest::Client> {
        self.client_builder().build()
    }

    /// The builder behind [`FetchPolicy::http_client`], for callers that add settings.
    pub fn client_builder(&self) -> reqwest::ClientBuilder {
        let builder = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .read_timeout(self.read_timeout);
        if self.allow_private_hosts {
            return builder;
        }
        builder
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .dns_resolver(std::sync::Arc::new(PublicResolver))
    }

    /// Why `url` may not be fetched under this policy, if it may not.
    pub fn refuse(&self, url: &str) -> Option<String> {
        let parsed = match reqwest::Url::parse(url) {
            Ok(u) => u,
            Err(e) => return Some(format!("not a URL: {e}")),
        };
        if !matches!(parsed.scheme(), "http" | "https") {
            return Some(format!("scheme {} is not http or https", parsed.scheme()));
        }
        if self.allow_private_hosts {
            return None;
        }
        let host = parsed.host_str().unwrap_or_default();
        if host.eq_ignore_ascii_case("localhost")
            || host.to_ascii_lowercase().ends_with(".localhost")
        {
            return Some(format!("{host} is not a public host"));
        }
        // An address literal never reaches the resolver, so it is checked here; a name is
        // checked by the resolver at connect time.
        let literal = host.trim_start_matches('[').trim_end_matches(']');
        match literal.parse::<IpAddr>() {
            Ok(ip) if !is_public(ip) => Some(format!("{ip} is not a public address")),
            _ => None,
        }
    }
}

/// Whether `ip` is a globally routable unicast address (not loopback, private, link-local,
/// shared, documentation, benchmarking, multicast, broadcast or reserved).
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || a == 0
        || (a == 100 && (64..128).contains(&b)) // shared address space (carrier NAT)
        || (a == 192 && b == 0 && c == 0) // IETF protocol assignments
        || (a == 198 && (18..20).contains(&b)) // benchmarking
        || a >= 240) // reserved
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return is_public_v4(v4);
    }
    let s = ip.segments();
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_multicast()
        || (s[0] & 0xfe00) == 0xfc00 // unique local
        || (s[0] & 0xffc0) == 0xfe80 // link-local
        || (s[0] == 0x2001 && s[1] == 0x0db8) // documentation
        || (s[0] == 0x0064 && s[1] == 0xff9b)) // NAT64: an IPv4 address in disguise
}

/// Resolves names with the system resolver and keeps only public addresses.
#[derive(Debug, Default)]
struct PublicResolver;

impl Resolve for PublicResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_string();
        Box::pin(async move {
            let all: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let public: Vec<SocketAddr> = all.into_iter().filter(|a| is_public(a.ip())).collect();
            if public.is_empty() {
                return Err(format!("{host} resolves to no public address").into());
            }
            let addrs: Addrs = Box::new(public.into_iter());
            Ok(addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_and_local_addresses_are_not_public() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "224.0.0.1",
            "198.18.0.1",
            "192.0.2.1",
            "::1",
            "::",
            "fc00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "64:ff9b::a9fe:a9fe",
            "2001:db8::1",
        ] {
            assert!(!is_public(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["1.1.1.1", "8.8.8.8", "2606:4700::1111", "::ffff:8.8.8.8"] {
            assert!(is_public(ip.parse().unwrap()), "{ip}");
        }
    }

    #[test]
    fn urls_naming_local_hosts_are_refused_unless_allowed() {
        let strict = FetchPolicy::public_hosts();
        for url in [
            "http://127.0.0.1:8080/blob",
            "http://169.254.169.254/latest/meta-data/",
            "http://[::1]/x",
            "http://localhost/x",
            "http://10.0.0.7/x",
            "file:///etc/passwd",
        ] {
            assert!(strict.refuse(url).is_some(), "{url}");
        }
        assert!(strict.refuse("https://blobs.example.org/x").is_none());
        assert!(strict.refuse("http://8.8.8.8/x").is_none());
        let open = FetchPolicy::any_host();
        assert!(open.refuse("http://127.0.0.1:8080/blob").is_none());
        assert!(open.refuse("ftp://127.0.0.1/x").is_some());
    }
}
