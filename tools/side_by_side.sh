#!/bin/bash
# Issue 8's side-by-side benchmark: vkllm, llama.cpp Vulkan and llama.cpp CPU on the same GGUFs, one
# after the other on this machine, as one markdown table (tok/s are medians over the repetitions).
#
#   tools/side_by_side.sh BUILD_DIR PP TG REPS MODEL...
#
# llama.cpp comes from ../shared/tools/peer-bench (prebuilt, from npm; needs node). The runs of one
# model follow each other within minutes, so compare rows of one model, not across machines' loads.
set -euo pipefail
build=$(cd "$1" && pwd)
pp=$2 tg=$3 reps=$4
shift 4
here=$(cd "$(dirname "$0")" && pwd)
peer=$here/../../shared/tools/peer-bench
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# field FILE EXPR: a value of a JSON file, EXPR in JavaScript over `j`.
field() { node -e "const j = JSON.parse(require('fs').readFileSync('$1')); console.log($2)"; }

echo "| model | runtime | pp$pp tok/s | tg$tg tok/s | decode dispatches / token |"
echo "|---|---|---:|---:|---:|"
for model in "$@"; do
    name=$(basename "$model" .gguf)
    n_vocab=$("$build/frontends/cli/vkllm" info "$model" | sed -n 's/.*tokenizer\.ggml\.tokens *\[string; \([0-9]*\)\].*/\1/p')
    "$build/frontends/cli/vkllm" bench -m "$model" -p "$pp" -n "$tg" -r "$reps" --json > "$work/vkllm.json"
    printf '| %s | vkllm | %.2f | %.2f | %s |\n' "$name" "$(field "$work/vkllm.json" j.pp.tok_s)" \
        "$(field "$work/vkllm.json" j.tg.tok_s)" "$(field "$work/vkllm.json" j.decode.dispatches_per_token)"
    for backend in vulkan cpu; do
        "$peer" --model "$model" --backend "$backend" --pp "$pp" --tg "$tg" --reps "$reps" --vocab "$n_vocab" \
            --json "$work/$backend.json" > /dev/null 2>&1
        printf '| %s | llama.cpp %s | %.2f | %.2f | |\n' "$name" "$backend" \
            "$(field "$work/$backend.json" j.pp.tok_s_wall)" "$(field "$work/$backend.json" j.tg.tok_s_wall)"
    done
done
