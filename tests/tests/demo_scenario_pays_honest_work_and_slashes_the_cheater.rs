//! The demo's scenario, headless: a 4-validator localnet, three provider agents
//! (one cheating with a wrong model), a verifier agent and a client that trains the digits
//! MLP over the three providers through its coordinator, classifies digits with the trained
//! weights on 2-replica orders, embeds sentences with all-MiniLM-L6-v2 and asks
//! SmolLM2-135M-Instruct a question (answered "Paris" through the market), then serves both
//! models on serving leases the client's gateway opens over the three providers' endpoints,
//! one of them killed mid-answer (the answer is finished whole on another; the endpoint
//! restarts and keeps its leases by answering the gateway's report), every acknowledged
//! answer claimed, audited and paid on chain, and both orders ended. Every honest
//! lease is paid once, the cheater's inference results are proven wrong by the verifier and
//! slashed, the supply moves only by the burns the slash records show, and all validators
//! end at one app hash.

use gpuchain_tests::demo::{
    default_minilm_dir, default_smollm2_file, fetched, run, DemoOptions, CHEATER,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_scenario_pays_honest_work_and_slashes_the_cheater() -> anyhow::Result<()> {
    let opts = DemoOptions {
        validators: 4,
        with_cheater: true,
        training_rounds: 20,
        digits_orders: 2,
        minilm_dir: fetched(
            default_minilm_dir().join("model.safetensors"),
            "fetch-minilm.sh",
            2,
        )
        .parent()
        .map(std::path::Path::to_path_buf),
        // The fine-tuning order has its own test.
        reviews_csv: None,
        fine_tune_rounds: 0,
        smollm2_file: Some(fetched(default_smollm2_file(), "fetch-smollm2.sh", 2)),
        serve: true,
        // The official client against the gateway is the gateway test's part.
        openai_python: None,
        keep_logs: false,
        // The explorer's own test runs the scenario with it, in a browser.
        explorer_port: None,
    };
    let say = |line: &str| println!("{line}");
    let report = run(&opts, &say).await?;
    println!("{report}");

    assert_eq!(
        report.jobs.len(),
        5,
        "training, two digits orders, one embedding order, one chat order"
    );
    let answer = report.chat_answer.as_deref().unwrap_or_default();
    assert!(answer.contains("Paris"), "SmolLM2 answered {answer:?}");
    let serving = report.serving.as_ref().expect("the serving stage ran");
    assert!(serving.answer.contains("Paris"), "{serving:?}");
    assert_eq!(serving.embedding_dims, 384);
    assert!(
        serving.resumed_answer_whole && serving.resumed >= 1.0,
        "the answer streaming when a provider died was finished elsewhere: {serving:?}"
    );
    assert!(
        serving.killed_kept_leases,
        "the restarted endpoint answered the report in time: {serving:?}"
    );
    // The cheater, slashed below the least bond a provider needs, may no longer bid.
    assert_eq!(
        serving.leases.len(),
        4,
        "the two honest providers on each of two orders: {serving:?}"
    );
    assert!(
        serving.leases.iter().all(|l| l.provider != CHEATER),
        "{serving:?}"
    );
    for lease in serving.leases.iter().filter(|l| l.requests > 0) {
        assert!(
            lease.paid > 0 && lease.units > 0,
            "every lease that served acknowledged requests is paid for them: {lease:?}"
        );
    }
    assert!(
        serving.leases.iter().any(|l| l.paid > 0),
        "the gateway's answers were settled on chain: {serving:?}"
    );
    assert_eq!(
        serving.escrow_after, 0,
        "the deposits' rest went back when the orders closed"
    );
    for job in &report.jobs {
        for lease in &job.leases {
            if lease.provider == CHEATER && job.label.starts_with("inference: digits") {
                assert_eq!(lease.state, "faulted", "the cheater is caught: {job:?}");
                assert!(
                    lease.verified_by.as_deref() == Some("v1 (faulty)"),
                    "proven by the verifier: {job:?}"
                );
            } else {
                assert_eq!(lease.state, "paid", "honest work is paid: {job:?}");
            }
        }
    }
    let training = &report.jobs[0];
    assert_eq!(training.leases.len(), 3, "one lease per worker");
    assert!(
        report.training_accuracy > 0.75,
        "accuracy {}",
        report.training_accuracy
    );
    assert!(
        report.compression_ratio > 50.0,
        "compression {}",
        report.compression_ratio
    );

    let cheater = report
        .providers
        .iter()
        .find(|p| p.name == CHEATER)
        .expect("cheater row");
    assert!(cheater.slashed > 0, "the cheater lost stake");
    for honest in report.providers.iter().filter(|p| p.name != CHEATER) {
        assert_eq!(honest.slashed, 0, "{} is never slashed", honest.name);
    }
    let paid: u32 = report.providers.iter().map(|p| p.paid_leases).sum();
    let honest_leases = report
        .jobs
        .iter()
        .flat_map(|j| j.leases.iter())
        .filter(|l| l.state == "paid")
        .count() as u32;
    assert_eq!(paid, honest_leases, "every paid lease is paid once");
    assert_eq!(
        report.supply_start,
        report.supply_end + report.burned,
        "every unit is accounted for"
    );
    assert_eq!(report.validators, 4);
    Ok(())
}
