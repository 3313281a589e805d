//! Driving `gpuchaind` from tests with `--output json`: run a command against one node,
//! parse its JSON, and read events and fees out of a transaction outcome.

use anyhow::{ensure, Context, Result};
use serde_json::Value;

use crate::{cli, TestNet};

/// The CLI bound to one node's RPC and the localnet's keystore.
pub struct NodeCli {
    home: String,
    node: String,
}

impl NodeCli {
    /// The CLI talking to node `i` of `net`.
    pub fn new(net: &TestNet, i: usize) -> Result<NodeCli> {
        let home = net.keys_home();
        let home = home
            .to_str()
            .context("keystore path is not UTF-8")?
            .to_string();
        let node = net
            .net
            .nodes
            .get(i)
            .with_context(|| format!("no node {i}"))?
            .rpc_url
            .clone();
        Ok(NodeCli { home, node })
    }

    /// Adds a new key `name` to the keystore and returns its address.
    pub fn add_key(&self, name: &str) -> Result<String> {
        let key = run_json(&[
            "keys", "add", name, "--home", &self.home, "--output", "json",
        ])?;
        key["address"]
            .as_str()
            .map(str::to_string)
            .with_context(|| format!("`keys add {name}` printed no address: {key}"))
    }

    /// The node's RPC URL.
    pub fn node(&self) -> &str {
        &self.node
    }

    fn args<'a>(&'a self, head: &str, args: &[&'a str]) -> Vec<&'a str> {
        let mut all: Vec<&str> = vec![if head == "tx" { "tx" } else { "query" }];
        all.extend_from_slice(args);
        all.extend_from_slice(&[
            "--home", &self.home, "--node", &self.node, "--output", "json",
        ]);
        all
    }

    /// `gpuchaind tx <args>`; fails unless the transaction was committed with code 0.
    pub fn tx(&self, args: &[&str]) -> Result<Value> {
        run_json(&self.args("tx", args))
    }

    /// `gpuchaind tx <args>` expected to fail: returns the outcome (code, codespace, log) the
    /// CLI printed, whatever the exit status.
    pub fn tx_outcome(&self, args: &[&str]) -> Result<Value> {
        let out = self.tx_output(args)?;
        serde_json::from_slice(&out.stdout).with_context(|| {
            format!(
                "tx {args:?} printed no JSON: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        })
    }

    /// `gpuchaind tx <args>` as it ran, whatever its exit status: for a transaction the test
    /// expects to be refused.
    pub fn tx_output(&self, args: &[&str]) -> Result<std::process::Output> {
        cli(&self.args("tx", args))
    }

    /// `gpuchaind query <args>`.
    pub fn query(&self, args: &[&str]) -> Result<Value> {
        run_json(&self.args("query", args))
    }
}

/// Runs `gpuchaind <args>` and parses its stdout as JSON; fails on a non-zero exit.
pub fn run_json(args: &[&str]) -> Result<Value> {
    let out = cli(args)?;
    ensure!(
        out.status.success(),
        "{args:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).with_context(|| {
        format!(
            "{args:?} printed no JSON: {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// The value of `kind.key` among a transaction outcome's events.
pub fn event_attr(outcome: &Value, kind: &str, key: &str) -> Option<String> {
    outcome["events"]
        .as_array()?
        .iter()
        .filter(|event| event[0] == kind)
        .flat_map(|event| event[1].as_array().cloned().unwrap_or_default())
        .find(|pair| pair[0] == key)
        .and_then(|pair| pair[1].as_str().map(str::to_string))
}

/// The fee a transaction paid, from its `tx` event.
pub fn tx_fee(outcome: &Value) -> Result<u128> {
    event_attr(outcome, "tx", "fee")
        .with_context(|| format!("no tx.fee in {outcome}"))?
        .parse()
        .context("tx.fee is not a number")
}
