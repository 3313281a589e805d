//! Seeded, platform-independent weight initialisation (splitmix64; no `rand` algorithm
//! whose stream could change between crate versions).

/// A splitmix64 generator: tiny, fast and fully specified.
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)` with 24 random bits (exact in f32).
    pub fn next_f32(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }

    /// Uniform in `[-bound, bound)`.
    pub fn uniform(&mut self, bound: f32) -> f32 {
        (self.next_f32() * 2.0 - 1.0) * bound
    }

    /// Uniform index in `0..n` (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

/// `n` values uniform in `±1/√fan_in` (PyTorch's default bound for linear and conv layers).
pub fn fan_in_uniform(rng: &mut SplitMix64, n: usize, fan_in: usize) -> Vec<f32> {
    let bound = 1.0 / libm::sqrtf(fan_in as f32);
    (0..n).map(|_| rng.uniform(bound)).collect()
}
