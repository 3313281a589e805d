//! The agent's configuration file (TOML): chain endpoint, key, data directory, metrics,
//! backend, and the ringer-challenge schedule with its ordinary poster keys and job pool.
//! `gpuchain-verifier init` writes one with defaults; see docs/verifier.md.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::Result;
use gpuchain_agent_kit::config::{const_u32, const_u64, default_backend};
pub(crate) use gpuchain_agent_kit::config::{AgentConfig, ChainConfig, KeyConfig};
use gpuchain_auction::ClassRequirement;

gpuchain_agent_kit::config_section! {
    /// The whole file.
    pub(crate) struct Config {
        /// Chain connection.
        chain: ChainConfig,
        /// Signing key.
        key: KeyConfig,
        /// Local state, metrics, execution.
        verifier: VerifierConfig,
        /// Ringer challenges.
        #[serde(default)]
        challenge: ChallengeConfig,
        /// The models served on leases this verifier audits answers of.
        #[serde(default)]
        serving: ServingAuditConfig,
    }
}

gpuchain_agent_kit::config_section! {
    /// `[serving]`: the chat models (GGUF files) and embedders (MiniLM directories) whose
    /// served answers this verifier can re-check when drawn to judge an audited receipt.
    /// `register` and the agent's start declare them on chain (`serving models`): juries for
    /// a model are drawn only among the verifiers that declared it.
    #[derive(Default)]
    pub(crate) struct ServingAuditConfig {
        /// Chat models.
        #[serde(default)]
        models: Vec<AuditedModel>,
        /// Sentence embedders.
        #[serde(default)]
        embedders: Vec<AuditedModel>,
    }
}

impl ServingAuditConfig {
    /// The blake3 of every configured model's weights, sorted, each once.
    pub(crate) fn hashes(&self) -> Result<Vec<[u8; 32]>> {
        let mut hashes = self
            .models
            .iter()
            .chain(&self.embedders)
            .map(|m| {
                let mut hash = [0u8; 32];
                hex::decode_to_slice(&m.blake3, &mut hash).map_err(|e| {
                    anyhow::anyhow!(
                        "[serving] model {}: blake3 `{}` is not 64 hex digits: {e}",
                        m.name,
                        m.blake3
                    )
                })?;
                Ok(hash)
            })
            .collect::<Result<Vec<_>>>()?;
        hashes.sort_unstable();
        hashes.dedup();
        Ok(hashes)
    }
}

gpuchain_agent_kit::config_section! {
    /// One model, as orders name it, and where its weights are.
    pub(crate) struct AuditedModel {
        /// Its name in orders.
        name: String,
        /// Hex blake3 of its weights file (`model.safetensors` for an embedder).
        blake3: String,
        /// The GGUF file, or the embedder's directory.
        path: PathBuf,
    }
}

gpuchain_agent_kit::config_section! {
    /// `[verifier]`.
    pub(crate) struct VerifierConfig {
        /// Local state (`state.json`) and the blob store (`blobs/`).
        data_dir: PathBuf,
        /// Prometheus `/metrics` listen address (keep it on 127.0.0.1).
        metrics_listen: SocketAddr,
        /// Bond for `register`, ugpu (TOML integers are 64-bit).
        bond: u64,
        /// Backend of first-round re-execution: auto, cpu, canonical, cuda[:N]. Appeal and
        /// tie-break rounds always use the canonical path.
        #[serde(default = "default_backend")]
        backend: String,
        /// Seconds allowed for fetching one job's blobs or one provider output.
        #[serde(default = "const_u64::<120>")]
        fetch_timeout_secs: u64,
        /// Largest provider output fetched, bytes.
        #[serde(default = "const_u64::<{ 1 << 30 }>")]
        max_output_bytes: u64,
        /// Fetch from loopback, private and link-local addresses too. Off by default: blob URLs
        /// and provider endpoints are chosen by other parties. Localnets turn it on.
        #[serde(default)]
        allow_private_blob_hosts: bool,
    }
}

