//! Limits enforced by [`crate::JobSpec::validate`]. "Put a limit on everything."

/// Most mirror URLs per blob.
pub const MAX_URLS_PER_BLOB: usize = 8;
/// Longest URL in bytes.
pub const MAX_URL_LEN_BYTES: usize = 2048;
/// Largest weights blob (4 GiB).
pub const MAX_WEIGHTS_BYTES: u64 = 4 << 30;
/// Largest tokenizer blob (64 MiB).
pub const MAX_TOKENIZER_BYTES: u64 = 64 << 20;
/// Largest input blob (1 GiB).
pub const MAX_INPUT_BYTES: u64 = 1 << 30;
/// Largest dataset blob (4 GiB).
pub const MAX_DATASET_BYTES: u64 = 4 << 30;
/// Largest inference batch.
pub const MAX_BATCH_SIZE: u32 = 4096;
/// Most data-parallel workers.
pub const MAX_WORKERS: u32 = 64;
/// Most training rounds.
pub const MAX_ROUNDS: u32 = 100_000;
/// Most local steps per round.
pub const MAX_LOCAL_STEPS: u32 = 10_000;
/// Largest training minibatch.
pub const MAX_TRAIN_BATCH: u32 = 4096;
/// Most generated tokens per prompt.
pub const MAX_NEW_TOKENS: u32 = 8192;
/// Most stop tokens of a generation.
pub const MAX_STOP_TOKENS: usize = 16;
/// Largest decoder vocabulary.
pub const MAX_VOCAB: u32 = 1 << 20;
/// Largest decoder width.
pub const MAX_HIDDEN: u32 = 16_384;
/// Most decoder layers.
pub const MAX_LAYERS: u32 = 256;
/// Longest decoder context.
pub const MAX_SEQ_LEN: u32 = 1 << 17;
