//! The client's jobs: networked training through its own coordinator, then inference with
//! the trained weights, then (optionally) sentence embeddings with all-MiniLM-L6-v2 and a
//! chat question to SmolLM2-135M-Instruct.

use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use gpuchain_auction::{AuctionMsg, MsgConfirmReceipt, MsgPostOrder};
use gpuchain_compute::blob::{fetch_output, BlobStore, FetchPolicy, OutputLimits};
use gpuchain_compute::digits::{Digits, DIGITS_CSV_GZ};
use gpuchain_compute::embed::SentenceTokenizer;
use gpuchain_compute::gguf::{self, Gguf};
use gpuchain_compute::params::Params;
use gpuchain_compute::tensor_io::{decode, encode_f32, Tensor};
use gpuchain_compute::train::classifier::{fine_tuned, sentiment_spec};
use gpuchain_compute::train::remote::{serve_coordinator, CoordinatorService, RoundProgress};
use gpuchain_compute::train::{Example, SentenceDataset, TrainTask};
use gpuchain_jobspec::{
    GenerationSpec, InferenceSpec, JobSpec, ModelArch, Sampling, TrainingSpec, ValueBits,
    WeightsInit,
};
use gpuchain_tx::Msg;

use super::report::JobRow;
use super::watch::Watcher;
use super::{DemoOptions, Market, GPU};
use crate::{blob, digits_job, open_order};

/// What training produced.
#[derive(Clone, Debug)]
pub(crate) struct Training {
    /// The order's row in the summary.
    pub(crate) row: JobRow,
    /// Each round's loss, accuracy and bytes.
    pub(crate) progress: Vec<RoundProgress>,
    /// Final weights (safetensors).
    pub(crate) final_weights: Vec<u8>,
    /// The transcript root the providers committed.
    pub(crate) transcript_root: String,
}

/// An order open to every provider, with the demo's 10-block bid window.
fn order(job: JobSpec, replicas: u32, max_price: u128, exec_deadline: u64) -> MsgPostOrder {
    MsgPostOrder {
        bid_window_blocks: 10,
        exec_deadline_blocks: exec_deadline,
        ..open_order(job, replicas, max_price)
    }
}

pub(crate) async fn post(m: &Market, order: MsgPostOrder) -> Result<u64> {
    post_as(&m.chain, &m.key("client")?, order).await
}

/// Posts `order` signed by `key`; its id.
pub(crate) async fn post_as(
    chain: &gpuchain_client::ChainClient,
    key: &ed25519_dalek::SigningKey,
    order: MsgPostOrder,
) -> Result<u64> {
    let out = chain
        .submit(
            key,
            vec![Msg::Auction(AuctionMsg::PostOrder(order))],
            "demo",
        )
        .await?
        .ok()?;
    out.event::<gpuchain_auction::OrderPostedEvent>()
        .map(|e| e.order_id)
        .context("no order id")
}

