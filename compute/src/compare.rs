//! Comparing two results of the same job by the job kind's tolerance. Honest runs on
//! different backends differ in the last bits; only differences beyond the tolerance are
//! faults.

use gpuchain_jobspec::{JobKind, Tolerance};
use serde::Serialize;

use crate::params::Params;
use crate::tensor_io::{decode, Tensor};
use crate::Result;

/// Measured differences between a candidate and a reference result.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Metrics {
    /// ‖a − b‖₂ / ‖b‖₂ in ppm (rounded up).
    pub rel_l2_ppm: u64,
    /// Share of rows with equal argmax (logits) or of equal tokens, in ppm.
    pub agreement_ppm: u64,
    /// Smallest per-row cosine similarity in ppm (embeddings).
    pub min_cosine_ppm: u64,
}

/// The outcome of a comparison.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Verdict {
    /// Byte-identical results.
    Identical,
    /// Different bytes, within tolerance: honest numeric drift.
    WithinTolerance {
        /// What was measured.
        metrics: Metrics,
    },
    /// Beyond tolerance, or structurally different: a fault.
    Mismatch {
        /// Why.
        reason: String,
        /// What was measured, when the shapes allowed measuring.
        metrics: Option<Metrics>,
    },
}

impl Verdict {
    /// Whether the candidate is accepted.
    pub fn accepted(&self) -> bool {
        !matches!(self, Verdict::Mismatch { .. })
    }
}

fn mismatch(reason: impl Into<String>) -> Verdict {
    Verdict::Mismatch {
        reason: reason.into(),
        metrics: None,
    }
}

/// Relative L2 error ‖a − b‖ / ‖b‖ (f64 accumulation), in ppm rounded up.
pub fn rel_l2_ppm(a: &[f32], b: &[f32]) -> u64 {
    let (mut num, mut den) = (0.0f64, 0.0f64);
    for (x, y) in a.iter().zip(b) {
        let d = f64::from(*x) - f64::from(*y);
        num += d * d;
        den += f64::from(*y) * f64::from(*y);
    }
    if num == 0.0 {
        return 0;
    }
    if den == 0.0 || !num.is_finite() {
        return u64::MAX;
    }
    ((num.sqrt() / den.sqrt()) * 1e6).ceil() as u64
}

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let (mut ab, mut aa, mut bb) = (0.0f64, 0.0f64, 0.0f64);
    for (x, y) in a.iter().zip(b) {
        ab += f64::from(*x) * f64::from(*y);
        aa += f64::from(*x) * f64::from(*x);
        bb += f64::from(*y) * f64::from(*y);
    }
    if aa == 0.0 || bb == 0.0 {
        return if aa == bb { 1.0 } else { 0.0 };
    }
    ab / (aa.sqrt() * bb.sqrt())
}

/// The tolerance between two replicas' results when each is allowed `tol` from the
/// reference: neither is the reference, so each slack widens. Relative L2 error and
/// disagreement add up (triangle inequality, union bound): twice the slack. The cosine
/// slack `1 − cos` grows with the square of the angle, and the angles add: four times.
pub fn between_replicas(tol: &Tolerance) -> Tolerance {
    const ONE: u32 = 1_000_000;
    let widen =
        |min: u32, factor: u32| ONE.saturating_sub(ONE.saturating_sub(min).saturating_mul(factor));
    Tolerance {
        rel_l2_ppm_max: tol.rel_l2_ppm_max.saturating_mul(2),
        agreement_ppm_min: widen(tol.agreement_ppm_min, 2),
        cosine_ppm_min: if tol.cosine_ppm_min == 0 {
            0
        } else {
            widen(tol.cosine_ppm_min, 4)
        },
    }
}

/// Compares a candidate result with a reference result of a job of kind `kind`.
pub fn compare(
    kind: JobKind,
    tol: &Tolerance,
    candidate: &[u8],
    reference: &[u8],
) -> Result<Verdict> {
    if candidate == reference {
        return Ok(Verdict::Identical);
    }
    if kind == JobKind::Training {
        let (a, b) = match (
            Params::from_safetensors(candidate),
            Params::from_safetensors(reference),
        ) {
            (Ok(a), Ok(b)) => (a, b),
            _ => return Ok(mismatch("training result is not valid safetensors")),
        };
        let shapes = |p: &Params| {
            p.tensors
                .iter()
                .map(|(n, t)| (n.clone(), t.dims.clone()))
                .collect::<Vec<_>>()
        };
        if shapes(&a) != shapes(&b) {
            return Ok(mismatch("trained weights have different tensors or shapes"));
        }
        let metrics = Metrics {
            rel_l2_ppm: rel_l2_ppm(&a.flatten(), &b.flatten()),
            ..Metrics::default()
        };
        return Ok(judge(metrics, tol, kind));
    }
    let (a, b) = match (decode(candidate), decode(reference)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) => return Ok(mismatch(format!("candidate is not a valid result: {e}"))),
        (_, Err(e)) => return Ok(mismatch(format!("reference is not a valid result: {e}"))),
    };
    match (a, b) {
        (Tensor::F32 { dims: da, data: a }, Tensor::F32 { dims: db, data: b }) => {
            if da != db || da.len() != 2 {
                return Ok(mismatch(format!(
                    "shape {da:?} differs from reference {db:?}"
                )));
            }
            let width = da[1].max(1);
            let rows = da[0].max(1) as u64;
            let mut metrics = Metrics {
                rel_l2_ppm: rel_l2_ppm(&a, &b),
                ..Metrics::default()
            };
            let agree = a
                .chunks(width)
                .zip(b.chunks(width))
                .filter(|(x, y)| {
                    crate::canonical::math::argmax(x) == crate::canonical::math::argmax(y)
                })
                .count();
            metrics.agreement_ppm = agree as u64 * 1_000_000 / rows;
            let min_cos = a
                .chunks(width)
                .zip(b.chunks(width))
                .map(|(x, y)| cosine(x, y))
                .fold(1.0f64, f64::min);
            metrics.min_cosine_ppm = (min_cos.max(0.0) * 1e6).floor() as u64;
            Ok(judge(metrics, tol, kind))
        }
        (Tensor::U32 { dims: da, data: a }, Tensor::U32 { dims: db, data: b }) => {
            if da != db {
                return Ok(mismatch(format!(
                    "shape {da:?} differs from reference {db:?}"
                )));
            }
            let agree = a.iter().zip(&b).filter(|(x, y)| x == y).count() as u64;
            let metrics = Metrics {
                agreement_ppm: agree * 1_000_000 / (a.len().max(1) as u64),
                ..Metrics::default()
            };
            Ok(judge(metrics, tol, kind))
        }
        _ => Ok(mismatch("results have different element types")),
    }
}

