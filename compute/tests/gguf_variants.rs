//! Llama-family GGUF variants beyond plain Llama, against llama.cpp on the same files: Llama
//! 3.1 rope scaling (`rope_freqs.weight`) with an explicit head size, Qwen2's Q/K/V biases
//! with linear rope scaling, and Qwen3's per-head Q/K norms. The tiny f32 checkpoints and
//! llama.cpp's greedy tokens and log-probabilities on them are in data/gguf/variants
//! (scripts/gen-gguf-variants.py, then scripts/llama-cpp-anchor.mjs `reference`).

mod common;

use std::path::PathBuf;

use burn::prelude::*;
use gpuchain_compute::backend::CpuBackend;
use gpuchain_compute::blob::BlobStore;
use gpuchain_compute::gguf::{self, ChatTemplate, Gguf, Value};
use gpuchain_compute::llama::{answer_texts, check_generation, generate, RowDecoder};
use gpuchain_compute::tensor_io::{decode, encode_u32, Tensor as Stored};
use gpuchain_compute::{run_job, Backend};
use gpuchain_jobspec::{JobSpec, Sampling};
use serde::Deserialize;

const VARIANTS: [&str; 4] = ["llama3-rope", "qwen2-bias", "qwen3-qk-norm", "llama2-spm"];

/// Largest difference of a log-probability from llama.cpp's (which are rounded to 1e-5) that
/// f32 rounding of a two-layer model explains.
const TOLERANCE: f32 = 1e-3;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../data/gguf/variants")
}

#[derive(Deserialize)]
struct Reference {
    prompt: Vec<u32>,
    greedy: Vec<u32>,
    /// Log-probabilities of the whole vocabulary before each of the first greedy tokens.
    logprobs: Vec<Vec<f32>>,
}

fn file(name: &str) -> Vec<u8> {
    std::fs::read(dir().join(format!("{name}.gguf"))).unwrap()
}

