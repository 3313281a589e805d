//! The whole market in one run, as `scripts/demo.sh` shows it and the end-to-end test
//! asserts it: a localnet of real CometBFT validators, three provider agents with different
//! prices (one of them cheating when asked), a verifier agent and a client that
//!
//! 1. trains the digits MLP over the three providers with top-k sparsified updates through
//!    its own round coordinator (progress per round: loss, accuracy, bytes vs dense),
//! 2. runs 2-replica inference orders with the trained weights (a cheater's result disagrees
//!    with the honest replica, the verifier re-executes both and the cheater is slashed),
//! 3. optionally embeds sentences with the real all-MiniLM-L6-v2 checkpoint, asks
//!    SmolLM2-135M-Instruct a question through the market, and serves both models through
//!    the client's gateway over the three providers' endpoints, one of them killed
//!    mid-answer,
//!
//! and prints every auction, lease, verdict, payout and slash as it happens, then a summary.
//! With `explorer_port` set, `gpuchain-explorer` follows the localnet from its first block, so
//! the same story can be watched in a browser.

mod explorer;
mod gateway;
mod jobs;
mod report;
mod watch;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use gpuchain_client::keys::Keystore;
use gpuchain_client::ChainClient;

pub use explorer::{explorer_path, ExplorerProcess};
pub use gateway::{ServedLease, ServingReport};
pub use jobs::FineTuning;
pub use report::{DemoReport, JobRow, LeaseRow};

use crate::{
    free_port_block, write_provider_config, AgentSpec, BlobHost, ProviderAgent, TestNet,
    VerifierAgent, VerifierSpec,
};

const GPU: u128 = 1_000_000;

/// What to run.
#[derive(Clone, Debug)]
pub struct DemoOptions {
    /// Validators in the localnet.
    pub validators: usize,
    /// Run the third provider with a dishonest flag (wrong model).
    pub with_cheater: bool,
    /// Training rounds.
    pub training_rounds: u32,
    /// 2-replica digits inference orders.
    pub digits_orders: u32,
    /// all-MiniLM-L6-v2 checkpoint directory for an embedding order (none: skipped).
    pub minilm_dir: Option<PathBuf>,
    /// The Rotten Tomatoes snippets (`scripts/fetch-reviews.sh`) for a fine-tuning order:
    /// MiniLM (from `minilm_dir`) fine-tuned as a sentiment classifier over the three
    /// providers (none, or no `minilm_dir`: skipped).
    pub reviews_csv: Option<PathBuf>,
    /// Rounds of the fine-tuning order.
    pub fine_tune_rounds: u32,
    /// SmolLM2-135M-Instruct GGUF file for a chat order (none: skipped).
    pub smollm2_file: Option<PathBuf>,
    /// Serve SmolLM2 and MiniLM through the gateway over the three providers at the end
    /// (needs both models).
    pub serve: bool,
    /// Python with the official `openai` package, run against the gateway when given.
    pub openai_python: Option<PathBuf>,
    /// Keep the localnet directory and logs after the run.
    pub keep_logs: bool,
    /// Start `gpuchain-explorer` on this port (0: a free one) beside the localnet.
    pub explorer_port: Option<u16>,
}

impl Default for DemoOptions {
    fn default() -> Self {
        DemoOptions {
            validators: 4,
            with_cheater: false,
            training_rounds: 30,
            digits_orders: 2,
            minilm_dir: None,
            reviews_csv: None,
            fine_tune_rounds: 6,
            smollm2_file: None,
            serve: false,
            openai_python: None,
            keep_logs: false,
            explorer_port: None,
        }
    }
}

/// The market still running after the scenario, handed to [`run_with`]'s `after`: the
/// explorer's address and what it takes to post one more digits order as the client.
pub struct Live {
    /// `http://127.0.0.1:<port>` of the explorer, when one runs.
    pub explorer: Option<String>,
    /// A client of the first node.
    pub chain: ChainClient,
    client_key: ed25519_dalek::SigningKey,
    digits: gpuchain_auction::MsgPostOrder,
}

impl Live {
    /// Posts one more 2-replica digits order (the trained weights, blobs on the demo's host);
    /// its id. The provider agents bid on it and run it like the scenario's own.
    pub async fn post_digits_order(&self) -> Result<u64> {
        jobs::post_as(&self.chain, &self.client_key, self.digits.clone()).await
    }
}

