//! Steps the auction handler tests share: posting, bidding, clearing, committing and
//! revealing, receipts and comparisons on the in-memory chain.

use crate::test_utils::*;
use crate::{
    commitment, AuctionError, AuctionMsg, AuctionRead, LeaseState, MsgBid, MsgCommitResult,
    MsgRevealResult,
};

pub(super) const MAX: u128 = 1_000_000;

pub(super) fn post(chain: &mut Chain, h: u64, client: u8, k: u32) -> u64 {
    chain
        .exec(h, client, AuctionMsg::PostOrder(order_msg(k, MAX)))
        .unwrap();
    chain.state.orders().last().unwrap().id
}

pub(super) fn bid(chain: &mut Chain, h: u64, provider: u8, order_id: u64, price: u128) {
    chain
        .exec(h, provider, AuctionMsg::Bid(MsgBid { order_id, price }))
        .unwrap();
}

pub(super) fn commit_msg(provider: u8, lease_id: u64, result: [u8; 32]) -> AuctionMsg {
    AuctionMsg::CommitResult(MsgCommitResult {
        lease_id,
        commitment: commitment(&result, &addr(provider), &[provider; 32]),
    })
}

pub(super) fn reveal_msg(provider: u8, lease_id: u64, result: [u8; 32]) -> AuctionMsg {
    AuctionMsg::RevealResult(MsgRevealResult {
        lease_id,
        result_hash: result,
        salt: [provider; 32],
    })
}

/// Posts a k-replica order at height 1 and has `bids` bid at height 2; clears at 4.
pub(super) fn cleared(chain: &mut Chain, k: u32, bids: &[(u8, u128)]) -> u64 {
    let id = post(chain, 1, 1, k);
    chain.end_block(1);
    for (p, price) in bids {
        bid(chain, 2, *p, id, *price);
    }
    for h in 2..=4 {
        chain.end_block(h);
    }
    id
}

/// Commits and reveals `results` (provider, result) at height 5.
pub(super) fn reveal_all(chain: &mut Chain, order: u64, results: &[(u8, [u8; 32])]) {
    for (p, r) in results {
        let lease = lease_of(chain, order, *p);
        chain.exec(5, *p, commit_msg(*p, lease, *r)).unwrap();
    }
    for (p, r) in results {
        let lease = lease_of(chain, order, *p);
        chain.exec(5, *p, reveal_msg(*p, lease, *r)).unwrap();
    }
}

/// The client (1) confirms at `h` that it fetched `provider`'s output of `order`.
pub(super) fn confirm(chain: &mut Chain, h: u64, order: u64, provider: u8) {
    let lease_id = lease_of(chain, order, provider);
    chain
        .exec(
            h,
            1,
            AuctionMsg::ConfirmReceipt(crate::MsgConfirmReceipt { lease_id }),
        )
        .unwrap();
}

/// The state of `provider`'s lease of `order`.
pub(super) fn state_of(chain: &Chain, order: u64, provider: u8) -> LeaseState {
    chain
        .state
        .lease(lease_of(chain, order, provider))
        .unwrap()
        .state
}

/// `provider` of a `Comparing` lease of `order_id` states its comparison at `h`.
pub(super) fn compare(
    chain: &mut Chain,
    h: u64,
    order_id: u64,
    provider: u8,
    consistent: bool,
) -> Result<(), AuctionError> {
    let lease_id = lease_of(chain, order_id, provider);
    chain.exec(
        h,
        provider,
        AuctionMsg::CompareReplicas(crate::MsgCompareReplicas {
            lease_id,
            consistent,
        }),
    )
}

pub(super) fn lease_of(chain: &Chain, order_id: u64, provider: u8) -> u64 {
    chain
        .state
        .leases_of_order(order_id)
        .iter()
        .find(|l| l.provider == addr(provider))
        .unwrap()
        .id
}
