//! `gpuchain-demo`: the whole market on this machine — a localnet, three provider agents,
//! a verifier and a client that trains, infers, embeds and chats — with every step printed as it
//! happens and a summary at the end. `scripts/demo.sh` builds and runs it.

use std::io::Write;
use std::time::Instant;

use clap::Parser;
use gpuchain_tests::demo::{
    default_minilm_dir, default_reviews_csv, default_smollm2_file, has_minilm, run, DemoOptions,
};

/// Runs the gpuchain market end to end on 127.0.0.1.
#[derive(Parser)]
#[command(name = "gpuchain-demo", version, about)]
struct Args {
    /// Run the third provider dishonestly (a wrong model); the verifier should catch it.
    #[arg(long)]
    with_cheater: bool,
    /// Validators in the localnet.
    #[arg(long, default_value_t = 4)]
    validators: usize,
    /// Training rounds.
    #[arg(long, default_value_t = 30)]
    rounds: u32,
    /// 2-replica digits inference orders.
    #[arg(long, default_value_t = 2)]
    digits_orders: u32,
    /// Skip the MiniLM embedding and fine-tuning orders even when the checkpoint is present.
    #[arg(long)]
    no_embed: bool,
    /// Skip fine-tuning MiniLM on review sentiment even when the snippets are present.
    #[arg(long)]
    no_fine_tune: bool,
    /// Rounds of the fine-tuning order.
    #[arg(long, default_value_t = 6)]
    fine_tune_rounds: u32,
    /// Skip the SmolLM2 chat order even when the model is present.
    #[arg(long)]
    no_chat: bool,
    /// Skip serving both models through the gateway at the end.
    #[arg(long)]
    no_serve: bool,
    /// Do not start the web explorer beside the localnet.
    #[arg(long)]
    no_explorer: bool,
    /// Port of the web explorer on 127.0.0.1 (0: any free port).
    #[arg(long, default_value_t = 8088)]
    explorer_port: u16,
    /// Write the summary as JSON to this file too.
    #[arg(long)]
    json: Option<std::path::PathBuf>,
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let minilm = default_minilm_dir();
    let smollm2 = default_smollm2_file();
    let reviews = default_reviews_csv();
    let serve = !args.no_serve && has_minilm(&minilm) && smollm2.exists();
    let opts = DemoOptions {
        validators: args.validators,
        with_cheater: args.with_cheater,
        training_rounds: args.rounds,
        digits_orders: args.digits_orders,
        reviews_csv: (!args.no_fine_tune && reviews.exists()).then_some(reviews),
        fine_tune_rounds: args.fine_tune_rounds,
        minilm_dir: (!args.no_embed && has_minilm(&minilm)).then_some(minilm),
        serve,
        // scripts/demo.sh sets it to the official client's environment.
        openai_python: std::env::var_os("GPUCHAIN_OPENAI_PYTHON").map(std::path::PathBuf::from),
        smollm2_file: (!args.no_chat && smollm2.exists()).then_some(smollm2),
        keep_logs: true,
        explorer_port: (!args.no_explorer).then_some(args.explorer_port),
    };
    let started = Instant::now();
    let say = move |line: &str| {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "[{:>6.1}s] {line}", started.elapsed().as_secs_f64());
    };
    let demo = run(&opts, &say);
    let report = tokio::select! {
        r = demo => r?,
        _ = tokio::signal::ctrl_c() => {
            eprintln!("interrupted; stopping every process");
            return Ok(());
        }
    };
    println!("{report}");
    if let Some(path) = args.json {
        std::fs::write(&path, serde_json::to_vec_pretty(&report)?)?;
    }
    Ok(())
}
