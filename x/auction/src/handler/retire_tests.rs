//! Retirement counts block time, not blocks: how long a closed order stays in state does not
//! depend on how fast blocks come.

use gpuchain_types::BlockCtx;

use crate::test_utils::*;
use crate::{AuctionMsg, AuctionParams, AuctionRead, MsgCancelOrder, OrderState};

use super::test_steps::*;

const RETENTION_SECS: u64 = 60;

fn chain() -> Chain {
    Chain::new(AuctionParams {
        retention_secs: RETENTION_SECS,
        ..test_params()
    })
}

/// Block `height` at `time_ms`.
fn block(height: u64, time_ms: u64) -> BlockCtx {
    BlockCtx {
        time_ms,
        ..ctx(height)
    }
}

/// Posts an order at height 1 and cancels it at height 2 (block time 2 s): it closed then.
fn closed_order(chain: &mut Chain) -> u64 {
    let id = post(chain, 1, 1, 1);
    chain
        .exec(
            2,
            1,
            AuctionMsg::CancelOrder(MsgCancelOrder { order_id: id }),
        )
        .unwrap();
    assert_eq!(chain.state.order(id).unwrap().state, OrderState::Cancelled);
    id
}

fn retired(chain: &Chain) -> usize {
    chain
        .events
        .iter()
        .filter(|e| e.kind == "auction.order_retired")
        .count()
}

#[test]
fn fast_blocks_keep_a_closed_order_for_the_whole_retention_period() {
    let mut chain = chain();
    let id = closed_order(&mut chain);
    let due_ms = 2_000 + RETENTION_SECS * 1_000;
    // 600 blocks a tenth of a second apart: ten times the retention in blocks, but 1 ms
    // short of it in time.
    let mut height = 2;
    let mut time_ms = 2_000;
    while time_ms + 100 < due_ms {
        height += 1;
        time_ms += 100;
        chain.end_block_at(&block(height, time_ms));
    }
    chain.end_block_at(&block(height + 1, due_ms - 1));
    assert!(height > 10 * RETENTION_SECS, "{height} blocks");
    assert!(
        chain.state.order(id).is_some(),
        "kept until its time is due"
    );
    assert_eq!(retired(&chain), 0);
    chain.end_block_at(&block(height + 2, due_ms));
    assert!(
        chain.state.order(id).is_none(),
        "retired once the time is due"
    );
    assert!(
        chain.state.orders_of_client(&addr(1)).is_empty(),
        "its index goes too"
    );
    assert_eq!(retired(&chain), 1);
}

#[test]
fn slow_blocks_retire_a_closed_order_after_the_same_time_in_fewer_blocks() {
    let mut chain = chain();
    let id = closed_order(&mut chain);
    // Blocks 25 s apart: 50 s after closing it is still there, 75 s after it is gone, in
    // the third block after it closed.
    chain.end_block_at(&block(3, 27_000));
    chain.end_block_at(&block(4, 52_000));
    assert!(chain.state.order(id).is_some());
    chain.end_block_at(&block(5, 77_000));
    assert!(chain.state.order(id).is_none());
    assert_eq!(retired(&chain), 1);
}

#[test]
fn retention_zero_keeps_closed_orders_and_an_absurd_one_is_refused() {
    let mut chain = Chain::new(AuctionParams {
        retention_secs: 0,
        ..test_params()
    });
    let id = closed_order(&mut chain);
    chain.end_block_at(&block(3, u64::MAX / 2));
    assert!(chain.state.order(id).is_some());
    let absurd = AuctionParams {
        retention_secs: gpuchain_types::MAX_RETENTION_SECS + 1,
        ..test_params()
    };
    assert!(absurd
        .validate()
        .unwrap_err()
        .to_string()
        .contains("retention_secs"));
}
