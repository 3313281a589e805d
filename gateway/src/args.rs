//! The command line: where to listen, the providers' endpoints and how to weigh them.

use std::net::SocketAddr;
use std::str::FromStr;

use gpuchain_agent_kit::cli::GlobalArgs;
use gpuchain_types::Address;

/// `gpuchain-gateway`'s command line.
#[derive(Debug, clap::Parser)]
#[command(
    name = "gpuchain-gateway",
    version,
    about = "One OpenAI-compatible endpoint routed over many gpuchain providers' serving endpoints"
)]
pub struct Cli {
    /// Options every agent takes.
    #[command(flatten)]
    pub global: GlobalArgs,
    /// The gateway's settings.
    #[command(flatten)]
    pub gateway: GatewayArgs,
}

/// What the gateway serves and routes over.
#[derive(Debug, Clone, clap::Args)]
pub struct GatewayArgs {
    /// Address to listen on (port 0 picks one; the address is printed on stdout).
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// A provider's serving endpoint (`gpuchain-provider serve-model`): its base URL, then
    /// optionally `,price=N` (ugpu per million tokens), `,provider=ADDRESS` (its account on
    /// the chain, whose reputation then counts), `,region=NAME`, `,lease=ID` (its serving
    /// lease for this gateway's key: requests are signed, receipts kept and acknowledged) and
    /// `,model=NAME` (only this model is sent there, as on a lease, which serves one model).
    /// Repeat for each provider.
    #[arg(long = "upstream", value_parser = UpstreamSpec::from_str)]
    pub upstreams: Vec<UpstreamSpec>,
    /// Open a serving order with the client's key and route over its leases once it clears:
    /// `model=NAME,hash=BLAKE3,max-price=P,blocks=D,deposit=X` and optionally
    /// `,providers=N` (1), `,kind=generation|embedding`, `,bid-window=W` (5 blocks),
    /// `,region=R`. Each lease's endpoint is where its provider said, in its bid, it answers.
    /// Repeat for each model. Needs --node, --home, --key and --receipts.
    #[arg(long = "open", value_parser = crate::orders::OrderSpec::from_str)]
    pub open: Vec<crate::orders::OrderSpec>,
    /// Keep each model opened with --open served past its leases' end: this many blocks
    /// before they end, open the same order again and route over its leases once it clears
    /// (0: never; the model stops being served when its leases end).
    #[arg(long, default_value_t = 30)]
    pub renew_before_blocks: u64,
    /// Route over the serving leases of this client's existing order ID. Repeatable.
    #[arg(long = "order")]
    pub orders: Vec<u64>,
    /// How long to wait for an order to clear before giving up, in seconds.
    #[arg(long, default_value_t = 120)]
    pub order_wait_s: u64,
    /// Leave the orders opened with --open running when the gateway stops (by default they
    /// are ended, and the rest of their deposits come back after the claim grace).
    #[arg(long)]
    pub keep_orders: bool,
    /// CometBFT RPC of a node, to read the providers' reputation and the serving verdicts
    /// on their leases (every --chain-read-every-ms).
    #[arg(long)]
    pub node: Option<String>,
    /// How often reputation and serving verdicts are read from --node, in milliseconds.
    #[arg(long, default_value_t = 5_000)]
    pub chain_read_every_ms: u64,
    /// How often each provider is probed (`GET /v1/models`), in milliseconds.
    #[arg(long, default_value_t = 1_000)]
    pub probe_interval_ms: u64,
    /// A request whose first token has not come within this many milliseconds is sent to
    /// the next-best provider as well; the first to answer is kept. A request may set its
    /// own with the `x-gpuchain-latency-budget-ms` header.
    #[arg(long, default_value_t = 1_500)]
    pub hedge_after_ms: u64,
    /// Providers tried for one request before it is given up.
    #[arg(long, default_value_t = 3)]
    pub max_attempts: usize,
    /// Weight of a provider's measured time to first token (per millisecond).
    #[arg(long, default_value_t = 1.0)]
    pub latency_weight: f64,
    /// Weight of a provider's price (per ugpu per million tokens).
    #[arg(long, default_value_t = 0.0)]
    pub price_weight: f64,
    /// Weight of a provider's missing reputation (per unit: a provider at 0 ppm costs this
    /// many milliseconds more than one at 1,000,000 ppm).
    #[arg(long, default_value_t = 1_000.0)]
    pub reputation_weight: f64,
    /// gpuchaind home holding the client's key store (`<home>/keys`), for leases.
    #[arg(long, env = "GPUCHAIN_HOME")]
    pub home: Option<std::path::PathBuf>,
    /// The client's key: signs requests on leases and acknowledges their receipts.
    #[arg(long)]
    pub key: Option<String>,
    /// Where receipts, both bodies of each paid answer and acknowledgements are kept.
    #[arg(long)]
    pub receipts: Option<std::path::PathBuf>,
    /// Acknowledge a lease's receipts as soon as this many wait in a row.
    #[arg(long, default_value_t = 16)]
    pub ack_every: usize,
    /// Or when the oldest has waited this many milliseconds.
    #[arg(long, default_value_t = 2_000)]
    pub ack_after_ms: u64,
    /// Requests of known answer, sent to every provider now and then as ordinary requests
    /// (JSON lines: `{"request": {…, "temperature": 0}, "answer": "…"}`, optionally
    /// `"path": "/v1/completions"`). A provider answering one differently is never routed to
    /// again, that answer is not acknowledged, and with a chain key every `honest` verdict
    /// standing on its leases' claims is appealed.
    #[arg(long)]
    pub ringers: Option<std::path::PathBuf>,
    /// Seconds between two rounds of ringers.
    #[arg(long, default_value_t = 30)]
    pub ringer_every_s: u64,
}

