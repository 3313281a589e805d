//! The explorer in a real browser: the demo's scenario (three provider agents in three
//! regions, one cheating with a wrong model, a verifier, a client training and classifying
//! digits) runs on a 4-validator localnet with `gpuchain-explorer` following it from its first
//! block; then headless Chromium (Debian's package, driven by Playwright for Python:
//! `tests/explorer_browser.py`) checks that the providers table lists the three providers
//! with their hardware and sorts by price, that the cheater's page shows its slash, that a
//! page follows new blocks without a reload, that an order's page opened before the order
//! existed shows its bids arriving and then its clearing price, that search finds a
//! transaction by its hash, and that bad input gets a clear page, never a 500. Screenshots of
//! the main pages are saved under the target directory (`explorer-screenshots/`).

use std::path::{Path, PathBuf};
use std::process::Stdio;

use anyhow::{Context, Result};
use gpuchain_tests::demo::{run_with, DemoOptions};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// The python of the Playwright environment (made once by scripts/browser-env.sh).
fn browser_python() -> Result<PathBuf> {
    let out = std::process::Command::new("bash")
        .arg(root().join("scripts/browser-env.sh"))
        .output()
        .context("running scripts/browser-env.sh")?;
    anyhow::ensure!(
        out.status.success(),
        "scripts/browser-env.sh failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(PathBuf::from(String::from_utf8(out.stdout)?.trim()))
}

fn screenshot_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target"));
    target.join("explorer-screenshots")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_explorer_shows_the_demo_market_live_in_a_browser() -> Result<()> {
    let python = browser_python()?;
    let shots = screenshot_dir();
    let opts = DemoOptions {
        validators: 4,
        with_cheater: true,
        training_rounds: 3,
        digits_orders: 2,
        explorer_port: Some(0),
        ..DemoOptions::default()
    };
    let say = |line: &str| println!("{line}");
    let report = run_with(&opts, &say, |live| async move {
        let url = live.explorer.clone().context("the explorer runs")?;
        let mut browser = tokio::process::Command::new(&python)
            .arg(root().join("tests/explorer_browser.py"))
            .arg(&url)
            .arg(&shots)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .context("starting the browser test")?;
        let mut stdin = browser.stdin.take().context("stdin")?;
        let mut lines = BufReader::new(browser.stdout.take().context("stdout")?).lines();
        let mut result = None;
        while let Some(line) = lines.next_line().await? {
            println!("browser: {line}");
            if let Some(expected) = line.strip_prefix("READY ") {
                let id = live.post_digits_order().await?;
                println!("posted order {id} while its page is open");
                anyhow::ensure!(
                    expected.trim() == id.to_string(),
                    "the page waits for order {expected}, order {id} was posted"
                );
                stdin.write_all(format!("{id}\n").as_bytes()).await?;
                stdin.flush().await?;
            } else if let Some(json) = line.strip_prefix("RESULT ") {
                result = Some(json.to_string());
            }
        }
        let status = browser.wait().await?;
        anyhow::ensure!(status.success(), "the browser checks failed ({status})");
        let figures = result.context("the browser test reported no figures")?;
        println!("page loads (first contentful paint): {figures}");
        println!("screenshots in {}", shots.display());
        Ok(())
    })
    .await?;
    assert!(
        report
            .jobs
            .iter()
            .flat_map(|j| &j.leases)
            .any(|l| l.state == "faulted"),
        "the cheater was caught in the scenario the browser looked at"
    );
    Ok(())
}
