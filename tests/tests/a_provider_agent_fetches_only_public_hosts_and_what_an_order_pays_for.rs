//! Provider exposure, tried on a localnet with a real agent that keeps the default
//! `allow_private_blob_hosts = false`: a client posts orders whose blobs sit on a loopback
//! host (127.0.0.1, where the agent's own services listen), on the cloud metadata address
//! (169.254.169.254), and a cheap order that declares a 200 MB input. The agent skips each
//! with its reason, never connects to the loopback host, and bids on none of them.

use gpuchain_auction::{AuctionMsg, MsgPostOrder};
use gpuchain_client::keys::Keystore;
use gpuchain_tests::{
    blob, digits_input, digits_job, digits_mlp_weights, routed_order, wait_for, AgentSpec,
    BlobHost, ProviderAgent, TestNet,
};
use gpuchain_tx::Msg;

const GPU: u128 = 1_000_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_agent_fetches_only_public_hosts_and_what_an_order_pays_for(
) -> anyhow::Result<()> {
    let accounts = [("client", 10_000 * GPU), ("p1", 2_000 * GPU)];
    let net = TestNet::start(1, &accounts).await?;
    let dir = tempfile::tempdir()?;
    let spec = AgentSpec::digits(&net, "p1", dir.path());
    let config = spec.write_config()?;
    let text = std::fs::read_to_string(&config)?.replace(
        "allow_private_blob_hosts = true",
        "allow_private_blob_hosts = false",
    );
    std::fs::write(&config, text)?;
    ProviderAgent::register(&config)?;
    let agent = ProviderAgent::spawn(&config, &[])?;
    wait_for("agent start", 60, || agent.started().then_some(())).await;

    let host = BlobHost::start()?;
    let weights = digits_mlp_weights()?;
    let input = digits_input(16, 3);
    let w = blob(&weights, host.put("w", weights.clone()));
    let x = blob(&input, host.put("x", input.clone()));
    let mut metadata_x = x.clone();
    metadata_x.urls = vec!["http://169.254.169.254/latest/meta-data/x".into()];
    let mut metadata_w = w.clone();
    metadata_w.urls = vec!["http://169.254.169.254/latest/meta-data/w".into()];
    let mut huge_x = x.clone();
    huge_x.size = 200 << 20;
    huge_x.urls = vec!["https://example.com/blob/x".into()];
    let mut public_w = w.clone();
    public_w.urls = vec!["https://example.com/blob/w".into()];
    let orders: [MsgPostOrder; 3] = [
        routed_order(digits_job(w, x), "local", 1, GPU),
        routed_order(digits_job(metadata_w, metadata_x), "local", 1, GPU),
        // 1,000 ugpu buys at most 4 MB of blobs at the default 4,096 bytes per ugpu.
        routed_order(digits_job(public_w, huge_x), "local", 1, 1_000),
    ];
    let key = Keystore::open(&net.net.keys_dir)?.signing_key("client", None)?;
    let chain = net.client(0)?;
    for order in orders {
        chain
            .submit(&key, vec![Msg::Auction(AuctionMsg::PostOrder(order))], "")
            .await?
            .ok()?;
    }

    let status = wait_for("three orders skipped", 90, || {
        let s = agent.status().ok()?;
        (s["counters"]["orders_skipped"] == 3).then_some(s)
    })
    .await;
    assert_eq!(status["counters"]["bids"], 0, "no bid on any: {status}");
    let log = agent.log_text();
    assert!(
        log.contains("127.0.0.1 is not a public address"),
        "loopback refused: {log}"
    );
    assert!(
        log.contains("169.254.169.254 is not a public address"),
        "link-local refused: {log}"
    );
    assert!(
        log.contains("this agent fetches at most 4096000"),
        "size capped by the price: {log}"
    );
    assert_eq!(host.requests(), 0, "the loopback host was never contacted");
    Ok(())
}
