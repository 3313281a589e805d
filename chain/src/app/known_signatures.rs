//! Transactions whose signature this node already found valid in CheckTx, so that the block
//! they land in does not check them again. A signature is valid or not on its own (the
//! chain's rule, `gpuchain_tx::signature`), so a verdict found once holds in any block: like
//! the key cache, this never changes a result, only how fast it comes.
//!
//! A verdict is kept under the blake3 hash of the whole transaction, never of its signature
//! alone: it holds for one key, one message and one signature together, and a transaction
//! that differs in any byte is checked afresh.

use std::collections::BTreeSet;
use std::sync::Mutex;

/// Verdicts kept per generation; at most two generations are kept (about 4 MB at the
/// default): more than a full mempool of 50,000 transactions waits to be included.
const GENERATION: usize = 65_536;

/// Valid verdicts by transaction hash, the newest generation first. When it fills it
/// becomes the older one and the older one is dropped, so the transactions that have waited
/// longest are the ones checked again.
pub(crate) struct KnownSignatures {
    generation: usize,
    sets: Mutex<[BTreeSet<[u8; 32]>; 2]>,
}

impl Default for KnownSignatures {
    fn default() -> Self {
        KnownSignatures::with_generation(GENERATION)
    }
}

impl KnownSignatures {
    fn with_generation(generation: usize) -> Self {
        KnownSignatures {
            generation,
            sets: Mutex::new([BTreeSet::new(), BTreeSet::new()]),
        }
    }

    fn sets(&self) -> std::sync::MutexGuard<'_, [BTreeSet<[u8; 32]>; 2]> {
        self.sets.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Remembers that each of `raw_txs` carries a valid signature.
    pub(crate) fn remember<'a>(&self, raw_txs: impl IntoIterator<Item = &'a [u8]>) {
        let ids: Vec<[u8; 32]> = raw_txs.into_iter().map(id).collect();
        let mut sets = self.sets();
        let [newest, older] = &mut *sets;
        for id in ids {
            if newest.len() >= self.generation {
                *older = std::mem::take(newest);
            }
            newest.insert(id);
        }
    }

    /// Whether `raw_tx` was remembered as validly signed; forgets it (a transaction is
    /// included once, and one proposed again after a failed round is only checked again).
    pub(crate) fn take(&self, raw_tx: &[u8]) -> bool {
        let id = id(raw_tx);
        let mut sets = self.sets();
        let [newest, older] = &mut *sets;
        newest.remove(&id) || older.remove(&id)
    }

    /// How many verdicts are kept.
    #[cfg(test)]
    fn len(&self) -> usize {
        let sets = self.sets();
        let [newest, older] = &*sets;
        newest.len().saturating_add(older.len())
    }
}

fn id(raw_tx: &[u8]) -> [u8; 32] {
    *blake3::hash(raw_tx).as_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_verdict_is_found_once_for_exactly_the_bytes_remembered() {
        let known = KnownSignatures::default();
        known.remember([b"transaction one".as_slice()]);
        assert!(!known.take(b"transaction onE"), "one byte differs");
        assert!(!known.take(b"transaction one "), "one byte more");
        assert!(known.take(b"transaction one"));
        assert!(!known.take(b"transaction one"), "taken once");
    }

    #[test]
    fn only_the_transactions_checktx_admits_are_remembered() {
        use gpuchain_bank::{BankMsg, MsgSend};
        use gpuchain_tx::{build_signed_tx, Msg, TxParams};

        let dir = tempfile::tempdir().unwrap();
        let key = ed25519_dalek::SigningKey::from_bytes(&[3; 32]);
        let me = gpuchain_types::Address::from_public_key(&key.verifying_key().to_bytes());
        let mut genesis = gpuchain_genesis::AppGenesis::default();
        genesis.bank.balances = vec![(me, 1_000_000)];
        let app = crate::App::open(dir.path()).unwrap();
        app.init_chain_with("known", &genesis).unwrap();
        let first_block = crate::BlockInput {
            height: 1,
            hash: b"block one",
            time_ms: 1_000,
            txs: &[],
            misbehavior: &[],
            votes: &[],
        };
        app.finalize(&first_block).unwrap();
        app.commit().unwrap();

        let send = |nonce| {
            let msgs = vec![Msg::Bank(BankMsg::Send(MsgSend { to: me, amount: 1 }))];
            build_signed_tx(&key, "known", nonce, &TxParams::default(), msgs, "").encode()
        };
        let admitted = send(0);
        let stale_nonce = send(7);
        let results = app.check_txs(&[(&admitted, false), (&stale_nonce, false)]);
        assert_eq!(results[0].code, 0, "{results:?}");
        assert_ne!(results[1].code, 0, "{results:?}");
        assert!(
            !app.known_signatures.take(&stale_nonce),
            "refused, though validly signed"
        );
        assert!(app.known_signatures.take(&admitted));
    }

    #[test]
    fn memory_is_bounded_by_two_generations_and_the_newest_verdicts_stay() {
        let known = KnownSignatures::with_generation(4);
        let txs: Vec<Vec<u8>> = (0u8..11).map(|i| vec![i; 8]).collect();
        known.remember(txs.iter().map(Vec::as_slice));
        assert!(known.len() <= 8, "{} kept", known.len());
        for tx in &txs[txs.len() - 4..] {
            assert!(known.take(tx), "the last generation's {tx:?} kept");
        }
        assert!(!known.take(&txs[0]), "the oldest generation was dropped");
    }
}