fn judge(metrics: Metrics, tol: &Tolerance, kind: JobKind) -> Verdict {
    let mut reasons = Vec::new();
    if kind != JobKind::Tokens && metrics.rel_l2_ppm > u64::from(tol.rel_l2_ppm_max) {
        reasons.push(format!(
            "relative L2 error {} ppm > {} ppm",
            metrics.rel_l2_ppm, tol.rel_l2_ppm_max
        ));
    }
    if matches!(kind, JobKind::Logits | JobKind::Tokens)
        && metrics.agreement_ppm < u64::from(tol.agreement_ppm_min)
    {
        reasons.push(format!(
            "agreement {} ppm < {} ppm",
            metrics.agreement_ppm, tol.agreement_ppm_min
        ));
    }
    if kind == JobKind::Embeddings && metrics.min_cosine_ppm < u64::from(tol.cosine_ppm_min) {
        reasons.push(format!(
            "cosine {} ppm < {} ppm",
            metrics.min_cosine_ppm, tol.cosine_ppm_min
        ));
    }
    if reasons.is_empty() {
        Verdict::WithinTolerance { metrics }
    } else {
        Verdict::Mismatch {
            reason: reasons.join("; "),
            metrics: Some(metrics),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor_io::encode_f32;

    #[test]
    fn two_replicas_may_each_drift_their_full_tolerance() {
        let tol = Tolerance::default_for(JobKind::Embeddings);
        let wide = between_replicas(&tol);
        assert_eq!(wide.rel_l2_ppm_max, 2 * tol.rel_l2_ppm_max);
        assert_eq!(
            1_000_000 - wide.cosine_ppm_min,
            4 * (1_000_000 - tol.cosine_ppm_min)
        );
        let logits = between_replicas(&Tolerance::default_for(JobKind::Logits));
        assert_eq!(logits.agreement_ppm_min, 980_000);
        let loose = Tolerance {
            rel_l2_ppm_max: u32::MAX,
            agreement_ppm_min: 0,
            cosine_ppm_min: 1,
        };
        let widened = between_replicas(&loose);
        assert_eq!(
            (
                widened.rel_l2_ppm_max,
                widened.agreement_ppm_min,
                widened.cosine_ppm_min
            ),
            (u32::MAX, 0, 0),
            "saturates instead of wrapping"
        );
        // Two results on either side of the reference, each at its full L2 slack.
        let reference = [1000.0f32, 0.0];
        let a = encode_f32(&[1, 2], &[1000.9, 0.0]);
        let b = encode_f32(&[1, 2], &[999.1, 0.0]);
        let r = encode_f32(&[1, 2], &reference);
        let logits_tol = Tolerance::default_for(JobKind::Logits);
        assert!(compare(JobKind::Logits, &logits_tol, &a, &r)
            .unwrap()
            .accepted());
        assert!(compare(JobKind::Logits, &logits_tol, &b, &r)
            .unwrap()
            .accepted());
        assert!(!compare(JobKind::Logits, &logits_tol, &a, &b)
            .unwrap()
            .accepted());
        assert!(
            compare(JobKind::Logits, &between_replicas(&logits_tol), &a, &b)
                .unwrap()
                .accepted()
        );
    }

    #[test]
    fn drift_is_accepted_and_wrong_answers_are_not() {
        let tol = Tolerance::default_for(JobKind::Logits);
        let reference = encode_f32(&[2, 3], &[1.0, 2.0, 3.0, 3.0, 2.0, 1.0]);
        let drift = encode_f32(&[2, 3], &[1.0, 2.0, 3.0000002, 3.0, 2.0, 1.0000001]);
        let wrong = encode_f32(&[2, 3], &[1.0, 2.0, 3.0, 1.0, 2.0, 3.0]);
        assert_eq!(
            compare(JobKind::Logits, &tol, &reference, &reference).unwrap(),
            Verdict::Identical
        );
        assert!(matches!(
            compare(JobKind::Logits, &tol, &drift, &reference).unwrap(),
            Verdict::WithinTolerance { .. }
        ));
        let v = compare(JobKind::Logits, &tol, &wrong, &reference).unwrap();
        assert!(!v.accepted(), "{v:?}");
        let other_shape = encode_f32(&[3, 2], &[1.0; 6]);
        assert!(!compare(JobKind::Logits, &tol, &other_shape, &reference)
            .unwrap()
            .accepted());
    }
}
