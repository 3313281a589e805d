//! Transaction files: transactions in the order they are scheduled, each on a *lane*. The
//! transactions of one lane are sent in order over one connection, since a gpuchain
//! account's nonces must reach the mempool in order; lanes are spread over connections.
//!
//! Layout: the line `gpuchain-txs v1\n`, then for each transaction its lane and its length
//! as little-endian `u32`s followed by its bytes.

use std::io::{BufReader, BufWriter, Read, Write};
use std::path::Path;

use anyhow::{ensure, Context, Result};

const MAGIC: &[u8] = b"gpuchain-txs v1\n";

/// One transaction and the lane it is sent on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tx {
    /// Transactions of one lane go over one connection, in file order.
    pub lane: u32,
    /// The transaction as the node receives it.
    pub bytes: Vec<u8>,
}

/// Writes `txs` to `path`.
pub fn write(path: &Path, txs: &[Tx]) -> Result<()> {
    let file =
        std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let mut out = BufWriter::new(file);
    out.write_all(MAGIC)?;
    for tx in txs {
        let len = u32::try_from(tx.bytes.len()).context("a transaction over 4 GiB")?;
        out.write_all(&tx.lane.to_le_bytes())?;
        out.write_all(&len.to_le_bytes())?;
        out.write_all(&tx.bytes)?;
    }
    out.flush()?;
    Ok(())
}

/// Reads a file written by [`write`].
pub fn read(path: &Path) -> Result<Vec<Tx>> {
    let file = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut input = BufReader::new(file);
    let mut magic = [0u8; MAGIC.len()];
    input
        .read_exact(&mut magic)
        .with_context(|| format!("{} is not a transaction file", path.display()))?;
    ensure!(
        magic == MAGIC,
        "{} is not a transaction file (it does not start with `gpuchain-txs v1`)",
        path.display()
    );
    let mut txs = Vec::new();
    let mut head = [0u8; 8];
    loop {
        match input.read_exact(&mut head[..4]) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(txs),
            Err(e) => return Err(e.into()),
        }
        input.read_exact(&mut head[4..]).with_context(|| {
            format!("{}: transaction {} is cut short", path.display(), txs.len())
        })?;
        let lane = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
        let len = u32::from_le_bytes([head[4], head[5], head[6], head[7]]) as usize;
        let mut bytes = vec![0u8; len];
        input.read_exact(&mut bytes).with_context(|| {
            format!("{}: transaction {} is cut short", path.display(), txs.len())
        })?;
        txs.push(Tx { lane, bytes });
    }
}

/// `count` transactions for CometBFT's `kvstore` app, each `size` bytes (`key=value`, one
/// `=`, as kvstore requires) with a key no other transaction of this `run` has, spread over
/// `lanes` lanes (kvstore has no order to keep).
pub fn kvstore(count: usize, size: usize, lanes: u32, run: &str) -> Vec<Tx> {
    (0..count)
        .map(|i| {
            let mut bytes = format!("{run}-{i:010}=").into_bytes();
            bytes.resize(size.max(bytes.len() + 1), b'v');
            Tx {
                lane: u32::try_from(i).unwrap_or(0) % lanes.max(1),
                bytes,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_written_file_reads_back_as_the_same_transactions_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("txs.bin");
        let txs = vec![
            Tx {
                lane: 3,
                bytes: b"first".to_vec(),
            },
            Tx {
                lane: 0,
                bytes: Vec::new(),
            },
            Tx {
                lane: 7,
                bytes: vec![0xff; 300],
            },
        ];
        write(&path, &txs).unwrap();
        assert_eq!(read(&path).unwrap(), txs);
    }

    #[test]
    fn a_truncated_file_or_another_format_is_refused_with_the_reason() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("txs.bin");
        write(
            &path,
            &[Tx {
                lane: 1,
                bytes: vec![1; 100],
            }],
        )
        .unwrap();
        let whole = std::fs::read(&path).unwrap();
        std::fs::write(&path, &whole[..whole.len() - 10]).unwrap();
        let err = read(&path).unwrap_err().to_string();
        assert!(err.contains("transaction 0 is cut short"), "{err}");
        std::fs::write(&path, b"{\"not\": \"ours\"}\n").unwrap();
        let err = read(&path).unwrap_err().to_string();
        assert!(err.contains("not a transaction file"), "{err}");
    }

    #[test]
    fn kvstore_transactions_have_the_size_asked_one_equals_sign_and_unique_keys() {
        let txs = kvstore(1_000, 192, 64, "run1");
        let keys: std::collections::BTreeSet<&[u8]> = txs
            .iter()
            .map(|t| t.bytes.split(|b| *b == b'=').next().unwrap())
            .collect();
        assert_eq!(keys.len(), 1_000);
        for t in &txs {
            assert_eq!(t.bytes.len(), 192);
            assert_eq!(t.bytes.iter().filter(|b| **b == b'=').count(), 1);
            assert!(t.lane < 64);
        }
    }
}
