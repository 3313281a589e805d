//! How providers are ranked for a request: a cost in milliseconds-equivalents from the
//! measured time to first token (stretched by the requests already running there), the
//! price and the missing reputation, each weighted as configured. Lower is better.

/// The configured weights.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Weights {
    pub(crate) latency: f64,
    pub(crate) price: f64,
    pub(crate) reputation: f64,
}

/// What is known of one provider when a request arrives.
#[derive(Debug, Clone, Default)]
pub(crate) struct Candidate {
    /// Smoothed time to first token (or to a probe's answer), milliseconds.
    pub(crate) latency_ms: Option<f64>,
    /// Requests the gateway has running there now.
    pub(crate) in_flight: usize,
    /// Asking price, ugpu per million tokens.
    pub(crate) price: Option<u64>,
    /// On-chain reputation, ppm.
    pub(crate) reputation_ppm: Option<u64>,
    /// It said it is full (429) and its retry time has not passed.
    pub(crate) busy: bool,
}

/// A provider not yet measured is assumed this slow, so that a measured fast one wins and
/// a measured slow one does not.
const UNMEASURED_MS: f64 = 500.0;

/// Reputation assumed for a provider with no account given (the chain's neutral score).
const NEUTRAL_PPM: u64 = 500_000;

/// Added to a busy provider's cost: it is tried only after every other.
const BUSY_MS: f64 = 1e9;

/// The cost of sending a request to `c`.
pub(crate) fn cost(c: &Candidate, w: &Weights) -> f64 {
    let latency = c.latency_ms.unwrap_or(UNMEASURED_MS);
    // Each request already running there shares its machine: assume it waits about one
    // first-token time more for each.
    let queued = latency * (1.0 + c.in_flight as f64);
    let price = c.price.unwrap_or(0) as f64;
    let reputation = c.reputation_ppm.unwrap_or(NEUTRAL_PPM).min(1_000_000) as f64 / 1e6;
    let busy = if c.busy { BUSY_MS } else { 0.0 };
    w.latency * queued + w.price * price + w.reputation * (1.0 - reputation) + busy
}

/// Indices of `candidates`, cheapest first (ties keep their order).
pub(crate) fn rank(candidates: &[Candidate], w: &Weights) -> Vec<usize> {
    let mut order: Vec<usize> = (0..candidates.len()).collect();
    order.sort_by(|&a, &b| {
        cost(&candidates[a], w)
            .partial_cmp(&cost(&candidates[b], w))
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    const W: Weights = Weights {
        latency: 1.0,
        price: 0.0,
        reputation: 1_000.0,
    };

    fn at(ms: f64) -> Candidate {
        Candidate {
            latency_ms: Some(ms),
            ..Candidate::default()
        }
    }

    #[test]
    fn the_fastest_idle_provider_comes_first() {
        assert_eq!(rank(&[at(300.0), at(120.0), at(200.0)], &W), vec![1, 2, 0]);
    }

    #[test]
    fn requests_running_on_a_provider_spread_the_next_ones() {
        let loaded = Candidate {
            in_flight: 2,
            ..at(120.0)
        };
        // 120 ms with two running costs 360: the idle 200 ms provider is better now.
        assert_eq!(rank(&[loaded, at(200.0)], &W), vec![1, 0]);
    }

    #[test]
    fn a_busy_provider_is_tried_last_and_reputation_counts() {
        let busy = Candidate {
            busy: true,
            ..at(10.0)
        };
        let distrusted = Candidate {
            reputation_ppm: Some(100_000),
            ..at(100.0)
        };
        let trusted = Candidate {
            reputation_ppm: Some(900_000),
            ..at(300.0)
        };
        // 100 + 900 > 300 + 100: the trusted one wins despite its latency.
        assert_eq!(rank(&[busy, distrusted, trusted], &W), vec![2, 1, 0]);
    }

    #[test]
    fn price_counts_when_weighed() {
        let w = Weights { price: 1.0, ..W };
        let cheap = Candidate {
            price: Some(50),
            ..at(200.0)
        };
        let dear = Candidate {
            price: Some(400),
            ..at(100.0)
        };
        assert_eq!(rank(&[dear.clone(), cheap.clone()], &w), vec![1, 0]);
        assert_eq!(
            rank(&[dear, cheap], &W),
            vec![0, 1],
            "price weight 0 ignores it"
        );
    }
}
