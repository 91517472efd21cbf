// llama.cpp's load time and first token (node-llama-cpp 3.22.1's prebuilt llama.cpp, as
// ../shared/tools/peer-bench installs it), beside the `load:` line of `vkllm run --verbose`:
//
//   node peer_load.mjs --model M.gguf --backend cpu|vulkan [--threads 2] [--ctx 4096] [--no-mmap]
//
// Times, from the call that loads the model: the weights loaded (loadModel), the context made (KV cache
// and compute buffers: createContext), and the first token generated from BOS (greedy). The node.js
// host's own start (~0.1 s) is before the clock.
import {getLlama, LlamaLogLevel} from "node-llama-cpp";

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, arr) => {
    if (a.startsWith("--")) acc.push([a.slice(2), (arr[i + 1] && !arr[i + 1].startsWith("--")) ? arr[i + 1] : "1"]);
    return acc;
}, []));
if (!args.model) throw new Error("peer_load.mjs: give the model with --model M.gguf");
const backend = args.backend ?? "cpu";
const threads = Number(args.threads ?? 2), ctxSize = Number(args.ctx ?? 4096);
if (backend === "vulkan" && process.env.GGML_VK_VISIBLE_DEVICES == null) process.env.GGML_VK_VISIBLE_DEVICES = "0";

const llama = await getLlama({gpu: backend === "vulkan" ? "vulkan" : false, build: "never", usePrebuiltBinaries: true,
    maxThreads: threads, logLevel: LlamaLogLevel.error});
const t0 = performance.now();
const model = await llama.loadModel({modelPath: args.model, gpuLayers: backend === "vulkan" ? "max" : 0,
    useMmap: !args["no-mmap"], ignoreMemorySafetyChecks: true});
const loaded = performance.now();
const context = await model.createContext({contextSize: ctxSize, threads, sequences: 1, ignoreMemorySafetyChecks: true});
const ready = performance.now();
const seq = context.getSequence();
for await (const token of seq.evaluate([model.tokens.bos ?? 1], {temperature: 0})) break;
const first = performance.now();
const s = (ms) => (ms / 1000).toFixed(2);
console.log(`${args.model} llama.cpp ${backend}: weights loaded in ${s(loaded - t0)} s, context of ${ctxSize} made ` +
    `after ${s(ready - t0)} s, the first token after ${s(first - t0)} s`);
