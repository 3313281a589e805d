use borsh::{BorshDeserialize, BorshSerialize};

/// The longest retention period a module accepts: 100 years of block time, in seconds.
pub const MAX_RETENTION_SECS: u64 = 3_153_600_000;

/// What a handler may know about the block it runs in. There is deliberately no wall-clock
/// time: deadlines are in blocks, randomness is derived from `entropy`, and the only clock is
/// the block's own time, which every node reads from the same header.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize)]
pub struct BlockCtx {
    /// Height of the block being executed.
    pub height: u64,
    /// Chain id from genesis.
    pub chain_id: String,
    /// blake3 of the block hash CometBFT gave us: the seed of every on-chain random draw.
    pub entropy: [u8; 32],
    /// The block's time in milliseconds since the Unix epoch: CometBFT's BFT time (the
    /// weighted median of the validators' vote times), in the header every node executes,
    /// and later in each block than in the one before. Retention periods count it, so how
    /// long history is kept does not depend on how fast blocks come.
    pub time_ms: u64,
}

impl BlockCtx {
    /// The block time `secs` seconds after this block's, in ms (`None` past `u64::MAX` ms).
    pub fn time_after_secs(&self, secs: u64) -> Option<u64> {
        secs.checked_mul(1_000)
            .and_then(|ms| self.time_ms.checked_add(ms))
    }

    /// When something closed in this block retires under a retention of `retention_secs`
    /// (block time in ms): `None` for retention 0, which keeps it for good, or past
    /// `u64::MAX` ms, which parameter validation rules out and which keeps it too.
    pub fn retirement_due(&self, retention_secs: u64) -> Option<u64> {
        match retention_secs {
            0 => None,
            secs => self.time_after_secs(secs),
        }
    }

    /// A deterministic 32-byte draw for `purpose` and `subject` in this block.
    pub fn draw(&self, purpose: &str, subject: &[u8]) -> [u8; 32] {
        let mut hasher = blake3::Hasher::new();
        hasher.update(b"gpuchain/draw/");
        hasher.update(&self.entropy);
        hasher.update(purpose.as_bytes());
        hasher.update(&[0]);
        hasher.update(subject);
        *hasher.finalize().as_bytes()
    }

    /// [`BlockCtx::draw`] as a roll in `0..10^6` (its first 8 bytes, big-endian, mod 10^6),
    /// to compare with a chance in ppm.
    pub fn draw_ppm(&self, purpose: &str, subject: &[u8]) -> u64 {
        let draw = self.draw(purpose, subject);
        let first = draw
            .first_chunk::<8>()
            .map_or(0, |b| u64::from_be_bytes(*b));
        // PPM_ONE is a non-zero constant: the remainder always exists.
        first.checked_rem(u64::from(crate::PPM_ONE)).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retirement_comes_a_retention_of_block_time_later_and_never_for_zero_or_past_time() {
        let ctx = BlockCtx {
            height: 7,
            chain_id: "t".into(),
            entropy: [0; 32],
            time_ms: 1_000,
        };
        assert_eq!(ctx.retirement_due(60), Some(61_000));
        assert_eq!(ctx.retirement_due(0), None, "retention 0 keeps everything");
        assert_eq!(ctx.retirement_due(u64::MAX), None, "past u64::MAX ms: kept");
        let late = BlockCtx {
            time_ms: u64::MAX - 500,
            ..ctx
        };
        assert_eq!(late.retirement_due(1), None);
    }
}
