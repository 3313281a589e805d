//! The self-dispute drain, tried on a localnet with the real agents: one owner holds the
//! client, both providers of a 2-replica order and the only verifier. One provider reveals
//! random bytes and vouches for the other; the other computes honestly and denies, so the
//! order is disputed; the owner's verifier calls both replicas honest without running
//! anything. Before the redesign each such verdict was paid from the verification pool and
//! the owner netted +176 GPU per order. Now the dispute is paid from the owner's own dispute
//! reserve: the pool loses nothing, and the owner ends with less than it started with.

use gpuchain_auction::LeaseState;
use gpuchain_tests::{disputes_only, Market, TestNet, VerifierAgent};

const GPU: u128 = 1_000_000;
const OWNED: [&str; 4] = ["client", "liar", "denier", "lazy"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_self_dispute_with_a_lazy_verifier_costs_its_owner() -> anyhow::Result<()> {
    let accounts = [
        ("client", 10_000 * GPU),
        ("liar", 2_000 * GPU),
        ("denier", 2_000 * GPU),
        ("lazy", 3_000 * GPU),
    ];
    let net = TestNet::start_with(1, &accounts, disputes_only).await?;
    let chain = net.client(0)?;
    let market = Market::new(&net)?;
    let lazy = VerifierAgent::spawn_with(
        &market.register_verifier("lazy", 1_000 * GPU)?,
        &["--rubber-stamp"],
    )?;
    let agents = [
        market.provider("liar", "r-self", &["--dishonest", "random-output"])?,
        market.provider_on("denier", "r-self", "canonical", &["--dishonest", "deny"])?,
    ];
    let pool = gpuchain_auction::module_account::verification_pool();
    let (owner_before, pool_before) = (
        net.total_balance(&OWNED).await?,
        chain.balance(&pool).await?,
    );
    let order_id = market.post_digits_order("client", "r-self", 2, 41).await?;
    let leases = market
        .settled(order_id, 2, 300, || {
            let mut logs = lazy.log_text();
            for a in &agents {
                logs.push_str(&a.log_text());
            }
            logs
        })
        .await?;
    for lease in &leases {
        assert_eq!(
            lease.state,
            LeaseState::Paid,
            "the lazy verifier called both honest: {lease:?}"
        );
    }
    assert!(
        lazy.log_text()
            .contains("test mode: honest without checking"),
        "the verdicts were rubber-stamped"
    );
    let (owner_after, pool_after) = (
        net.total_balance(&OWNED).await?,
        chain.balance(&pool).await?,
    );
    assert!(
        pool_after >= pool_before,
        "the verification pool is not drained: {pool_before} -> {pool_after}"
    );
    assert!(
        owner_after < owner_before,
        "the owner loses: {owner_before} -> {owner_after}"
    );
    println!(
        "FIGURES self-dispute with a lazy verifier: owner {} ugpu, pool +{} ugpu",
        i128::try_from(owner_after).unwrap_or(0) - i128::try_from(owner_before).unwrap_or(0),
        pool_after - pool_before
    );
    Ok(())
}
