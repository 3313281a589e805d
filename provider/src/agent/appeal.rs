//! Answering a `faulty` verdict on one of our results: an agent that computed the result
//! itself knows the verdict is wrong, so it appeals, and the canonical re-runs of two more
//! verifiers decide. Without the appeal a lying verifier would earn the fee and the prover's
//! share of our slash unopposed.

use gpuchain_tx::Msg;
use gpuchain_verify::{MsgAppeal, VerifyMsg};

use super::Agent;

impl Agent {
    /// Appeals the first `faulty` verdict on `lease_id` if it is ours, we computed its
    /// result, and the operator has not turned appeals off.
    pub(super) async fn answer_faulty_verdict(&mut self, lease_id: u64) {
        let honest = self.options.dishonest.is_none();
        let Some(rec) = self.state.leases.get_mut(&lease_id) else {
            return;
        };
        if !self.config.provider.appeal_faulty_verdicts
            || !honest
            || rec.result_hash.is_none()
            || rec.appealed_height.is_some()
        {
            tracing::warn!(lease_id, "faulty verdict on our result; not appealing");
            return;
        }
        rec.appealed_height = Some(self.height);
        let msg = Msg::Verify(VerifyMsg::Appeal(MsgAppeal { lease_id }));
        match self.chain.submit(msg).await.and_then(|o| o.ok()) {
            Ok(o) => tracing::warn!(
                lease_id,
                height = o.height,
                "appealed a faulty verdict on a result we computed"
            ),
            Err(e) => {
                tracing::error!(lease_id, error = %format!("{e:#}"), "appeal failed");
                if let Some(rec) = self.state.leases.get_mut(&lease_id) {
                    rec.reason = Some(format!("appeal failed: {e:#}"));
                }
            }
        }
    }
}
