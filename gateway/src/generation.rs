//! Chat and text completions through the gateway. Every request goes to its provider as a
//! stream (with usage), whatever the client asked, so that the time to first token can be
//! measured and hedged, and an answer that breaks off can be resumed on another provider:
//! a sampled request is given a seed when it has none, so any provider running the same
//! runtime generates the same answer, and the resumed answer's text is passed on only past
//! what the client already has (and only if it repeats that text exactly).

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::HeaderMap;
use axum::response::Response;
use futures::FutureExt;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use crate::attempt::{first_success, send, Attempt, Refusal};
use crate::http::{failure_response, route_failure, Gateway};
use crate::pool::{InFlight, Route, Upstream};
use crate::sse::SseReader;

/// The longest an upstream may take to its first token, or between two pieces of its
/// answer, before it is taken for dead.
const STALL: Duration = Duration::from_secs(30);

/// Which OpenAI API a request came through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    /// `POST /v1/chat/completions`: text in `message` / `delta.content`.
    Chat,
    /// `POST /v1/completions`: text in `text`.
    Text,
}

impl Shape {
    pub(crate) fn path(self) -> &'static str {
        match self {
            Shape::Chat => "/v1/chat/completions",
            Shape::Text => "/v1/completions",
        }
    }
}

/// A generation request as the gateway forwards it.
#[derive(Clone)]
pub(crate) struct Generation {
    pub(crate) model: String,
    pub(crate) shape: Shape,
    /// What the client asked for.
    pub(crate) stream: bool,
    pub(crate) include_usage: bool,
    /// The body sent upstream: streamed, with usage, seeded when sampled.
    body: Arc<Vec<u8>>,
    region: Option<String>,
    hedge_after: Duration,
}

impl Generation {
    /// Reads a client's request; the error is the message of the 400 answer.
    pub(crate) fn parse(
        body: &[u8],
        shape: Shape,
        headers: &HeaderMap,
        hedge_after: Duration,
    ) -> Result<Generation, String> {
        let mut request: Value =
            serde_json::from_slice(body).map_err(|e| format!("malformed request: {e}"))?;
        let object = request
            .as_object_mut()
            .ok_or("the request must be a JSON object")?;
        let model = object
            .get("model")
            .and_then(Value::as_str)
            .ok_or("`model` is missing")?
            .to_string();
        let stream = object.get("stream").and_then(Value::as_bool) == Some(true);
        let include_usage = object
            .get("stream_options")
            .and_then(|o| o.get("include_usage"))
            .and_then(Value::as_bool)
            == Some(true);
        object.insert("stream".into(), json!(true));
        object.insert("stream_options".into(), json!({"include_usage": true}));
        let greedy = object.get("temperature").and_then(Value::as_f64) == Some(0.0);
        if !greedy && object.get("seed").is_none_or(Value::is_null) {
            // Within 2^53, so that every JSON reader on the way keeps it exact.
            let seed = rand_core::RngCore::next_u64(&mut rand_core::OsRng) >> 11;
            object.insert("seed".into(), json!(seed));
        }
        let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
        let hedge_after = match header("x-gpuchain-latency-budget-ms") {
            Some(ms) => Duration::from_millis(
                ms.parse()
                    .map_err(|_| "x-gpuchain-latency-budget-ms must be a whole number")?,
            ),
            None => hedge_after,
        };
        Ok(Generation {
            model,
            shape,
            stream,
            include_usage,
            body: Arc::new(request.to_string().into_bytes()),
            region: header("x-gpuchain-region").map(str::to_string),
            hedge_after,
        })
    }
}

/// What the driver passes to the answer being written.
pub(crate) enum Out {
    /// Nothing was answered: this is the answer (only ever the first message).
    Refused(Response),
    /// More of the answer's text.
    Text(String),
    /// Why the answer ended (`stop`, `length`).
    Finish(String),
    /// Token counts.
    Usage(Value),
    /// The answer broke off and could not be resumed.
    Broken(String),
    /// The answer is complete.
    Done,
}

