// llama.cpp as the anchor for gpuchain's GGUF path, through node-llama-cpp's prebuilt CPU binaries
// (installed by scripts/llama-cpp-env.sh; never built from source nor downloaded at run time).
//
//   node scripts/llama-cpp-anchor.mjs tokenize MODEL PROMPTS.json OUT.json
//   node scripts/llama-cpp-anchor.mjs greedy MODEL QUESTIONS.json OUT.json [NEW_TOKENS]
//   node scripts/llama-cpp-anchor.mjs reference MODEL PROMPTS.json OUT.json [NEW_TOKENS] [STEPS]
//   node scripts/llama-cpp-anchor.mjs chat MODEL CHATS.json OUT.json [TEMPLATE.jinja]
//   node scripts/llama-cpp-anchor.mjs bench MODEL [--threads 2] [--prompt-tokens N] [--new-tokens M]
//                                                [--runs R] [--batch B]
//
// The install dir is $NODE_LLAMA_CPP_DIR, else ${GPUCHAIN_CACHE:-~/.cache/gpuchain}/node-llama-cpp
// (ES modules ignore NODE_PATH, so the package is imported by absolute path).
import { createRequire } from "node:module";
import { readFileSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const dir = process.env.NODE_LLAMA_CPP_DIR
    ?? join(process.env.GPUCHAIN_CACHE ?? join(homedir(), ".cache/gpuchain"), "node-llama-cpp");
const entry = createRequire(join(dir, "package.json")).resolve("node-llama-cpp");
const { getLlama, LlamaLogLevel } = await import(pathToFileURL(entry).href);

async function load(modelPath, threads, vocabOnly = false) {
    const llama = await getLlama({
        gpu: false,               // CPU backend only
        build: "never",           // never compile llama.cpp from source
        skipDownload: true,       // never fetch llama.cpp sources or binaries
        usePrebuiltBinaries: true, // @node-llama-cpp/linux-x64
        maxThreads: threads,
        logLevel: LlamaLogLevel.error,
        progressLogs: false,
    });
    const model = await llama.loadModel({ modelPath, gpuLayers: 0, vocabOnly });
    return { llama, model };
}

async function tokenize(modelPath, promptsPath, outPath) {
    const prompts = JSON.parse(readFileSync(promptsPath, "utf8"));
    const { llama, model } = await load(modelPath, 1, true);
    // model.tokenize(text, false) is the addon's common_tokenize(vocab, text, false, false), i.e.
    // llama_tokenize(add_special=false, parse_special=false): no BOS/EOS, and text such as
    // "<|im_start|>" is tokenized as plain text. node-llama-cpp returns [] for "" without calling it.
    const out = prompts.map((text) => ({ text, ids: Array.from(model.tokenize(text, false)) }));
    writeFileSync(outPath, "[\n" + out.map((o) => JSON.stringify(o)).join(",\n") + "\n]\n");
    console.error(`llama.cpp ${llama.llamaCppRelease.release}: ${out.length} prompts -> ${outPath}`);
    await llama.dispose();
}

// SmolLM2-Instruct's ChatML prompt for one user message (its default system message first), as
// compute::gguf::chat_prompt writes it.
const chat = (q) => "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face" +
    `<|im_end|>\n<|im_start|>user\n${q}<|im_end|>\n<|im_start|>assistant\n`;

async function greedy(modelPath, questionsPath, outPath, newTokens = "20") {
    const questions = JSON.parse(readFileSync(questionsPath, "utf8"));
    const { llama, model } = await load(modelPath, 2);
    const context = await model.createContext({ contextSize: 512, threads: { ideal: 2, min: 2 } });
    const seq = context.getSequence();
    const out = [];
    for (const question of questions) {
        await seq.clearHistory();
        // model.tokenize(text, true) parses control tokens such as <|im_start|> (parse_special=true),
        // as the chat template needs; no BOS is added (SmolLM2 has none).
        const prompt = Array.from(model.tokenize(chat(question), true));
        const ids = [];
        for await (const t of seq.evaluate(prompt, { temperature: 0, yieldEogToken: true })) {
            ids.push(t);
            if (ids.length === Number(newTokens)) break;
        }
        out.push({ question, prompt, greedy: ids });
    }
    writeFileSync(outPath, "[\n" + out.map((o) => JSON.stringify(o)).join(",\n") + "\n]\n");
    console.error(`llama.cpp ${llama.llamaCppRelease.release}: ${out.length} answers -> ${outPath}`);
    await llama.dispose();
}

// For each prompt of token ids: llama.cpp's greedy continuation and, at each of its first STEPS
// tokens, the log-probabilities of the whole vocabulary (softmax of the logits at temperature 1,
// which node-llama-cpp reports next to the greedy pick). No BOS is added: the ids are fed as given.
// Keys and values are cached in f32, not llama.cpp's default f16, so that the figures carry the
// model's arithmetic rather than the cache's rounding.
async function reference(modelPath, promptsPath, outPath, newTokens = "12", steps = "6") {
    const prompts = JSON.parse(readFileSync(promptsPath, "utf8"));
    const { llama, model } = await load(modelPath, 1);
    const context = await model.createContext({
        contextSize: 128,
        threads: { ideal: 1, min: 1 },
        flashAttention: false,
        experimentalKvCacheKeyType: "F32",
        experimentalKvCacheValueType: "F32",
    });
    const seq = context.getSequence();
    const out = [];
    for (const prompt of prompts) {
        await seq.clearHistory();
        const greedy = [];
        const logprobs = [];
        const metadata = { probabilities: true };
        for await (const o of seq.evaluateWithMetadata(prompt, metadata, { temperature: 0, yieldEogToken: true })) {
            greedy.push(o.token);
            if (logprobs.length < Number(steps)) {
                const row = [];
                for (let t = 0; t < o.probabilities.size; t++) row.push(Number(Math.log(Math.max(o.probabilities.get(t) ?? 0, 1e-30)).toFixed(5)));
                logprobs.push(row);
            }
            if (greedy.length === Number(newTokens)) break;
        }
        out.push({ prompt, greedy, logprobs });
    }
    writeFileSync(outPath, "[\n" + out.map((o) => JSON.stringify(o)).join(",\n") + "\n]\n");
    console.error(`llama.cpp ${llama.llamaCppRelease.release}: ${out.length} prompts -> ${outPath}`);
    await llama.dispose();
}

// Each conversation (an array of {role, content}) put in the model's own chat template: the file's
// `tokenizer.chat_template` (or TEMPLATE.jinja's, for another family's format over the same
// tokenizer) rendered by @huggingface/jinja (the Jinja engine node-llama-cpp ships)
// with the assistant's turn opened, then tokenized by llama.cpp with control tokens parsed. A BOS
// token is added where the file asks for one and the template did not write it.
async function chatTemplate(modelPath, chatsPath, outPath, templatePath) {
    const chats = JSON.parse(readFileSync(chatsPath, "utf8"));
    const { llama, model } = await load(modelPath, 1, true);
    const jinjaEntry = createRequire(entry).resolve("@huggingface/jinja");
    const { Template } = await import(pathToFileURL(jinjaEntry).href);
    const meta = model.fileInfo.metadata.tokenizer;
    const token = (id) => (id === undefined ? "" : meta.ggml.tokens[id]);
    const template = new Template(templatePath ? readFileSync(templatePath, "utf8") : meta.chat_template);
    const bos = meta.ggml.add_bos_token ? meta.ggml.bos_token_id : undefined;
    const out = [];
    for (const messages of chats) {
        const text = template.render({
            messages,
            add_generation_prompt: true,
            bos_token: token(meta.ggml.bos_token_id),
            eos_token: token(meta.ggml.eos_token_id),
        });
        let ids = Array.from(model.tokenize(text, true));
        if (bos !== undefined && ids[0] !== bos) ids = [bos, ...ids];
        out.push({ messages, text, ids });
    }
    writeFileSync(outPath, "[\n" + out.map((o) => JSON.stringify(o)).join(",\n") + "\n]\n");
    console.error(`llama.cpp ${llama.llamaCppRelease.release}: ${out.length} chats -> ${outPath}`);
    await llama.dispose();
}

function flags(args, defaults) {
    const opts = { ...defaults };
    for (let i = 0; i < args.length; i += 2) {
        const key = args[i].replace(/^--/, "").replace(/-(\w)/g, (_, c) => c.toUpperCase());
        if (!(key in defaults) || args[i + 1] === undefined) throw new Error(`bad option ${args[i]}`);
        opts[key] = Number(args[i + 1]);
    }
    return opts;
}

async function bench(modelPath, args) {
    const o = flags(args, { threads: 2, promptTokens: 37, newTokens: 16, runs: 3, batch: 1 });
    const { llama, model } = await load(modelPath, o.threads);
    // One context with `batch` sequences; node-llama-cpp puts the evaluations that the sequences
    // queue in the same event-loop cycle into one llama_decode batch, so B sequences decode together.
    const context = await model.createContext({
        sequences: o.batch,
        contextSize: o.promptTokens + o.newTokens + 8, // per sequence
        batchSize: Math.max(o.batch * o.promptTokens, o.batch),
        threads: { ideal: o.threads, min: o.threads },
    });
    const seqs = Array.from({ length: o.batch }, () => context.getSequence());
    // A fixed prompt of exactly N plain-text tokens (no BOS), the same for every sequence.
    const prompt = model.tokenize("The quick brown fox jumps over the lazy dog. ".repeat(o.promptTokens), false)
        .slice(0, o.promptTokens);
    const step = (its) => Promise.all(its.map((it) => it.next()));
    for (let run = 0; run < o.runs; run++) {
        for (const s of seqs) await s.clearHistory();
        // LlamaContextSequence.evaluate: the first next() decodes the N prompt tokens and samples one
        // token (greedy at temperature 0); each later next() decodes that one token and samples again.
        // So prefill_s = N prompt tokens + 1 sample, decode_s = M one-token decode steps (per sequence).
        const its = seqs.map((s) => s.evaluate(prompt, { temperature: 0, yieldEogToken: true }));
        let t = performance.now();
        let out = await step(its);
        const prefill_s = (performance.now() - t) / 1000;
        const ids = [out[0].value];
        t = performance.now();
        for (let i = 0; i < o.newTokens; i++) {
            out = await step(its);
            if (out.some((r) => r.done)) throw new Error("generation stopped early");
            ids.push(out[0].value);
        }
        const decode_s = (performance.now() - t) / 1000;
        await Promise.all(its.map((it) => it.return()));
        console.log(JSON.stringify({ prefill_tokens: o.promptTokens, prefill_s, decode_tokens: o.newTokens,
            decode_s, batch: o.batch, threads: o.threads }));
        if (run === 0) console.error(`greedy ids (seq 0): ${JSON.stringify(ids)}`);
    }
    await llama.dispose();
}

const [cmd, ...rest] = process.argv.slice(2);
if (cmd === "tokenize" && rest.length === 3) await tokenize(...rest);
else if (cmd === "greedy" && rest.length >= 3) await greedy(...rest);
else if (cmd === "reference" && rest.length >= 3) await reference(...rest);
else if (cmd === "chat" && (rest.length === 3 || rest.length === 4)) await chatTemplate(...rest);
else if (cmd === "bench" && rest.length >= 1) await bench(rest[0], rest.slice(1));
else {
    console.error("usage: llama-cpp-anchor.mjs tokenize MODEL PROMPTS.json OUT.json\n" +
        "       llama-cpp-anchor.mjs greedy MODEL QUESTIONS.json OUT.json [NEW_TOKENS]\n" +
        "       llama-cpp-anchor.mjs reference MODEL PROMPTS.json OUT.json [NEW_TOKENS] [STEPS]\n" +
        "       llama-cpp-anchor.mjs chat MODEL CHATS.json OUT.json [TEMPLATE.jinja]\n" +
        "       llama-cpp-anchor.mjs bench MODEL [--threads T] [--prompt-tokens N] [--new-tokens M] [--runs R] [--batch B]");
    process.exit(2);
}