/// The provider agents: name, price per CPU-second (ugpu).
pub const PROVIDERS: [(&str, u64); 3] = [("p1", 100_000), ("p2", 150_000), ("p3", 120_000)];
/// The providers' declared regions, in [`PROVIDERS`] order.
pub const REGIONS: [&str; 3] = ["eu-west", "us-east", "ap-south"];
/// The cheater when `with_cheater` (the third provider, priced to win).
pub const CHEATER: &str = "p3";
/// The providers' serving bids, in [`PROVIDERS`] order: ugpu per million SmolLM2 tokens and
/// per thousand MiniLM inputs.
pub const SERVING_PRICES: [(u64, u64); 3] = [(400_000, 2_000), (600_000, 3_000), (500_000, 2_500)];

/// Serving on chain leases: the two models, their weights' hashes as orders name them, and
/// each provider's `serve-model` port (in [`PROVIDERS`] order).
pub(crate) struct ServingSetup {
    pub(crate) model: PathBuf,
    pub(crate) embedder: PathBuf,
    pub(crate) model_hash: String,
    pub(crate) embedder_hash: String,
    pub(crate) ports: Vec<u16>,
}

impl ServingSetup {
    fn new(model: &Path, embedder: &Path, first_port: u16) -> Result<ServingSetup> {
        let hash = |path: &Path| -> Result<String> {
            let bytes =
                std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
            Ok(blake3::hash(&bytes).to_hex().to_string())
        };
        Ok(ServingSetup {
            model: model.to_path_buf(),
            embedder: embedder.to_path_buf(),
            model_hash: hash(model)?,
            embedder_hash: hash(&embedder.join("model.safetensors"))?,
            ports: (0..PROVIDERS.len() as u16)
                .map(|i| first_port + i)
                .collect(),
        })
    }

    /// The `[serving]` section of a provider agent: where its endpoint answers and keeps
    /// receipts, and its bids on both models.
    fn provider_section(&self, i: usize, receipts: &Path) -> String {
        let (chat, embed) = SERVING_PRICES[i % SERVING_PRICES.len()];
        format!(
            "[serving]\nreceipts = \"{}\"\nendpoint = \"http://127.0.0.1:{}\"\n\
             [[serving.models]]\nname = \"smollm2\"\nblake3 = \"{}\"\nprice = {chat}\n\
             [[serving.models]]\nname = \"minilm\"\nblake3 = \"{}\"\nprice = {embed}\n",
            receipts.display(),
            self.ports[i],
            self.model_hash,
            self.embedder_hash
        )
    }

    /// The `[serving]` section of the verifier agent: both models, to audit claims.
    fn verifier_section(&self) -> String {
        format!(
            "[serving]\n[[serving.models]]\nname = \"smollm2\"\nblake3 = \"{}\"\npath = \"{}\"\n\
             [[serving.embedders]]\nname = \"minilm\"\nblake3 = \"{}\"\npath = \"{}\"\n",
            self.model_hash,
            self.model.display(),
            self.embedder_hash,
            self.embedder.display()
        )
    }
}

/// Everything the demo started; dropped in reverse order (agents before the chain).
pub(crate) struct Market {
    pub(crate) explorer: Option<ExplorerProcess>,
    pub(crate) providers: Vec<(String, ProviderAgent)>,
    pub(crate) verifier: VerifierAgent,
    pub(crate) host: BlobHost,
    pub(crate) chain: ChainClient,
    pub(crate) node: String,
    pub(crate) coordinator_port: u16,
    pub(crate) serving: Option<ServingSetup>,
    pub(crate) dir: PathBuf,
    pub(crate) net: TestNet,
}

impl Market {
    /// The address of a named account.
    pub(crate) fn address(&self, name: &str) -> Result<gpuchain_types::Address> {
        self.net.net.account(name)
    }

    /// A signing key of the localnet's keystore.
    pub(crate) fn key(&self, name: &str) -> Result<ed25519_dalek::SigningKey> {
        Keystore::open(&self.net.net.keys_dir)?.signing_key(name, None)
    }
}

