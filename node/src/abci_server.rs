//! The ABCI socket server. CometBFT opens four connections (consensus, mempool, query,
//! snapshot), each served on its own thread with a clone of the app. CometBFT pipelines
//! requests (many CheckTx before it waits), so a connection answers every request already
//! in its read buffer and writes the answers together before it reads again: one write per
//! batch instead of one per transaction, and no copy of the buffer per message. The CheckTx
//! requests that follow one another in a read are checked together, their signatures in one
//! batch. Nagle's algorithm is off: an answer must not wait for the acknowledgement of the
//! one before.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};

use anyhow::{Context, Result};
use prost::Message;
use tendermint_abci::Application;
use tendermint_proto::v0_38::abci::{
    request, response, Request, RequestCheckTx, Response, ResponseCheckTx,
};

/// Bytes read at a time; a block's FinalizeBlock may span many reads.
const READ_CHUNK: usize = 1 << 20;

/// CheckTx requests answered together at most: past a few hundred a signature batch gets
/// little cheaper per signature, and the first answer waits for the last check.
const MAX_CHECK_BATCH: usize = 256;

/// An app that can answer consecutive CheckTx requests together.
pub(crate) trait BatchedChecks: Application {
    /// The answers to `requests`, in order; by default one `check_tx` each.
    fn check_tx_batch(&self, requests: Vec<RequestCheckTx>) -> Vec<ResponseCheckTx> {
        requests.into_iter().map(|r| self.check_tx(r)).collect()
    }
}

/// Serves `app` on `listener` until the listener fails.
pub(crate) fn serve<A: BatchedChecks>(listener: TcpListener, app: A) -> Result<()> {
    loop {
        let (stream, peer) = listener.accept().context("accepting an ABCI connection")?;
        let app = app.clone();
        std::thread::Builder::new()
            .name(format!("abci-{peer}"))
            .spawn(move || match serve_connection(stream, &app) {
                Ok(()) => tracing::info!(%peer, "ABCI connection closed"),
                Err(e) => {
                    tracing::error!(%peer, error = %format!("{e:#}"), "ABCI connection failed")
                }
            })
            .context("starting an ABCI connection thread")?;
    }
}

/// Answers one connection's requests in order until CometBFT closes it.
fn serve_connection<A: BatchedChecks>(mut stream: TcpStream, app: &A) -> Result<()> {
    stream.set_nodelay(true)?;
    let mut chunk = vec![0u8; READ_CHUNK];
    let mut input: Vec<u8> = Vec::new();
    let mut output: Vec<u8> = Vec::new();
    loop {
        let consumed = answer_buffered(app, &input, &mut output)?;
        input.drain(..consumed);
        if !output.is_empty() {
            stream.write_all(&output)?;
            output.clear();
        }
        let read = stream.read(&mut chunk)?;
        if read == 0 {
            return Ok(());
        }
        input.extend_from_slice(&chunk[..read]);
    }
}

/// Answers every whole length-prefixed request at the start of `input`, in order, appending
/// the length-prefixed answers to `output`; returns the bytes of `input` used. Consecutive
/// CheckTx requests are answered together, and so are the Flush requests between them
/// (CometBFT's socket client sends one after each CheckTx): a Flush is answered after every
/// check sent before it, as it must be.
pub(crate) fn answer_buffered<A: BatchedChecks>(
    app: &A,
    input: &[u8],
    output: &mut Vec<u8>,
) -> Result<usize> {
    let mut consumed = 0;
    let mut run = CheckRun::default();
    while let Some((request, used)) = next_request(input.get(consumed..).unwrap_or_default())? {
        consumed += used;
        match request.value {
            Some(request::Value::CheckTx(check)) => {
                run.checks.push(check);
                run.order.push(Pending::Check);
                if run.checks.len() >= MAX_CHECK_BATCH {
                    run.answer(app, output)?;
                }
            }
            Some(request::Value::Flush(_)) if !run.checks.is_empty() => {
                run.order.push(Pending::Flush);
            }
            value => {
                run.answer(app, output)?;
                dispatch(app, Request { value }).encode_length_delimited(output)?;
            }
        }
    }
    run.answer(app, output)?;
    Ok(consumed)
}

#[derive(Clone, Copy)]
enum Pending {
    Check,
    Flush,
}

/// CheckTx requests waiting to be answered together, and the Flush requests among them.
#[derive(Default)]
struct CheckRun {
    checks: Vec<RequestCheckTx>,
    order: Vec<Pending>,
}

