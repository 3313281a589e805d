//! Serving on 127.0.0.1 for tests, benchmarks and the demo: `gpuchain-provider serve-model`
//! with the real SmolLM2 and MiniLM checkpoints, `gpuchain-gateway` in front of such
//! endpoints (each process killed when its handle is dropped), and reading a streamed chat
//! answer piece by piece as a client does.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use anyhow::{anyhow, bail, Context, Result};
use futures::stream::BoxStream;
use futures::StreamExt;
use serde_json::Value;

use crate::{gpuchaind_path, ProviderAgent};

#[path = "../../compute/tests/common/mod.rs"]
mod models;

/// A server process, killed when dropped.
pub struct Server {
    child: Child,
    /// Its base URL (`http://127.0.0.1:PORT`).
    pub url: String,
}

impl Server {
    /// SIGTERM, then waits for the exit; whether it exited successfully.
    pub fn terminate(&mut self) -> Result<bool> {
        std::process::Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status()?;
        Ok(self.child.wait()?.success())
    }

    /// Kills it now (SIGKILL), as a crash would.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Starts `cmd` (its log to `log`, else to this process's stderr) and reads the address it
/// prints first (`listening on ADDR`).
fn start(mut cmd: Command, log: Option<&Path>) -> Result<Server> {
    if let Some(path) = log {
        let file =
            std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
        cmd.stderr(file);
    }
    let mut child = cmd
        .stdout(Stdio::piped())
        .spawn()
        .with_context(|| format!("starting {cmd:?} (cargo build --workspace)"))?;
    let mut line = String::new();
    let read = match child.stdout.take() {
        Some(stdout) => BufReader::new(stdout).read_line(&mut line).map(|_| ()),
        None => Err(std::io::Error::other("no stdout")),
    };
    let addr = match (read, line.trim().strip_prefix("listening on ")) {
        (Ok(()), Some(addr)) => addr.to_string(),
        (read, _) => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(anyhow!("{cmd:?} printed {line:?} first ({read:?})"));
        }
    };
    Ok(Server {
        url: format!("http://{addr}"),
        child,
    })
}

/// `gpuchain-provider serve-model` with SmolLM2 (as `smollm2`) and MiniLM (as `minilm`),
/// answering `max_concurrent` requests at once; the checkpoints are fetched when absent.
pub fn serve_model(max_concurrent: usize) -> Result<Server> {
    serve_model_with(
        &models::smollm2_file(),
        &models::minilm_dir(),
        max_concurrent,
        None,
    )
}

/// `gpuchain-provider serve-model` with the GGUF `model` (as `smollm2`) and the MiniLM
/// checkpoint in `embedder` (as `minilm`), logging to `log` when given.
pub fn serve_model_with(
    model: &Path,
    embedder: &Path,
    max_concurrent: usize,
    log: Option<&Path>,
) -> Result<Server> {
    let mut cmd = Command::new(ProviderAgent::path());
    cmd.args([
        "serve-model",
        "--listen",
        "127.0.0.1:0",
        "--name",
        "smollm2",
    ])
    .args([
        "--max-concurrent",
        max_concurrent.to_string().as_str(),
        "--model",
    ])
    .arg(model)
    .args(["--embedder-name", "minilm", "--embedder"])
    .arg(embedder);
    start(cmd, log)
}

/// `gpuchain-provider serve-model` with the GGUF `model` (as `smollm2`) and the MiniLM
/// checkpoint in `embedder` (as `minilm`) on 127.0.0.1:`port`, serving chain leases of
/// `operator` (receipts under `receipts`, leases read from `node`); logs to `log`.
pub fn serve_both_on_leases(
    model: &Path,
    embedder: &Path,
    port: u16,
    lease: (&Path, &str, &str),
    log: &Path,
) -> Result<Server> {
    let (receipts, node, operator) = lease;
    let mut cmd = Command::new(ProviderAgent::path());
    cmd.args(["serve-model", "--listen", &format!("127.0.0.1:{port}")])
        .args(["--max-concurrent", "2", "--name", "smollm2", "--model"])
        .arg(model)
        .args(["--embedder-name", "minilm", "--embedder"])
        .arg(embedder)
        .arg("--receipts")
        .arg(receipts)
        .args(["--node", node, "--operator", operator]);
    start(cmd, Some(log))
}

/// The SmolLM2-135M-Instruct GGUF file (fetched when absent).
pub fn smollm2_path() -> std::path::PathBuf {
    models::smollm2_file()
}

