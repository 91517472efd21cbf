// Embeddings from llama.cpp (node-llama-cpp 3.22.1's prebuilt CPU build) of each line of a text file,
// through createEmbeddingContext() and getEmbeddingFor() as node-llama-cpp's users call them.
//
//   peer-embeddings --model M.gguf --texts T.txt --out REF.json [--flash-attention on|off] [--threads 1]
//
// REF.json: {"llama_cpp_release", "flash_attention", "model", "pooling_type", "texts": [{"text", "tokens",
// "norm", "embedding"}]}. "embedding" is the vector exactly as getEmbeddingFor returns it: llama.cpp's
// pooled hidden state (llama_get_embeddings_seq), which node-llama-cpp does not normalize ("norm" is its
// Euclidean length); "tokens" is the input it evaluated, [CLS] and [SEP] added for a WordPiece vocabulary.
import {getLlama, LlamaLogLevel} from "node-llama-cpp";
import fs from "node:fs";

const argv = process.argv.slice(2);
const arg = (k, d) => { const i = argv.indexOf(`--${k}`); return i >= 0 ? argv[i + 1] : d; };
const modelPath = arg("model"), textsPath = arg("texts"), outPath = arg("out");
if (!modelPath || !textsPath || !outPath) { console.error("usage: peer-embeddings --model M --texts T --out F"); process.exit(2); }
const threads = Number(arg("threads", 1));
const flashAttention = arg("flash-attention", "off") === "on";
const texts = fs.readFileSync(textsPath, "utf8").replace(/\n$/, "").split("\n");
// The llama.cpp release node-llama-cpp ships (not an exported path: read from the file beside the script).
const release = JSON.parse(fs.readFileSync(new URL("node_modules/node-llama-cpp/llama/binariesGithubRelease.json",
                                                   import.meta.url), "utf8")).release;

const llama = await getLlama({gpu: false, build: "never", usePrebuiltBinaries: true, maxThreads: threads,
    logLevel: LlamaLogLevel.warn, logger: (level, msg) => { if (level === "error" || level === "fatal") process.stderr.write(msg); }});
const model = await llama.loadModel({modelPath, gpuLayers: 0, useMmap: true, ignoreMemorySafetyChecks: true,
    defaultContextFlashAttention: flashAttention});
const context = await model.createEmbeddingContext({threads, ignoreMemorySafetyChecks: true});
// The input getEmbeddingFor evaluates for a text (LlamaEmbeddingContext._prepareInput): [CLS] ... [SEP]
// for WordPiece, BOS and EOS where the vocabulary adds them.
const wpm = model.vocabularyType === "wpm";
const first = wpm || model.tokens.shouldPrependBosToken ? model.tokens.bos : null;
const last = wpm ? model.tokens.sep : model.tokens.shouldAppendEosToken ? model.tokens.eos : null;
const out = [];
for (const text of texts) {
    const tokens = [...model.tokenize(text)];
    if (first != null && tokens[0] !== first) tokens.unshift(first);
    if (last != null && tokens.at(-1) !== last) tokens.push(last);
    const {vector} = await context.getEmbeddingFor(tokens);
    const norm = Math.sqrt(vector.reduce((sum, v) => sum + v * v, 0));
    out.push({text, tokens: tokens.map(Number), norm, embedding: [...vector]});
}
const result = {llama_cpp_release: release, flash_attention: flashAttention, model: modelPath.split("/").at(-1),
                pooling_type: model.fileInfo.metadata[model.fileInfo.metadata.general.architecture]?.pooling_type ?? null,
                texts: out};
fs.writeFileSync(outPath, JSON.stringify(result, null, 1) + "\n");
console.log(`${out.length} embeddings of ${out[0]?.embedding.length ?? 0} values -> ${outPath} (llama.cpp ${release}, ` +
            `flash attention ${flashAttention ? "on" : "off"})`);
await context.dispose(); await model.dispose(); await llama.dispose();
