//! Will the job fit? A conservative memory estimate per architecture, checked before any
//! weights are loaded.

use gpuchain_jobspec::{JobSpec, ModelArch};

use crate::Backend;

/// Estimated peak memory in bytes: weights as f32 (×2 for a loading copy) plus activations
/// for one batch.
pub fn estimate_memory_bytes(spec: &JobSpec) -> u64 {
    match spec {
        JobSpec::Training(t) if t.arch == ModelArch::MiniLmClassifier => {
            // The pretrained weights in three copies (file, tensors, encoder), and the frozen
            // states of every sentence: 1.5 KiB a token, a token about 5 bytes of the JSON.
            let weights = match &t.init {
                gpuchain_jobspec::WeightsInit::Blob(b) => b.size,
                gpuchain_jobspec::WeightsInit::Seed(_) => 0,
            };
            3 * weights + 320 * t.dataset.size + u64::from(t.batch_size) * (16 << 20)
        }
        JobSpec::Training(t) => {
            let params = 10_000u64;
            params * 4 * 4 * u64::from(t.workers) + u64::from(t.batch_size) * 1024
        }
        JobSpec::Inference(s) => {
            let batch = u64::from(s.batch_size);
            match s.arch {
                ModelArch::DigitsMlp | ModelArch::DigitsCnn => 2 * s.weights.size + batch * 4096,
                ModelArch::MiniLmEmbedder | ModelArch::MiniLmClassifier => {
                    2 * s.weights.size + batch * 512 * 384 * 4 * 16
                }
                ModelArch::LlamaDecoder => match &s.llama {
                    Some(l) => {
                        let (v, h, i, n) = (
                            u64::from(l.vocab_size),
                            u64::from(l.hidden_size),
                            u64::from(l.intermediate_size),
                            u64::from(l.num_layers),
                        );
                        let kv = u64::from(l.num_kv_heads) * (h / u64::from(l.num_heads).max(1));
                        let params = 2 * v * h + n * (2 * h * h + 2 * h * kv + 3 * h * i);
                        let cache = 2 * n * batch * u64::from(l.max_seq_len) * kv * 4;
                        params * 4 + cache + batch * v * 4
                    }
                    None => 2 * s.weights.size,
                },
                // 4- or 8-bit weights expand to f32 (up to 8×, plus the file itself); the
                // shape is in the file, so the cache is bounded by a generous 64 MiB a row.
                ModelArch::LlamaGguf => 10 * s.weights.size + batch * (64 << 20),
            }
        }
    }
}

/// Memory the backend can use: free GPU memory from NVML for CUDA, `MemAvailable` for the
/// CPU paths; 0 when unknown (the check is then skipped).
pub fn available_memory_bytes(backend: Backend) -> u64 {
    match backend {
        #[cfg(feature = "cuda")]
        Backend::Cuda { device } => crate::hardware::probe()
            .gpus
            .get(device)
            .map_or(0, |g| g.memory_free_bytes),
        _ => crate::hardware::meminfo().1,
    }
}
