// llama.cpp's parallel decode (node-llama-cpp 3.22.1's prebuilt llama.cpp, as ../shared/tools/peer-bench
// installs it): B sequences of one context generate at once, which llama.cpp batches into one decode
// per step. For each B: aggregate generated tok/s over the steps where all B generate.
//
//   node peer_parallel.mjs --model M.gguf --backend cpu|vulkan --parallel 1,2,4,8 [--threads 2] [--tg 16]
//
// Each sequence is first given one token (BOS) and a warm-up of 2 tokens; the clock then runs while all
// B generate --tg tokens greedily.
import {getLlama, LlamaLogLevel} from "node-llama-cpp";

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, arr) => {
    if (a.startsWith("--")) acc.push([a.slice(2), (arr[i + 1] && !arr[i + 1].startsWith("--")) ? arr[i + 1] : "1"]);
    return acc;
}, []));
const backend = args.backend ?? "cpu";
const threads = Number(args.threads ?? 2), nTG = Number(args.tg ?? 16);
const batches = (args.parallel ?? "1,2,4,8").split(",").map(Number);
if (backend === "vulkan" && process.env.GGML_VK_VISIBLE_DEVICES == null) process.env.GGML_VK_VISIBLE_DEVICES = "0";

const llama = await getLlama({gpu: backend === "vulkan" ? "vulkan" : false, build: "never", usePrebuiltBinaries: true,
    maxThreads: threads, logLevel: LlamaLogLevel.error});
const model = await llama.loadModel({modelPath: args.model, gpuLayers: backend === "vulkan" ? "max" : 0,
    ignoreMemorySafetyChecks: true});
const bos = model.tokens.bos ?? 1;

console.log(`| parallel | llama.cpp ${backend} tok/s (all) | vs 1 |`);
console.log("|---:|---:|---:|");
let single = 0;
for (const b of batches) {
    const context = await model.createContext({contextSize: 256 * b, sequences: b, threads, ignoreMemorySafetyChecks: true});
    const sequences = Array.from({length: b}, () => context.getSequence());
    // Every sequence generates `n` tokens; all run concurrently, so llama.cpp batches their steps.
    const generate = (n) => Promise.all(sequences.map(async (seq) => {
        let count = 0;
        for await (const _ of seq.evaluate([bos], {temperature: 0})) if (++count >= n) break;
        await seq.clearHistory();
    }));
    await generate(2);
    const start = performance.now();
    await generate(nTG);
    const tokS = b * nTG / ((performance.now() - start) / 1000);
    if (b === 1) single = tokS;
    console.log(`| ${b} | ${tokS.toFixed(2)} | ${single ? (tokS / single).toFixed(2) + "x" : "-"} |`);
    await context.dispose();
}
