//! ABCI queries. Paths (docs/protocol.md):
//! `/store/<key>` raw state value, with a JMT proof when `prove` is set;
//! `/bank/account/<address>` (borsh `Account`: balance and nonce), `/bank/supply` (borsh
//! u128), both provable like `/store`; `/auth/nonce/<address>` (borsh u64, the account's
//! nonce); `/tx/params` (borsh TxParams);
//! `/prefix/<prefix>` (borsh `Vec<(String, Vec<u8>)>` of the latest state under a prefix).

use gpuchain_bank::BankRead;
use gpuchain_types::{query_path, Address, PROOF_OP_TYPE};
use tendermint_proto::v0_38::abci::{RequestQuery, ResponseQuery};
use tendermint_proto::v0_38::crypto::{ProofOp, ProofOps};

use crate::store::Store;

const CODESPACE: &str = "query";
/// Most entries one `/prefix/` query returns.
const MAX_PREFIX_ENTRIES: usize = 50_000;

fn error(code: u32, log: String) -> ResponseQuery {
    ResponseQuery {
        code,
        log,
        codespace: CODESPACE.into(),
        ..Default::default()
    }
}

// The error is the query's answer itself, returned as it is on the rare bad address.
#[allow(clippy::result_large_err)]
fn parse_address(text: &str) -> Result<Address, ResponseQuery> {
    text.parse()
        .map_err(|e: gpuchain_types::AddressError| error(2, e.to_string()))
}

/// Answers one query against committed state.
pub(crate) fn query(store: &Store, req: &RequestQuery) -> ResponseQuery {
    let latest = store.height();
    let height = match u64::try_from(req.height) {
        Ok(0) => latest,
        Ok(h) if h <= latest => h,
        _ => {
            return error(
                3,
                format!("height {} is not available; latest is {latest}", req.height),
            )
        }
    };
    let path = req.path.as_str();
    let key = if let Some(key) = path.strip_prefix(query_path::STORE) {
        key.to_string()
    } else if let Some(addr) = path.strip_prefix(query_path::ACCOUNT) {
        match parse_address(addr) {
            Ok(a) => gpuchain_bank::state_key::account(&a),
            Err(e) => return e,
        }
    } else if path == query_path::SUPPLY {
        gpuchain_bank::state_key::supply().to_string()
    } else if let Some(addr) = path.strip_prefix(query_path::NONCE) {
        let address = match parse_address(addr) {
            Ok(a) => a,
            Err(e) => return e,
        };
        return encoded(&store.nonce(&address), latest);
    } else if let Some(prefix) = path.strip_prefix(query_path::PREFIX) {
        let entries = gpuchain_types::StateRead::prefix_raw(store, prefix);
        if entries.len() > MAX_PREFIX_ENTRIES {
            return error(5, format!("{} entries under {prefix:?}; the limit is {MAX_PREFIX_ENTRIES}: narrow the prefix", entries.len()));
        }
        return encoded(&entries, latest);
    } else if path == query_path::TX_PARAMS {
        let (_, params) = super::execute::chain_settings(store);
        return encoded(&params, latest);
    } else {
        return error(
            1,
            format!("unknown query path {path:?}; see docs/protocol.md"),
        );
    };
    state_value(store, &key, height, req.prove)
}

fn encoded<T: borsh::BorshSerialize>(value: &T, height: u64) -> ResponseQuery {
    ResponseQuery {
        value: borsh::to_vec(value).unwrap_or_default().into(),
        height: i64::try_from(height).unwrap_or(i64::MAX),
        ..Default::default()
    }
}

fn state_value(store: &Store, key: &str, height: u64, prove: bool) -> ResponseQuery {
    let result = if prove {
        store
            .get_with_proof(key, height)
            .and_then(|(value, proof)| {
                let data = borsh::to_vec(&proof)?;
                Ok((
                    value,
                    Some(ProofOps {
                        ops: vec![ProofOp {
                            r#type: PROOF_OP_TYPE.into(),
                            key: key.as_bytes().to_vec(),
                            data,
                        }],
                    }),
                ))
            })
    } else if height == store.height() {
        Ok((gpuchain_types::StateRead::get_raw(store, key), None))
    } else {
        store.get_at(key, height).map(|v| (v, None))
    };
    match result {
        Ok((value, proof_ops)) => ResponseQuery {
            key: key.as_bytes().to_vec().into(),
            value: value.unwrap_or_default().into(),
            proof_ops,
            height: i64::try_from(height).unwrap_or(i64::MAX),
            ..Default::default()
        },
        Err(e) => error(4, format!("reading {key:?} at height {height}: {e}")),
    }
}
