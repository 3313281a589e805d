//! How far two honest results may differ. All figures are integers in ppm.

use borsh::{BorshDeserialize, BorshSerialize};
use serde::{Deserialize, Serialize};

use crate::JobKind;

/// Thresholds a verifier applies when comparing a result with its own re-execution.
/// Calibration on honest runs is documented in `docs/compute.md`.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct Tolerance {
    /// Largest relative L2 error ‖a−b‖/‖b‖ in ppm.
    pub rel_l2_ppm_max: u32,
    /// Smallest share of rows whose argmax agrees (logits) or tokens that agree (decoder), in ppm.
    pub agreement_ppm_min: u32,
    /// Smallest per-row cosine similarity, in ppm (embeddings; 0 disables).
    pub cosine_ppm_min: u32,
}

impl Tolerance {
    /// Default tolerance for a job kind (calibrated on honest runs; see `docs/compute.md`).
    pub fn default_for(kind: JobKind) -> Self {
        match kind {
            JobKind::Logits => Tolerance {
                rel_l2_ppm_max: 1_000,
                agreement_ppm_min: 990_000,
                cosine_ppm_min: 0,
            },
            JobKind::Embeddings => Tolerance {
                rel_l2_ppm_max: 2_000,
                agreement_ppm_min: 0,
                cosine_ppm_min: 999_900,
            },
            JobKind::Tokens => Tolerance {
                rel_l2_ppm_max: 1_000_000,
                agreement_ppm_min: 950_000,
                cosine_ppm_min: 0,
            },
            JobKind::Training => Tolerance {
                rel_l2_ppm_max: 20_000,
                agreement_ppm_min: 0,
                cosine_ppm_min: 0,
            },
        }
    }
}
