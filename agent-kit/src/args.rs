//! The arguments the agents' chain-facing subcommands share, each generic over the agent's
//! configuration file `C` (whose [`AgentConfig`] says what the file is called and how it is
//! checked): `--config` itself, `init`'s chain, key and data directory, and the whole of
//! `register`, `bond`, `unbond` and `status`, less what an agent adds.

use std::marker::PhantomData;
use std::path::{Path, PathBuf};

use anyhow::Result;
use gpuchain_client::keys::Keystore;
use gpuchain_types::{Address, Amount};
use serde::de::DeserializeOwned;

use crate::cli::Output;
use crate::config::{AgentConfig, ChainConfig, KeyConfig};
use crate::state_file::JsonFile;

/// `--config`, the agent's configuration file.
#[derive(Debug, clap::Args)]
pub struct ConfigArg<C: AgentConfig> {
    /// Agent configuration file (written by `init`).
    #[arg(long, env = C::CONFIG_ENV, default_value = C::CONFIG_FILE)]
    pub config: PathBuf,
    #[arg(skip)]
    agent: PhantomData<fn() -> C>,
}

impl<C: AgentConfig> ConfigArg<C> {
    /// Reads and checks the file.
    pub fn load(&self) -> Result<C> {
        C::load(&self.config)
    }
}

/// What `init` asks of every agent first: the file to write, the chain, the key, and the
/// data directory.
#[derive(Debug, clap::Args)]
pub struct InitFileArgs<C: AgentConfig> {
    /// The file to write.
    #[command(flatten)]
    pub config: ConfigArg<C>,
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
    /// Local state and blob store.
    #[arg(long)]
    pub data_dir: PathBuf,
}

impl<C: AgentConfig> InitFileArgs<C> {
    /// Makes sure the key exists (creating it when asked); returns its address and the
    /// `[chain]` and `[key]` sections.
    pub fn sections(&self) -> Result<(Address, ChainConfig, KeyConfig)> {
        let address = key_address(&self.home, &self.key, self.create_key)?;
        let chain = ChainConfig {
            node: self.node.clone(),
            websocket: None,
        };
        let key = KeyConfig {
            home: self.home.clone(),
            name: self.key.clone(),
        };
        Ok((address, chain, key))
    }

    /// Writes `config` for the account `address` (refusing to overwrite unless `force`), and
    /// says so.
    pub fn write(&self, config: &C, address: &Address, force: bool) -> Result<()> {
        let path = &self.config.config;
        config.save(path, force)?;
        println!("wrote {} for {} {address}", path.display(), C::ROLE);
        Ok(())
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

/// Arguments of `register`: the bond, then the agent's own options `X` (none unless it has
/// some), then the output format.
#[derive(Debug, clap::Args)]
pub struct RegisterArgs<C: AgentConfig, X: clap::Args = ()> {
    /// The configuration file.
    #[command(flatten)]
    pub config: ConfigArg<C>,
    /// Bond, ugpu (default: `<role>.bond` from the config).
    #[arg(long, help = format!("Bond, ugpu (default: `{}.bond` from the config)", C::ROLE))]
    pub bond: Option<Amount>,
    /// The agent's own options.
    #[command(flatten)]
    pub options: X,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub output: Output,
}

/// Arguments of `bond` and `unbond`.
#[derive(Debug, clap::Args)]
pub struct AmountArgs<C: AgentConfig> {
    /// The configuration file.
    #[command(flatten)]
    pub config: ConfigArg<C>,
    /// ugpu.
    pub amount: Amount,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub output: Output,
}

/// Arguments of a command that takes only the configuration file and the output format
/// (`status`, `withdraw`).
#[derive(Debug, clap::Args)]
pub struct BasicArgs<C: AgentConfig> {
    /// The configuration file.
    #[command(flatten)]
    pub config: ConfigArg<C>,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub output: Output,
}

impl<C: AgentConfig> BasicArgs<C> {
    /// The configuration and the agent's state as last saved (readable while the agent
    /// runs: the file is replaced atomically).
    pub fn load<S: DeserializeOwned + Default>(&self) -> Result<(C, S)> {
        let config = self.config.load()?;
        let state = JsonFile::new(config.state_path()).load()?;
        Ok((config, state))
    }
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};

    use super::*;
    use crate::config::testing::TestConfig;

    #[derive(Debug, clap::Args)]
    struct DryRun {
        /// Send nothing.
        #[arg(long)]
        dry_run: bool,
    }

    #[derive(Debug, Parser)]
    enum Command {
        Register(RegisterArgs<TestConfig, DryRun>),
        Bond(AmountArgs<TestConfig>),
    }

    #[test]
    fn the_agent_names_the_config_file_and_the_bond_of_its_section() {
        let Command::Bond(a) = Command::parse_from(["t", "bond", "5"]) else {
            panic!("not bond");
        };
        assert_eq!(a.config.config, Path::new("tester.toml"));
        assert_eq!(a.amount, 5);
        let parsed = Command::parse_from(["t", "register", "--dry-run", "--config", "x.toml"]);
        let Command::Register(r) = parsed else {
            panic!("not register");
        };
        assert!(r.options.dry_run && r.bond.is_none());
        assert_eq!(r.config.config, Path::new("x.toml"));
        let mut command = Command::command();
        command.clone().debug_assert();
        let help = command
            .find_subcommand_mut("register")
            .unwrap()
            .render_help()
            .to_string();
        assert!(help.contains("`tester.bond` from the config"), "{help}");
        assert!(help.contains("[env: GPUCHAIN_TESTER_CONFIG=]"), "{help}");
        let at = |flag: &str| help.find(flag).unwrap_or_else(|| panic!("{flag}: {help}"));
        assert!(at("--config") < at("--bond") && at("--bond") < at("--dry-run"));
        assert!(at("--dry-run") < at("--output"), "{help}");
    }
}
