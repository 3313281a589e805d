//! Decoder checks run one thread each, as many at once as the machine has cores.
//!
//! A check is one teacher-forced pass; split across two threads it finishes in a little over
//! half the time, but the threads wait for each other between its steps, and the pass costs
//! about a tenth more CPU time (docs/benchmarks.md, "Verification: one thread a check"). A
//! verifier's cost is its CPU time, and a check's latency (a fraction of a second) is far
//! inside any verdict deadline, so each check gets a thread of its own and several checks
//! share the cores. (That latency is a small model's: SmolLM2-135M checks in about 0.2 s;
//! an audit's first use of a served model also loads it here.) Other work of the agent
//! (re-executed jobs, training audits, ringers) still runs on rayon's global pool.
//!
//! Each thread is a single-thread rayon pool kept from one check to the next: the compute
//! code's parallel loops then run in place, and the buffers it keeps per thread stay warm.

use std::sync::{Arc, Mutex, OnceLock};

use tokio::sync::Semaphore;

/// The idle pools and a permit for each.
struct Pools {
    permits: Arc<Semaphore>,
    idle: Mutex<Vec<rayon::ThreadPool>>,
}

fn pools() -> &'static Pools {
    static POOLS: OnceLock<Pools> = OnceLock::new();
    POOLS.get_or_init(|| {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        Pools {
            permits: Arc::new(Semaphore::new(cores)),
            idle: Mutex::new(Vec::new()),
        }
    })
}

fn one_thread_pool() -> Result<rayon::ThreadPool, String> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .thread_name(|_| "check".into())
        .build()
        .map_err(|e| format!("starting a check thread: {e}"))
}

/// Runs `work` on a thread of its own (waiting while every core runs a check), where
/// `rayon::current_num_threads()` is 1.
pub(crate) async fn on_one_thread<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, String> {
    let pools = pools();
    let permit = Arc::clone(&pools.permits)
        .acquire_owned()
        .await
        .map_err(|e| format!("waiting for a check thread: {e}"))?;
    let kept = pools.idle.lock().ok().and_then(|mut idle| idle.pop());
    let pool = match kept {
        Some(pool) => pool,
        None => one_thread_pool()?,
    };
    // The permit and the pool go with the work: a caller that stops waiting does not free
    // the core while the check still runs on it.
    tokio::task::spawn_blocking(move || {
        let out = pool.install(work);
        if let Ok(mut idle) = pools.idle.lock() {
            idle.push(pool);
        }
        drop(permit);
        out
    })
    .await
    .map_err(|e| format!("the check panicked: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    // One test: the pools are shared by the whole process, and the steps below depend on
    // which of them are idle.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn checks_run_one_thread_each_and_keep_their_threads() {
        let first = on_one_thread(|| (rayon::current_num_threads(), std::thread::current().id()))
            .await
            .unwrap();
        assert_eq!(first.0, 1);
        // A parallel loop inside runs on that one thread.
        let threads: Vec<_> = on_one_thread(|| {
            use rayon::prelude::*;
            let mut ids: Vec<_> = (0..64)
                .into_par_iter()
                .map(|_| std::thread::current().id())
                .collect();
            ids.dedup();
            ids
        })
        .await
        .unwrap();
        assert_eq!(threads.len(), 1);
        // One after the other, checks reuse the same thread.
        assert_eq!(threads[0], first.1);
        // A check that panics is an error, and the next one runs.
        let failed = on_one_thread(|| -> u32 { panic!("a check that fails") }).await;
        assert!(failed.unwrap_err().contains("panicked"));
        assert_eq!(on_one_thread(|| 7).await.unwrap(), 7);
        // Two at once get two threads where there are two cores.
        if std::thread::available_parallelism().map_or(1, usize::from) >= 2 {
            let slow = || {
                std::thread::sleep(std::time::Duration::from_millis(100));
                std::thread::current().id()
            };
            let (a, b) = tokio::join!(on_one_thread(slow), on_one_thread(slow));
            assert_ne!(a.unwrap(), b.unwrap());
        }
    }
}