fn references(name: &str) -> Vec<Reference> {
    let text = std::fs::read_to_string(dir().join(format!("{name}.llama-cpp.json"))).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn log_softmax(logits: &[f32]) -> Vec<f32> {
    let top = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let total: f32 = logits.iter().map(|l| (l - top).exp()).sum();
    logits.iter().map(|l| l - top - total.ln()).collect()
}

/// The largest difference between `decoder`'s log-probabilities and llama.cpp's, over every
/// reference prompt and every step of its greedy continuation that llama.cpp reported.
fn largest_gap(decoder: &RowDecoder, refs: &[Reference]) -> f32 {
    let mut gap = 0.0f32;
    for r in refs {
        let steps = r.logprobs.len();
        let ours = decoder.teacher_forced_logits(&r.prompt, &r.greedy[..steps]);
        for (ours, theirs) in ours.iter().zip(&r.logprobs) {
            for (a, b) in log_softmax(ours).iter().zip(theirs) {
                gap = gap.max((a - b).abs());
            }
        }
    }
    gap
}

#[test]
fn each_variant_gives_llama_cpp_s_probabilities_and_greedy_tokens() {
    for name in VARIANTS {
        let bytes = file(name);
        let g = Gguf::parse(&bytes).unwrap();
        let refs = references(name);
        let decoder = gguf::llama::row_decoder(&g).unwrap();
        let gap = largest_gap(&decoder, &refs);
        eprintln!("{name}: largest log-probability gap {gap}");
        assert!(
            gap < TOLERANCE,
            "{name}: log-probabilities {gap} from llama.cpp's"
        );
        for r in &refs {
            let ours = decoder.generate_rows(&[&r.prompt], r.greedy.len(), &Sampling::Greedy, &[]);
            assert_eq!(ours, r.greedy, "{name}: greedy tokens after {:?}", r.prompt);
        }

        // burn's decoder (the GPU path) reads the same file the same way.
        let device = Default::default();
        let shape = gguf::llama::shape(&g).unwrap();
        let model = gguf::llama::config(&g)
            .unwrap()
            .load::<CpuBackend>(&gguf::llama::params(&g, &shape).unwrap(), &device)
            .unwrap();
        for r in &refs {
            let ours = generate(
                &model,
                &r.prompt,
                1,
                r.greedy.len(),
                &Sampling::Greedy,
                true,
                &device,
            );
            assert_eq!(
                ours, r.greedy,
                "{name} on burn: greedy tokens after {:?}",
                r.prompt
            );
            let fed: Vec<i64> = r
                .prompt
                .iter()
                .chain(&r.greedy)
                .map(|t| i64::from(*t))
                .collect();
            let len = r.prompt.len() + r.logprobs.len() - 1;
            let ids = Tensor::<CpuBackend, 2, Int>::from_data(
                TensorData::new(fed[..len].to_vec(), [1, len]),
                &device,
            );
            let logits = model.forward(ids, 0, None);
            let vocab = logits.dims()[2];
            let values: Vec<f32> = logits.into_data().to_vec().unwrap();
            for (step, theirs) in r.logprobs.iter().enumerate() {
                let row = r.prompt.len() - 1 + step;
                let ours = log_softmax(&values[row * vocab..(row + 1) * vocab]);
                let gap = ours
                    .iter()
                    .zip(theirs)
                    .map(|(a, b)| (a - b).abs())
                    .fold(0.0, f32::max);
                assert!(gap < TOLERANCE, "{name} on burn, step {step}: {gap}");
            }
        }
    }
}

/// A decoder of `g` read from f32 weights with `drop` tensors left out (so that what they
/// carry is ignored), under `config`'s settings.
fn without(g: &Gguf<'_>, drop: &str, position_scale: Option<f32>) -> RowDecoder {
    let shape = gguf::llama::shape(g).unwrap();
    let mut params = gguf::llama::params(g, &shape).unwrap();
    params.tensors.retain(|name, _| !name.contains(drop));
    let mut cfg = gguf::llama::config(g).unwrap();
    if let Some(scale) = position_scale {
        cfg.rope_position_scale = scale;
    }
    RowDecoder::new(cfg, &params).unwrap()
}

#[test]
fn ignoring_what_a_variant_adds_moves_the_answer_far_from_llama_cpp() {
    // The references are sensitive to each feature: a decoder that skipped it would fail the
    // test above by far more than its tolerance.
    let cases: [(&str, &str, Option<f32>); 4] = [
        ("llama3-rope", "rope_freqs", None),
        ("qwen2-bias", "proj.bias", None),
        ("qwen2-bias", "no tensor", Some(1.0)),
        ("qwen3-qk-norm", "_norm.weight", None),
    ];
    for (name, drop, scale) in cases {
        let bytes = file(name);
        let g = Gguf::parse(&bytes).unwrap();
        let full = gguf::llama::params(&g, &gguf::llama::shape(&g).unwrap()).unwrap();
        let decoder = without(&g, drop, scale);
        if scale.is_none() {
            assert!(
                full.tensors.keys().any(|n| n.contains(drop)),
                "{name} has {drop} tensors"
            );
        }
        let gap = largest_gap(&decoder, &references(name));
        assert!(
            gap > 50.0 * TOLERANCE,
            "{name} without {drop}/{scale:?}: only {gap}"
        );
    }
}

#[test]
fn a_qwen2_gguf_runs_and_is_checked_as_a_market_job() {
    let bytes = file("qwen2-bias");
    let refs = references("qwen2-bias");
    let dir = tempfile::tempdir().unwrap();
    let store = BlobStore::open(dir.path()).unwrap();
    let (prompt, greedy) = (&refs[1].prompt, &refs[1].greedy);
    let input = encode_u32(&[1, prompt.len()], prompt);
    let new = greedy.len() as u32;
    let spec = common::greedy_gguf_job(&store, &bytes, &input, 1, new, Vec::new());
    let out = run_job(&JobSpec::Inference(spec.clone()), &store, Backend::Cpu).unwrap();
    match decode(&out.bytes).unwrap() {
        Stored::U32 { data, .. } => assert_eq!(&data, greedy, "llama.cpp's greedy answer"),
        other => panic!("{other:?}"),
    }
    let verdict = check_generation(&spec, &store, Backend::Cpu, &out.bytes).unwrap();
    assert!(verdict.accepted(), "the honest answer passes: {verdict:?}");
    let mut forged = greedy.clone();
    forged[3] = (forged[3] + 1) % 256;
    let verdict = check_generation(
        &spec,
        &store,
        Backend::Cpu,
        &encode_u32(&[1, forged.len()], &forged),
    )
    .unwrap();
    assert!(!verdict.accepted(), "a changed token is caught");
}

#[test]
fn unsupported_variants_are_refused_with_the_reason() {
    let bytes = file("qwen2-bias");
    let refuse = |key: &str, value: Value, expect: &str| {
        let mut g = Gguf::parse(&bytes).unwrap();
        g.metadata.insert(key.to_string(), value);
        let err = match gguf::llama::row_decoder(&g) {
            Ok(_) => panic!("{key} accepted"),
            Err(e) => e.to_string(),
        };
        assert!(err.contains(expect), "{key}: {err}");
    };
    refuse(
        "qwen2.rope.scaling.type",
        Value::Str("yarn".into()),
        "rope scaling `yarn`",
    );
    refuse(
        "qwen2.rope.scaling.factor",
        Value::F64(0.5),
        "rope scaling factor 0.5",
    );
    refuse("qwen2.rope.dimension_count", Value::U64(8), "8 rotary");
    refuse("qwen2.attention.value_length", Value::U64(32), "32 value");
    refuse(
        "general.architecture",
        Value::Str("gemma2".into()),
        "architecture Some(\"gemma2\")",
    );
    // A file without a chat template takes text and token ids, not chats.
    let mut g = Gguf::parse(&bytes).unwrap();
    g.metadata.remove("tokenizer.chat_template");
    let chat = ChatTemplate::of(&g).unwrap();
    assert!(!chat.has_template());
    let err = chat.ids(&[("user", "hi")]).err().unwrap().to_string();
    assert!(err.contains("no chat template"), "{err}");
    assert!(chat.text_ids("hi").is_ok());
    // A factor of zero in Llama 3's rope factors would divide by zero.
    let bytes = file("llama3-rope");
    let g = Gguf::parse(&bytes).unwrap();
    let shape = gguf::llama::shape(&g).unwrap();
    let mut params = gguf::llama::params(&g, &shape).unwrap();
    let factors = params.tensors.get_mut(gguf::llama::ROPE_FACTORS).unwrap();
    factors.data[0] = 0.0;
    let err = RowDecoder::new(gguf::llama::config(&g).unwrap(), &params)
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("rope factors"), "{err}");
}

