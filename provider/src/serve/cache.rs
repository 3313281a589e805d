//! The chat models an endpoint offers, each loaded when first asked for and kept loaded
//! between requests. Under a memory budget, the least recently used model that no request
//! is using is unloaded to make room for the one asked for; when every loaded model is in
//! use, the request is told to retry.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use gpuchain_agent_kit::metrics::metric;
use gpuchain_compute::llama::PrefixCache;

use super::Model;

/// Why a model cannot be had now.
pub(crate) enum Unavailable {
    /// Not offered here.
    Unknown,
    /// Offered, but the budget is taken by models that requests are using.
    NoRoom,
    /// Loading it failed, or it is larger than the whole budget.
    Failed(String),
}

struct Loaded {
    name: String,
    model: Arc<Model>,
    bytes: usize,
    last_used: u64,
}

/// The offered models and those loaded now.
pub(crate) struct ModelCache {
    offered: Vec<(String, PathBuf)>,
    budget: Option<usize>,
    /// Each loaded model's prompt prefix cache budget.
    prefix_bytes: usize,
    loaded: Mutex<Vec<Loaded>>,
    /// One model loads at a time.
    loading: tokio::sync::Mutex<()>,
    /// Counts uses, for least-recently-used order.
    clock: AtomicU64,
    loads: AtomicU64,
    evictions: AtomicU64,
}

impl ModelCache {
    /// Offers `offered` (name and GGUF file, in listing order), keeping at most `budget`
    /// bytes of weights loaded (no limit without one).
    /// Each model keeps up to `prefix_bytes` of its earlier prompts' keys and values.
    pub(crate) fn new(
        offered: Vec<(String, PathBuf)>,
        budget: Option<usize>,
        prefix_bytes: usize,
    ) -> ModelCache {
        ModelCache {
            offered,
            budget,
            prefix_bytes,
            loaded: Mutex::default(),
            loading: tokio::sync::Mutex::new(()),
            clock: AtomicU64::new(0),
            loads: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Loaded>> {
        // A poisoned lock only means a panic elsewhere mid-update; the list is still whole.
        self.loaded.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The offered models' names.
    pub(crate) fn names(&self) -> impl Iterator<Item = &str> {
        self.offered.iter().map(|(n, _)| n.as_str())
    }

    /// Bytes the loaded models take, counted by their files' sizes (what the budget counts).
    pub(crate) fn loaded_bytes(&self) -> usize {
        self.lock().iter().map(|l| l.bytes).sum()
    }

    fn hit(&self, name: &str) -> Option<Arc<Model>> {
        let now = self.clock.fetch_add(1, Ordering::Relaxed);
        let mut loaded = self.lock();
        let entry = loaded.iter_mut().find(|l| l.name == name)?;
        entry.last_used = now;
        Some(entry.model.clone())
    }

    /// The model `name`, loaded (after unloading others, under the budget) if it is not.
    pub(crate) async fn get(&self, name: &str) -> Result<Arc<Model>, Unavailable> {
        if let Some(model) = self.hit(name) {
            return Ok(model);
        }
        let path = self
            .offered
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, p)| p.clone())
            .ok_or(Unavailable::Unknown)?;
        let _one_at_a_time = self.loading.lock().await;
        if let Some(model) = self.hit(name) {
            return Ok(model); // loaded by another request meanwhile
        }
        let need = gpuchain_compute::gguf::file::model_size(&path)
            .map_err(|e| Unavailable::Failed(e.to_string()))?;
        self.make_room(need)?;
        let owned = name.to_string();
        let mut model = tokio::task::spawn_blocking(move || Model::load(&path, owned))
            .await
            .map_err(|e| Unavailable::Failed(e.to_string()))?
            .map_err(|e| Unavailable::Failed(format!("{e:#}")))?;
        model.prefixes = std::sync::Mutex::new(PrefixCache::new(self.prefix_bytes));
        let model = Arc::new(model);
        self.loads.fetch_add(1, Ordering::Relaxed);
        tracing::info!(
            model = name,
            weights_mb = model.decoder.weight_bytes() / 1_000_000,
            "model loaded"
        );
        let now = self.clock.fetch_add(1, Ordering::Relaxed);
        self.lock().push(Loaded {
            name: name.to_string(),
            // Counted as the budget was checked: by the file's size.
            bytes: need,
            model: model.clone(),
            last_used: now,
        });
        Ok(model)
    }

    /// Unloads the least recently used models that no request holds until `need` more
    /// bytes fit the budget.
    fn make_room(&self, need: usize) -> Result<(), Unavailable> {
        let Some(budget) = self.budget else {
            return Ok(());
        };
        if need > budget {
            return Err(Unavailable::Failed(format!(
                "the model needs about {} MB, more than the memory budget of {} MB",
                need / 1_000_000,
                budget / 1_000_000
            )));
        }
        let mut loaded = self.lock();
        loop {
            let used: usize = loaded.iter().map(|l| l.bytes).sum();
            if used.saturating_add(need) <= budget {
                return Ok(());
            }
            // Only the cache's own handle left: no request is generating with it.
            let idle = loaded
                .iter()
                .enumerate()
                .filter(|(_, l)| Arc::strong_count(&l.model) == 1)
                .min_by_key(|(_, l)| l.last_used)
                .map(|(i, _)| i);
            let Some(i) = idle else {
                return Err(Unavailable::NoRoom);
            };
            let gone = loaded.remove(i);
            self.evictions.fetch_add(1, Ordering::Relaxed);
            tracing::info!(model = %gone.name, "model unloaded to make room");
        }
    }

    /// Its Prometheus lines.
    pub(crate) fn render(&self, out: &mut String) {
        let loaded = self.lock().len();
        metric(
            out,
            "gpuchain_serve_models_loaded",
            "gauge",
            "Chat models loaded now.",
            loaded,
        );
        metric(
            out,
            "gpuchain_serve_model_loads_total",
            "counter",
            "Chat models loaded (the first at start).",
            self.loads.load(Ordering::Relaxed),
        );
        metric(
            out,
            "gpuchain_serve_model_evictions_total",
            "counter",
            "Chat models unloaded to make room for another.",
            self.evictions.load(Ordering::Relaxed),
        );
    }
}
