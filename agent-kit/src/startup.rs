//! What every agent does as it starts: take its state file for its account, find its
//! registration on chain, and pick the first block to follow.

use anyhow::{bail, Context, Result};
use serde::de::DeserializeOwned;

use crate::config::AgentConfig;
use crate::state_file::JsonFile;

/// The state file of the agent `config` configures, and the state in it, taken for the
/// agent's account `me`: `owner` is the document's record of the account, set in a new
/// document; a document another account wrote is refused (its data dir is that account's).
pub fn own_state<C: AgentConfig, T: DeserializeOwned + Default>(
    config: &C,
    me: &str,
    owner: fn(&mut T) -> &mut String,
) -> Result<(JsonFile, T)> {
    let file = JsonFile::new(config.state_path());
    let mut state: T = file.load()?;
    let recorded = owner(&mut state);
    if !recorded.is_empty() && recorded.as_str() != me {
        bail!(
            "{} belongs to {} {recorded}, not {me}; use another data_dir",
            file.path().display(),
            C::ROLE
        );
    }
    *recorded = me.to_string();
    Ok((file, state))
}

/// `record`, the registration of agent `C`'s account `me`, or an error saying how to make one.
pub fn registered<C: AgentConfig, R>(record: Option<R>, me: &str) -> Result<R> {
    let role = C::ROLE;
    record.with_context(|| {
        format!("{me} is not a registered {role}: run `gpuchain-{role} register` first")
    })
}

/// The first height to follow after a start: the block after the last one processed, or on
/// a first start (`last_height` 0) `latest`. A first start's scan may have read the state
/// before `latest` (see `client::follow`): its events are taken again, and every handler
/// ignores what it has already seen.
pub fn first_height(last_height: u64, latest: u64) -> u64 {
    if last_height == 0 {
        return latest;
    }
    tracing::info!(from = last_height + 1, latest, "catching up missed blocks");
    last_height + 1
}

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};

    use super::*;
    use crate::config::testing::TestConfig;

    #[derive(Debug, Default, Serialize, Deserialize)]
    struct State {
        tester: String,
        last_height: u64,
    }

    #[test]
    fn a_state_file_is_its_first_accounts_alone() {
        let dir = tempfile::tempdir().unwrap();
        let config = TestConfig {
            data_dir: dir.path().to_path_buf(),
        };
        let mine: fn(&mut State) -> &mut String = |s| &mut s.tester;
        let (file, state) = own_state(&config, "gpu1me", mine).unwrap();
        assert_eq!(state.tester, "gpu1me");
        file.save(&state).unwrap();
        assert!(own_state(&config, "gpu1me", mine).is_ok());
        let err = own_state(&config, "gpu1other", mine).unwrap_err();
        assert!(
            err.to_string().contains("belongs to tester gpu1me"),
            "{err}"
        );
        let err = registered::<TestConfig, u8>(None, "gpu1me").unwrap_err();
        assert!(
            err.to_string().contains("`gpuchain-tester register`"),
            "{err}"
        );
        assert_eq!((first_height(0, 9), first_height(4, 9)), (9, 5));
    }
}