#[derive(Deserialize)]
struct Tokenized {
    text: String,
    ids: Vec<u32>,
}

#[test]
fn llama_3_and_qwen2_pre_tokenizers_give_llama_cpp_s_ids() {
    // Each file's merges cross the places where the splits differ (digit runs, a space before
    // digits, punctuation before letters), so a wrong split gives other ids.
    for (name, pre) in [
        ("llama3-rope", "llama-bpe"),
        ("qwen2-bias", "qwen2"),
        ("qwen3-qk-norm", "qwen2"),
    ] {
        let bytes = file(name);
        let mut g = Gguf::parse(&bytes).unwrap();
        assert_eq!(
            g.get("tokenizer.ggml.pre").and_then(Value::as_str),
            Some(pre)
        );
        let plain = gguf::tokenizer::plain_tokenizer(&g).unwrap();
        let text = std::fs::read_to_string(dir().join(format!("{name}.llama-cpp-tokens.json")));
        let cases: Vec<Tokenized> = serde_json::from_str(&text.unwrap()).unwrap();
        let mut differs_under_gpt2 = 0;
        g.metadata
            .insert("tokenizer.ggml.pre".into(), Value::Str("gpt2".into()));
        let gpt2 = gguf::tokenizer::plain_tokenizer(&g).unwrap();
        for case in &cases {
            let ours = plain.encode(case.text.as_str(), false).unwrap();
            assert_eq!(ours.get_ids(), case.ids, "{name}: {:?}", case.text);
            let theirs = gpt2.encode(case.text.as_str(), false).unwrap();
            differs_under_gpt2 += usize::from(theirs.get_ids() != case.ids);
        }
        assert!(
            differs_under_gpt2 >= 2,
            "{name}: the cases tell the splits apart"
        );
    }
    let bytes = file("qwen2-bias");
    let mut g = Gguf::parse(&bytes).unwrap();
    g.metadata.insert(
        "tokenizer.ggml.pre".into(),
        Value::Str("deepseek-coder".into()),
    );
    let err = gguf::tokenizer::tokenizer(&g).err().unwrap().to_string();
    assert!(err.contains("pre-tokenizer `deepseek-coder`"), "{err}");
}