gpuchain_agent_kit::config_section! {
    /// `[challenge]`: ringers. The agent plants one ringer per `1_000_000 / rate_ppm` orders it
    /// sees (or one every `every_blocks` blocks when set), at most `max_open` unrevealed at a
    /// time and `max_total` in all (0: no limit).
    #[derive(Default)]
    pub(crate) struct ChallengeConfig {
        /// Plant ringers at all.
        #[serde(default)]
        enabled: bool,
        /// Target share of orders that are ringers, ppm (the chain's `challenge_rate_ppm` when 0).
        #[serde(default)]
        rate_ppm: u32,
        /// Plant one ringer every this many blocks instead of by rate (0: by rate).
        #[serde(default)]
        every_blocks: u64,
        /// Most unrevealed ringers at once.
        #[serde(default = "const_u32::<4>")]
        max_open: u32,
        /// Most ringers in all (0: no limit).
        #[serde(default)]
        max_total: u64,
        /// Ordinary accounts (key names in the same home) that post the ringer orders, each
        /// once: a ringer's reveal names its poster, and a reused poster would mark the next
        /// ringer. Fund them as ordinary clients are funded, not from the verifier's account
        /// (a funding transfer links them).
        #[serde(default)]
        posters: Vec<String>,
        /// A committed ringer is posted at a random height up to this many blocks after its
        /// commitment, so the commitment does not mark the next order (0: the next block).
        #[serde(default = "const_u64::<30>")]
        post_delay_max_blocks: u64,
        /// Where the ringer inputs are served (a blob server the agent starts), if any; without
        /// it the pool inputs are used as they are.
        #[serde(default)]
        blob_listen: Option<SocketAddr>,
        /// Public URL of that server.
        #[serde(default)]
        blob_url: Option<String>,
        /// Jobs the ringers are drawn from.
        #[serde(default)]
        pool: Vec<PoolJob>,
    }
}

gpuchain_agent_kit::config_section! {
    /// One job template of the pool: an inference job spec (JSON file, as `gpuchaind tx auction
    /// post-order --job` takes) and ordinary-looking terms.
    pub(crate) struct PoolJob {
        /// Path of the `JobSpec` JSON.
        spec: PathBuf,
        /// Replicas k.
        #[serde(default = "const_u32::<1>")]
        replicas: u32,
        /// Highest price per replica, ugpu.
        max_price_per_replica: u64,
        /// Bid window, blocks.
        #[serde(default = "const_u64::<10>")]
        bid_window_blocks: u64,
        /// Execution deadline, blocks.
        #[serde(default = "const_u64::<30>")]
        exec_deadline_blocks: u64,
        /// Provider class.
        #[serde(default = "any_class")]
        class: ClassRequirement,
        /// Region requirement.
        #[serde(default)]
        region: Option<String>,
        /// Rows drawn (with replacement) from the pool input for each ringer (0: the input as is).
        #[serde(default)]
        draw_rows: u32,
    }
}

fn any_class() -> ClassRequirement {
    ClassRequirement::Any
}

impl AgentConfig for Config {
    const ROLE: &'static str = "verifier";
    const CONFIG_ENV: &'static str = "GPUCHAIN_VERIFIER_CONFIG";
    const CONFIG_FILE: &'static str = "verifier.toml";

    fn check(&self) -> Result<()> {
        let c = &self.challenge;
        if c.enabled {
            anyhow::ensure!(
                !c.posters.is_empty(),
                "challenge.posters needs at least one ordinary account key when challenges are enabled"
            );
            anyhow::ensure!(
                !c.pool.is_empty(),
                "challenge.pool needs at least one job when challenges are enabled"
            );
            anyhow::ensure!(
                c.blob_listen.is_some() == c.blob_url.is_some(),
                "challenge.blob_listen and challenge.blob_url go together"
            );
        }
        let models = self.serving.hashes()?.len();
        anyhow::ensure!(
            models <= gpuchain_serving::MAX_JUDGED_MODELS,
            "[serving] lists {models} distinct models; a verifier declares at most {} on chain",
            gpuchain_serving::MAX_JUDGED_MODELS
        );
        Ok(())
    }