impl CheckRun {
    fn answer<A: BatchedChecks>(&mut self, app: &A, output: &mut Vec<u8>) -> Result<()> {
        if self.order.is_empty() {
            return Ok(());
        }
        let count = self.checks.len();
        let mut answers = app
            .check_tx_batch(std::mem::take(&mut self.checks))
            .into_iter();
        anyhow::ensure!(
            answers.len() == count,
            "{count} CheckTx requests got {} answers",
            answers.len()
        );
        for pending in std::mem::take(&mut self.order) {
            let value = match pending {
                Pending::Check => match answers.next() {
                    Some(answer) => response::Value::CheckTx(answer),
                    None => anyhow::bail!("a CheckTx request without an answer"),
                },
                Pending::Flush => response::Value::Flush(app.flush()),
            };
            Response { value: Some(value) }.encode_length_delimited(output)?;
        }
        Ok(())
    }
}

/// The first whole request in `buf` and the bytes it took, or `None` when more must be read.
fn next_request(buf: &[u8]) -> Result<Option<(Request, usize)>> {
    let mut rest = buf;
    let Ok(len) = prost::encoding::decode_varint(&mut rest) else {
        // A length prefix is at most 10 bytes: fewer may be a prefix still arriving.
        anyhow::ensure!(buf.len() < 10, "a request with a malformed length prefix");
        return Ok(None);
    };
    let header = buf.len() - rest.len();
    let Ok(len) = usize::try_from(len) else {
        anyhow::bail!("a request of {len} bytes");
    };
    if rest.len() < len {
        return Ok(None);
    }
    let request = Request::decode(&rest[..len]).context("decoding a request")?;
    Ok(Some((request, header + len)))
}