#[test]
fn a_sentencepiece_tokenizer_gives_llama_cpp_s_ids_and_reads_back_the_text() {
    // Llama 2 and Mistral files: a space before the text, `▁` for every space, pieces merged
    // by score, and byte pieces for characters no piece covers.
    let bytes = file("llama2-spm");
    let g = Gguf::parse(&bytes).unwrap();
    assert_eq!(
        g.get("tokenizer.ggml.model").and_then(Value::as_str),
        Some("llama")
    );
    let plain = gguf::tokenizer::plain_tokenizer(&g).unwrap();
    let text = std::fs::read_to_string(dir().join("llama2-spm.llama-cpp-tokens.json"));
    let cases: Vec<Tokenized> = serde_json::from_str(&text.unwrap()).unwrap();
    let mut byte_pieces = 0;
    for case in &cases {
        let ours = plain.encode(case.text.as_str(), false).unwrap();
        assert_eq!(ours.get_ids(), case.ids, "{:?}", case.text);
        byte_pieces += case.ids.iter().filter(|id| (3..259).contains(*id)).count();
        let back = plain.decode(ours.get_ids(), false).unwrap();
        assert_eq!(back, case.text, "{:?}", case.ids);
    }
    assert!(byte_pieces > 0, "some characters are spelt as bytes");
    // A prompt starts with BOS, as llama.cpp puts it before SentencePiece prompts.
    let template = ChatTemplate::of(&g).unwrap();
    assert_eq!(template.bos, Some(1));
}

#[derive(Deserialize)]
struct Message {
    role: String,
    content: String,
}

#[derive(Deserialize)]
struct RenderedChat {
    messages: Vec<Message>,
    text: String,
    ids: Vec<u32>,
}

fn rendered_chats(file: &str) -> Vec<RenderedChat> {
    let text = std::fs::read_to_string(dir().join(file)).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Our ids and text for each chat against llama.cpp's of the text @huggingface/jinja rendered.
fn assert_renders_as_llama_cpp(name: &str, chat: &ChatTemplate, cases: &[RenderedChat]) {
    for case in cases {
        let messages: Vec<(&str, &str)> = case
            .messages
            .iter()
            .map(|m| (m.role.as_str(), m.content.as_str()))
            .collect();
        let prompt = chat.prompt(&messages).unwrap();
        assert_eq!(prompt, case.text, "{name}");
        assert_eq!(chat.ids(&messages).unwrap(), case.ids, "{name}: {prompt:?}");
    }
}

#[test]
fn chats_are_written_as_each_model_s_own_template_renders_them() {
    // llama.cpp's ids of the text the file's Jinja template renders (by @huggingface/jinja),
    // against ours: Llama 3's headers with the BOS token, ChatML with a default system
    // message, ChatML without one.
    for (name, end) in [
        ("llama3-rope", "<|eot_id|>"),
        ("qwen2-bias", "<|im_end|>"),
        ("qwen3-qk-norm", "<|im_end|>"),
    ] {
        let bytes = file(name);
        let g = Gguf::parse(&bytes).unwrap();
        let chat = ChatTemplate::of(&g).unwrap();
        assert!(chat.has_template(), "{name}");
        assert_renders_as_llama_cpp(
            name,
            &chat,
            &rendered_chats(&format!("{name}.llama-cpp-chat.json")),
        );
        // A message cannot end its turn: the end marker inside content (or a role) stays
        // text.
        let marker = chat.template.encode(end, false).unwrap().get_ids()[0];
        let count = |role: &str, content: &str| {
            let ids = chat.ids(&[(role, content)]).unwrap();
            ids.iter().filter(|t| **t == marker).count()
        };
        let plain = count("user", "hi there");
        assert_eq!(count("user", &format!("hi{end} there")), plain, "{name}");
        assert_eq!(count(&format!("user{end}"), "hi there"), plain, "{name}");
        // ... and reads back as the text it was.
        let ids = chat.ids(&[("user", &format!("hi{end} there"))]).unwrap();
        let text = chat.plain.decode(&ids, false).unwrap();
        assert!(text.contains(&format!("hi{end} there")), "{name}: {text:?}");
        // The end of a turn is the chat job's stop token.
        assert_eq!(gguf::eos_token(&g), Some(marker), "{name}");
    }
}

#[test]
fn llama_2_mistral_and_zephyr_templates_over_sentencepiece_give_llama_cpp_s_ids() {
    // Other families' templates (data/gguf/variants/templates) over the SentencePiece
    // vocabulary, whose merges run across the template's text and the message
    // (`[INST] What`): each rendered and tokenized as llama.cpp does, `<s>` and `</s>`
    // written by the template read as control tokens, BOS not doubled.
    let bytes = file("llama2-spm");
    for template in ["llama2", "mistral", "zephyr"] {
        let mut g = Gguf::parse(&bytes).unwrap();
        let source = std::fs::read_to_string(dir().join(format!("templates/{template}.jinja")));
        g.metadata.insert(
            "tokenizer.chat_template".into(),
            Value::Str(source.unwrap()),
        );
        let chat = ChatTemplate::of(&g).unwrap();
        let cases = rendered_chats(&format!("llama2-spm.{template}.llama-cpp-chat.json"));
        assert_renders_as_llama_cpp(template, &chat, &cases);
        let ids = chat.ids(&[("user", "hi</s> there")]).unwrap();
        assert_eq!(ids[0], 1, "{template}: one BOS first");
        assert_eq!(ids.iter().filter(|t| **t == 1).count(), 1, "{template}");
        let eos = ids.iter().filter(|t| **t == 2).count();
        assert_eq!(
            eos,
            chat.ids(&[("user", "hi there")])
                .unwrap()
                .iter()
                .filter(|t| **t == 2)
                .count(),
            "{template}: `</s>` inside a message is text"
        );
    }
    // A template that refuses a conversation says why.
    let mut g = Gguf::parse(&bytes).unwrap();
    let source = std::fs::read_to_string(dir().join("templates/llama2.jinja")).unwrap();
    g.metadata
        .insert("tokenizer.chat_template".into(), Value::Str(source));
    let chat = ChatTemplate::of(&g).unwrap();
    let err = chat
        .ids(&[("user", "a"), ("user", "b")])
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("Turns must alternate"), "{err}");
}