/// An upstream whose answer has started.
struct Opened {
    upstream: Arc<Upstream>,
    reader: SseReader,
    /// The first piece, until [`Opened::next_chunk`] hands it out.
    first: Option<String>,
    _in_flight: InFlight,
}

impl Opened {
    /// The next piece of the answer as JSON, `None` at `[DONE]`; the error says how the
    /// stream broke off.
    async fn next_chunk(&mut self) -> Result<Option<Value>, String> {
        let data = match self.first.take() {
            Some(d) => d,
            None => match tokio::time::timeout(STALL, self.reader.next_data()).await {
                Ok(Ok(Some(d))) => d,
                Ok(Ok(None)) => return Err("the answer ended before [DONE]".into()),
                Ok(Err(e)) => return Err(format!("the answer broke off: {e}")),
                Err(_) => return Err("the answer stalled".into()),
            },
        };
        if data == "[DONE]" {
            return Ok(None);
        }
        serde_json::from_str(&data)
            .map(Some)
            .map_err(|_| "a piece of the answer is not JSON".into())
    }
}

fn open(g: &Gateway, u: Arc<Upstream>, req: &Generation) -> Attempt<Opened> {
    let (pool, body, path) = (g.pool.clone(), req.body.clone(), req.shape.path());
    async move {
        let in_flight = InFlight::start(&u);
        let started = Instant::now();
        let first = tokio::time::timeout(STALL, async {
            let response = send(&pool, &u, path, &body).await?;
            let mut reader = SseReader::new(response);
            let first = match reader.next_data().await {
                Ok(Some(first)) => Ok((reader, first)),
                Ok(None) => Err("the answer ended before its first token".to_string()),
                Err(e) => Err(format!("the answer broke off: {e}")),
            };
            first.map_err(|why| {
                u.failed(&why);
                Refusal::Elsewhere(why, None)
            })
        })
        .await;
        let (reader, first) = match first {
            Ok(r) => r?,
            Err(_) => {
                let why = "no first token within the stall limit".to_string();
                u.failed(&why);
                return Err(Refusal::Elsewhere(why, None));
            }
        };
        u.answered(started.elapsed());
        Ok(Opened {
            upstream: u,
            reader,
            first: Some(first),
            _in_flight: in_flight,
        })
    }
    .boxed()
}

/// What one upstream chunk carries.
#[derive(Default)]
struct Piece {
    text: Option<String>,
    finish: Option<String>,
    usage: Option<Value>,
}

impl Piece {
    fn of(chunk: &Value, shape: Shape) -> Piece {
        let choice = chunk.get("choices").and_then(|c| c.get(0));
        let text = choice.and_then(|c| match shape {
            Shape::Chat => c.get("delta").and_then(|d| d.get("content")),
            Shape::Text => c.get("text"),
        });
        Piece {
            text: text.and_then(Value::as_str).map(str::to_string),
            finish: choice
                .and_then(|c| c.get("finish_reason"))
                .and_then(Value::as_str)
                .map(str::to_string),
            usage: chunk.get("usage").filter(|u| !u.is_null()).cloned(),
        }
    }
}

/// Takes `text` from a resumed answer: the part of it still repeating what the client has
/// (`skip`) is dropped, the rest returned; `None` if it says something else.
fn past_what_was_sent(skip: &mut String, text: &str) -> Option<String> {
    if skip.is_empty() {
        return Some(text.to_string());
    }
    if skip.starts_with(text) {
        skip.drain(..text.len());
        return Some(String::new());
    }
    if let Some(rest) = text.strip_prefix(skip.as_str()) {
        let rest = rest.to_string();
        skip.clear();
        return Some(rest);
    }
    None
}

