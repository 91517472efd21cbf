#!/usr/bin/env bash
# ctest entry: starts `vkllm serve` on a free port (stories260K, 4 sequences, 256 tokens each, an API
# key), runs the OpenAI-client and raw-HTTP tests against it, then stops it with SIGTERM and expects
# exit 0 and no validation message in its log. lifecycle.test.mjs, hostile_lifecycle.test.mjs,
# hostile_parse.test.mjs and agents.test.mjs start servers of their own.
# Usage: run_openai_tests.sh VKLLM SOURCE_DIR
set -uo pipefail
vkllm=$1
source_dir=$2
tests=$source_dir/tests/server
if ! command -v node >/dev/null; then
  echo "node is missing: run scripts/setup (it installs nodejs and npm)" >&2
  exit 1
fi
for package in openai zod; do
  if [ ! -d "$tests/node_modules/$package" ]; then
    echo "the $package npm package is missing: run scripts/setup (npm ci --prefix tests/server)" >&2
    exit 1
  fi
done
log=$(mktemp)
trap 'rm -f "$log"' EXIT
"$vkllm" serve -m "$source_dir/models/stories260K.gguf" --port 0 --parallel 4 -c 256 --api-key test-key 2>"$log" &
server=$!
for _ in $(seq 1 1200); do
  grep -q " on http://" "$log" && break
  if ! kill -0 "$server" 2>/dev/null; then cat "$log" >&2; echo "vkllm serve exited before listening" >&2; exit 1; fi
  sleep 0.1
done
url=$(sed -n 's/.* on \(http:\/\/[^ ]*\) .*/\1/p' "$log")
if [ -z "$url" ]; then kill -KILL "$server"; cat "$log" >&2; echo "vkllm serve did not start listening in 120 s" >&2; exit 1; fi

# One file at a time: the timing checks of robustness.test.mjs must not share the server.
VKLLM_SERVER_URL=$url VKLLM_API_KEY=test-key VKLLM_BIN=$vkllm VKLLM_SOURCE_DIR=$source_dir \
  node --test --test-concurrency=1 "$tests/openai.test.mjs" "$tests/robustness.test.mjs" "$tests/lifecycle.test.mjs" \
    "$tests/hostile_lifecycle.test.mjs" "$tests/hostile_parse.test.mjs" "$tests/agents.test.mjs"
tests_status=$?

kill -TERM "$server"
wait "$server"
server_status=$?
cat "$log" >&2
if [ "$server_status" -ne 0 ]; then echo "vkllm serve exited with $server_status after SIGTERM" >&2; exit 1; fi
if grep -q "validation:" "$log"; then echo "the validation layer reported messages" >&2; exit 1; fi
exit "$tests_status"
