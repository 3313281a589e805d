//! A light client for proven queries: a header is believed only when the validators the
//! client already trusts (or enough of them, by skipping verification with bisection) signed
//! it, so a node cannot serve a made-up app hash.
//!
//! Trust starts either from a header the user pins (`trust` with a height and hash, e.g.
//! from a block explorer or another node) or, on first use, from the node's current header
//! after checking that more than 2/3 of its own validator set signed it (trust on first use,
//! like SSH; the client prints a warning). The trusted light block is kept in a JSON file
//! (`<home>/light/<chain-id>.json`) and moves forward with every verified header. Headers
//! are verified with CometBFT's own rules (`tendermint-light-client-verifier`): trust
//! threshold 1/3, trusting period two weeks, clock drift 10 s.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use tendermint::block::signed_header::SignedHeader;
use tendermint::block::Height;
use tendermint::validator::Set as ValidatorSet;
use tendermint::Time;
use tendermint_light_client_verifier::options::Options;
use tendermint_light_client_verifier::types::{LightBlock, PeerId, TrustThreshold};
use tendermint_light_client_verifier::{ProdVerifier, Verdict, Verifier};
use tendermint_rpc::{Client, Paging};

use crate::ChainClient;

/// The most headers one verification may fetch while bisecting.
const MAX_BISECTION_STEPS: usize = 32;

/// Verifies headers against a trusted light block kept on disk.
#[derive(Debug)]
pub struct LightClient {
    path: PathBuf,
    trusted: Option<LightBlock>,
    options: Options,
}

/// Why a header was refused.
#[derive(Debug, thiserror::Error)]
pub enum LightError {
    /// The header is not signed by enough of the trusted validators or is malformed.
    #[error("header at height {height} failed light-client verification: {reason}")]
    Invalid {
        /// Height of the refused header.
        height: u64,
        /// CometBFT's verdict.
        reason: String,
    },
    /// The pinned header differs from the node's.
    #[error("the node's header at height {height} has hash {got}, not the pinned {pinned}")]
    PinMismatch {
        /// Height pinned.
        height: u64,
        /// Node's hash.
        got: String,
        /// Pinned hash.
        pinned: String,
    },
}

fn now() -> Result<Time> {
    // The light client runs on the user's machine, never in consensus code: it needs the
    // wall clock to reject headers from the future or past the trusting period.
    #[allow(clippy::disallowed_methods)]
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_err(|e| anyhow!("clock before 1970: {e}"))?;
    Time::from_unix_timestamp(
        i64::try_from(since.as_secs()).map_err(|_| anyhow!("clock out of range"))?,
        since.subsec_nanos(),
    )
    .map_err(|e| anyhow!("bad clock: {e}"))
}

fn options() -> Options {
    Options {
        trust_threshold: TrustThreshold::ONE_THIRD,
        trusting_period: Duration::from_secs(14 * 24 * 3600),
        clock_drift: Duration::from_secs(10),
    }
}

async fn validator_set(chain: &ChainClient, height: Height) -> Result<ValidatorSet> {
    let res = chain
        .rpc()
        .validators(height, Paging::All)
        .await
        .with_context(|| format!("validators at height {height}"))?;
    Ok(ValidatorSet::without_proposer(res.validators))
}

/// Fetches the light block (signed header, validators, next validators) at `height`.
pub async fn fetch_light_block(chain: &ChainClient, height: u64) -> Result<LightBlock> {
    let h = Height::try_from(height)?;
    let commit = chain
        .rpc()
        .commit(h)
        .await
        .with_context(|| format!("commit at height {height}"))?;
    let signed: SignedHeader = commit.signed_header;
    let validators = validator_set(chain, h).await?;
    // The next height's set is known once the node has stored it; a node exactly at
    // `height` may not have it yet, so wait for one more block.
    let next = match validator_set(chain, h.increment()).await {
        Ok(set) => set,
        Err(_) => {
            chain
                .wait_for_height(height + 1, std::time::Duration::from_secs(30))
                .await?;
            validator_set(chain, h.increment()).await?
        }
    };
    let provider: PeerId = chain.status().await?.node_info.id;
    Ok(LightBlock::new(signed, validators, next, provider))
}

fn invalid(height: u64, reason: impl ToString) -> anyhow::Error {
    LightError::Invalid {
        height,
        reason: reason.to_string(),
    }
    .into()
}

/// Checks that a block is internally consistent: its validator sets match the header's
/// hashes and more than 2/3 of its own validators signed its commit.
pub fn verify_self_signed(block: &LightBlock) -> Result<()> {
    let verifier = ProdVerifier::default();
    let height = block.height().value();
    let untrusted = block.as_untrusted_state();
    match verifier.verify_validator_sets(&untrusted) {
        Verdict::Success => {}
        other => return Err(invalid(height, format!("{other:?}"))),
    }
    match verifier.verify_commit(&untrusted) {
        Verdict::Success => Ok(()),
        other => Err(invalid(height, format!("{other:?}"))),
    }
}

/// Verifies `untrusted` from `trusted` with CometBFT's skipping rules.
pub fn verify_from(trusted: &LightBlock, untrusted: &LightBlock, at: Time) -> Verdict {
    ProdVerifier::default().verify_update_header(
        untrusted.as_untrusted_state(),
        trusted.as_trusted_state(),
        &options(),
        at,
    )
}

