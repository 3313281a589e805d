//! Determinism: the same blocks applied to fresh app instances give identical app hashes at
//! every height, including an instance that is closed and reopened half way.

mod common;

use common::*;

/// A block mixing good transfers, overdrafts, replays and garbage, derived from the height.
fn block(height: u64, nonces: &mut [u64]) -> Vec<Vec<u8>> {
    let mut txs = Vec::new();
    for i in 0..nonces.len() as u32 {
        let pick = blake3::hash(&[height.to_le_bytes(), u64::from(i).to_le_bytes()].concat());
        let b = pick.as_bytes();
        let to = address(u32::from(b[0]) % 8);
        match b[1] % 5 {
            0 => txs.push(transfer(i, nonces[i as usize], to, 1_000_000_000)), // overdraft
            1 => txs.push(b[..20].to_vec()),                                   // garbage
            2 if nonces[i as usize] > 0 => txs.push(transfer(i, nonces[i as usize] - 1, to, 1)), // replay
            _ => {
                txs.push(transfer(i, nonces[i as usize], to, u128::from(b[2]) + 1));
                nonces[i as usize] += 1;
                continue;
            }
        }
        if b[1].is_multiple_of(5) {
            nonces[i as usize] += 1; // an overdraft still pays its fee and uses its nonce
        }
    }
    txs
}

#[test]
fn same_blocks_give_the_same_app_hash_on_every_instance() {
    let g = genesis(8, 1_000_000);
    let (d1, d2, d3) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    let a = open(d1.path(), &g);
    let b = open(d2.path(), &g);
    let mut c = Some(open(d3.path(), &g));
    let mut nonces = vec![0u64; 8];
    for height in 1..=30u64 {
        let txs = block(height, &mut nonces);
        let ha = run_block(&a, height, &txs);
        let hb = run_block(&b, height, &txs);
        let hc = run_block(c.as_ref().unwrap(), height, &txs);
        assert_eq!(ha, hb, "instances diverged at height {height}");
        assert_eq!(ha, hc, "reopened instance diverged at height {height}");
        // Supply is conserved: every unit sits in exactly one account, module accounts included.
        a.read_committed(|state| {
            use gpuchain_bank::BankRead;
            let sum: u128 = state.all_balances().into_iter().map(|(_, v)| v).sum();
            assert_eq!(
                sum,
                state.supply(),
                "supply invariant broken at height {height}"
            );
        });
        if height == 15 {
            drop(c.take()); // release the RocksDB lock before reopening
            c = Some(gpuchain_chain::App::open(d3.path()).unwrap());
            assert_eq!(c.as_ref().unwrap().committed(), (15, ha));
        }
    }
}