/// One provider endpoint as given on the command line.
#[derive(Debug, Clone, PartialEq)]
pub struct UpstreamSpec {
    /// Base URL, without a trailing slash (`http://host:port`).
    pub url: String,
    /// Asking price, ugpu per million tokens.
    pub price: Option<u64>,
    /// The provider's account on the chain.
    pub provider: Option<Address>,
    /// Where it runs.
    pub region: Option<String>,
    /// The chain lease this provider serves the gateway's key on: requests are signed and
    /// receipts kept and acknowledged.
    pub lease: Option<u64>,
    /// The only model sent to it (a lease serves one model); `None`: every model it lists.
    pub model: Option<String>,
}

impl FromStr for UpstreamSpec {
    type Err = String;

    fn from_str(s: &str) -> Result<UpstreamSpec, String> {
        let mut parts = s.split(',');
        let url = parts.next().unwrap_or_default().trim_end_matches('/');
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(format!("`{url}` is not an http(s) URL"));
        }
        let mut spec = UpstreamSpec {
            url: url.to_string(),
            price: None,
            provider: None,
            region: None,
            lease: None,
            model: None,
        };
        for part in parts {
            let (key, value) = part
                .split_once('=')
                .ok_or_else(|| format!("`{part}`: expected key=value"))?;
            match key {
                "price" => {
                    spec.price = Some(
                        value
                            .parse()
                            .map_err(|_| format!("price `{value}` is not a whole number"))?,
                    )
                }
                "provider" => {
                    spec.provider = Some(
                        value
                            .parse()
                            .map_err(|e| format!("provider `{value}`: {e}"))?,
                    )
                }
                "region" => spec.region = Some(value.to_string()),
                "model" => spec.model = Some(value.to_string()),
                "lease" => {
                    spec.lease = Some(
                        value
                            .parse()
                            .map_err(|_| format!("lease `{value}` is not a lease id"))?,
                    )
                }
                _ => {
                    return Err(format!(
                        "unknown `{key}` (price, provider, region, lease or model)"
                    ))
                }
            }
        }
        Ok(spec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_upstream_is_a_url_with_optional_price_provider_and_region() {
        let spec: UpstreamSpec = "http://10.0.0.2:8081/,price=400,region=eu".parse().unwrap();
        assert_eq!(spec.url, "http://10.0.0.2:8081");
        assert_eq!(spec.price, Some(400));
        assert_eq!(spec.region.as_deref(), Some("eu"));
        assert_eq!(spec.provider, None);
        assert_eq!(spec.lease, None);
        let spec: UpstreamSpec = "http://h:1,lease=12,model=smollm2".parse().unwrap();
        assert_eq!(spec.lease, Some(12));
        assert_eq!(spec.model.as_deref(), Some("smollm2"));
        for bad in [
            "10.0.0.2:8081",
            "http://h:1,price=cheap",
            "http://h:1,colour=red",
            "http://h:1,price",
            "http://h:1,provider=nobody",
            "http://h:1,lease=first",
        ] {
            assert!(bad.parse::<UpstreamSpec>().is_err(), "{bad}");
        }
    }
}
