//! The providers the gateway routes over: what each serves, whether it answers, how fast,
//! and what the chain says of it. Probes and real requests both update it.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::args::UpstreamSpec;
use crate::score::{self, Candidate, Weights};

/// How much a new latency sample moves the smoothed one.
const SMOOTHING: f64 = 0.3;

/// One provider endpoint.
pub(crate) struct Upstream {
    pub(crate) spec: UpstreamSpec,
    health: Mutex<Health>,
    /// Requests the gateway has running there now.
    pub(crate) in_flight: AtomicUsize,
    /// Requests sent there.
    pub(crate) requests: AtomicU64,
    /// Requests it failed (refused to connect, broke off, answered 5xx).
    pub(crate) failures: AtomicU64,
    /// Times it went from answering to not answering.
    pub(crate) went_down: AtomicU64,
    /// It answered a ringer wrong: never routed to again.
    caught: AtomicBool,
    /// A faulty verdict stands against its lease, or its provider appealed one: not routed
    /// to until the claim settles otherwise (a final faulty verdict ends the lease).
    suspended: AtomicBool,
}

/// What the probes and requests have learnt of an upstream.
#[derive(Debug, Clone, Default)]
pub(crate) struct Health {
    /// It answered its last probe or request.
    pub(crate) up: bool,
    /// The models it lists.
    pub(crate) models: Vec<String>,
    /// Smoothed time to first token of real requests, milliseconds.
    pub(crate) latency_ms: Option<f64>,
    /// Time its last probe took, milliseconds: its latency until a request measures one.
    pub(crate) probe_ms: Option<f64>,
    /// It said it was full until then.
    pub(crate) busy_until: Option<Instant>,
    /// Its on-chain reputation, ppm.
    pub(crate) reputation_ppm: Option<u64>,
}

impl Upstream {
    /// Whether requests for `model` may go here: it lists the model, and the model is the
    /// one its spec (its lease) is limited to, if any.
    fn serves_listed(&self, model: &str, listed: &[String]) -> bool {
        listed.iter().any(|m| m == model) && self.spec.model.as_deref().is_none_or(|m| m == model)
    }

    /// Whether requests for `model` may go here, by what it listed last.
    pub(crate) fn serves(&self, model: &str) -> bool {
        self.serves_listed(model, &self.health().models)
    }

    /// Whether it answered a ringer wrong.
    pub(crate) fn is_caught(&self) -> bool {
        self.caught.load(Ordering::Relaxed)
    }

    /// Whether a faulty verdict on its lease is standing or under appeal.
    pub(crate) fn is_suspended(&self) -> bool {
        self.suspended.load(Ordering::Relaxed)
    }

    /// Whether requests may go here: neither caught by a ringer nor under a faulty verdict.
    pub(crate) fn is_trusted(&self) -> bool {
        !self.is_caught() && !self.is_suspended()
    }

    fn new(spec: UpstreamSpec) -> Upstream {
        Upstream {
            spec,
            health: Mutex::default(),
            in_flight: AtomicUsize::new(0),
            requests: AtomicU64::new(0),
            failures: AtomicU64::new(0),
            went_down: AtomicU64::new(0),
            caught: AtomicBool::new(false),
            suspended: AtomicBool::new(false),
        }
    }

    fn health(&self) -> MutexGuard<'_, Health> {
        // A poisoned lock only means a panic elsewhere mid-update; the data is still usable.
        self.health.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A copy of what is known of it.
    pub(crate) fn snapshot(&self) -> Health {
        self.health().clone()
    }

    /// It answered a request; `took` is its time to first token (or to the whole answer).
    pub(crate) fn answered(&self, took: Duration) {
        let ms = took.as_secs_f64() * 1e3;
        let mut h = self.health();
        h.up = true;
        h.latency_ms = Some(match h.latency_ms {
            Some(old) => old + SMOOTHING * (ms - old),
            None => ms,
        });
    }

