//! A keep-alive HTTP/1.1 connection to a CometBFT RPC endpoint, as lean as the load
//! generator must be: it shares the machine with the nodes it measures, so requests are
//! encoded before the run and a response costs one header scan and one body read.

use anyhow::{bail, Context, Result};
use base64::Engine as _;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// One connection, reopened after an error.
pub(crate) struct Connection {
    addr: String,
    stream: Option<BufReader<TcpStream>>,
}

impl Connection {
    /// A connection to `addr` (`host:port`), opened on first use.
    pub(crate) fn new(addr: &str) -> Connection {
        Connection {
            addr: addr.to_string(),
            stream: None,
        }
    }

    /// Sends a request encoded by [`broadcast_request`] or [`get_request`] and returns the
    /// response body.
    pub(crate) async fn send(&mut self, request: &[u8]) -> Result<Vec<u8>> {
        let result = self.exchange(request).await;
        if result.is_err() {
            self.stream = None;
        }
        result
    }

    async fn exchange(&mut self, request: &[u8]) -> Result<Vec<u8>> {
        if self.stream.is_none() {
            let stream = TcpStream::connect(&self.addr)
                .await
                .with_context(|| format!("connecting to {}", self.addr))?;
            stream.set_nodelay(true)?;
            self.stream = Some(BufReader::new(stream));
        }
        let Some(stream) = self.stream.as_mut() else {
            bail!("no connection to {}", self.addr);
        };
        stream.get_mut().write_all(request).await?;
        let mut length = None;
        let mut chunked = false;
        let mut line = String::new();
        let mut status_line = true;
        loop {
            line.clear();
            if stream.read_line(&mut line).await? == 0 {
                bail!("{} closed the connection", self.addr);
            }
            let header = line.trim_end();
            if status_line {
                status_line = false;
                continue;
            }
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    length = Some(value.trim().parse::<usize>()?);
                } else if name.eq_ignore_ascii_case("transfer-encoding") {
                    chunked = value.trim().eq_ignore_ascii_case("chunked");
                }
            }
        }
        if chunked {
            return read_chunked(stream).await;
        }
        let Some(length) = length else {
            bail!("{} answered without a length", self.addr);
        };
        let mut body = vec![0u8; length];
        stream.read_exact(&mut body).await?;
        Ok(body)
    }
}

/// A body sent in chunks (CometBFT's RPC answers this way when it is over a few KiB):
/// hexadecimal sizes, each chunk followed by CRLF, ending with a chunk of size 0.
async fn read_chunked(stream: &mut BufReader<TcpStream>) -> Result<Vec<u8>> {
    let mut body = Vec::new();
    let mut line = String::new();
    loop {
        line.clear();
        stream.read_line(&mut line).await?;
        let size = line.trim_end().split(';').next().unwrap_or_default();
        let size = usize::from_str_radix(size.trim(), 16)
            .with_context(|| format!("a chunk size {line:?}"))?;
        if size == 0 {
            // Trailers, if any, end with an empty line.
            loop {
                line.clear();
                if stream.read_line(&mut line).await? == 0 || line.trim_end().is_empty() {
                    return Ok(body);
                }
            }
        }
        let start = body.len();
        body.resize(start + size, 0);
        stream.read_exact(&mut body[start..]).await?;
        let mut crlf = [0u8; 2];
        stream.read_exact(&mut crlf).await?;
    }
}

/// The HTTP request `broadcast_tx_sync` of `tx` to `host`.
pub(crate) fn broadcast_request(host: &str, tx: &[u8]) -> Vec<u8> {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":0,"method":"broadcast_tx_sync","params":{{"tx":"{}"}}}}"#,
        base64::engine::general_purpose::STANDARD.encode(tx)
    );
    format!(
        "POST / HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// The HTTP request `GET path` to `host`.
pub(crate) fn get_request(host: &str, path: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n").into_bytes()
}