#[test]
fn broken_or_runaway_templates_fail_the_prompt_with_the_reason() {
    let bytes = file("qwen3-qk-norm");
    let with = |source: &str| {
        let mut g = Gguf::parse(&bytes).unwrap();
        g.metadata
            .insert("tokenizer.chat_template".into(), Value::Str(source.into()));
        ChatTemplate::of(&g).unwrap()
    };
    let err = |chat: ChatTemplate| chat.ids(&[("user", "hi")]).err().unwrap().to_string();
    assert!(err(with("{% for m in messages %}")).contains("chat template"));
    let runaway = "{% for a in range(10000) %}{% for b in range(10000) %}x{% endfor %}{% endfor %}";
    let e = err(with(runaway));
    assert!(e.contains("fuel"), "{e}");
    // Private-use stand-ins are the template's own: a message holding one is refused.
    let e = with("{{ messages[0]['content'] }}")
        .ids(&[("user", "a\u{F0000}b")])
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("U+F0000"), "{e}");
    // No clock: a template asking for the date takes its fallback.
    let dated =
        "{% if strftime_now is defined %}{{ strftime_now('%d') }}{% else %}26 Jul{% endif %}";
    assert_eq!(with(dated).prompt(&[("user", "hi")]).unwrap(), "26 Jul");
}

#[test]
fn a_llama_3_chat_job_starts_with_bos_and_answers_in_text() {
    let bytes = file("llama3-rope");
    let g = Gguf::parse(&bytes).unwrap();
    let chat = ChatTemplate::of(&g).unwrap();
    let bos = chat.bos.expect("Llama 3 asks for a BOS token");
    let dir = tempfile::tempdir().unwrap();
    let store = BlobStore::open(dir.path()).unwrap();
    let input = serde_json::json!([
        { "messages": [{ "role": "user", "content": "What is the capital of France?" }] },
        "the 1234",
    ]);
    let input = serde_json::to_vec(&input).unwrap();
    let stop = vec![gguf::eos_token(&g).unwrap()];
    let spec = common::greedy_gguf_job(&store, &bytes, &input, 2, 6, stop);
    let out = run_job(&JobSpec::Inference(spec.clone()), &store, Backend::Cpu).unwrap();
    // The job read the chat and the text as the chat format writes them, BOS first.
    let decoder = gguf::llama::row_decoder(&g).unwrap();
    let chat_ids = chat
        .ids(&[("user", "What is the capital of France?")])
        .unwrap();
    let text_ids = chat.text_ids("the 1234").unwrap();
    assert_eq!((chat_ids[0], text_ids[0]), (bos, bos));
    let want = decoder.generate_rows(&[&chat_ids, &text_ids], 6, &Sampling::Greedy, &[]);
    match decode(&out.bytes).unwrap() {
        Stored::U32 { data, .. } => {
            // Rows end at the stop token and repeat it; before it they are the greedy tokens.
            for (got, want) in data.chunks(6).zip(want.chunks(6)) {
                let same = got.iter().zip(want).take_while(|(a, b)| a == b).count();
                assert!(
                    same == 6 || got[same..].iter().all(|t| *t == got[same]),
                    "{got:?}"
                );
            }
        }
        other => panic!("{other:?}"),
    }
    let answers = answer_texts(&spec, &store, &out.bytes).unwrap().unwrap();
    assert_eq!(answers.len(), 2);
    let verdict = check_generation(&spec, &store, Backend::Cpu, &out.bytes).unwrap();
    assert!(verdict.accepted(), "{verdict:?}");
}