    fn data_dir(&self) -> &Path {
        &self.verifier.data_dir
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"
[chain]
node = "http://127.0.0.1:26657"

[key]
home = "/tmp/h"
name = "v1"

[verifier]
data_dir = "/tmp/v1"
metrics_listen = "127.0.0.1:9465"
bond = 2000000000

[challenge]
enabled = true
every_blocks = 5
posters = ["alice"]
pool = [{ spec = "/tmp/job.json", max_price_per_replica = 1000000, region = "eu" }]
"#;

    #[test]
    fn a_sample_config_parses_with_defaults_and_round_trips() {
        let c: Config = toml::from_str(SAMPLE).unwrap();
        assert_eq!(c.verifier.backend, "auto");
        assert_eq!(c.challenge.max_open, 4);
        assert_eq!(c.challenge.pool[0].replicas, 1);
        assert_eq!(c.challenge.pool[0].class, ClassRequirement::Any);
        assert_eq!(c.chain.websocket_url(), "ws://127.0.0.1:26657/websocket");
        let again: Config = toml::from_str(&toml::to_string_pretty(&c).unwrap()).unwrap();
        assert_eq!(again.challenge.pool[0].region.as_deref(), Some("eu"));
    }

    #[test]
    fn unknown_fields_are_refused_and_challenges_need_posters() {
        let bad = SAMPLE.replace("bond = 2000000000", "bond = 2000000000\ncolour = 1");
        assert!(toml::from_str::<Config>(&bad).is_err());
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v.toml");
        std::fs::write(&path, SAMPLE.replace("posters = [\"alice\"]", "")).unwrap();
        let err = Config::load(&path).unwrap_err();
        assert!(err.to_string().contains("posters"), "{err}");
    }

    #[test]
    fn the_serving_models_declared_are_each_configured_hash_once_and_bad_hex_is_named() {
        let serving = |a: &str, b: &str| {
            format!(
                "{SAMPLE}\n[serving]\n[[serving.models]]\nname = \"smollm2\"\nblake3 = \"{a}\"\npath = \"/m.gguf\"\n\
                 [[serving.embedders]]\nname = \"minilm\"\nblake3 = \"{b}\"\npath = \"/minilm\"\n"
            )
        };
        let (a, b) = ("bb".repeat(32), "AA".repeat(32));
        let c: Config = toml::from_str(&serving(&a, &b)).unwrap();
        assert_eq!(c.serving.hashes().unwrap(), vec![[0xaa; 32], [0xbb; 32]]);
        let c: Config = toml::from_str(&serving(&a, &a)).unwrap();
        assert_eq!(c.serving.hashes().unwrap(), vec![[0xbb; 32]]);
        let c: Config = toml::from_str(&serving(&a, "not-hex")).unwrap();
        let err = c.serving.hashes().unwrap_err().to_string();
        assert!(err.contains("minilm") && err.contains("not-hex"), "{err}");
    }

    #[test]
    fn a_config_with_more_serving_models_than_the_chain_takes_is_refused() {
        let models: String = (0..=gpuchain_serving::MAX_JUDGED_MODELS)
            .map(|i| {
                format!(
                    "[[serving.models]]\nname = \"m{i}\"\nblake3 = \"{}\"\npath = \"/m{i}.gguf\"\n",
                    format!("{i:02x}").repeat(32)
                )
            })
            .collect();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v.toml");
        std::fs::write(&path, format!("{SAMPLE}\n[serving]\n{models}")).unwrap();
        let err = Config::load(&path).unwrap_err();
        assert!(format!("{err:#}").contains("at most 16"), "{err:#}");
    }
}
