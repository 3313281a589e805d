//! The command-line skeleton every agent shares.

use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::ValueEnum;
use gpuchain_client::keys::Keystore;
use gpuchain_client::TxOutcome;
use gpuchain_types::Address;

use crate::config::{ChainConfig, KeyConfig};

/// Log format on stderr.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// Output format of commands that report something.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Output {
    /// Human-readable text.
    Text,
    /// JSON on stdout.
    Json,
}

/// Options every agent command takes.
#[derive(Debug, clap::Args)]
pub struct GlobalArgs {
    /// Log format on stderr.
    #[arg(
        long,
        global = true,
        value_enum,
        default_value = "text",
        env = "GPUCHAIN_LOG_FORMAT"
    )]
    pub log_format: LogFormat,
}

/// Installs the tracing subscriber (`RUST_LOG`, default `info`) writing `format` to stderr.
pub fn init_tracing(format: LogFormat) {
    let filter =
        tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Json => builder.json().init(),
        LogFormat::Text => builder.init(),
    }
}

/// The exit code of a command: failure with the error chain on stderr.
pub fn exit_code(result: Result<()>) -> std::process::ExitCode {
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Runs `work` on the agents' runtime (two worker threads; jobs run on blocking threads).
pub fn block_on<F: std::future::Future<Output = Result<()>>>(work: F) -> Result<()> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?
        .block_on(work)
}

/// The chain and key options of `init`.
#[derive(Debug, clap::Args)]
pub struct ChainKeyArgs {
    /// CometBFT RPC of a node.
    #[arg(long, default_value = "http://127.0.0.1:26657")]
    pub node: String,
    /// gpuchaind home holding `keys/`.
    #[arg(long)]
    pub home: PathBuf,
    /// Key name (the agent's account).
    #[arg(long)]
    pub key: String,
    /// Create the key if it does not exist (unencrypted unless GPUCHAIN_PASSPHRASE is set).
    #[arg(long)]
    pub create_key: bool,
}

impl ChainKeyArgs {
    /// Makes sure the key exists (creating it when asked); returns its address and the
    /// `[chain]` and `[key]` sections.
    pub fn sections(self) -> Result<(Address, ChainConfig, KeyConfig)> {
        let address = key_address(&self.home, &self.key, self.create_key)?;
        Ok((
            address,
            ChainConfig {
                node: self.node,
                websocket: None,
            },
            KeyConfig {
                home: self.home,
                name: self.key,
            },
        ))
    }
}

/// The address of key `name` in `<home>/keys`, creating the key when `create` is set
/// (unencrypted unless `GPUCHAIN_PASSPHRASE` is set).
pub fn key_address(home: &Path, name: &str, create: bool) -> Result<Address> {
    let keys = Keystore::open(&home.join("keys"))?;
    match keys.show(name) {
        Ok(k) => Ok(k.address),
        Err(_) if create => {
            let pass = std::env::var("GPUCHAIN_PASSPHRASE").ok();
            Ok(keys.create(name, pass.as_deref())?.address)
        }
        Err(e) => Err(e.context("pass --create-key to create it")),
    }
}

/// Prints a committed transaction (`what` names it in text output); fails if it was refused.
pub fn print_tx(outcome: TxOutcome, output: Output, what: &str) -> Result<()> {
    let outcome = outcome.ok()?;
    match output {
        Output::Json => println!("{}", serde_json::to_string_pretty(&outcome)?),
        Output::Text => println!(
            "{what}: included at height {} (tx {})",
            outcome.height, outcome.hash
        ),
    }
    Ok(())
}