/// Follows the chain until every order in `ids` settled, printing transitions.
async fn settle(
    w: &mut Watcher,
    ids: &[u64],
    timeout: Duration,
    say: &(dyn Fn(&str) + Sync),
) -> Result<()> {
    let deadline = Instant::now() + timeout;
    loop {
        w.tick(say).await?;
        if ids.iter().all(|id| w.is_settled(*id)) {
            return Ok(());
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "orders {ids:?} did not settle in {timeout:?}"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// Follows training order `id` until it settles, printing each round its coordinator
/// closes.
async fn follow_rounds(
    w: &mut Watcher,
    id: u64,
    service: &CoordinatorService,
    timeout: Duration,
    say: &(dyn Fn(&str) + Sync),
) -> Result<()> {
    let deadline = Instant::now() + timeout;
    let mut printed = 0;
    while !w.is_settled(id) {
        let progress = service.transcript().progress;
        for p in progress.iter().skip(printed) {
            say(&format!("  {p}"));
        }
        printed = progress.len();
        w.tick(say).await?;
        anyhow::ensure!(
            Instant::now() < deadline,
            "training order {id} did not settle"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    Ok(())
}

/// Trains the digits MLP over the three providers with 1% top-k updates.
pub(crate) async fn train(
    m: &Market,
    opts: &DemoOptions,
    w: &mut Watcher,
    say: &(dyn Fn(&str) + Sync),
) -> Result<Training> {
    let dataset = blob(
        DIGITS_CSV_GZ,
        m.host.put("digits.csv.gz", DIGITS_CSV_GZ.to_vec()),
    );
    let addr: SocketAddr = format!("127.0.0.1:{}", m.coordinator_port).parse()?;
    let spec = TrainingSpec {
        arch: ModelArch::DigitsMlp,
        init: WeightsInit::Seed(7),
        dataset,
        workers: 3,
        rounds: opts.training_rounds,
        local_steps: 4,
        batch_size: 16,
        lr_ppm: 100_000,
        momentum_ppm: 900_000,
        topk_ppm: 10_000,
        value_bits: ValueBits::B16,
        error_feedback: true,
        momentum_correction: true,
        warmup_rounds: 0,
        seed: 11,
        tolerance: None,
        coordinator_url: Some(format!("http://{addr}")),
    };
    let store = BlobStore::open(m.dir.join("client").join("coordinator"))?;
    let data = Digits::parse_gz(DIGITS_CSV_GZ)?;
    let init = gpuchain_compute::models::mlp::init_params(7);
    let service = CoordinatorService::new(&spec, TrainTask::digits(&data, init), store)?;
    let (_, server) = serve_coordinator(service.clone(), addr).await?;
    say(&format!(
        "client: training the digits MLP on 3 providers, {} rounds, top-1% updates with error \
         feedback, 16-bit values; coordinator on http://{addr}",
        spec.rounds
    ));
    let id = post(m, order(JobSpec::Training(spec), 3, GPU, 400)).await?;
    w.track(id, "training: digits MLP, 3 workers");
    follow_rounds(w, id, &service, Duration::from_secs(600), say).await?;
    let coordinator = service.coordinator();
    server.abort();
    let final_weights = coordinator.weights().to_safetensors()?;
    Ok(Training {
        row: w.row(id)?,
        progress: service.transcript().progress,
        final_weights,
        transcript_root: hex::encode(coordinator.transcript_root()),
    })
}

/// What the sentiment fine-tuning order showed.
#[derive(Clone, Debug, serde::Serialize)]
pub struct FineTuning {
    /// The order's row in the summary.
    pub row: JobRow,
    /// Test accuracy of the pretrained encoder with the untrained (zero) head.
    pub start_accuracy: f64,
    /// Each round's loss, test accuracy and bytes.
    pub progress: Vec<RoundProgress>,
    /// The coordinator's transcript root.
    pub transcript_root: String,
    /// The classification order run with the fine-tuned model.
    pub classify_row: JobRow,
    /// Each of its sentences with the class the provider's scores pick.
    pub classified: Vec<(String, String)>,
    /// Largest difference between the provider's scores and the client's own.
    pub classify_gap: f32,
}

/// Review-like sentences the fine-tuned model is asked to classify through the market.
const REVIEWS: [&str; 4] = [
    "A moving, beautifully acted and often very funny film.",
    "Dull, lifeless and far too long.",
    "One of the best films of the year.",
    "A tedious mess with nothing to say.",
];

/// Fine-tunes all-MiniLM-L6-v2 as a sentiment classifier of the Rotten Tomatoes snippets
/// over the three providers: the client tokenises the reviews into the job's dataset,
/// serves the pretrained weights and the dataset from its blob host and coordinates the
/// rounds; each provider is one worker.
pub(crate) async fn fine_tune(
    m: &Market,
    minilm: &Path,
    reviews: &Path,
    rounds: u32,
    w: &mut Watcher,
    say: &(dyn Fn(&str) + Sync),
) -> Result<FineTuning> {
    let read = |p: &Path| std::fs::read(p).with_context(|| format!("reading {}", p.display()));
    let weights = read(&minilm.join("model.safetensors"))?;
    let tokenizer = SentenceTokenizer::from_bytes(&read(&minilm.join("tokenizer.json"))?)?;
    let csv = String::from_utf8(read(reviews)?)?;
    let data = SentenceDataset::from_reviews_csv(&csv, &tokenizer)?;
    let dataset = data.to_bytes();
    let store = BlobStore::open(m.dir.join("client").join("fine-tune"))?;
    let mut spec = TrainingSpec {
        rounds,
        ..sentiment_spec(
            blob(&weights, m.host.put("minilm.safetensors", weights.clone())),
            blob(&dataset, m.host.put("reviews.json", dataset.clone())),
        )
    };
    say(&format!(
        "client: fine-tuning all-MiniLM-L6-v2 on {} review snippets (sentiment, {} held out) \
         over 3 providers, {rounds} rounds; encoding the test split first",
        data.train.len(),
        data.test.len()
    ));
    let base = Params::from_safetensors(&weights)?;
    let task = {
        let base = base.clone();
        tokio::task::spawn_blocking(move || TrainTask::classifier(&base, data, false)).await??
    };
    let service = {
        let (spec, task) = (spec.clone(), task.clone());
        tokio::task::spawn_blocking(move || CoordinatorService::new(&spec, task, store)).await??
    };
    let (addr, server) = serve_coordinator(service.clone(), "127.0.0.1:0".parse()?).await?;
    spec.coordinator_url = Some(format!("http://{addr}"));
    let start_accuracy = service.transcript().initial_accuracy;
    say(&format!(
        "client: pretrained encoder, untrained head: test accuracy {:.1}%; coordinator on \
         http://{addr}",
        start_accuracy * 100.0
    ));
    let id = post(m, order(JobSpec::Training(spec), 3, 40 * GPU, 600)).await?;
    w.track(id, "fine-tuning: MiniLM sentiment, 3 workers");
    follow_rounds(w, id, &service, Duration::from_secs(1200), say).await?;
    let trained = service.coordinator().weights();
    let transcript_root = hex::encode(service.coordinator().transcript_root());
    server.abort();
    let row = w.row(id)?;

    // The fine-tuned model, used through the market: one classification order.
    let tuned = fine_tuned(&base, &trained).to_safetensors()?;
    let tokenizer_json = read(&minilm.join("tokenizer.json"))?;
    let input = serde_json::to_vec(&REVIEWS)?;
    let job = JobSpec::Inference(InferenceSpec {
        arch: ModelArch::MiniLmClassifier,
        weights: blob(
            &tuned,
            m.host.put("minilm-sentiment.safetensors", tuned.clone()),
        ),
        tokenizer: Some(blob(
            &tokenizer_json,
            m.host.put("tokenizer.json", tokenizer_json.clone()),
        )),
        input: blob(
            &input,
            m.host.put("reviews-to-classify.json", input.clone()),
        ),
        batch_size: 4,
        llama: None,
        generation: None,
        tolerance: None,
    });
    say("client: classifying 4 reviews with the fine-tuned model (1 replica)");
    let classify_id = post(m, order(job, 1, 60 * GPU, 200)).await?;
    w.track(
        classify_id,
        "inference: fine-tuned MiniLM sentiment, 1 replica",
    );
    let bytes = revealed_output(m, w, classify_id, say).await?;
    let Tensor::F32 { data: scores, .. } = decode(&bytes)? else {
        anyhow::bail!("the classification is not f32 scores")
    };
    let examples: Vec<Example> = tokenizer
        .encode_all(&REVIEWS.map(String::from))?
        .into_iter()
        .map(|ids| Example { ids, label: 0 })
        .collect();
    let ours = task.class_scores(&trained, &examples)?;
    anyhow::ensure!(scores.len() == 2 * REVIEWS.len(), "{} scores", scores.len());
    let mut classify_gap = 0.0f32;
    let mut classified = Vec::new();
    for ((text, theirs), ours) in REVIEWS.iter().zip(scores.chunks(2)).zip(&ours) {
        for (a, b) in theirs.iter().zip(ours) {
            classify_gap = classify_gap.max((a - b).abs());
        }
        let class = if theirs[1] > theirs[0] {
            "fresh"
        } else {
            "rotten"
        };
        say(&format!("  {text:?}: {class}"));
        classified.push((text.to_string(), class.to_string()));
    }
    settle(w, &[classify_id], Duration::from_secs(900), say).await?;
    Ok(FineTuning {
        row,
        start_accuracy,
        progress: service.transcript().progress,
        transcript_root,
        classify_row: w.row(classify_id)?,
        classified,
        classify_gap,
    })
}

/// A `[n, 64]` GCT1 f32 tensor of images from the digits test split.
fn digits_input(data: &Digits, n: usize, offset: usize) -> Vec<u8> {
    let (_, test) = data.split();
    let pixels: Vec<f32> = (0..n)
        .flat_map(|row| test.image((row + offset) % test.len()).to_vec())
        .collect();
    encode_f32(&[n, 64], &pixels)
}

/// 2-replica digits inference orders with the trained weights.
pub(crate) async fn digits(
    m: &Market,
    opts: &DemoOptions,
    weights: &[u8],
    w: &mut Watcher,
    say: &(dyn Fn(&str) + Sync),
) -> Result<Vec<JobRow>> {
    let mut ids = Vec::new();
    for i in 0..opts.digits_orders {
        say(&format!(
            "client: classifying 64 digits with the trained weights (order {} of {}, 2 replicas)",
            i + 1,
            opts.digits_orders
        ));
        let id = post(m, digits_order(m, weights, i)?).await?;
        w.track(id, "inference: digits MLP, 2 replicas");
        ids.push(id);
    }
    settle(w, &ids, Duration::from_secs(600), say).await?;
    ids.iter().map(|id| w.row(*id)).collect()
}

/// The `i`-th 2-replica order classifying 64 digits with `weights`, its blobs on the demo's
/// blob host.
pub(crate) fn digits_order(m: &Market, weights: &[u8], i: u32) -> Result<MsgPostOrder> {
    let data = Digits::parse_gz(DIGITS_CSV_GZ)?;
    let weights = blob(weights, m.host.put("trained.safetensors", weights.to_vec()));
    let input = digits_input(&data, 64, 64 * i as usize);
    let input = blob(
        &input,
        m.host.put(&format!("digits-{i}.gct"), input.clone()),
    );
    Ok(order(digits_job(weights, input), 2, GPU, 40))
}

/// One embedding order with all-MiniLM-L6-v2 (1 replica, audited at the chain's rate).
pub(crate) async fn embed(
    m: &Market,
    dir: &Path,
    w: &mut Watcher,
    say: &(dyn Fn(&str) + Sync),
) -> Result<Vec<JobRow>> {
    let read =
        |f: &str| std::fs::read(dir.join(f)).with_context(|| format!("{f} in {}", dir.display()));
    let weights = read("model.safetensors")?;
    let tokenizer = read("tokenizer.json")?;
    let sentences = serde_json::to_vec(&[
        "Idle GPUs can serve inference for anyone.",
        "The chain pays providers only after verification.",
        "A cheating provider loses part of its stake.",
        "Verifiers re-run a sample of the jobs.",
    ])?;
    let job = JobSpec::Inference(InferenceSpec {
        arch: ModelArch::MiniLmEmbedder,
        weights: blob(&weights, m.host.put("minilm.safetensors", weights.clone())),
        tokenizer: Some(blob(
            &tokenizer,
            m.host.put("tokenizer.json", tokenizer.clone()),
        )),
        input: blob(&sentences, m.host.put("sentences.json", sentences.clone())),
        batch_size: 4,
        llama: None,
        generation: None,
        tolerance: None,
    });
    say("client: embedding 4 sentences with all-MiniLM-L6-v2 (1 replica)");
    let id = post(m, order(job, 1, 60 * GPU, 60)).await?;
    w.track(id, "inference: MiniLM embeddings, 1 replica");
    settle(w, &[id], Duration::from_secs(600), say).await?;
    Ok(vec![w.row(id)?])
}

/// One chat order answered by SmolLM2-135M-Instruct from its GGUF file (1 replica, audited
/// at the chain's rate, by teacher forcing): the client posts the question as text (a chat
/// in the job's JSON input, which the provider and the verifiers put in the file's chat
/// template with its own tokenizer), and reads the answer back from the provider's blob
/// server.
pub(crate) async fn chat(
    m: &Market,
    file: &Path,
    w: &mut Watcher,
    say: &(dyn Fn(&str) + Sync),
) -> Result<(JobRow, String)> {
    const QUESTION: &str = "What is the capital of France?";
    let weights = std::fs::read(file).with_context(|| format!("reading {}", file.display()))?;
    let gguf = Gguf::parse(&weights)?;
    let tokenizer = gguf::tokenizer::tokenizer(&gguf)?;
    let input = serde_json::to_vec(&serde_json::json!([
        { "messages": [{ "role": "user", "content": QUESTION }] }
    ]))?;
    let job = JobSpec::Inference(InferenceSpec {
        arch: ModelArch::LlamaGguf,
        weights: blob(&weights, m.host.put("smollm2.gguf", weights.clone())),
        tokenizer: None,
        input: blob(&input, m.host.put("chat.json", input.clone())),
        batch_size: 1,
        llama: None,
        generation: Some(GenerationSpec {
            max_new_tokens: 12,
            sampling: Sampling::Greedy,
            stop_tokens: gguf::eos_token(&gguf).into_iter().collect(),
        }),
        tolerance: None,
    });
    say(&format!(
        "client: asking SmolLM2-135M-Instruct {QUESTION:?} (1 replica)"
    ));
    let id = post(m, order(job, 1, 60 * GPU, 200)).await?;
    w.track(id, "inference: SmolLM2 chat, 1 replica");
    let bytes = revealed_output(m, w, id, say).await?;
    let tokens = match decode(&bytes)? {
        Tensor::U32 { data, .. } => data,
        Tensor::F32 { .. } => anyhow::bail!("the answer is not token ids"),
    };
    let answer = gguf::answer_text(&gguf, &tokenizer, &tokens)?;
    say(&format!("SmolLM2 answered: {answer:?}"));
    settle(w, &[id], Duration::from_secs(900), say).await?;
    Ok((w.row(id)?, answer))
}

/// The first result revealed on order `id`, fetched from its provider's blob server as soon
/// as it is revealed; its receipt is confirmed, so the lease is paid without a verifier's
/// availability check.
async fn revealed_output(
    m: &Market,
    w: &mut Watcher,
    id: u64,
    say: &(dyn Fn(&str) + Sync),
) -> Result<Vec<u8>> {
    let deadline = Instant::now() + Duration::from_secs(900);
    let lease = loop {
        w.tick(say).await?;
        let leases = crate::order_leases(&m.chain, id).await?;
        if let Some(l) = leases.into_iter().find(|l| l.result_hash.is_some()) {
            break l;
        }
        anyhow::ensure!(Instant::now() < deadline, "order {id} was not answered");
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    let hash = lease.result_hash.context("no revealed result")?;
    let provider: Option<gpuchain_staking::Provider> = m
        .chain
        .get(&gpuchain_staking::state_key::provider(&lease.provider))
        .await?;
    let endpoint = provider.context("the provider is gone")?.attrs.endpoint_url;
    let limits = OutputLimits {
        fetch_timeout: Duration::from_secs(30),
        max_output_bytes: 1 << 20,
        policy: FetchPolicy::any_host(),
    };
    let http = limits.policy.http_client()?;
    let bytes = fetch_output(&http, &endpoint, &hash, &limits)
        .await
        .map_err(|e| anyhow::anyhow!("fetching the result of order {id}: {e}"))?;
    let receipt = AuctionMsg::ConfirmReceipt(MsgConfirmReceipt { lease_id: lease.id });
    m.chain
        .submit(&m.key("client")?, vec![Msg::Auction(receipt)], "demo")
        .await?
        .ok()?;
    Ok(bytes)
}
