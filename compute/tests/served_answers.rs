//! Audits of served answers (`serving::audit_answer`) on the real SmolLM2-135M-Instruct: an
//! answer generated the way `serve-model` generates it passes, greedy and seeded, chat and
//! text completion; an answer with one token changed, cut short, charged more units, with
//! other text, another seed or a re-encoded record fails with its reason.
//!
//! Needs the checkpoint (see `tests/smollm2.rs`).

mod common;

use gpuchain_compute::serving::{
    answer_units, audit_answer, AnswerRecord, ChatModel, ChatRequest, CompletionRequest, Prepared,
};
use gpuchain_jobspec::Sampling;

fn model() -> ChatModel {
    ChatModel::load(&common::smollm2_file(), "smollm2".into()).unwrap()
}

/// Generates as `serve-model` does: until the end-of-sequence token or the budget.
fn serve(model: &ChatModel, p: &Prepared) -> AnswerRecord {
    let mut seq = model.decoder.start(&p.prompt, &p.sampling, 0);
    let mut tokens = Vec::new();
    for _ in 0..p.max_tokens {
        let Some(t) = seq.next_token() else { break };
        tokens.push(t);
        if Some(t) == model.eos {
            break;
        }
    }
    let text_ids: Vec<u32> = tokens
        .iter()
        .copied()
        .filter(|t| Some(*t) != model.eos)
        .collect();
    AnswerRecord {
        text: model.text(&text_ids),
        tokens,
        seed: match p.sampling {
            Sampling::Seeded { seed, .. } => Some(seed),
            Sampling::Greedy => None,
        },
    }
}

fn retext(model: &ChatModel, r: &mut AnswerRecord) {
    let ids: Vec<u32> = r
        .tokens
        .iter()
        .copied()
        .filter(|t| Some(*t) != model.eos)
        .collect();
    r.text = model.text(&ids);
}

#[test]
fn honest_answers_pass_and_every_kind_of_forgery_fails_with_its_reason() {
    let model = model();
    let requests = [
        r#"{"model":"smollm2","max_tokens":8,"temperature":0,"messages":[{"role":"user","content":"Name a colour."}]}"#,
        r#"{"model":"smollm2","max_tokens":8,"seed":11,"temperature":0.8,"messages":[{"role":"user","content":"Count to three."}]}"#,
        r#"{"model":"smollm2","max_tokens":6,"temperature":0,"prompt":"The sky is"}"#,
    ];
    for request in requests {
        let p = if request.contains("messages") {
            serde_json::from_str::<ChatRequest>(request)
                .unwrap()
                .prepare(&model, 99)
                .unwrap()
        } else {
            serde_json::from_str::<CompletionRequest>(request)
                .unwrap()
                .prepare(&model, 99)
                .unwrap()
        };
        let honest = serve(&model, &p);
        let units = answer_units(p.prompt.len(), &honest);
        let audit = |r: &AnswerRecord, units: u64| {
            audit_answer(&model, request.as_bytes(), &r.bytes(), units)
        };
        assert_eq!(audit(&honest, units), Ok(()), "{request}");

        // One token swapped for a neighbour in the vocabulary (text kept consistent).
        let mut swapped = honest.clone();
        swapped.tokens[0] = if swapped.tokens[0] > 100 { 17 } else { 4242 };
        retext(&model, &mut swapped);
        let why = audit(&swapped, units).unwrap_err();
        assert!(why.contains("not a pick"), "{why}");

        // Cut short without the end-of-sequence token.
        if honest.tokens.len() > 1 {
            let mut cut = honest.clone();
            cut.tokens.truncate(1);
            if Some(cut.tokens[0]) != model.eos {
                retext(&model, &mut cut);
                let cut_units = answer_units(p.prompt.len(), &cut);
                let why = audit(&cut, cut_units).unwrap_err();
                assert!(why.contains("without the end-of-sequence"), "{why}");
            }
        }

        // More units than tokens.
        let why = audit(&honest, units + 1).unwrap_err();
        assert!(why.contains("charged"), "{why}");

        // Text that is not the tokens' text.
        let mut other = honest.clone();
        other.text.push_str(" and more");
        let why = audit(&other, units).unwrap_err();
        assert!(why.contains("text"), "{why}");

        // The record must be byte-exact: the receipt hashed these bytes.
        let pretty = serde_json::to_vec_pretty(&honest).unwrap();
        let why = audit_answer(&model, request.as_bytes(), &pretty, units).unwrap_err();
        assert!(why.contains("canonical"), "{why}");

        if let Some(seed) = honest.seed {
            if request.contains("\"seed\"") {
                let mut reseeded = honest.clone();
                reseeded.seed = Some(seed + 1);
                let why = audit(&reseeded, units).unwrap_err();
                assert!(why.contains("seed"), "{why}");
            }
        }
    }
}
