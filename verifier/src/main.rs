//! `gpuchain-verifier`: the agent a verifier runs.
//!
//! `init` writes a configuration file, `register`/`bond`/`unbond` manage the verifier bond
//! with signed transactions, `run` is the daemon (follow blocks, take assignments, fetch
//! the job's blobs and the provider's output, re-execute, compare under the job kind's
//! tolerance, post verdicts; plant and reveal ringer challenges; Prometheus metrics; durable
//! local state) and `status` shows what it is doing. See docs/verifier.md.

fn main() -> std::process::ExitCode {
    gpuchain_verifier::run_cli()
}
