//! Sending one request to providers in turn: which answers are the client's own fault
//! (passed back), which mean "try the next provider" (busy, down, not serving the model),
//! and hedging a slow first try with the next-best provider.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;

use crate::pool::{Pool, Upstream};
use crate::stats::Stats;

/// An upstream's answer other than success, kept to pass back when nobody does better.
#[derive(Debug, Clone)]
pub(crate) struct UpstreamAnswer {
    pub(crate) status: u16,
    pub(crate) retry_after: Option<u64>,
    pub(crate) body: Vec<u8>,
}

/// Why one upstream did not answer a request.
#[derive(Debug)]
pub(crate) enum Refusal {
    /// The request itself is wrong (a 4xx other than 404 and 429): the same everywhere.
    Client(UpstreamAnswer),
    /// This upstream cannot answer it now; another may.
    Elsewhere(String, Option<UpstreamAnswer>),
}

/// A request no provider answered.
#[derive(Debug)]
pub(crate) enum Failure {
    /// What to tell the client: the client's own fault, a 404 or a 429 from the last tried.
    Answer(UpstreamAnswer),
    /// Every provider tried failed.
    NoneAnswered(String),
}

/// `POST {upstream}{path}` with a JSON `body`, classified.
pub(crate) async fn send(
    pool: &Pool,
    u: &Upstream,
    path: &str,
    body: &[u8],
) -> Result<reqwest::Response, Refusal> {
    let mut request = pool
        .http
        .post(format!("{}{path}", u.spec.url))
        .header(reqwest::header::CONTENT_TYPE, "application/json");
    if let (Some(lease), Some(leases)) = (u.spec.lease, &pool.leases) {
        for (name, value) in leases.headers(lease, body) {
            request = request.header(name, value);
        }
    }
    let sent = request.body(body.to_vec()).send().await;
    let r = match sent {
        Ok(r) => r,
        Err(e) => {
            let why = format!("sending failed: {e}");
            u.failed(&why);
            return Err(Refusal::Elsewhere(why, None));
        }
    };
    let status = r.status().as_u16();
    if r.status().is_success() {
        return Ok(r);
    }
    let retry_after = r
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|s| s.parse::<u64>().ok());
    let body = r.bytes().await.map(|b| b.to_vec()).unwrap_or_default();
    let answer = UpstreamAnswer {
        status,
        retry_after,
        body,
    };
    match status {
        429 => {
            u.busy(Duration::from_secs(retry_after.unwrap_or(1).clamp(1, 60)));
            Err(Refusal::Elsewhere("busy".into(), Some(answer)))
        }
        404 => Err(Refusal::Elsewhere(
            "does not serve the model".into(),
            Some(answer),
        )),
        // A request the gateway signed for a lease, refused: the endpoint does not serve that
        // lease (not its provider's, or no longer serving). Not the client's fault: routed
        // around, like a provider that is down.
        401 | 403 if u.spec.lease.is_some() => {
            let why = format!("refused the lease ({status})");
            u.failed(&why);
            Err(Refusal::Elsewhere(why, Some(answer)))
        }
        400..=499 => Err(Refusal::Client(answer)),
        // It answers, but could not serve this request (a model it could not load, say):
        // another may; it stays in routing for the rest.
        500 => Err(Refusal::Elsewhere(
            "could not serve the request".into(),
            Some(answer),
        )),
        _ => {
            let why = format!("answered {status}");
            u.failed(&why);
            Err(Refusal::Elsewhere(why, Some(answer)))
        }
    }
}

/// One try of a request on one upstream.
pub(crate) type Attempt<T> = BoxFuture<'static, Result<T, Refusal>>;

