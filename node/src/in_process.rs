//! The app served inside CometBFT's own process (`cometbft-gpuchain start --app-home`):
//! CometBFT hands each ABCI request over as the same protobuf bytes it would write to the
//! socket, and gets the encoded answer back. Nothing is framed, flushed or copied through a
//! kernel socket, which is what the socket transport cost CometBFT per transaction
//! (docs/benchmarks.md). The app is the one `gpuchaind start` serves, opened the same way.

use std::path::Path;

use anyhow::{Context, Result};
use prost::Message;
use tendermint_proto::v0_38::abci::Request;

use crate::metrics::MeteredApp;

/// An opened app answering encoded ABCI requests.
pub struct InProcess {
    app: MeteredApp,
}

impl InProcess {
    /// Opens the app `home`'s app.toml describes, with the released upgrades, and logs to
    /// stderr. `abci_addr` in app.toml is not used: nothing listens.
    pub fn open(home: &Path) -> Result<InProcess> {
        crate::cli::start::init_logging();
        let (app, _) = crate::cli::start::open(home, gpuchain_chain::app::released())?;
        tracing::info!(home = %home.display(), "gpuchain app running inside CometBFT's process");
        Ok(InProcess { app })
    }

    /// Answers one encoded `Request` (no length prefix) with an encoded `Response`.
    pub fn answer(&self, request: &[u8]) -> Result<Vec<u8>> {
        let request = Request::decode(request).context("decoding an ABCI request")?;
        Ok(crate::abci_server::dispatch(&self.app, request).encode_to_vec())
    }
}
