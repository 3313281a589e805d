//! `gpuchain-provider probe`.

use clap::Args;
use gpuchain_compute::hardware::{probe, HardwareReport};

use super::Output;

/// Arguments of `probe`.
#[derive(Debug, Args)]
pub(crate) struct ProbeArgs {
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    output: Output,
}

pub(super) fn run(args: ProbeArgs) -> anyhow::Result<()> {
    let report = probe();
    match args.output {
        Output::Json => println!("{}", serde_json::to_string_pretty(&report)?),
        Output::Text => print!("{}", table(&report)),
    }
    Ok(())
}

fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / f64::from(1u32 << 30))
}

fn table(r: &HardwareReport) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "CPU      {} ({} threads)\n",
        r.cpu_model, r.cpu_threads
    ));
    out.push_str(&format!(
        "Memory   {} total, {} available\n",
        gib(r.memory_total_bytes),
        gib(r.memory_available_bytes)
    ));
    if let Some(e) = &r.nvml_error {
        out.push_str(&format!("GPUs     none: {e}\n"));
        return out;
    }
    out.push_str(&format!(
        "Driver   {}   CUDA {}\n",
        r.driver_version.as_deref().unwrap_or("?"),
        r.cuda_version.as_deref().unwrap_or("?")
    ));
    out.push_str(&format!("GPUs     {}\n", r.gpus.len()));
    out.push_str(&format!(
        "{:>3}  {:<32} {:>10} {:>10} {:>4} {:>5}\n",
        "#", "model", "VRAM", "free", "cc", "util"
    ));
    for g in &r.gpus {
        let util = g
            .utilization_percent
            .map_or("?".to_string(), |u| format!("{u}%"));
        out.push_str(&format!(
            "{:>3}  {:<32} {:>10} {:>10} {:>4} {:>5}\n",
            g.index,
            g.name,
            gib(g.memory_total_bytes),
            gib(g.memory_free_bytes),
            g.compute_capability,
            util
        ));
    }
    out
}