impl LightClient {
    /// Opens the trust store at `path` (created on first verification).
    pub fn open(path: impl Into<PathBuf>) -> Result<LightClient> {
        let path = path.into();
        let trusted = match std::fs::read(&path) {
            Ok(bytes) => Some(
                serde_json::from_slice(&bytes)
                    .with_context(|| format!("reading trusted header {}", path.display()))?,
            ),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
        };
        Ok(LightClient {
            path,
            trusted,
            options: options(),
        })
    }

    /// The trust store of `chain_id` under a gpuchaind home.
    pub fn store_path(home: &Path, chain_id: &str) -> PathBuf {
        home.join("light").join(format!("{chain_id}.json"))
    }

    /// Height of the trusted header, if any.
    pub fn trusted_height(&self) -> Option<u64> {
        self.trusted.as_ref().map(|b| b.height().value())
    }

    /// The trusting period in force.
    pub fn trusting_period(&self) -> Duration {
        self.options.trusting_period
    }

    fn save(&self) -> Result<()> {
        let Some(block) = &self.trusted else {
            return Ok(());
        };
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let tmp = self.path.with_extension("json.tmp");
        std::fs::write(&tmp, serde_json::to_vec_pretty(block)?)?;
        std::fs::rename(&tmp, &self.path)?;
        Ok(())
    }

    /// Pins trust to the node's header at `height`, which must have `hash` (hex).
    pub async fn trust(&mut self, chain: &ChainClient, height: u64, hash: &str) -> Result<()> {
        let block = fetch_light_block(chain, height).await?;
        let got = block.signed_header.header.hash().to_string();
        if !got.eq_ignore_ascii_case(hash) {
            return Err(LightError::PinMismatch {
                height,
                got,
                pinned: hash.to_string(),
            }
            .into());
        }
        verify_self_signed(&block)?;
        self.trusted = Some(block);
        self.save()
    }

    /// The header at `height`, verified from the trusted one (bisecting when the validator
    /// set changed too much for one step). On first use, trusts the node's header at
    /// `height` after checking its own commit, and says so on stderr.
    pub async fn verify(&mut self, chain: &ChainClient, height: u64) -> Result<SignedHeader> {
        let target = fetch_light_block(chain, height).await?;
        let Some(trusted) = self.trusted.clone() else {
            verify_self_signed(&target)?;
            eprintln!(
                "light client: trusting {} at height {height} (hash {}) on first use; \
                 pin a header with `gpuchaind light trust` to avoid this",
                chain.url(),
                target.signed_header.header.hash()
            );
            let header = target.signed_header.clone();
            self.trusted = Some(target);
            self.save()?;
            return Ok(header);
        };
        let trusted_height = trusted.height().value();
        if trusted.signed_header.header.chain_id != target.signed_header.header.chain_id {
            return Err(invalid(height, "the trusted header is from another chain"));
        }
        if height <= trusted_height {
            return self.verify_past(chain, &trusted, target).await;
        }
        let mut anchor = trusted;
        let mut pending = vec![target];
        for _ in 0..MAX_BISECTION_STEPS {
            let Some(next) = pending.last().cloned() else {
                break;
            };
            let at = now()?;
            match verify_from(&anchor, &next, at) {
                Verdict::Success => {
                    pending.pop();
                    anchor = next;
                    if pending.is_empty() {
                        let header = anchor.signed_header.clone();
                        self.trusted = Some(anchor);
                        self.save()?;
                        return Ok(header);
                    }
                }
                Verdict::NotEnoughTrust(_) => {
                    let low = anchor.height().value();
                    let high = next.height().value();
                    if high <= low.saturating_add(1) {
                        return Err(invalid(high, "not enough trusted voting power signed it"));
                    }
                    let pivot = low + (high - low) / 2;
                    pending.push(fetch_light_block(chain, pivot).await?);
                }
                Verdict::Invalid(e) => return Err(invalid(next.height().value(), e)),
            }
        }
        bail!("light client: more than {MAX_BISECTION_STEPS} bisection steps to height {height}")
    }

    /// A header at or below the trusted height: it must hash-link to the trusted header.
    async fn verify_past(
        &self,
        chain: &ChainClient,
        trusted: &LightBlock,
        target: LightBlock,
    ) -> Result<SignedHeader> {
        let height = target.height().value();
        let mut expected = trusted.signed_header.header.hash();
        let mut h = trusted.height().value();
        // Walk back by last_block_id from the trusted header to `height`.
        let mut header = trusted.signed_header.clone();
        while h > height {
            let parent = header
                .header
                .last_block_id
                .ok_or_else(|| invalid(h, "header has no parent"))?
                .hash;
            h -= 1;
            header = if h == height {
                target.signed_header.clone()
            } else {
                chain
                    .rpc()
                    .commit(Height::try_from(h)?)
                    .await?
                    .signed_header
            };
            expected = parent;
            if header.header.hash() != expected {
                return Err(invalid(
                    h,
                    format!(
                        "does not hash-link to the trusted header at height {}: if this chain \
                         was reset, delete {} or pin a header with `gpuchaind light trust`",
                        trusted.height(),
                        self.path.display()
                    ),
                ));
            }
        }
        if header.header.hash() != expected {
            return Err(invalid(height, "differs from the trusted header"));
        }
        Ok(header)
    }
}
