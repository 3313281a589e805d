//! Fine-tuning all-MiniLM-L6-v2 as a sentiment classifier of the Rotten Tomatoes review
//! snippets: the dataset the client builds, the gradient of the trained layer and head, a
//! whole fine-tuning job over three workers and the fine-tuned model run as a
//! classification job, and the audit of one of its segments.
//!
//! Needs the real checkpoint and the snippets (fetched by `scripts/fetch-minilm.sh` and
//! `scripts/fetch-reviews.sh` when absent).

mod common;

use std::sync::OnceLock;

use gpuchain_compute::blob::BlobStore;
use gpuchain_compute::embed::SentenceTokenizer;
use gpuchain_compute::params::Params;
use gpuchain_compute::tensor_io::{decode, Tensor as Stored};
use gpuchain_compute::train::classifier::{fine_tuned, sentiment_spec};
use gpuchain_compute::train::worker::Worker;
use gpuchain_compute::train::{audit_segment, Batch, Coordinator, SentenceDataset, TrainTask};
use gpuchain_compute::{run_job, Backend};
use gpuchain_jobspec::{InferenceSpec, JobSpec, ModelArch, TrainingSpec, WeightsInit};

struct Setup {
    weights: Vec<u8>,
    data: SentenceDataset,
    task: TrainTask,
}

/// Loaded once per test binary, so the frozen states each test computes are shared.
fn setup() -> &'static Setup {
    static SETUP: OnceLock<Setup> = OnceLock::new();
    SETUP.get_or_init(|| {
        let dir = common::minilm_dir();
        let weights = std::fs::read(dir.join("model.safetensors")).unwrap();
        let tokenizer =
            SentenceTokenizer::from_bytes(&std::fs::read(dir.join("tokenizer.json")).unwrap())
                .unwrap();
        let csv = std::fs::read_to_string(common::reviews_csv()).unwrap();
        let data = SentenceDataset::from_reviews_csv(&csv, &tokenizer).unwrap();
        let base = Params::from_safetensors(&weights).unwrap();
        let task = TrainTask::classifier(&base, data.clone(), false).unwrap();
        Setup {
            weights,
            data,
            task,
        }
    })
}

fn spec(store: &BlobStore, s: &Setup, workers: u32, rounds: u32) -> TrainingSpec {
    let weights = store.put(&s.weights).unwrap();
    let dataset = store.put(&s.data.to_bytes()).unwrap();
    TrainingSpec {
        workers,
        rounds,
        seed: 3,
        ..sentiment_spec(weights, dataset)
    }
}

#[test]
fn the_review_snippets_make_a_balanced_two_class_dataset() {
    let d = &setup().data;
    assert_eq!(d.classes, ["rotten", "fresh"]);
    assert_eq!((d.train.len(), d.test.len()), (3893, 973));
    for split in [&d.train, &d.test] {
        let fresh = split.iter().filter(|e| e.label == 1).count() as f64;
        let share = fresh / split.len() as f64;
        assert!((0.45..0.55).contains(&share), "{share}");
        // WordPiece ids of all-MiniLM-L6-v2's tokenizer: [CLS] … [SEP].
        assert!(split
            .iter()
            .all(|e| e.ids.first() == Some(&101) && e.ids.last() == Some(&102)));
    }
}

#[test]
fn classifier_gradients_match_finite_differences() {
    let s = setup();
    let task = &s.task;
    let grad = task.grad(Backend::Cpu);
    // A head that is not zero, so that the gradient reaches the encoder layer.
    let mut p = task.init.clone();
    let head = p.tensors.get_mut("classifier.weight").unwrap();
    for (i, v) in head.data.iter_mut().enumerate() {
        *v = ((i * 7919 % 101) as f32 / 101.0 - 0.5) * 0.4;
    }
    let batch = Batch::Sentences(s.data.train[..6].to_vec());
    let (loss, g) = grad.loss_and_grad(&p, &batch).unwrap();
    assert_eq!(g.len(), p.numel());
    let names: Vec<String> = p.tensors.keys().cloned().collect();
    let mut offset = 0;
    let mut checked = 0;
    for name in &names {
        let n = p.tensors[name].data.len();
        // The entry of this tensor with the largest gradient.
        let (i, _) = g[offset..offset + n]
            .iter()
            .enumerate()
            .max_by(|a, b| a.1.abs().total_cmp(&b.1.abs()))
            .unwrap();
        let analytic = g[offset + i];
        if analytic.abs() > 1e-3 {
            let eps = 2e-3f32;
            let at = |delta: f32| {
                let mut q = p.clone();
                q.tensors.get_mut(name).unwrap().data[i] += delta;
                grad.loss_and_grad(&q, &batch).unwrap().0
            };
            let numeric = (at(eps) - at(-eps)) / (2.0 * eps);
            assert!(
                (numeric - analytic).abs() <= 0.05 * analytic.abs() + 2e-4,
                "{name}[{i}]: analytic {analytic}, finite difference {numeric} (loss {loss})"
            );
            checked += 1;
        }
        offset += n;
    }
    assert!(
        checked >= 10,
        "only {checked} tensors had a usable gradient"
    );

    // Weights of another shape (a coordinator's, say) are refused with the reason.
    let mut wrong = p.clone();
    let q = "encoder.layer.5.attention.self.query.weight";
    wrong.tensors.get_mut(q).unwrap().dims = vec![192, 768];
    let err = grad.loss_and_grad(&wrong, &batch).unwrap_err().to_string();
    assert!(err.contains(q), "{err}");
    let mut extra = p.clone();
    extra.insert(
        "encoder.layer.0.output.dense.bias",
        vec![384],
        vec![0.0; 384],
    );
    assert!(grad.loss_and_grad(&extra, &batch).is_err());
}