    /// It failed a request or a probe: no more requests until a probe finds it again.
    /// Whether it answered its last probe or request.
    pub(crate) fn is_up(&self) -> bool {
        self.health().up
    }

    pub(crate) fn failed(&self, why: &str) {
        self.failures.fetch_add(1, Ordering::Relaxed);
        let mut h = self.health();
        if h.up {
            h.up = false;
            self.went_down.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(
                upstream = %self.spec.url,
                provider = ?self.spec.provider.as_ref().map(|a| a.to_string()),
                why,
                "provider stopped answering; routing around it"
            );
        }
    }

    /// It answered 429: skip it for `retry_after`.
    pub(crate) fn busy(&self, retry_after: Duration) {
        self.health().busy_until = Some(Instant::now() + retry_after);
    }

    fn listed(&self, models: Vec<String>, took: Duration) {
        let was_up = {
            let mut h = self.health();
            let was_up = h.up;
            h.up = true;
            h.models = models;
            h.probe_ms = Some(took.as_secs_f64() * 1e3);
            was_up
        };
        if !was_up {
            tracing::info!(upstream = %self.spec.url, "provider answering");
        }
    }

    fn set_reputation(&self, ppm: u64) {
        self.health().reputation_ppm = Some(ppm);
    }
}

/// Counts a request as running on an upstream until dropped.
pub(crate) struct InFlight(Arc<Upstream>);

