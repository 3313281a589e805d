//! What the provider and verifier agents' TOML configuration files share: the `[chain]` and
//! `[key]` sections, the defaults of their own sections' fields, and reading, checking and
//! writing the file.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// `[chain]`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChainConfig {
    /// CometBFT RPC, e.g. `http://127.0.0.1:26657`.
    pub node: String,
    /// Websocket URL; derived from `node` when absent.
    #[serde(default)]
    pub websocket: Option<String>,
}

impl ChainConfig {
    /// The websocket URL to follow.
    pub fn websocket_url(&self) -> String {
        self.websocket
            .clone()
            .unwrap_or_else(|| gpuchain_client::follow::websocket_url(&self.node))
    }
}

/// `[key]`: a gpuchaind key file `<home>/keys/<name>.json`; an encrypted key reads its
/// passphrase from `GPUCHAIN_PASSPHRASE`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyConfig {
    /// gpuchaind home holding `keys/`.
    pub home: PathBuf,
    /// Key name of the agent's account.
    pub name: String,
}

/// An agent's configuration file: what the agent is called, where the file is looked for,
/// what a valid one holds, where the agent's data lives, and how the file is written.
pub trait AgentConfig: Serialize + DeserializeOwned {
    /// The agent's role, e.g. `provider`: the name messages give its account.
    const ROLE: &'static str;
    /// The environment variable naming the file when `--config` does not.
    const CONFIG_ENV: &'static str;
    /// The file read when neither `--config` nor [`Self::CONFIG_ENV`] names one.
    const CONFIG_FILE: &'static str;

    /// Refuses what the file's types allow but the agent cannot run with.
    fn check(&self) -> Result<()>;

    /// Local state (`state.json`) and the blob store (`blobs/`).
    fn data_dir(&self) -> &Path;

    /// Reads and checks a config file.
    fn load(path: &Path) -> Result<Self> {
        let config: Self = read_toml(path)?;
        config.check()?;
        Ok(config)
    }

    /// `state.json`.
    fn state_path(&self) -> PathBuf {
        self.data_dir().join("state.json")
    }

    /// The blob store directory.
    fn blob_dir(&self) -> PathBuf {
        self.data_dir().join("blobs")
    }

    /// Writes the file (refuses to overwrite unless `force`).
    fn save(&self, path: &Path, force: bool) -> Result<()> {
        write_toml(self, path, force)
    }
}

/// Declares a section of an agent's configuration file: a struct, its fields as visible as
/// it is, that `init` writes and the file fills, where a field the struct lacks is an error
/// (a misspelt one is never ignored). Fields take `#[serde(...)]` attributes as in any serde
/// struct.
#[macro_export]
macro_rules! config_section {
    (
        $(#[$attr:meta])*
        $vis:vis struct $name:ident {
            $( $(#[$field_attr:meta])* $field:ident : $ty:ty ),* $(,)?
        }
    ) => {
        $(#[$attr])*
        #[derive(Clone, Debug, ::serde::Serialize, ::serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        $vis struct $name {
            $( $(#[$field_attr])* $vis $field: $ty, )*
        }
    };
}

/// The `backend` of an agent's section when the file names none: the best the machine has.
pub fn default_backend() -> String {
    "auto".into()
}

/// A field's default written where the field is declared:
/// `#[serde(default = "const_u64::<120>")]`.
pub fn const_u64<const N: u64>() -> u64 {
    N
}

/// [`const_u64`] for a `u32` field.
pub fn const_u32<const N: u32>() -> u32 {
    N
}

/// [`const_u64`] for a `bool` field.
pub fn const_bool<const B: bool>() -> bool {
    B
}

/// Reads and parses a TOML file, naming it in errors.
pub fn read_toml<T: DeserializeOwned>(path: &Path) -> Result<T> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading config {}", path.display()))?;
    toml::from_str(&text).with_context(|| format!("parsing config {}", path.display()))
}

/// Writes `value` as TOML, creating the parent directory; refuses to overwrite unless `force`.
pub fn write_toml<T: Serialize>(value: &T, path: &Path, force: bool) -> Result<()> {
    anyhow::ensure!(
        force || !path.exists(),
        "{} exists; pass --force to overwrite",
        path.display()
    );
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(path, toml::to_string_pretty(value)?)
        .with_context(|| format!("writing {}", path.display()))
}

/// An agent's configuration for the kit's own tests.
#[cfg(test)]
pub(crate) mod testing {
    use super::*;

    crate::config_section! {
        /// A file holding only the data directory of agent `tester`.
        pub(crate) struct TestConfig {
            /// Local state.
            data_dir: PathBuf,
        }
    }

    impl AgentConfig for TestConfig {
        const ROLE: &'static str = "tester";
        const CONFIG_ENV: &'static str = "GPUCHAIN_TESTER_CONFIG";
        const CONFIG_FILE: &'static str = "tester.toml";

        fn check(&self) -> Result<()> {
            anyhow::ensure!(self.data_dir.is_absolute(), "data_dir must be absolute");
            Ok(())
        }

        fn data_dir(&self) -> &Path {
            &self.data_dir
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize)]
    struct Defaults {
        #[serde(default = "const_u64::<{ 4 << 30 }>")]
        big: u64,
        #[serde(default = "const_u32::<525>")]
        small: u32,
        #[serde(default = "const_bool::<true>")]
        on: bool,
        #[serde(default = "default_backend")]
        backend: String,
    }

    #[test]
    fn a_loaded_file_is_checked() {
        use testing::TestConfig;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tester.toml");
        std::fs::write(&path, "data_dir = \"relative\"\n").unwrap();
        let err = TestConfig::load(&path).unwrap_err();
        assert!(err.to_string().contains("absolute"), "{err}");
        std::fs::write(&path, "data_dir = \"/d\"\ndata_dri = \"/d\"\n").unwrap();
        let err = format!("{:#}", TestConfig::load(&path).unwrap_err());
        assert!(err.contains("unknown field `data_dri`"), "{err}");
        let config = TestConfig {
            data_dir: dir.path().join("data"),
        };
        config.save(&path, true).unwrap();
        assert_eq!(
            TestConfig::load(&path).unwrap().state_path(),
            dir.path().join("data/state.json")
        );
    }

    #[test]
    fn defaults_written_at_the_field_fill_what_the_file_leaves_out() {
        let d: Defaults = toml::from_str("small = 7").unwrap();
        assert_eq!((d.big, d.small, d.on), (4 << 30, 7, true));
        assert_eq!(d.backend, "auto");
    }
}