async fn start_market(opts: &DemoOptions, say: &(dyn Fn(&str) + Sync)) -> Result<Market> {
    let mut accounts = vec![("client", 50_000 * GPU), ("v1", 3_000 * GPU)];
    accounts.extend(PROVIDERS.iter().map(|(n, _)| (*n, 3_000 * GPU)));
    say(&format!(
        "starting a {}-validator localnet (CometBFT + gpuchaind on 127.0.0.1)",
        opts.validators
    ));
    let mut net = TestNet::start_with(opts.validators, &accounts, |spec| {
        let p = &mut spec.genesis.auction.params;
        p.reveal_window_blocks = 6;
        p.challenge_window_blocks = 4;
        p.verdict_window_blocks = 400;
        let v = &mut spec.genesis.verify.params;
        v.verdict_deadline_blocks = 200;
        v.appeal_window_blocks = 3;
        // Every serving claim is audited, so the serving stage shows the audit path, and a
        // verdict stands open to appeal for 5 blocks; a restarted endpoint has 100 blocks to
        // answer a report.
        let s = &mut spec.genesis.serving.params;
        crate::serving_market::audit_every_claim(s, 5);
        s.report_window_blocks = 100;
    })
    .await?;
    if opts.keep_logs {
        net.keep_dir();
    }
    let dir = net.dir().join("agents");
    let node = net.net.nodes[0].rpc_url.clone();
    let chain = net.client(0)?;
    let ports = free_port_block(3 * PROVIDERS.len() as u16 + 3);
    let serving = match (&opts.smollm2_file, &opts.minilm_dir) {
        (Some(model), Some(embedder)) if opts.serve => Some(ServingSetup::new(
            model,
            embedder,
            ports + 2 * PROVIDERS.len() as u16 + 3,
        )?),
        _ => None,
    };
    let explorer = match opts.explorer_port {
        Some(port) => {
            let spare = ports + 2 * PROVIDERS.len() as u16 + 2;
            // A chosen port someone else holds is not worth failing the demo for.
            let port = if port == 0 || std::net::TcpListener::bind(("127.0.0.1", port)).is_err() {
                if port != 0 {
                    say(&format!("port {port} is taken; the explorer uses {spare}"));
                }
                spare
            } else {
                port
            };
            let process = ExplorerProcess::start(&node, port, &dir).await?;
            say(&format!(
                "explorer: {} (providers, orders, leases, verdicts and blocks, live)",
                process.url
            ));
            Some(process)
        }
        None => None,
    };

    say("registering verifier v1 (bond 1,000 GPU) and starting its agent");
    let vconfig = VerifierSpec {
        node: node.clone(),
        keys_home: net.keys_home(),
        key: "v1".into(),
        dir: dir.join("v1"),
        metrics_port: ports + 2 * PROVIDERS.len() as u16,
        backend: "cpu".into(),
        bond: 1_000 * GPU,
        challenge: String::new(),
    }
    .write_config()?;
    if let Some(s) = &serving {
        crate::serving_market::append(&vconfig, &s.verifier_section())?;
    }
    VerifierAgent::register(&vconfig)?;
    let verifier = VerifierAgent::spawn(&vconfig)?;

    let mut providers = Vec::new();
    for (i, (name, price)) in PROVIDERS.iter().enumerate() {
        let cheat = opts.with_cheater && *name == CHEATER;
        say(&format!(
            "registering provider {name} (CPU, {price} ugpu per CPU-second, bond 1,000 GPU){}",
            if cheat {
                " — dishonest: runs a wrong model"
            } else {
                ""
            }
        ));
        let spec = AgentSpec {
            node: node.clone(),
            keys_home: net.keys_home(),
            key: name.to_string(),
            dir: dir.join(name),
            blob_port: ports + 2 * i as u16,
            metrics_port: ports + 2 * i as u16 + 1,
            cpu_price: u128::from(*price),
            max_jobs: 2,
            // The cheater's wrong-model trick alters safetensors weights; it does not serve
            // GGUF models, so the chat order goes to an honest provider.
            archs: if cheat {
                vec![
                    "digits_mlp".into(),
                    "mini_lm_embedder".into(),
                    "mini_lm_classifier".into(),
                ]
            } else {
                vec![
                    "digits_mlp".into(),
                    "mini_lm_embedder".into(),
                    "mini_lm_classifier".into(),
                    "llama_gguf".into(),
                ]
            },
            bond: 1_000 * GPU,
        };
        let config = write_provider_config(&spec, REGIONS[i % REGIONS.len()], "cpu")?;
        if let Some(s) = &serving {
            let receipts = dir.join(name).join("serving-receipts");
            crate::serving_market::append(&config, &s.provider_section(i, &receipts))?;
        }
        ProviderAgent::register(&config)?;
        let extra: Vec<&str> = if cheat {
            vec!["--dishonest", "wrong-model"]
        } else {
            Vec::new()
        };
        providers.push((name.to_string(), ProviderAgent::spawn(&config, &extra)?));
    }
    let market = Market {
        explorer,
        providers,
        verifier,
        host: BlobHost::start()?,
        chain,
        node,
        coordinator_port: ports + 2 * PROVIDERS.len() as u16 + 1,
        serving,
        dir,
        net,
    };
    wait_until(Duration::from_secs(120), "agents to start", || async {
        Ok(market.verifier.started() && market.providers.iter().all(|(_, p)| p.started()))
    })
    .await?;
    Ok(market)
}