/// Routes `req`, relays its answer as [`Out`]s into `tx`, and resumes it on the next
/// provider when its provider breaks off.
pub(crate) async fn drive(g: Gateway, req: Generation, tx: mpsc::Sender<Out>) {
    let mut sent = String::new();
    let (mut started, mut finished, mut resumes) = (false, false, 0usize);
    loop {
        let candidates = match g.pool.route(&req.model, req.region.as_deref()) {
            Route::To(c) => c,
            other => {
                let answer = route_failure(&other, &req.model);
                let _ = tx
                    .send(if started {
                        Out::Broken("no provider left to resume the answer on".into())
                    } else {
                        Out::Refused(answer)
                    })
                    .await;
                return;
            }
        };
        let opened = first_success(
            &candidates,
            g.max_attempts,
            req.hedge_after,
            &g.stats,
            |u| open(&g, u, &req),
        )
        .await;
        let mut opened = match opened {
            Ok(o) => o,
            Err(failure) => {
                let _ = tx
                    .send(if started {
                        Out::Broken("no provider could resume the answer".into())
                    } else {
                        Out::Refused(failure_response(failure))
                    })
                    .await;
                return;
            }
        };
        let mut skip = sent.clone();
        // This provider's whole answer and token counts, for its receipt.
        let mut upstream_text = String::new();
        let mut upstream_usage: Option<Value> = None;
        let broke_off = loop {
            let chunk = match opened.next_chunk().await {
                Ok(Some(c)) => c,
                Ok(None) => {
                    let _ = tx.send(Out::Done).await;
                    // Read the body to its end, so that the connection goes back to the pool.
                    let _ =
                        tokio::time::timeout(Duration::from_millis(200), opened.reader.next_data())
                            .await;
                    return;
                }
                Err(why) => break why,
            };
            if chunk.get("error").is_some() {
                // The provider is alive and says why this answer failed: tell the client,
                // without taking the provider out or asking another.
                let why = format!("the provider reported an error: {}", chunk["error"]);
                let _ = tx.send(Out::Broken(why)).await;
                return;
            }
            if let Some(receipt) = chunk.get("gpuchain_receipt") {
                let answer = chunk.get("gpuchain_answer");
                let answered = Answered {
                    text: &upstream_text,
                    tokens: answer.and_then(|a| a.get("tokens")),
                    seed: answer.and_then(|a| a.get("seed")),
                    usage: upstream_usage.as_ref(),
                };
                keep_receipt(&g, &opened.upstream, &req, receipt, &answered);
                continue;
            }
            let piece = Piece::of(&chunk, req.shape);
            if let Some(usage) = &piece.usage {
                upstream_usage = Some(usage.clone());
            }
            if let Some(text) = piece.text {
                upstream_text.push_str(&text);
                let Some(new) = past_what_was_sent(&mut skip, &text) else {
                    let _ = tx
                        .send(Out::Broken(
                            "the answer broke off and another provider's differs".into(),
                        ))
                        .await;
                    return;
                };
                if !new.is_empty() {
                    sent.push_str(&new);
                    started = true;
                    if tx.send(Out::Text(new)).await.is_err() {
                        return; // the client went away
                    }
                }
            }
            if let Some(finish) = piece.finish {
                if !skip.is_empty() {
                    let _ = tx
                        .send(Out::Broken(
                            "the answer broke off and another provider's is shorter".into(),
                        ))
                        .await;
                    return;
                }
                if !finished {
                    finished = true;
                    started = true;
                    if tx.send(Out::Finish(finish)).await.is_err() {
                        return;
                    }
                }
            }
            if let Some(usage) = piece.usage {
                if tx.send(Out::Usage(usage)).await.is_err() {
                    return;
                }
            }
        };
        if finished {
            // Everything but the token counts arrived; the answer stands.
            let _ = tx.send(Out::Done).await;
            return;
        }
        opened.upstream.failed(&broke_off);
        resumes += 1;
        if resumes > g.max_attempts {
            let _ = tx
                .send(Out::Broken(format!("the answer broke off: {broke_off}")))
                .await;
            return;
        }
        crate::stats::Stats::add(&g.stats.resumed, 1);
        tracing::warn!(upstream = %opened.upstream.spec.url, why = %broke_off, "resuming an answer elsewhere");
    }
}

/// One upstream's whole answer to a request nobody is waiting on (a ringer), read to its
/// end; its receipt is kept only when [`WholeAnswer::keep_receipt`] is called.
#[derive(Default)]
pub(crate) struct WholeAnswer {
    /// The answer's text.
    pub(crate) text: String,
    receipt: Option<Value>,
    answer: Option<Value>,
    usage: Option<Value>,
}

