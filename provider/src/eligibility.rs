//! Whether the agent should bid on an order, with the reason when not: the order must be
//! open, its window not over, the architecture one this agent runs, the requirements met by
//! the declared hardware, the job within memory, the execution window long enough, and a
//! capacity slot free.

use gpuchain_auction::{Order, OrderState};
use gpuchain_compute::job::estimate_memory_bytes;
use gpuchain_jobspec::JobSpec;
use gpuchain_staking::ProviderAttrs;

use crate::config::CapacityConfig;

/// What the checks need to know about the agent right now.
pub(crate) struct Ability<'a> {
    pub(crate) attrs: &'a ProviderAttrs,
    pub(crate) capacity: &'a CapacityConfig,
    /// Memory the backend has, bytes (0: unknown).
    pub(crate) memory_bytes: u64,
    pub(crate) slots_used: u32,
    pub(crate) height: u64,
}

fn arch_name(job: &JobSpec) -> String {
    let arch = match job {
        JobSpec::Inference(s) => s.arch,
        JobSpec::Training(t) => t.arch,
    };
    serde_json::to_string(&arch).unwrap_or_default()
}

/// `Ok(())` to bid, or why not.
pub(crate) fn check(order: &Order, me: &Ability<'_>) -> Result<(), String> {
    if order.state != OrderState::Open || me.height > order.bid_end_height {
        return Err(format!(
            "order is {:?}, bid window ended at {}",
            order.state, order.bid_end_height
        ));
    }
    if let JobSpec::Training(t) = &order.job {
        if t.coordinator_url.is_some() && t.workers != order.replicas {
            return Err(format!(
                "networked training needs one lease per worker: {} workers, {} replicas",
                t.workers, order.replicas
            ));
        }
    }
    let arch = match &order.job {
        JobSpec::Inference(s) => s.arch,
        JobSpec::Training(t) => t.arch,
    };
    if !me.capacity.archs.contains(&arch) {
        return Err(format!(
            "architecture {} is not one this agent runs ({:?})",
            arch_name(&order.job),
            me.capacity.archs
        ));
    }
    if let Err(e) = order.job.validate() {
        return Err(format!("invalid job spec: {e}"));
    }
    if !order.requirements.matches(me.attrs) {
        return Err(format!(
            "requirements {:?} are beyond this machine ({:?}, {} GPU(s), {} MiB, CUDA {})",
            order.requirements,
            me.attrs.class,
            me.attrs.gpu_count,
            me.attrs.vram_mib,
            me.attrs.cuda_version
        ));
    }
    let needed = estimate_memory_bytes(&order.job);
    let cap = match me.capacity.max_job_memory_mib {
        0 => me.memory_bytes,
        mib => mib.saturating_mul(1 << 20),
    };
    if cap > 0 && needed > cap {
        return Err(format!(
            "job needs about {needed} bytes of memory; {cap} available"
        ));
    }
    if order.exec_deadline_blocks < me.capacity.min_exec_deadline_blocks {
        return Err(format!(
            "execution window of {} blocks is shorter than our minimum {}",
            order.exec_deadline_blocks, me.capacity.min_exec_deadline_blocks
        ));
    }
    let blob_bytes: u64 = order
        .job
        .blobs()
        .iter()
        .fold(0u64, |sum, (_, b)| sum.saturating_add(b.size));
    let budget = order
        .max_price_per_replica
        .saturating_mul(u128::from(me.capacity.blob_bytes_per_ugpu))
        .min(u128::from(me.capacity.max_blob_bytes));
    if u128::from(blob_bytes) > budget {
        return Err(format!(
            "the job's blobs total {blob_bytes} bytes; this agent fetches at most {budget} for \
             an order paying {} ugpu (capacity.max_blob_bytes, capacity.blob_bytes_per_ugpu)",
            order.max_price_per_replica
        ));
    }
    if me.slots_used >= me.capacity.max_concurrent_jobs {
        return Err(format!(
            "no free capacity ({} of {} slots in use)",
            me.slots_used, me.capacity.max_concurrent_jobs
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpuchain_auction::{ClassRequirement, Requirements, TooFewBids};
    use gpuchain_jobspec::{BlobRef, InferenceSpec, ModelArch};
    use gpuchain_staking::ProviderClass;
    use gpuchain_types::Address;

    fn order(arch: ModelArch, class: ClassRequirement) -> Order {
        let blob = BlobRef {
            blake3: [1; 32],
            size: 1_000,
            urls: vec!["http://127.0.0.1:9/blob/x".into()],
        };
        Order {
            id: 4,
            client: Address([2; 20]),
            job: JobSpec::Inference(InferenceSpec {
                arch,
                weights: blob.clone(),
                tokenizer: (arch == ModelArch::MiniLmEmbedder).then(|| blob.clone()),
                input: blob,
                batch_size: 64,
                llama: None,
                generation: None,
                tolerance: None,
            }),
            requirements: Requirements {
                class,
                gpu_model: None,
                min_vram_mib: 0,
                min_gpu_count: 0,
                min_cuda_version: 0,
                region: None,
            },
            replicas: 1,
            max_price_per_replica: 100,
            exec_deadline_blocks: 30,
            on_too_few_bids: TooFewBids::Refund,
            created_height: 3,
            bid_end_height: 23,
            reopened: false,
            verification_fee: 0,
            clearing_price: None,
            escrowed: 100,
            state: OrderState::Open,
            dispute_reserve: 0,
        }
    }

    fn attrs() -> ProviderAttrs {
        ProviderAttrs {
            class: ProviderClass::Cpu,
            gpu_model: String::new(),
            vram_mib: 0,
            gpu_count: 0,
            compute_capability: 0,
            driver_version: "none".into(),
            cuda_version: 0,
            region: "local".into(),
            endpoint_url: "http://127.0.0.1:7070".into(),
        }
    }

    /// `o` with a 1 MiB input at a 100 ugpu price: more than 4096 bytes per ugpu.
    fn with_big_blobs(o: &Order) -> Order {
        let mut o = o.clone();
        if let JobSpec::Inference(spec) = &mut o.job {
            spec.input.size = 1 << 20;
        }
        o
    }

    fn check_with(o: &Order, slots_used: u32, height: u64) -> Result<(), String> {
        let capacity = CapacityConfig {
            max_concurrent_jobs: 1,
            archs: vec![ModelArch::DigitsMlp],
            max_job_memory_mib: 0,
            min_exec_deadline_blocks: 5,
            max_blob_bytes: 4 << 30,
            blob_bytes_per_ugpu: 4096,
        };
        let a = attrs();
        check(
            o,
            &Ability {
                attrs: &a,
                capacity: &capacity,
                memory_bytes: 1 << 30,
                slots_used,
                height,
            },
        )
    }

    #[test]
    fn a_fitting_order_passes_and_each_rule_names_its_reason() {
        let ok = order(ModelArch::DigitsMlp, ClassRequirement::Cpu);
        assert_eq!(check_with(&ok, 0, 10), Ok(()));
        let cases = [
            (
                order(ModelArch::DigitsCnn, ClassRequirement::Cpu),
                0,
                10,
                "not one this agent runs",
            ),
            (
                order(ModelArch::DigitsMlp, ClassRequirement::Gpu),
                0,
                10,
                "beyond this machine",
            ),
            (ok.clone(), 1, 10, "no free capacity"),
            (with_big_blobs(&ok), 0, 10, "fetches at most 409600"),
            (ok.clone(), 0, 24, "bid window ended"),
        ];
        for (o, slots, height, why) in cases {
            let err = check_with(&o, slots, height).unwrap_err();
            assert!(err.contains(why), "{err} should say {why}");
        }
    }
}