#[test]
fn a_fine_tuning_job_over_three_workers_learns_the_sentiment_of_reviews() {
    let s = setup();
    let dir = tempfile::tempdir().unwrap();
    let store = BlobStore::open(dir.path()).unwrap();
    let job = JobSpec::Training(spec(&store, s, 3, 3));
    let out = run_job(&job, &store, Backend::Cpu).unwrap();
    assert!(out.transcript_root.is_some());
    let trained = Params::from_safetensors(&out.bytes).unwrap();
    assert_eq!(trained.numel(), s.task.init.numel());
    let before = s.task.evaluate(&s.task.init).unwrap();
    let after = s.task.evaluate(&trained).unwrap();
    assert!(
        after >= before + 0.10,
        "test accuracy {before:.3} before, {after:.3} after three rounds"
    );

    // The fine-tuned model as a classification job: sentences in, class scores out, the
    // same scores on every backend and the same as training scored them.
    let base = Params::from_safetensors(&s.weights).unwrap();
    let tuned = fine_tuned(&base, &trained).to_safetensors().unwrap();
    let sentences = [
        "A moving, beautifully acted film.",
        "Dull, lifeless and far too long.",
        "It has its moments.",
    ];
    let tokenizer_bytes = std::fs::read(common::minilm_dir().join("tokenizer.json")).unwrap();
    let classify = InferenceSpec {
        arch: ModelArch::MiniLmClassifier,
        weights: store.put(&tuned).unwrap(),
        tokenizer: Some(store.put(&tokenizer_bytes).unwrap()),
        input: store.put(&serde_json::to_vec(&sentences).unwrap()).unwrap(),
        batch_size: 2,
        llama: None,
        generation: None,
        tolerance: None,
    };
    let classify = JobSpec::Inference(classify);
    let cpu = run_job(&classify, &store, Backend::Cpu).unwrap();
    let canonical = run_job(&classify, &store, Backend::Canonical).unwrap();
    assert_eq!(cpu.bytes, canonical.bytes);
    let scores = decode(&cpu.bytes).unwrap();
    let Stored::F32 { dims, data } = scores else {
        panic!("class scores are f32")
    };
    assert_eq!(dims, [3, 2]);
    let tokenizer = SentenceTokenizer::from_bytes(&tokenizer_bytes).unwrap();
    let ids = tokenizer.encode_all(&sentences.map(String::from)).unwrap();
    let examples: Vec<_> = ids
        .into_iter()
        .map(|ids| gpuchain_compute::train::Example { ids, label: 0 })
        .collect();
    let scored = s.task.class_scores(&trained, &examples).unwrap();
    for (ours, theirs) in data.chunks(2).zip(&scored) {
        for (a, b) in ours.iter().zip(theirs) {
            assert!((a - b).abs() < 1e-4, "{ours:?} vs {theirs:?}");
        }
    }

    // A job that would start from no pretrained weights is refused before it runs.
    let JobSpec::Training(mut seeded) = job else {
        unreachable!()
    };
    seeded.init = WeightsInit::Seed(1);
    let err = run_job(&JobSpec::Training(seeded), &store, Backend::Cpu).unwrap_err();
    assert!(err.to_string().contains("pretrained"), "{err}");
}

