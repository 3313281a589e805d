//! An agent whose tasks submit transactions at the same time (the gateway's reports, renewals
//! and its orders' end on the way out) gets every one of them into a block: its chain handle
//! signs one at a time, each with the next nonce, instead of several with the same one.

use gpuchain_agent_kit::chain::AgentChain;
use gpuchain_bank::{BankMsg, MsgSend};
use gpuchain_tests::TestNet;
use gpuchain_tx::Msg;
use gpuchain_types::Address;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agents_tasks_submitting_at_once_never_race_their_nonce() -> anyhow::Result<()> {
    let net = TestNet::start(1, &[("agent", 1_000_000_000)]).await?;
    let chain = AgentChain::connect(&net.net.nodes[0].rpc_url, &net.keys_home(), "agent", "test")?;
    let to = Address([0xb0; 20]);
    let tasks: Vec<_> = (1..=4u128)
        .map(|amount| {
            let chain = chain.clone();
            tokio::spawn(async move {
                let msg = Msg::Bank(BankMsg::Send(MsgSend { to, amount }));
                chain.submit(msg).await
            })
        })
        .collect();
    for task in tasks {
        let outcome = task.await??;
        anyhow::ensure!(
            outcome.code == 0,
            "a transaction was refused: {} {} {}",
            outcome.codespace,
            outcome.code,
            outcome.log
        );
    }
    let client = net.client(0)?;
    anyhow::ensure!(client.balance(&to).await? == 1 + 2 + 3 + 4);
    anyhow::ensure!(client.nonce(&chain.address).await? == 4);
    Ok(())
}
