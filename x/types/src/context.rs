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