impl WholeAnswer {
    /// Keeps its receipt as any answer's (checked against what arrived).
    pub(crate) fn keep_receipt(&self, g: &Gateway, u: &Upstream, req: &Generation) {
        if let Some(receipt) = &self.receipt {
            let answered = Answered {
                text: &self.text,
                tokens: self.answer.as_ref().and_then(|a| a.get("tokens")),
                seed: self.answer.as_ref().and_then(|a| a.get("seed")),
                usage: self.usage.as_ref(),
            };
            keep_receipt(g, u, req, receipt, &answered);
        }
    }
}

/// Sends `req` to `u` alone and reads its whole answer.
pub(crate) async fn whole_answer(
    g: &Gateway,
    u: Arc<Upstream>,
    req: &Generation,
) -> Result<WholeAnswer, String> {
    let mut opened = open(g, u, req).await.map_err(|r| match r {
        Refusal::Client(a) | Refusal::Elsewhere(_, Some(a)) => {
            format!("answered {}", a.status)
        }
        Refusal::Elsewhere(why, None) => why,
    })?;
    let mut out = WholeAnswer::default();
    loop {
        let Some(chunk) = opened.next_chunk().await? else {
            return Ok(out);
        };
        if let Some(error) = chunk.get("error") {
            return Err(format!("the provider reported an error: {error}"));
        }
        if let Some(receipt) = chunk.get("gpuchain_receipt") {
            out.receipt = Some(receipt.clone());
            out.answer = chunk.get("gpuchain_answer").cloned();
            continue;
        }
        let piece = Piece::of(&chunk, req.shape);
        if let Some(text) = piece.text {
            out.text.push_str(&text);
        }
        if let Some(usage) = piece.usage {
            out.usage = Some(usage);
        }
    }
}

/// What a provider's stream said about its answer, for its receipt.
struct Answered<'a> {
    text: &'a str,
    tokens: Option<&'a Value>,
    seed: Option<&'a Value>,
    usage: Option<&'a Value>,
}

/// Prompt tokens a provider may count beyond one a byte of the request body: the chat
/// template's own text (a default system message, role markers) and a start token. The
/// tokenizers the market runs (byte-level BPE, SentencePiece with byte fallback) never give
/// more than one token a byte of text, and a JSON body is at least as long as its text.
const TEMPLATE_TOKENS_MAX: u64 = 256;

/// The tokens an answer is charged, from its usage: the prompt's and the completion's. The
/// completion must be the token ids that arrived, and the prompt at most what the request
/// could hold: the gateway runs no tokenizer, and an audit draws one receipt of a batch
/// whatever its units, so a count inflated on one receipt would be caught only when that
/// very receipt is drawn.
fn charged_tokens(usage: &Value, ids: usize, request_bytes: usize) -> Result<u64, String> {
    let count = |k: &str| usage.get(k).and_then(Value::as_u64);
    let (Some(prompt), Some(completion)) = (count("prompt_tokens"), count("completion_tokens"))
    else {
        return Err("the answer's token counts are malformed".into());
    };
    if completion != ids as u64 {
        return Err("the token counts disagree with the token ids".into());
    }
    let most = (request_bytes as u64).saturating_add(TEMPLATE_TOKENS_MAX);
    if prompt > most {
        return Err(format!(
            "{prompt} prompt tokens for a request of {request_bytes} bytes (at most {most})"
        ));
    }
    prompt
        .checked_add(completion)
        .ok_or_else(|| "the token counts overflow".into())
}