#[test]
fn a_split_model_is_mapped_from_all_its_files_and_runs_as_the_whole_file() {
    // llama.cpp gives the split files the same answers as the whole one (checked when they
    // were written); so must we, from any one of their names.
    let split = dir().join("split");
    let whole_bytes = file("qwen2-bias");
    let whole_file = Gguf::parse(&whole_bytes).unwrap();
    let whole = gguf::llama::row_decoder(&whole_file).unwrap();
    let refs = references("qwen2-bias");
    for part in 1..=3 {
        let name = split.join(format!("qwen2-bias-{part:05}-of-00003.gguf"));
        let mapped = gguf::GgufFile::open(&name).unwrap();
        assert_eq!(mapped.paths().len(), 3);
        let on_disk: u64 = mapped
            .paths()
            .iter()
            .map(|p| std::fs::metadata(p).unwrap().len())
            .sum();
        assert_eq!(gguf::file::model_size(&name).unwrap() as u64, on_disk);
        let g = mapped.parse().unwrap();
        assert_eq!(
            g.tensors.len(),
            whole_file.tensors.len(),
            "every file's tensors"
        );
        let decoder = gguf::llama::row_decoder(&g).unwrap();
        let gap = largest_gap(&decoder, &refs);
        assert!(gap < TOLERANCE, "split, from file {part}: {gap}");
        assert_eq!(
            decoder.teacher_forced_logits(&refs[2].prompt, &refs[2].greedy),
            whole.teacher_forced_logits(&refs[2].prompt, &refs[2].greedy),
            "the same weights as the whole file"
        );
    }
    // The serving endpoint's loader takes the split model by any of its names.
    let served = gpuchain_compute::serving::ChatModel::load(
        &split.join("qwen2-bias-00003-of-00003.gguf"),
        "qwen2-tiny".into(),
    )
    .unwrap();
    assert_eq!(
        served
            .decoder
            .teacher_forced_logits(&refs[0].prompt, &refs[0].greedy),
        whole.teacher_forced_logits(&refs[0].prompt, &refs[0].greedy)
    );
    assert_eq!(served.context, 128);
    // One file alone, or the files out of order, is refused with what is wrong.
    let first = std::fs::read(split.join("qwen2-bias-00001-of-00003.gguf")).unwrap();
    let second = std::fs::read(split.join("qwen2-bias-00002-of-00003.gguf")).unwrap();
    let third = std::fs::read(split.join("qwen2-bias-00003-of-00003.gguf")).unwrap();
    let err = |r: gpuchain_compute::Result<Gguf<'_>>| r.err().unwrap().to_string();
    assert!(err(Gguf::parse(&first)).contains("file 1 of a model split into 3"));
    assert!(err(Gguf::parse_split(&[&first, &third, &second])).contains("is file 3 of 3"));
    assert!(err(Gguf::parse_split(&[&first, &second])).contains("file 1 of 3"));
    // A missing file is named.
    let lonely = tempfile::tempdir().unwrap();
    let copy = lonely.path().join("qwen2-bias-00001-of-00003.gguf");
    std::fs::write(&copy, &first).unwrap();
    let missing = match gguf::GgufFile::open(&copy) {
        Ok(_) => panic!("opened without its other files"),
        Err(e) => e.to_string(),
    };
    assert!(
        missing.contains("qwen2-bias-00002-of-00003.gguf"),
        "{missing}"
    );
}
