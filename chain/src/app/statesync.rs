//! The snapshot connection: serving this node's snapshots to peers, and restoring a new
//! node's state from theirs (CometBFT's state sync). A chunk that does not match the hash
//! its snapshot lists is refused and fetched from another peer, its sender rejected; a state
//! that does not hash to the light-client-verified app hash is never written.

use tendermint_proto::v0_38::abci::{
    response_apply_snapshot_chunk::Result as ChunkResult,
    response_offer_snapshot::Result as OfferResult, RequestApplySnapshotChunk,
    RequestLoadSnapshotChunk, RequestOfferSnapshot, ResponseApplySnapshotChunk,
    ResponseListSnapshots, ResponseLoadSnapshotChunk, ResponseOfferSnapshot, Snapshot,
};

use super::Node;
use crate::store::snapshot::{ChunkCheck, Restore, SNAPSHOT_FORMAT};

pub(super) fn list(node: &Node) -> ResponseListSnapshots {
    let Some(snapshots) = &node.snapshots else {
        return ResponseListSnapshots::default();
    };
    match snapshots.list() {
        Ok(list) => ResponseListSnapshots {
            snapshots: list
                .into_iter()
                .map(|s| Snapshot {
                    height: s.height,
                    format: SNAPSHOT_FORMAT,
                    chunks: s.chunks,
                    hash: s.hash.to_vec().into(),
                    metadata: s.metadata.into(),
                })
                .collect(),
        },
        Err(e) => {
            tracing::error!(error = %format!("{e:#}"), "listing state-sync snapshots");
            ResponseListSnapshots::default()
        }
    }
}

pub(super) fn load_chunk(node: &Node, req: &RequestLoadSnapshotChunk) -> ResponseLoadSnapshotChunk {
    let chunk = match &node.snapshots {
        Some(snapshots) if req.format == SNAPSHOT_FORMAT => {
            snapshots.chunk(req.height, req.chunk).unwrap_or_else(|e| {
                tracing::warn!(error = %format!("{e:#}"), "a peer asked for a snapshot chunk this node lacks");
                Vec::new()
            })
        }
        _ => Vec::new(),
    };
    ResponseLoadSnapshotChunk {
        chunk: chunk.into(),
    }
}

pub(super) fn offer(node: &mut Node, req: &RequestOfferSnapshot) -> ResponseOfferSnapshot {
    let result = offer_result(node, req);
    ResponseOfferSnapshot {
        result: result as i32,
    }
}

fn offer_result(node: &mut Node, req: &RequestOfferSnapshot) -> OfferResult {
    let Some(snapshot) = &req.snapshot else {
        return OfferResult::Reject;
    };
    if snapshot.format != SNAPSHOT_FORMAT {
        return OfferResult::RejectFormat;
    }
    if node.store.height() != 0 {
        tracing::error!(
            height = node.store.height(),
            "offered a snapshot but this node already has state; state sync needs an empty one"
        );
        return OfferResult::Abort;
    }
    match Restore::offer(
        snapshot.height,
        snapshot.chunks,
        &snapshot.hash,
        &snapshot.metadata,
        &req.app_hash,
    ) {
        Ok(restore) => {
            tracing::info!(
                height = snapshot.height,
                chunks = snapshot.chunks,
                app_hash = %hex::encode(&req.app_hash),
                "restoring state from a snapshot"
            );
            node.restore = Some(restore);
            OfferResult::Accept
        }
        Err(e) => {
            tracing::warn!(height = snapshot.height, error = %format!("{e:#}"), "refused an offered snapshot");
            OfferResult::Reject
        }
    }
}

pub(super) fn apply_chunk(
    node: &mut Node,
    req: RequestApplySnapshotChunk,
) -> ResponseApplySnapshotChunk {
    let respond = |result: ChunkResult| ResponseApplySnapshotChunk {
        result: result as i32,
        ..Default::default()
    };
    let Some(restore) = node.restore.as_mut() else {
        return respond(ChunkResult::Abort);
    };
    let height = restore.height;
    match restore.add(req.index, req.chunk.to_vec()) {
        Ok(ChunkCheck::Stored) => respond(ChunkResult::Accept),
        Ok(ChunkCheck::Mismatch) => {
            tracing::warn!(
                height,
                chunk = req.index,
                sender = %req.sender,
                "refused a state-sync chunk that does not match the hash its snapshot lists; \
                 fetching it from another peer and rejecting this sender"
            );
            ResponseApplySnapshotChunk {
                result: ChunkResult::Retry as i32,
                refetch_chunks: vec![req.index],
                reject_senders: vec![req.sender],
            }
        }
        Ok(ChunkCheck::Complete) => {
            let Some(restore) = node.restore.take() else {
                return respond(ChunkResult::Abort);
            };
            let restored = restore
                .entries()
                .and_then(|entries| node.store.restore(height, &entries, restore.app_hash));
            match restored {
                Ok(()) => {
                    tracing::info!(height, app_hash = %hex::encode(restore.app_hash), "state restored from the snapshot");
                    respond(ChunkResult::Accept)
                }
                Err(e) => {
                    tracing::error!(height, error = %format!("{e:#}"), "refused a snapshot whose state does not check out");
                    respond(ChunkResult::RejectSnapshot)
                }
            }
        }
        Err(e) => {
            tracing::warn!(height, error = %format!("{e:#}"), "refused a state-sync chunk");
            respond(ChunkResult::RejectSnapshot)
        }
    }
}
