//! `gpuchain-provider`: the agent a GPU owner runs.
//!
//! `probe` describes the machine (GPUs through NVML; without NVML it is CPU-only), `run-job`
//! runs a job spec locally, `init` writes a configuration file, `register`/`bond`/`unbond`/
//! `withdraw` manage the provider's registration and stake with signed transactions, `run`
//! is the daemon (follow blocks, bid, execute, commit, reveal, get paid; Prometheus
//! metrics; durable local state) and `status` shows what it is doing.

fn main() -> std::process::ExitCode {
    gpuchain_provider::run_cli()
}
