use std::process::ExitCode;

use anyhow::Result;
use gpuchain_client::keys::Keystore;

use super::{Cli, Output};

#[derive(clap::Subcommand)]
pub(crate) enum KeysCmd {
    /// Create a new key.
    Add {
        /// Local name of the key.
        name: String,
        /// Encrypt the key file with the passphrase in GPUCHAIN_PASSPHRASE.
        #[arg(long)]
        encrypt: bool,
    },
    /// List keys.
    List,
    /// Show one key's address and public key.
    Show {
        /// Local name of the key.
        name: String,
    },
}

pub(crate) fn keystore(cli: &Cli) -> Result<Keystore> {
    Keystore::open(&cli.home.join("keys"))
}

pub(crate) fn passphrase() -> Option<String> {
    std::env::var("GPUCHAIN_PASSPHRASE").ok()
}

pub(crate) fn run(cli: &Cli, cmd: &KeysCmd, out: &Output) -> Result<ExitCode> {
    let store = keystore(cli)?;
    match cmd {
        KeysCmd::Add { name, encrypt } => {
            let pass =
                if *encrypt {
                    Some(passphrase().ok_or_else(|| {
                        anyhow::anyhow!("--encrypt needs GPUCHAIN_PASSPHRASE set")
                    })?)
                } else {
                    None
                };
            let info = store.create(name, pass.as_deref())?;
            out.print(&info, || {
                format!("created key {} with address {}", info.name, info.address)
            });
        }
        KeysCmd::List => {
            let keys = store.list()?;
            out.print(&keys, || {
                keys.iter()
                    .map(|k| format!("{}\t{}", k.name, k.address))
                    .collect::<Vec<_>>()
                    .join("\n")
            });
        }
        KeysCmd::Show { name } => {
            let info = store.show(name)?;
            out.print(&info, || {
                format!("{}\t{}\t{}", info.name, info.address, info.public_key)
            });
        }
    }
    Ok(ExitCode::SUCCESS)
}