/// `gpuchain-provider serve-model` with SmolLM2 (as `smollm2`) on 127.0.0.1:`port` serving
/// chain leases of `operator`: receipts under `receipts`, leases read from `node`, `extra`
/// arguments; logs to `log`.
pub fn serve_model_on_leases(
    port: u16,
    receipts: &Path,
    node: &str,
    operator: &str,
    extra: &[&str],
    log: &Path,
) -> Result<Server> {
    let listen = format!("127.0.0.1:{port}");
    let mut cmd = Command::new(ProviderAgent::path());
    cmd.args(["serve-model", "--listen", &listen, "--name", "smollm2"])
        .arg("--model")
        .arg(models::smollm2_file())
        .arg("--receipts")
        .arg(receipts)
        .args(["--node", node, "--operator", operator])
        .args(extra);
    start(cmd, Some(log))
}

/// `gpuchain-gateway` beside `gpuchaind` (or `GPUCHAIN_GATEWAY_BIN`).
pub fn gateway_path() -> std::path::PathBuf {
    match std::env::var_os("GPUCHAIN_GATEWAY_BIN") {
        Some(p) => p.into(),
        None => gpuchaind_path().with_file_name("gpuchain-gateway"),
    }
}

/// `gpuchain-gateway` over `upstreams`, with `extra` arguments.
pub fn gateway(upstreams: &[String], extra: &[&str]) -> Result<Server> {
    gateway_logged(upstreams, extra, None)
}

/// `gpuchain-gateway` over `upstreams`, with `extra` arguments, logging to `log` when given.
pub fn gateway_logged(upstreams: &[String], extra: &[&str], log: Option<&Path>) -> Result<Server> {
    let mut cmd = Command::new(gateway_path());
    cmd.args(["--listen", "127.0.0.1:0"]).args(extra);
    for u in upstreams {
        cmd.args(["--upstream", u]);
    }
    start(cmd, log)
}

/// A streamed answer (OpenAI's server-sent chunks, chat or text completion) being read.
pub struct AnswerStream {
    body: BoxStream<'static, reqwest::Result<Vec<u8>>>,
    buf: Vec<u8>,
    /// The text read so far.
    pub text: String,
    /// The answer's token count, once a chunk has carried its usage.
    pub completion_tokens: Option<u64>,
}

/// Posts `request` (with `stream: true`) to `base` + `path` (`/v1/chat/completions` or
/// `/v1/completions`) and returns the answer to read; a status other than 200 is an error
/// carrying the body.
pub async fn answer_stream(
    http: &reqwest::Client,
    base: &str,
    path: &str,
    request: &Value,
) -> Result<AnswerStream> {
    let r = http
        .post(format!("{base}{path}"))
        .header("content-type", "application/json")
        .body(request.to_string())
        .send()
        .await?;
    if r.status() != 200 {
        let status = r.status();
        bail!("status {status}: {}", r.text().await.unwrap_or_default());
    }
    Ok(AnswerStream {
        body: r.bytes_stream().map(|b| b.map(|b| b.to_vec())).boxed(),
        buf: Vec::new(),
        text: String::new(),
        completion_tokens: None,
    })
}

/// A streamed chat answer to read (`POST /v1/chat/completions`).
pub async fn chat_stream(
    http: &reqwest::Client,
    base: &str,
    request: &Value,
) -> Result<AnswerStream> {
    answer_stream(http, base, "/v1/chat/completions", request).await
}

impl AnswerStream {
    /// The next piece of text (`None` after `[DONE]`); an error event, a broken connection or
    /// an answer that ends without `[DONE]` is an error.
    pub async fn next_piece(&mut self) -> Result<Option<String>> {
        loop {
            // Whole events only: a character may be split between two reads.
            while let Some(end) = self.buf.windows(2).position(|w| w == b"\n\n") {
                let event: Vec<u8> = self.buf.drain(..end + 2).collect();
                let event = String::from_utf8(event)?;
                let Some(data) = event.trim().strip_prefix("data: ") else {
                    continue;
                };
                if data == "[DONE]" {
                    return Ok(None);
                }
                let chunk: Value = serde_json::from_str(data)?;
                if chunk.get("error").is_some() {
                    bail!("error event: {data}");
                }
                if let Some(n) = chunk["usage"]["completion_tokens"].as_u64() {
                    self.completion_tokens = Some(n);
                }
                let choice = &chunk["choices"][0];
                let piece = choice["delta"]["content"]
                    .as_str()
                    .or(choice["text"].as_str())
                    .unwrap_or("");
                if !piece.is_empty() {
                    self.text.push_str(piece);
                    return Ok(Some(piece.to_string()));
                }
            }
            match self.body.next().await {
                Some(bytes) => self.buf.extend_from_slice(&bytes?),
                None => bail!("the answer ended without [DONE] after {:?}", self.text),
            }
        }
    }

    /// Reads to the end; the whole text.
    pub async fn rest(mut self) -> Result<String> {
        while self.next_piece().await?.is_some() {}
        Ok(self.text)
    }
}

/// A whole streamed chat answer's text.
pub async fn streamed_chat(http: &reqwest::Client, base: &str, request: &Value) -> Result<String> {
    chat_stream(http, base, request).await?.rest().await
}

/// The value of one series in a Prometheus text exposition.
pub fn metric_value(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}