/// Keeps the receipt a provider sent for its answer on a lease, if it matches what arrived:
/// the request sent, the text streamed with the token ids and seed it names, the token
/// counts. A receipt that does not match is logged and never acknowledged.
fn keep_receipt(g: &Gateway, u: &Upstream, req: &Generation, receipt: &Value, a: &Answered<'_>) {
    let (Some(lease), Some(leases)) = (u.spec.lease, &g.pool.leases) else {
        return;
    };
    let kept = (|| -> Result<(), String> {
        let receipt: gpuchain_serving::receipt::Receipt =
            serde_json::from_value(receipt.clone()).map_err(|e| format!("not a receipt: {e}"))?;
        let tokens: Vec<u32> = a
            .tokens
            .and_then(|t| serde_json::from_value(t.clone()).ok())
            .ok_or("the answer's token ids are missing")?;
        let seed: Option<u64> = a.seed.and_then(|s| serde_json::from_value(s.clone()).ok());
        let usage = a.usage.ok_or("the answer's token counts are missing")?;
        let units = charged_tokens(usage, tokens.len(), req.body.len())?;
        let record = gpuchain_serving::receipt::AnswerRecord {
            text: a.text.to_string(),
            tokens,
            seed,
        };
        leases.keep(lease, receipt, &req.body, &record.bytes(), units)
    })();
    if let Err(why) = kept {
        tracing::warn!(upstream = %u.spec.url, lease, %why, "receipt refused: that answer is not acknowledged");
    }
}

/// Writes the [`Out`]s of one answer as OpenAI's streamed chunks.
pub(crate) struct Chunker {
    pub(crate) id: String,
    pub(crate) created: u64,
    pub(crate) model: String,
    pub(crate) shape: Shape,
    pub(crate) include_usage: bool,
    pub(crate) first: bool,
}

impl Chunker {
    fn chunk(&self, choices: Value) -> Value {
        let object = match self.shape {
            Shape::Chat => "chat.completion.chunk",
            Shape::Text => "text_completion",
        };
        json!({"id": self.id, "object": object, "created": self.created, "model": self.model,
               "choices": choices})
    }

    fn choice(&mut self, text: Option<&str>, finish: Option<&str>) -> Value {
        let first = std::mem::replace(&mut self.first, false);
        match self.shape {
            Shape::Chat => {
                let delta = match text {
                    Some(t) if first => json!({"role": "assistant", "content": t}),
                    Some(t) => json!({"content": t}),
                    // An empty answer still says whose it is.
                    None if first => json!({"role": "assistant", "content": ""}),
                    None => json!({}),
                };
                json!({"index": 0, "delta": delta, "finish_reason": finish})
            }
            Shape::Text => json!({"index": 0, "text": text.unwrap_or(""), "logprobs": null,
                                  "finish_reason": finish}),
        }
    }

    /// The event data an [`Out`] becomes (none for usage the client did not ask for).
    pub(crate) fn data(&mut self, out: Out) -> Option<String> {
        Some(match out {
            Out::Text(t) => {
                let choice = self.choice(Some(&t), None);
                self.chunk(json!([choice])).to_string()
            }
            Out::Finish(f) => {
                let choice = self.choice(None, Some(&f));
                self.chunk(json!([choice])).to_string()
            }
            Out::Usage(u) if self.include_usage => {
                let mut c = self.chunk(json!([]));
                c["usage"] = u;
                c.to_string()
            }
            Out::Usage(_) | Out::Refused(_) => return None,
            Out::Broken(why) => {
                json!({"error": {"message": why, "type": "server_error", "code": null}}).to_string()
            }
            Out::Done => "[DONE]".to_string(),
        })
    }

