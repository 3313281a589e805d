//! The app served inside CometBFT's own process (`cometbft-gpuchain start --app-home`):
//! CometBFT hands ABCI requests over as the same length-prefixed protobuf bytes it would
//! write to the socket (one, or several CheckTx at once), and gets the answers back framed
//! the same way. Nothing is framed, flushed or copied through a
//! kernel socket, which is what the socket transport cost CometBFT per transaction
//! (docs/benchmarks.md). The app is the one `gpuchaind start` serves, opened the same way.

use std::path::Path;

use anyhow::Result;

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

    /// Answers length-prefixed `Request`s with the length-prefixed `Response`s, in order;
    /// the input must be whole requests, at least one.
    pub fn answer(&self, requests: &[u8]) -> Result<Vec<u8>> {
        let mut answers = Vec::new();
        let used = crate::abci_server::answer_buffered(&self.app, requests, &mut answers)?;
        anyhow::ensure!(
            used == requests.len() && used > 0,
            "{} bytes are not whole length-prefixed ABCI requests ({used} bytes used)",
            requests.len()
        );
        Ok(answers)
    }
}
