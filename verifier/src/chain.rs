//! The verifier's view of the chain: the agent kit's chain handle (key, submissions, market
//! reads) and the reads only a verifier makes.

use anyhow::Result;
use gpuchain_auction::{state_key, Order};
use gpuchain_client::TxOutcome;
use gpuchain_serving::{MsgServingModels, ServingMsg};
use gpuchain_tx::Msg;
use gpuchain_verify::{Case, Challenge, Verifier, VerifyMsg, VerifyParams};

use crate::config::ServingAuditConfig;

gpuchain_agent_kit::agent_chain!(
    /// The kit's handle, with the verifier's memo.
    pub(crate) struct Chain, memo = "gpuchain-verifier"
);

impl Chain {
    /// Submits a verify message.
    pub(crate) async fn verify(&self, msg: VerifyMsg) -> Result<TxOutcome> {
        self.submit(Msg::Verify(msg)).await
    }

    pub(crate) async fn me(&self) -> Result<Option<Verifier>> {
        self.client
            .get(&gpuchain_verify::state_key::verifier(&self.address))
            .await
    }

    pub(crate) async fn case(&self, lease_id: u64) -> Result<Option<Case>> {
        self.client
            .get(&gpuchain_verify::state_key::case(lease_id))
            .await
    }

    pub(crate) async fn verify_params(&self) -> Result<VerifyParams> {
        Ok(self
            .client
            .get(gpuchain_verify::state_key::params())
            .await?
            .unwrap_or_default())
    }

    /// Every case (a start-up scan for assignments made while the agent was down).
    pub(crate) async fn cases(&self) -> Result<Vec<Case>> {
        self.all(gpuchain_verify::state_key::cases_prefix()).await
    }

    /// Every committed, unrevealed challenge.
    pub(crate) async fn challenges(&self) -> Result<Vec<Challenge>> {
        self.all(gpuchain_verify::state_key::challenges_prefix())
            .await
    }

    /// Declares the serving models of `config` as the ones this verifier judges, when the
    /// chain holds another list: the outcome, or `None` when nothing needed sending.
    pub(crate) async fn declare_serving_models(
        &self,
        config: &ServingAuditConfig,
    ) -> Result<Option<TxOutcome>> {
        let models = config.hashes()?;
        let declared: Vec<[u8; 32]> = self
            .client
            .get(&gpuchain_serving::state_key::judged_models(&self.address))
            .await?
            .unwrap_or_default();
        if declared == models {
            return Ok(None);
        }
        let msg = ServingMsg::Models(MsgServingModels { models });
        Ok(Some(self.submit(Msg::Serving(msg)).await?.ok()?))
    }

    /// Every order (a restart looks for a ringer order sent just before a crash).
    pub(crate) async fn orders(&self) -> Result<Vec<Order>> {
        self.all(state_key::orders_prefix()).await
    }
}
