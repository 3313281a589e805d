//! A fine-tuning order through the market: the client tokenises the Rotten Tomatoes review
//! snippets, serves all-MiniLM-L6-v2 and the dataset from its blob host and coordinates the
//! rounds; three provider agents win the three worker leases, train the last encoder layer
//! and a sentiment head with top-1% updates, commit and reveal the transcript root, and are
//! paid after verification. The held-out accuracy rises well above the untrained head's,
//! the loss falls, and every worker revealed the coordinator's transcript root. Then the
//! fine-tuned model classifies reviews on a classification order: the provider's scores
//! are the client's own, and it is paid.

use gpuchain_tests::demo::{
    default_minilm_dir, default_reviews_csv, fetched, run, DemoOptions, PROVIDERS,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fine_tuning_job_trains_minilm_on_three_providers_and_pays_them() -> anyhow::Result<()> {
    let minilm = fetched(
        default_minilm_dir().join("model.safetensors"),
        "fetch-minilm.sh",
        2,
    );
    let opts = DemoOptions {
        validators: 1,
        with_cheater: false,
        training_rounds: 1,
        digits_orders: 0,
        minilm_dir: minilm.parent().map(std::path::Path::to_path_buf),
        reviews_csv: Some(fetched(default_reviews_csv(), "fetch-reviews.sh", 2)),
        fine_tune_rounds: 4,
        ..DemoOptions::default()
    };
    let say = |line: &str| println!("{line}");
    let report = run(&opts, &say).await?;
    println!("{report}");

    let tuned = report
        .fine_tuning
        .as_ref()
        .expect("the fine-tuning stage ran");
    assert_eq!(tuned.progress.len(), 4);
    let first = &tuned.progress[0];
    let last = &tuned.progress[3];
    assert!(
        last.test_accuracy >= tuned.start_accuracy + 0.10 && last.test_accuracy >= 0.65,
        "held-out accuracy {:.3} at the start, {:.3} after four rounds",
        tuned.start_accuracy,
        last.test_accuracy
    );
    assert!(
        last.mean_loss < first.mean_loss,
        "loss {} -> {}",
        first.mean_loss,
        last.mean_loss
    );
    // Top-1% updates of 1.78M trained values: each round's uploads are far below dense.
    for p in &tuned.progress {
        assert!(p.bytes_sent * 20 < p.dense_bytes, "{p:?}");
    }
    let leases = &tuned.row.leases;
    assert_eq!(leases.len(), 3, "{:?}", tuned.row);
    let mut workers: Vec<&str> = leases.iter().map(|l| l.provider.as_str()).collect();
    workers.sort_unstable();
    let mut providers: Vec<&str> = PROVIDERS.iter().map(|(n, _)| *n).collect();
    providers.sort_unstable();
    assert_eq!(workers, providers, "each provider is one worker");
    for l in leases {
        assert_eq!(l.state, "paid", "{l:?}");
        assert_eq!(
            l.result_hash.as_deref(),
            Some(tuned.transcript_root.as_str()),
            "{} revealed the coordinator's transcript root",
            l.provider
        );
    }
    assert_eq!(tuned.classified.len(), 4);
    assert!(
        tuned.classify_gap < 1e-3,
        "the provider's class scores are the client's own: {}",
        tuned.classify_gap
    );
    let classify = &tuned.classify_row.leases;
    assert_eq!(classify.len(), 1, "{:?}", tuned.classify_row);
    assert_eq!(classify[0].state, "paid", "{:?}", classify[0]);
    Ok(())
}