/// Polls `check` every 300 ms until it is true or `timeout` passes.
pub(crate) async fn wait_until<F, Fut>(timeout: Duration, what: &str, mut check: F) -> Result<()>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<bool>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if check().await? {
            return Ok(());
        }
        anyhow::ensure!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// Runs the whole scenario; `say` prints progress lines.
pub async fn run(opts: &DemoOptions, say: &(dyn Fn(&str) + Sync)) -> Result<DemoReport> {
    run_with(opts, say, |_| async { Ok(()) }).await
}

/// Runs the whole scenario, then `after` with the market still running (the explorer's
/// browser test looks at it and posts one more order); everything stops when it returns.
pub async fn run_with<F, Fut>(
    opts: &DemoOptions,
    say: &(dyn Fn(&str) + Sync),
    after: F,
) -> Result<DemoReport>
where
    F: FnOnce(Live) -> Fut,
    Fut: std::future::Future<Output = Result<()>>,
{
    let started = Instant::now();
    let market = start_market(opts, say).await?;
    let supply_start = crate::supply(&market.chain).await?;
    let mut watcher = watch::Watcher::new(&market)?;

    let training = jobs::train(&market, opts, &mut watcher, say).await?;
    let weights = training.final_weights.clone();
    let mut rows = vec![training.row.clone()];
    rows.extend(jobs::digits(&market, opts, &weights, &mut watcher, say).await?);
    if let Some(dir) = &opts.minilm_dir {
        rows.extend(jobs::embed(&market, dir, &mut watcher, say).await?);
    }
    let mut fine_tuning = None;
    if let (Some(dir), Some(reviews)) = (&opts.minilm_dir, &opts.reviews_csv) {
        let f = jobs::fine_tune(
            &market,
            dir,
            reviews,
            opts.fine_tune_rounds,
            &mut watcher,
            say,
        )
        .await?;
        rows.push(f.row.clone());
        rows.push(f.classify_row.clone());
        fine_tuning = Some(f);
    }
    let mut chat_answer = None;
    if let Some(file) = &opts.smollm2_file {
        let (row, answer) = jobs::chat(&market, file, &mut watcher, say).await?;
        rows.push(row);
        chat_answer = Some(answer);
    }
    let serving = match market.serving {
        Some(_) => Some(gateway::serve(&market, opts.openai_python.as_ref(), say).await?),
        None => None,
    };
    say("every order settled; checking the books");
    let mut report = report::collect(&market, opts, rows, training, supply_start, started).await?;
    report.chat_answer = chat_answer;
    report.fine_tuning = fine_tuning;
    report.serving = serving;
    let live = Live {
        explorer: market.explorer.as_ref().map(|e| e.url.clone()),
        chain: market.chain.clone(),
        client_key: market.key("client")?,
        digits: jobs::digits_order(&market, &weights, opts.digits_orders)?,
    };
    after(live).await?;
    Ok(report)
}

/// Where the demo keeps an all-MiniLM-L6-v2 checkpoint (fetched by scripts/fetch-minilm.sh).
pub fn default_minilm_dir() -> PathBuf {
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_default();
    std::env::var_os("GPUCHAIN_MODELS")
        .map(PathBuf::from)
        .unwrap_or_else(|| home.join(".cache/gpuchain/models"))
        .join("all-minilm-l6-v2")
}

/// Whether `dir` holds a usable checkpoint.
pub fn has_minilm(dir: &Path) -> bool {
    dir.join("model.safetensors").exists() && dir.join("tokenizer.json").exists()
}

/// `path`, fetched with `scripts/<script> <cache dir>` when absent, the cache dir being
/// `up` levels above it (the model and data cache: `$GPUCHAIN_MODELS`).
pub fn fetched(path: PathBuf, script: &str, up: usize) -> PathBuf {
    if !path.exists() {
        let script = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../scripts")
            .join(script);
        let root = path.ancestors().nth(up).map(Path::to_path_buf);
        let status = std::process::Command::new("bash")
            .arg(&script)
            .arg(root.unwrap_or_default())
            .status();
        assert!(
            status.is_ok_and(|s| s.success()),
            "{} failed",
            script.display()
        );
    }
    path
}

/// Where the demo keeps the Rotten Tomatoes snippets (fetched by scripts/fetch-reviews.sh).
pub fn default_reviews_csv() -> PathBuf {
    default_minilm_dir()
        .with_file_name("rotten-tomatoes")
        .join("reviews.csv")
}

/// Where the demo keeps SmolLM2-135M-Instruct (fetched by scripts/fetch-smollm2.sh).
pub fn default_smollm2_file() -> PathBuf {
    default_minilm_dir()
        .with_file_name("smollm2-135m-instruct")
        .join("SmolLM2-135M-Instruct.Q4_1.gguf")
}
