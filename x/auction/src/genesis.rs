use gpuchain_types::StateWrite;
use serde::{Deserialize, Serialize};

use crate::{AuctionError, AuctionParams, AuctionWrite};

/// The auction's part of the genesis file. No orders exist at genesis.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuctionGenesis {
    /// Module parameters.
    #[serde(default)]
    pub params: AuctionParams,
}

impl AuctionGenesis {
    /// Validates and stores the parameters.
    pub fn apply(&self, state: &mut impl StateWrite) -> Result<(), AuctionError> {
        self.params.validate()?;
        state.put_auction_params(&self.params);
        Ok(())
    }
}