impl InFlight {
    pub(crate) fn start(u: &Arc<Upstream>) -> InFlight {
        u.in_flight.fetch_add(1, Ordering::Relaxed);
        u.requests.fetch_add(1, Ordering::Relaxed);
        InFlight(u.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Whom a request may go to.
pub(crate) enum Route {
    /// These, best first.
    To(Vec<Arc<Upstream>>),
    /// Providers answer, but none lists the model.
    UnknownModel,
    /// No provider answers.
    NoneUp,
}

/// Every upstream, and how to rank them.
pub(crate) struct Pool {
    /// Grows when a renewed order clears, shrinks when a lease ends.
    upstreams: RwLock<Vec<Arc<Upstream>>>,
    pub(crate) http: reqwest::Client,
    weights: Weights,
    /// The chain leases requests are paid on, when any upstream names one.
    pub(crate) leases: Option<Arc<crate::lease::Leases>>,
    /// Providers caught answering a ringer wrong: their upstreams, later ones included, are
    /// never routed to.
    caught: Mutex<Vec<gpuchain_types::Address>>,
}

impl Pool {
    pub(crate) fn new(
        specs: Vec<UpstreamSpec>,
        weights: Weights,
        leases: Option<Arc<crate::lease::Leases>>,
    ) -> anyhow::Result<Pool> {
        Ok(Pool {
            upstreams: RwLock::new(
                specs
                    .into_iter()
                    .map(|s| Arc::new(Upstream::new(s)))
                    .collect(),
            ),
            http: reqwest::Client::builder()
                .connect_timeout(Duration::from_secs(2))
                .tcp_nodelay(true)
                .build()?,
            weights,
            leases,
            caught: Mutex::default(),
        })
    }

    /// `u` answered a ringer wrong: it, and every upstream of the same provider now or
    /// later, is never routed to again.
    pub(crate) fn catch(&self, u: &Upstream) {
        u.caught.store(true, Ordering::Relaxed);
        let Some(provider) = u.spec.provider else {
            return;
        };
        self.caught
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(provider);
        for other in self.upstreams() {
            if other.spec.provider == Some(provider) {
                other.caught.store(true, Ordering::Relaxed);
            }
        }
    }

    /// The upstreams now.
    pub(crate) fn upstreams(&self) -> Vec<Arc<Upstream>> {
        // A poisoned lock only means a panic elsewhere mid-update; the list is still whole.
        self.upstreams
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Adds upstreams (the leases of a renewed order), probed at once.
    pub(crate) async fn add(&self, specs: Vec<UpstreamSpec>) {
        let new: Vec<Arc<Upstream>> = specs
            .into_iter()
            .map(|s| Arc::new(Upstream::new(s)))
            .collect();
        futures::future::join_all(new.iter().map(|u| self.probe(u))).await;
        let caught = self
            .caught
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        for u in &new {
            if u.spec.provider.is_some_and(|p| caught.contains(&p)) {
                u.caught.store(true, Ordering::Relaxed);
            }
        }
        self.upstreams
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .extend(new);
    }

    /// Stops routing over the upstreams of `leases` (ended); how many there were.
    pub(crate) fn retire(&self, leases: &[u64]) -> usize {
        let mut all = self.upstreams.write().unwrap_or_else(|e| e.into_inner());
        let before = all.len();
        all.retain(|u| u.spec.lease.is_none_or(|l| !leases.contains(&l)));
        before - all.len()
    }

    /// The upstreams that answer and list `model`, best first; with `region`, those in it
    /// come first.
    pub(crate) fn route(&self, model: &str, region: Option<&str>) -> Route {
        let now = Instant::now();
        let mut any_up = false;
        let mut serving = Vec::new();
        for u in &self.upstreams() {
            let h = u.snapshot();
            // A caught or suspended provider counts as gone.
            if !h.up || !u.is_trusted() {
                continue;
            }
            any_up = true;
            if u.serves_listed(model, &h.models) {
                serving.push((u.clone(), h));
            }
        }
        if serving.is_empty() {
            return if any_up {
                Route::UnknownModel
            } else {
                Route::NoneUp
            };
        }
        let candidates: Vec<Candidate> = serving
            .iter()
            .map(|(u, h)| Candidate {
                latency_ms: h.latency_ms.or(h.probe_ms),
                in_flight: u.in_flight.load(Ordering::Relaxed),
                price: u.spec.price,
                reputation_ppm: h.reputation_ppm,
                busy: h.busy_until.is_some_and(|t| t > now),
            })
            .collect();
        let mut order = score::rank(&candidates, &self.weights);
        if let Some(region) = region {
            // Stable: within and outside the region the ranking stays.
            order.sort_by_key(|&i| serving[i].0.spec.region.as_deref() != Some(region));
        }
        Route::To(order.into_iter().map(|i| serving[i].0.clone()).collect())
    }

    /// Every model some answering upstream lists, in the order they were first listed.
    pub(crate) fn models(&self) -> Vec<String> {
        let mut all: Vec<String> = Vec::new();
        for u in &self.upstreams() {
            let h = u.snapshot();
            if h.up && u.is_trusted() {
                for m in h.models {
                    if u.spec.model.as_deref().is_none_or(|only| only == m) && !all.contains(&m) {
                        all.push(m);
                    }
                }
            }
        }
        all
    }

    /// Probes every upstream once, all at once.
    pub(crate) async fn probe_all(&self) {
        let all = self.upstreams();
        futures::future::join_all(all.iter().map(|u| self.probe(u))).await;
    }

    /// Probes every upstream every `every`, for ever.
    pub(crate) async fn probe_forever(self: Arc<Self>, every: Duration) {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            self.probe_all().await;
        }
    }

    /// `GET /v1/models`: whether it answers, what it serves, and how quickly.
    async fn probe(&self, u: &Upstream) {
        let started = Instant::now();
        let answer = self
            .http
            .get(format!("{}/v1/models", u.spec.url))
            .timeout(Duration::from_secs(2))
            .send()
            .await;
        let listed = match answer {
            Ok(r) if r.status().is_success() => r
                .bytes()
                .await
                .ok()
                .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
                .and_then(|v| model_ids(&v)),
            Ok(r) => {
                u.failed(&format!("probe answered {}", r.status()));
                return;
            }
            Err(e) => {
                u.failed(&format!("probe failed: {e}"));
                return;
            }
        };
        match listed {
            Some(models) => u.listed(models, started.elapsed()),
            None => u.failed("probe answer is not a model list"),
        }
    }

    /// Reads the reputation of every upstream that names its provider, and the serving
    /// verdicts on their leases, from the chain at `node`, every `every`, for ever.
    pub(crate) async fn chain_forever(self: Arc<Self>, node: String, every: Duration) {
        let client = match gpuchain_client::ChainClient::new(&node) {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(%node, error = %e, "reputation is not read");
                return;
            }
        };
        let mut tick = tokio::time::interval(every);
        loop {
            tick.tick().await;
            if let Err(e) = self.read_reputation(&client).await {
                tracing::warn!(%node, error = %e, "reading reputation");
            }
            if let Err(e) = self.read_verdicts(&client).await {
                tracing::warn!(%node, error = %e, "reading serving verdicts");
            }
        }
    }

    async fn read_reputation(&self, client: &gpuchain_client::ChainClient) -> anyhow::Result<()> {
        use gpuchain_reputation::{state_key, Reputation, ReputationParams};
        let height = client.latest_height().await?;
        let params: ReputationParams = client.get(state_key::params()).await?.unwrap_or_default();
        for u in &self.upstreams() {
            let Some(provider) = &u.spec.provider else {
                continue;
            };
            let r: Reputation = client
                .get(&state_key::record(provider))
                .await?
                .unwrap_or_default();
            let blocks = height.saturating_sub(r.updated_height);
            u.set_reputation(u64::from(gpuchain_reputation::decay(
                r.score_ppm,
                blocks,
                params.half_life_blocks,
            )));
        }
        Ok(())
    }

    /// Suspends the upstreams whose lease has a faulty verdict standing or under its
    /// provider's appeal, and lifts the suspension once no such claim is left.
    async fn read_verdicts(&self, client: &gpuchain_client::ChainClient) -> anyhow::Result<()> {
        use gpuchain_serving::ServingRead;
        let claims = client
            .snapshot(gpuchain_serving::state_key::claims_prefix())
            .await?
            .serving_claims();
        for u in &self.upstreams() {
            let Some(lease) = u.spec.lease else {
                continue;
            };
            let against = claims
                .iter()
                .any(|c| c.lease_id == lease && fault_pending(c, u.spec.provider.as_ref()));
            if u.suspended.swap(against, Ordering::Relaxed) != against {
                if against {
                    tracing::warn!(
                        lease,
                        url = %u.spec.url,
                        "a faulty verdict stands on this lease: not routed to while it stands"
                    );
                } else {
                    tracing::info!(lease, url = %u.spec.url, "no faulty verdict stands now: routed to again");
                }
            }
        }
        Ok(())
    }
}

/// Whether `claim` holds a faulty verdict not yet final: standing, or appealed by the
/// lease's provider (`provider`, when known).
fn fault_pending(
    claim: &gpuchain_serving::Claim,
    provider: Option<&gpuchain_types::Address>,
) -> bool {
    use gpuchain_serving::ClaimStage;
    match &claim.stage {
        ClaimStage::Standing { honest, .. } => !honest,
        ClaimStage::Judging(j) => j
            .appeal
            .as_ref()
            .is_some_and(|a| provider == Some(&a.appellant)),
        _ => false,
    }
}

/// The ids of an OpenAI model list.
fn model_ids(list: &Value) -> Option<Vec<String>> {
    list.get("data")?
        .as_array()?
        .iter()
        .map(|m| m.get("id").and_then(Value::as_str).map(str::to_string))
        .collect()
}

/// A pool of `specs` (upstream specs as on the command line) weighing latency by 1 per
/// millisecond, price not at all and missing reputation by 1,000.
#[cfg(test)]
pub(crate) fn test_pool(specs: &[&str]) -> Pool {
    let w = Weights {
        latency: 1.0,
        price: 0.0,
        reputation: 1_000.0,
    };
    Pool::new(specs.iter().map(|s| s.parse().unwrap()).collect(), w, None).unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(specs: &[&str]) -> Pool {
        test_pool(specs)
    }

    fn up(u: &Upstream, models: &[&str], ms: u64) {
        u.listed(
            models.iter().map(|m| m.to_string()).collect(),
            Duration::from_millis(ms),
        );
    }

    #[test]
    fn requests_go_to_answering_providers_of_the_model_best_first() {
        let p = pool(&[
            "http://a:1",
            "http://b:1,region=eu",
            "http://c:1",
            "http://d:1",
        ]);
        assert!(matches!(p.route("chat", None), Route::NoneUp));
        up(&p.upstreams()[0], &["chat", "embed"], 300);
        up(&p.upstreams()[1], &["chat"], 200);
        up(&p.upstreams()[2], &["embed"], 10);
        up(&p.upstreams()[3], &["chat"], 100);
        let urls = |r: Route| match r {
            Route::To(v) => v.iter().map(|u| u.spec.url.clone()).collect::<Vec<_>>(),
            _ => panic!("no route"),
        };
        assert_eq!(
            urls(p.route("chat", None)),
            ["http://d:1", "http://b:1", "http://a:1"]
        );
        assert_eq!(
            urls(p.route("chat", Some("eu"))),
            ["http://b:1", "http://d:1", "http://a:1"]
        );
        assert!(matches!(p.route("other", None), Route::UnknownModel));
        assert_eq!(p.models(), ["chat", "embed"]);

        // A failure takes a provider out until a probe finds it again; a 429 sends it last.
        p.upstreams()[3].failed("connection refused");
        assert_eq!(p.upstreams()[3].went_down.load(Ordering::Relaxed), 1);
        p.upstreams()[1].busy(Duration::from_secs(5));
        assert_eq!(urls(p.route("chat", None)), ["http://a:1", "http://b:1"]);
        up(&p.upstreams()[3], &["chat"], 100);
        assert_eq!(urls(p.route("chat", None))[0], "http://d:1");
    }

    #[test]
    fn an_upstream_limited_to_one_model_gets_only_that_model() {
        // One provider endpoint serving two models on two leases: each lease's upstream
        // carries only its own model, so an embedding is never paid at a chat lease's price.
        let p = pool(&[
            "http://a:1,lease=1,model=chat",
            "http://a:1,lease=2,model=embed",
        ]);
        up(&p.upstreams()[0], &["chat", "embed"], 50);
        up(&p.upstreams()[1], &["chat", "embed"], 10);
        let leases = |r: Route| match r {
            Route::To(v) => v.iter().map(|u| u.spec.lease).collect::<Vec<_>>(),
            _ => panic!("no route"),
        };
        assert_eq!(leases(p.route("chat", None)), [Some(1)]);
        assert_eq!(leases(p.route("embed", None)), [Some(2)]);
        assert_eq!(p.models(), ["chat", "embed"]);
        let only = pool(&["http://a:1,model=chat"]);
        up(&only.upstreams()[0], &["chat", "embed"], 10);
        assert!(matches!(only.route("embed", None), Route::UnknownModel));
        assert_eq!(only.models(), ["chat"]);
    }

    #[test]
    fn latency_is_smoothed_over_answers() {
        let p = pool(&["http://a:1"]);
        let u = &p.upstreams()[0];
        u.answered(Duration::from_millis(100));
        u.answered(Duration::from_millis(200));
        let ms = u.snapshot().latency_ms.unwrap();
        assert!((ms - 130.0).abs() < 1e-6, "{ms}");
    }

    #[test]
    fn model_lists_are_read_from_openai_shape() {
        let list = serde_json::json!({"object": "list", "data": [{"id": "a"}, {"id": "b"}]});
        assert_eq!(model_ids(&list), Some(vec!["a".into(), "b".into()]));
        assert_eq!(model_ids(&serde_json::json!({"data": [{"x": 1}]})), None);
    }
}
