//! A verifier lies for profit: it is the only verifier when an honest provider's result is
//! audited, and it posts `faulty` to earn the audit fee and the prover's share of the
//! provider's slash. The real provider agent knows it computed the result, so it appeals;
//! two real verifier agents (bonded after the assignment) re-run the job on the canonical
//! path and overturn the verdict. The liar loses 30% of its bond, half of it to the provider;
//! the provider is paid and never slashed.

use std::time::{Duration, Instant};

use gpuchain_auction::LeaseState;
use gpuchain_client::keys::Keystore;
use gpuchain_tests::{
    amount, audit_every_result, short_reveal_and_challenge, slash_records, slashes_of,
    verdict_windows, Market, NodeCli, TestNet,
};
use gpuchain_tx::Msg;
use gpuchain_verify::{MsgSubmitVerdict, VerdictKind, VerifyMsg};

const GPU: u128 = 1_000_000;
const LIAR_BOND: u128 = 10_000 * GPU;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lying_verifier_is_overturned_by_the_providers_appeal() -> anyhow::Result<()> {
    let accounts = [
        ("client", 10_000 * GPU),
        ("liar", 20_000 * GPU),
        ("v1", 3_000 * GPU),
        ("v2", 3_000 * GPU),
        ("honest", 2_000 * GPU),
    ];
    let net = TestNet::start_with(1, &accounts, |spec| {
        short_reveal_and_challenge(spec);
        audit_every_result(spec);
        verdict_windows(spec, 600, 200);
        spec.genesis.verify.params.appeal_window_blocks = 40;
    })
    .await?;
    let chain = net.client(0)?;
    let cli = NodeCli::new(&net, 0)?;
    let keys = Keystore::open(&net.net.keys_dir)?;
    let market = Market::new(&net)?;
    // The liar registers a bond but runs no agent: it answers by hand.
    market.register_verifier("liar", LIAR_BOND)?;
    let provider = market.provider("honest", "r-appeal", &[])?;
    let order_id = market.post_digits_order("client", "r-appeal", 1, 9).await?;

    // Audited for sure, and the liar is the only verifier: the case is its.
    let liar = keys.show("liar")?.address;
    let deadline = Instant::now() + Duration::from_secs(150);
    let lease_id = loop {
        let cases = cli.query(&["verify", "cases"])?;
        let assigned = cases.as_array().and_then(|c| {
            c.iter()
                .find(|c| c["assignee"] == liar.to_string().as_str())
                .and_then(|c| c["lease_id"].as_u64())
        });
        if let Some(id) = assigned {
            break id;
        }
        assert!(
            Instant::now() < deadline,
            "no assignment: {cases}\n{}",
            provider.log_text()
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    };

    // Two honest verifiers bond and start before the lie, so the appeal can be heard.
    let verifiers = [market.verifier("v1")?, market.verifier("v2")?];
    let lie = VerifyMsg::SubmitVerdict(MsgSubmitVerdict {
        lease_id,
        output_hash: [0xEE; 32],
        verdict: VerdictKind::Faulty,
    });
    chain
        .submit(&keys.signing_key("liar", None)?, vec![Msg::Verify(lie)], "")
        .await?
        .ok()?;

    let leases = market
        .settled(order_id, 1, 240, || {
            format!(
                "provider:\n{}\nv1:\n{}",
                provider.log_text(),
                verifiers[0].log_text()
            )
        })
        .await?;
    assert_eq!(leases[0].state, LeaseState::Paid, "{leases:?}");
    assert!(
        provider
            .log_text()
            .contains("appealed a faulty verdict on a result we computed"),
        "{}",
        provider.log_text()
    );
    let honest = keys.show("honest")?.address;
    let records = slash_records(cli.node())?;
    assert!(
        slashes_of(&records, &honest.to_string()).is_empty(),
        "the honest provider is never slashed: {records:?}"
    );
    let all = cli.query(&["verify", "verifiers"])?;
    let record = all
        .as_array()
        .and_then(|v| {
            v.iter()
                .find(|v| v["operator"] == liar.to_string().as_str())
        })
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        amount(&record["bonded"]),
        LIAR_BOND - LIAR_BOND * 3 / 10,
        "the liar loses 30% of its bond"
    );
    // The provider got its deposit back and half the liar's slash, on top of its payment.
    let balance = chain.balance(&honest).await?;
    assert!(
        balance > 2_000 * GPU - 1_000 * GPU + LIAR_BOND * 3 / 20 - GPU,
        "provider balance {balance}"
    );
    Ok(())
}