#[test]
fn an_audit_accepts_an_honest_fine_tuning_update_and_catches_a_lazy_one() {
    let s = setup();
    let dir = tempfile::tempdir().unwrap();
    let store = BlobStore::open(dir.path()).unwrap();
    let sp = spec(&store, s, 2, 1);
    let task = &s.task;
    let grad = task.grad(Backend::Cpu);
    let init = &task.init;
    let mut workers: Vec<Worker> = (0..2)
        .map(|w| Worker::new(w, init.numel(), task.shard(w, 2)))
        .collect();
    let checkpoint = workers[1].checkpoint();
    let msgs: Vec<Vec<u8>> = workers
        .iter_mut()
        .map(|w| w.run_round(&sp, 0, init, grad.as_ref()).unwrap().bytes)
        .collect();
    let mut coord = Coordinator::new(&sp, init);
    coord.apply_round(&msgs).unwrap();
    let record = coord.records()[0].clone();
    let audit = |record: &gpuchain_compute::train::RoundRecord, claimed: &[u8]| {
        audit_segment(
            &sp,
            record,
            init,
            &checkpoint,
            task.shard(1, 2),
            claimed,
            grad.as_ref(),
            20_000,
        )
        .unwrap()
    };
    let honest = audit(&record, &msgs[1]);
    assert!(honest.accepted && honest.identical, "{honest:?}");

    // A verifier on a CPU without AVX2 computes the frozen states with other kernels: the
    // honest update is not bit-identical there but must still be accepted.
    gpuchain_kernels::force_baseline(true);
    let base = Params::from_safetensors(&s.weights).unwrap();
    let elsewhere = TrainTask::classifier(&base, s.data.clone(), false).unwrap();
    let other = audit_segment(
        &sp,
        &record,
        init,
        &checkpoint,
        elsewhere.shard(1, 2),
        &msgs[1],
        elsewhere.grad(Backend::Cpu).as_ref(),
        20_000,
    );
    gpuchain_kernels::force_baseline(false);
    let other = other.unwrap();
    assert!(other.accepted, "{other:?}");
    println!("honest update re-run on baseline kernels: {other:?}");

    // A worker that barely trained (a learning rate a thousand times smaller) and sent
    // what it got: the transcript holds its hash, but the re-run differs.
    let mut lazy_sp = sp.clone();
    lazy_sp.lr_ppm = 50;
    let mut lazy = Worker::resume(&checkpoint, task.shard(1, 2)).unwrap();
    let lazy_msg = lazy
        .run_round(&lazy_sp, 0, init, grad.as_ref())
        .unwrap()
        .bytes;
    let mut forged = record.clone();
    forged.update_hashes[1] = *blake3::hash(&lazy_msg).as_bytes();
    let caught = audit(&forged, &lazy_msg);
    assert!(!caught.accepted, "{caught:?}");
}

#[test]
fn gpuchain_train_writes_a_dataset_from_a_csv_of_labelled_sentences() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("tickets.csv");
    std::fs::write(
        &csv,
        "id,body,topic\n\
         1,\"My card was charged twice, please refund\",billing\n\
         2,The app crashes when I open settings,bug\n\
         3,How do I change my password?,other\n\
         4,Invoice shows the wrong amount,billing\n\
         5,\"Button does nothing on \"\"Save\"\"\",bug\n\
         6,Refund still missing after a week,billing\n",
    )
    .unwrap();
    let out = dir.path().join("tickets.json");
    let tokenizer = common::minilm_dir().join("tokenizer.json");
    let run = |classes: &str, text_column: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_gpuchain-train"))
            .args(["sentences", "--csv"])
            .arg(&csv)
            .args(["--text-column", text_column, "--label-column", "topic"])
            .args(["--classes", classes, "--test-every", "2", "--tokenizer"])
            .arg(&tokenizer)
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap()
    };
    let done = run("bug,billing", "body");
    assert!(done.status.success(), "{done:?}");
    let data = SentenceDataset::parse(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(data.classes, ["bug", "billing"]);
    // Five rows of the two classes (the `other` one left out), every second held out.
    assert_eq!((data.train.len(), data.test.len()), (3, 2));
    assert_eq!(
        data.train.iter().map(|e| e.label).collect::<Vec<_>>(),
        [1, 1, 1]
    );
    assert_eq!(
        data.test.iter().map(|e| e.label).collect::<Vec<_>>(),
        [0, 0]
    );
    let printed: serde_json::Value = serde_json::from_slice(&done.stdout).unwrap();
    assert_eq!(
        printed["blake3"].as_str().unwrap(),
        blake3::hash(&std::fs::read(&out).unwrap())
            .to_hex()
            .as_str()
    );
    let missing = run("bug,billing", "text");
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no `text` column"));
}