/// Calls the app method a request names.
pub(crate) fn dispatch<A: Application>(app: &A, request: Request) -> Response {
    use request::Value as Q;
    use response::Value as R;
    let value = match request.value {
        Some(Q::Echo(r)) => R::Echo(app.echo(r)),
        Some(Q::Flush(_)) => R::Flush(app.flush()),
        Some(Q::Info(r)) => R::Info(app.info(r)),
        Some(Q::InitChain(r)) => R::InitChain(app.init_chain(r)),
        Some(Q::Query(r)) => R::Query(app.query(r)),
        Some(Q::CheckTx(r)) => R::CheckTx(app.check_tx(r)),
        Some(Q::Commit(_)) => R::Commit(app.commit()),
        Some(Q::ListSnapshots(_)) => R::ListSnapshots(app.list_snapshots()),
        Some(Q::OfferSnapshot(r)) => R::OfferSnapshot(app.offer_snapshot(r)),
        Some(Q::LoadSnapshotChunk(r)) => R::LoadSnapshotChunk(app.load_snapshot_chunk(r)),
        Some(Q::ApplySnapshotChunk(r)) => R::ApplySnapshotChunk(app.apply_snapshot_chunk(r)),
        Some(Q::PrepareProposal(r)) => R::PrepareProposal(app.prepare_proposal(r)),
        Some(Q::ProcessProposal(r)) => R::ProcessProposal(app.process_proposal(r)),
        Some(Q::ExtendVote(r)) => R::ExtendVote(app.extend_vote(r)),
        Some(Q::VerifyVoteExtension(r)) => R::VerifyVoteExtension(app.verify_vote_extension(r)),
        Some(Q::FinalizeBlock(r)) => R::FinalizeBlock(app.finalize_block(r)),
        None => R::Exception(tendermint_proto::v0_38::abci::ResponseException {
            error: "a request without a value".into(),
        }),
    };
    Response { value: Some(value) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tendermint_proto::v0_38::abci::RequestEcho;

    #[derive(Clone)]
    struct Echoing;

    impl BatchedChecks for Echoing {}

    impl Application for Echoing {
        fn check_tx(&self, req: RequestCheckTx) -> ResponseCheckTx {
            ResponseCheckTx {
                code: u32::from(req.tx.first().copied().unwrap_or(0)),
                ..Default::default()
            }
        }
    }

    fn framed(value: request::Value) -> Vec<u8> {
        Request { value: Some(value) }.encode_length_delimited_to_vec()
    }

    fn read_responses(stream: &mut TcpStream, n: usize) -> Vec<Response> {
        let mut buf = Vec::new();
        let mut out = Vec::new();
        let mut chunk = [0u8; 4096];
        while out.len() < n {
            let read = stream.read(&mut chunk).unwrap();
            assert!(read > 0, "the server closed the connection early");
            buf.extend_from_slice(&chunk[..read]);
            let mut slice = &buf[..];
            while let Ok(r) = Response::decode_length_delimited(&mut slice) {
                out.push(r);
            }
            let used = buf.len() - slice.len();
            buf.drain(..used);
        }
        out
    }

    #[test]
    fn pipelined_requests_split_anywhere_get_their_answers_in_order() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || serve(listener, Echoing));
        let mut client = TcpStream::connect(addr).unwrap();
        let mut bytes = Vec::new();
        for i in 0..200u8 {
            bytes.extend(framed(request::Value::CheckTx(RequestCheckTx {
                tx: vec![i; 150].into(),
                r#type: 0,
            })));
        }
        bytes.extend(framed(request::Value::Echo(RequestEcho {
            message: "last".into(),
        })));
        // Sent in uneven pieces that cut length prefixes and messages apart.
        for piece in bytes.chunks(997) {
            client.write_all(piece).unwrap();
        }
        let responses = read_responses(&mut client, 201);
        for (i, r) in responses.iter().take(200).enumerate() {
            match &r.value {
                Some(response::Value::CheckTx(c)) => assert_eq!(c.code, i as u32),
                other => panic!("response {i}: {other:?}"),
            }
        }
        match &responses[200].value {
            Some(response::Value::Echo(e)) => assert_eq!(e.message, "last"),
            other => panic!("{other:?}"),
        }
    }

    /// Answers as `Echoing` does and records how many checks each call got.
    #[derive(Clone, Default)]
    struct Recording(std::sync::Arc<std::sync::Mutex<Vec<usize>>>);

    impl Application for Recording {}

    impl BatchedChecks for Recording {
        fn check_tx_batch(&self, requests: Vec<RequestCheckTx>) -> Vec<ResponseCheckTx> {
            self.0.lock().unwrap().push(requests.len());
            requests.into_iter().map(|r| Echoing.check_tx(r)).collect()
        }
    }

    #[test]
    fn checks_and_the_flushes_between_them_are_answered_together_in_order() {
        let mut input = Vec::new();
        for i in 0..10u8 {
            input.extend(framed(request::Value::CheckTx(RequestCheckTx {
                tx: vec![i].into(),
                r#type: 0,
            })));
            input.extend(framed(request::Value::Flush(Default::default())));
        }
        input.extend(framed(request::Value::Echo(RequestEcho {
            message: "between".into(),
        })));
        input.extend(framed(request::Value::CheckTx(RequestCheckTx {
            tx: vec![10].into(),
            r#type: 0,
        })));
        let app = Recording::default();
        let mut output = Vec::new();
        assert_eq!(
            answer_buffered(&app, &input, &mut output).unwrap(),
            input.len()
        );
        let mut rest = &output[..];
        let mut answers = Vec::new();
        while !rest.is_empty() {
            answers.push(Response::decode_length_delimited(&mut rest).unwrap().value);
        }
        assert_eq!(answers.len(), 22);
        for (i, pair) in answers[..20].chunks(2).enumerate() {
            assert!(
                matches!(&pair[0], Some(response::Value::CheckTx(c)) if c.code == i as u32),
                "{pair:?}"
            );
            assert!(
                matches!(&pair[1], Some(response::Value::Flush(_))),
                "{pair:?}"
            );
        }
        assert!(matches!(&answers[20], Some(response::Value::Echo(e)) if e.message == "between"));
        assert!(matches!(&answers[21], Some(response::Value::CheckTx(c)) if c.code == 10));
        assert_eq!(
            *app.0.lock().unwrap(),
            vec![10, 1],
            "one call for the first ten"
        );
    }

    #[test]
    fn a_partial_request_waits_and_a_malformed_prefix_is_refused() {
        let whole = framed(request::Value::Echo(RequestEcho {
            message: "x".repeat(300),
        }));
        assert!(next_request(&whole[..1]).unwrap().is_none());
        assert!(next_request(&whole[..whole.len() - 1]).unwrap().is_none());
        let (req, used) = next_request(&whole).unwrap().unwrap();
        assert_eq!(used, whole.len());
        assert!(matches!(req.value, Some(request::Value::Echo(_))));
        assert!(next_request(&[0xff; 11]).is_err());
    }
}