/// Tries `candidates` best first, at most `max` of them, with `attempt`; a try that has not
/// succeeded within `hedge_after` is raced against the next candidate if that one is idle
/// (the first to succeed is kept, the other dropped, which closes its connection).
pub(crate) async fn first_success<T>(
    candidates: &[Arc<Upstream>],
    max: usize,
    hedge_after: Duration,
    stats: &Stats,
    attempt: impl Fn(Arc<Upstream>) -> Attempt<T>,
) -> Result<T, Failure> {
    let mut remaining: VecDeque<Arc<Upstream>> =
        candidates.iter().take(max.max(1)).cloned().collect();
    let mut last_answer: Option<UpstreamAnswer> = None;
    let mut last_why = String::from("no provider to try");
    while let Some(first) = remaining.pop_front() {
        let mut primary = attempt(first);
        let result = match tokio::time::timeout(hedge_after, &mut primary).await {
            Ok(r) => r,
            // Only a provider with nothing running is worth racing (the best such one): one
            // that is busy would answer no sooner and the duplicate would slow both.
            Err(_slow) => {
                let idle = remaining
                    .iter()
                    .position(|u| u.in_flight.load(Ordering::Relaxed) == 0)
                    .and_then(|i| remaining.remove(i));
                match idle {
                    Some(second) => {
                        Stats::add(&stats.hedged, 1);
                        futures::future::select_ok([primary, attempt(second)])
                            .await
                            .map(|(won, _lost)| won)
                    }
                    None => primary.await,
                }
            }
        };
        match result {
            Ok(t) => return Ok(t),
            Err(Refusal::Client(answer)) => return Err(Failure::Answer(answer)),
            Err(Refusal::Elsewhere(why, answer)) => {
                Stats::add(&stats.retried, 1);
                tracing::debug!(%why, "trying the next provider");
                last_why = why;
                if answer.is_some() {
                    last_answer = answer;
                }
            }
        }
    }
    Err(match last_answer {
        Some(a) if a.status < 500 => Failure::Answer(a),
        _ => Failure::NoneAnswered(last_why),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::FutureExt;

    /// Upstreams named by how they behave: `ok-MS` answers after MS ms, `down` fails at
    /// once, `busy` answers 429, `bad` answers 400.
    fn pool(names: &[&str]) -> Pool {
        let specs: Vec<String> = names.iter().map(|n| format!("http://{n}")).collect();
        let specs: Vec<&str> = specs.iter().map(String::as_str).collect();
        crate::pool::test_pool(&specs)
    }

    fn behave(u: Arc<Upstream>) -> Attempt<String> {
        async move {
            let name = u.spec.url.trim_start_matches("http://").to_string();
            let answer = |status| UpstreamAnswer {
                status,
                retry_after: Some(1),
                body: Vec::new(),
            };
            match name.split_once('-') {
                Some(("ok", ms)) => {
                    tokio::time::sleep(Duration::from_millis(ms.parse().unwrap())).await;
                    Ok(name)
                }
                _ if name == "busy" => Err(Refusal::Elsewhere("busy".into(), Some(answer(429)))),
                _ if name == "bad" => Err(Refusal::Client(answer(400))),
                _ => Err(Refusal::Elsewhere("down".into(), None)),
            }
        }
        .boxed()
    }

    async fn run(names: &[&str], hedge_ms: u64) -> (Result<String, Failure>, Arc<Stats>) {
        let p = pool(names);
        let stats = Arc::new(Stats::default());
        let hedge = Duration::from_millis(hedge_ms);
        let r = first_success(&p.upstreams(), 3, hedge, &stats, behave).await;
        (r, stats)
    }

    fn count(c: &std::sync::atomic::AtomicU64) -> u64 {
        c.load(std::sync::atomic::Ordering::Relaxed)
    }

    #[tokio::test]
    async fn failures_and_busy_providers_move_the_request_on() {
        let (r, stats) = run(&["down", "busy", "ok-10"], 1_000).await;
        assert_eq!(r.unwrap(), "ok-10");
        assert_eq!(count(&stats.retried), 2);
        assert_eq!(count(&stats.hedged), 0);
    }

    #[tokio::test]
    async fn a_slow_first_try_is_raced_against_the_next_provider() {
        let (r, stats) = run(&["ok-3000", "ok-10"], 50).await;
        assert_eq!(r.unwrap(), "ok-10", "the hedge answers first");
        assert_eq!(count(&stats.hedged), 1);
        let (r, _) = run(&["ok-100", "ok-3000"], 50).await;
        assert_eq!(
            r.unwrap(),
            "ok-100",
            "the first try still wins if it is faster"
        );
    }

    #[tokio::test]
    async fn the_clients_own_fault_is_not_retried_and_all_busy_says_retry() {
        let (r, stats) = run(&["bad", "ok-10"], 1_000).await;
        assert!(matches!(
            r,
            Err(Failure::Answer(UpstreamAnswer { status: 400, .. }))
        ));
        assert_eq!(count(&stats.retried), 0);
        let (r, _) = run(&["busy", "busy"], 1_000).await;
        assert!(matches!(
            r,
            Err(Failure::Answer(UpstreamAnswer { status: 429, .. }))
        ));
        let (r, _) = run(&["down", "down"], 1_000).await;
        assert!(matches!(r, Err(Failure::NoneAnswered(_))));
    }
}
