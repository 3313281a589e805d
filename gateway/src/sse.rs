//! Reading server-sent events from an upstream answer: the `data` of each event, however the
//! bytes were split on the way.

use futures::stream::BoxStream;
use futures::StreamExt;

/// The events of one streamed answer.
pub(crate) struct SseReader {
    body: BoxStream<'static, Result<Vec<u8>, String>>,
    buf: Vec<u8>,
}

impl SseReader {
    pub(crate) fn new(response: reqwest::Response) -> SseReader {
        let body = response
            .bytes_stream()
            .map(|r| r.map(|b| b.to_vec()).map_err(|e| e.to_string()));
        SseReader::from_stream(body.boxed())
    }

    fn from_stream(body: BoxStream<'static, Result<Vec<u8>, String>>) -> SseReader {
        SseReader {
            body,
            buf: Vec::new(),
        }
    }

    /// The next event's data (its `data:` lines joined by newlines); `Ok(None)` when the
    /// answer ended, an error when the connection broke.
    pub(crate) async fn next_data(&mut self) -> Result<Option<String>, String> {
        loop {
            if let Some((end, sep)) = event_end(&self.buf) {
                let event: Vec<u8> = self.buf.drain(..end + sep).collect();
                let text = String::from_utf8_lossy(&event[..end]);
                let data: Vec<&str> = text
                    .lines()
                    .filter_map(|l| l.strip_prefix("data:"))
                    .map(|d| d.strip_prefix(' ').unwrap_or(d))
                    .collect();
                if data.is_empty() {
                    continue; // a comment or a keep-alive
                }
                return Ok(Some(data.join("\n")));
            }
            match self.body.next().await {
                Some(Ok(bytes)) => self.buf.extend_from_slice(&bytes),
                Some(Err(e)) => return Err(e),
                None => return Ok(None),
            }
        }
    }
}

/// Where the first complete event in `buf` ends, and the length of the blank line after it.
fn event_end(buf: &[u8]) -> Option<(usize, usize)> {
    (0..buf.len()).find_map(|i| {
        if buf[i..].starts_with(b"\n\n") {
            Some((i, 2))
        } else if buf[i..].starts_with(b"\r\n\r\n") {
            Some((i, 4))
        } else {
            None
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reader(pieces: &[&str]) -> SseReader {
        let owned: Vec<Result<Vec<u8>, String>> =
            pieces.iter().map(|p| Ok(p.as_bytes().to_vec())).collect();
        SseReader::from_stream(futures::stream::iter(owned).boxed())
    }

    #[tokio::test]
    async fn events_are_read_whole_across_splits_comments_and_line_endings() {
        let mut r = reader(&[
            "data: {\"a\"",
            ":1}\n\n: keep-alive\n\nda",
            "ta: two\r\ndata: lines\r\n\r\ndata:[DONE]\n\n",
        ]);
        assert_eq!(r.next_data().await.unwrap().as_deref(), Some("{\"a\":1}"));
        assert_eq!(r.next_data().await.unwrap().as_deref(), Some("two\nlines"));
        assert_eq!(r.next_data().await.unwrap().as_deref(), Some("[DONE]"));
        assert_eq!(r.next_data().await.unwrap(), None);
    }

    #[tokio::test]
    async fn a_broken_connection_is_an_error_not_an_end() {
        let mut r = SseReader::from_stream(
            futures::stream::iter(vec![
                Ok(b"data: x\n\n".to_vec()),
                Err("connection reset".to_string()),
            ])
            .boxed(),
        );
        assert_eq!(r.next_data().await.unwrap().as_deref(), Some("x"));
        assert!(r.next_data().await.is_err());
    }
}