    /// The whole answer of a request that was not streamed.
    pub(crate) fn whole(&self, text: &str, finish: &str, usage: Option<Value>) -> Value {
        let (object, choice) = match self.shape {
            Shape::Chat => (
                "chat.completion",
                json!({"index": 0, "message": {"role": "assistant", "content": text},
                       "finish_reason": finish}),
            ),
            Shape::Text => (
                "text_completion",
                json!({"index": 0, "text": text, "logprobs": null, "finish_reason": finish}),
            ),
        };
        let mut body = json!({"id": self.id, "object": object, "created": self.created,
                              "model": self.model, "choices": [choice]});
        if let Some(u) = usage {
            body["usage"] = u;
        }
        body
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_charged_no_more_prompt_tokens_than_its_request_could_hold() {
        let usage = |prompt: u64| json!({"prompt_tokens": prompt, "completion_tokens": 2});
        let body = br#"{"model":"smollm2","messages":[{"role":"user","content":"Hi"}]}"#.len();
        // SmolLM2's template, its default system message included, makes about 30 tokens of
        // this 63-byte request.
        assert_eq!(charged_tokens(&usage(30), 2, body), Ok(32));
        let most = body as u64 + TEMPLATE_TOKENS_MAX;
        assert_eq!(charged_tokens(&usage(most), 2, body), Ok(most + 2));
        assert!(charged_tokens(&usage(most + 1), 2, body)
            .unwrap_err()
            .contains("prompt tokens"));
        assert!(charged_tokens(&usage(u64::MAX), 2, body).is_err());
        assert!(charged_tokens(&usage(30), 3, body)
            .unwrap_err()
            .contains("token ids"));
        assert!(charged_tokens(&json!({"prompt_tokens": 30}), 2, body).is_err());
    }

    #[test]
    fn a_resumed_answer_passes_on_only_what_the_client_has_not_seen() {
        let mut skip = "The capital".to_string();
        assert_eq!(past_what_was_sent(&mut skip, "The"), Some(String::new()));
        assert_eq!(past_what_was_sent(&mut skip, " cap"), Some(String::new()));
        assert_eq!(
            past_what_was_sent(&mut skip, "ital of"),
            Some(" of".to_string())
        );
        assert!(skip.is_empty());
        assert_eq!(
            past_what_was_sent(&mut skip, " France"),
            Some(" France".to_string())
        );
        let mut skip = "The capital".to_string();
        assert_eq!(past_what_was_sent(&mut skip, "A city"), None, "it differs");
    }

    #[test]
    fn requests_go_upstream_streamed_with_usage_and_seeded_when_sampled() {
        let h = HeaderMap::new();
        let d = Duration::from_millis(1500);
        let g = Generation::parse(
            br#"{"model":"m","messages":[],"temperature":0.7}"#,
            Shape::Chat,
            &h,
            d,
        )
        .unwrap();
        let sent: Value = serde_json::from_slice(&g.body).unwrap();
        assert_eq!(sent["stream"], true);
        assert_eq!(sent["stream_options"]["include_usage"], true);
        assert!(sent["seed"].as_u64().unwrap() < 1 << 53);
        assert!(!g.stream && !g.include_usage);

        let g = Generation::parse(
            br#"{"model":"m","prompt":"x","temperature":0,"stream":true}"#,
            Shape::Text,
            &h,
            d,
        )
        .unwrap();
        let sent: Value = serde_json::from_slice(&g.body).unwrap();
        assert!(sent.get("seed").is_none(), "greedy needs no seed");
        assert!(g.stream);

        for bad in [&b"{"[..], b"[1]", br#"{"messages":[]}"#] {
            assert!(Generation::parse(bad, Shape::Chat, &h, d).is_err());
        }
    }

    #[test]
    fn chunks_carry_the_gateways_id_and_usage_only_when_asked() {
        let mut c = Chunker {
            id: "chatcmpl-gw".into(),
            created: 1,
            model: "m".into(),
            shape: Shape::Chat,
            include_usage: false,
            first: true,
        };
        let first: Value = serde_json::from_str(&c.data(Out::Text("Hi".into())).unwrap()).unwrap();
        assert_eq!(first["choices"][0]["delta"]["role"], "assistant");
        assert_eq!(first["id"], "chatcmpl-gw");
        let next: Value = serde_json::from_str(&c.data(Out::Text("!".into())).unwrap()).unwrap();
        assert!(next["choices"][0]["delta"].get("role").is_none());
        assert_eq!(c.data(Out::Usage(json!({"total_tokens": 3}))), None);
        assert_eq!(c.data(Out::Done).as_deref(), Some("[DONE]"));
        c.include_usage = true;
        let usage: Value =
            serde_json::from_str(&c.data(Out::Usage(json!({"total_tokens": 3}))).unwrap()).unwrap();
        assert_eq!(usage["usage"]["total_tokens"], 3);
        assert_eq!(usage["choices"], json!([]));
    }
}
