#!/bin/bash
# The long-context check of issue 8: vkllm's logits at every position of a long prompt against
# llama.cpp's (peer-logits, CPU) on the same GGUF, so that a kernel stopping early past some position
# (lavapipe's silent loop cap) cannot hide behind a fast benchmark figure.
#
#   tools/long_context_check.sh BUILD_DIR [N_TOKENS (default 4096)] [MODEL (default: a tiny synth llama)]
#
# Exits 1 when tools/logits_check fails (median row rel RMS > 0.01, top-1 agreement < 95%, or any row of
# the last tenth > 0.1). Needs node and npm for ../shared/tools/peer-bench's llama.cpp.
set -euo pipefail
build=$(cd "$1" && pwd)
n_tokens=${2:-4096}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
model=${3:-$work/tiny.gguf}
[[ -f $model ]] || "$build/frontends/cli/vkllm" synth --arch llama --preset tiny --type f32 -o "$model" >/dev/null
here=$(cd "$(dirname "$0")" && pwd)
peer_dir=${VKLLM_PEER_DIR:-$HOME/.cache/vkllm-peer}
[[ -f $peer_dir/peer-logits.mjs ]] || "$here/../../shared/tools/peer-bench" --version >/dev/null

# BOS, then deterministic ids from the vocabulary's middle (no specials or byte tokens).
n_vocab=$("$build/frontends/cli/vkllm" info "$model" | sed -n 's/.*tokenizer\.ggml\.tokens *\[string; \([0-9]*\)\].*/\1/p')
awk -v n="$n_tokens" -v v="$n_vocab" 'BEGIN { x = 42; printf "1"; lo = int(v / 2);
    for (i = 1; i < n; ++i) { x = (x * 1103515245 + 12345) % 2147483648; printf " %d", lo + x % (v - lo) } print "" }' \
    > "$work/tokens.txt"

cp "$here/../../shared/tools/peer-logits.mjs" "$peer_dir/peer-logits.mjs" 2>/dev/null || true
(cd "$peer_dir" && node peer-logits.mjs --model "$model" --tokens-file "$work/tokens.txt" --out "$work/ref.f32" \
    --threads 2 --ctx "$n_tokens")
"$build/frontends/cli/vkllm" eval -m "$model" -c "$n_tokens" --tokens-file "$work/tokens.txt" --logits-out "$work/got.f32"
"$build/tools/logits_check" "$work/got.f32" "$work/ref.f32" "$n_vocab"
