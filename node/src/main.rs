//! `gpuchaind`: runs the gpuchain ABCI application beside CometBFT, builds localnets, and is
//! the command-line client for keys, transactions and queries.

/// Executing a block allocates and frees small objects by the hundred thousand (state keys,
/// values, events, tree nodes); mimalloc serves them in well under half the time glibc's
/// malloc takes, measured as about a tenth of a block (docs/benchmarks.md). Allocation never
/// affects results, so this is no consensus concern.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    gpuchain_node::cli::run(gpuchain_chain::app::released())
}
