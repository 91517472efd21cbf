#!/usr/bin/env bash
# The cooperative-matrix pipelines (ops/coopmat.h) through AMD's compiler for RDNA3, as scripts/test
# puts every other pipeline through it for RDNA2: RADV's null hardware (RADV_FORCE_FAMILY=navi31, no
# GPU needed) with VKLLM_COOPMAT=1. Debian 12's Mesa 22.3 reports no cooperative matrices there, so
# bookworm-backports' RADV (Mesa 25.0.7) is fetched with apt into a private apt state and unpacked
# into the build folder, not installed (as scripts/cross-test does with arm64 lavapipe). The models
# cover every weight type's matmul (fixtures, and synth models for the types no fixture has: q5_k
# needs the 1b preset), matmul_id (the MoE fixtures) and the attention prefill kernel with heads of
# 32, 48 (the MLA fixture's latent and rope key), 64 and 256 dims (Gemma 3 1B's); synth's 1b models
# take about 1.6 GB in the build folder. Prints each cooperative-matrix pipeline's registers, LDS and
# occupancy; exits 1 on a spill, a pipeline that does not compile, or a driver without cooperative
# matrices.
# Usage: tools/coopmat_radv_check.sh [BUILD_DIR]   (default: build, configured with the toolchain)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
vkllm=$build/frontends/cli/vkllm
[ -x "$vkllm" ] || { echo "tools/coopmat_radv_check.sh: build $vkllm first" >&2; exit 2; }

radv=$build/radv-backports
icd=$PWD/$radv/radeon_icd.json
if [ ! -f "$icd" ]; then
  mkdir -p $radv/apt/lists/partial $radv/apt/cache/archives/partial
  echo "deb [arch=amd64 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg]" \
       "http://deb.debian.org/debian bookworm-backports main" > $radv/apt/sources.list
  apt_private=(-o Dir::Etc::sourcelist="$PWD/$radv/apt/sources.list" -o Dir::Etc::sourceparts=-
               -o Dir::State::Lists="$PWD/$radv/apt/lists" -o Dir::Cache="$PWD/$radv/apt/cache"
               -o APT::Sandbox::User="$(id -un)")
  apt-get "${apt_private[@]}" update -qq
  (cd $radv && apt-get "${apt_private[@]}" download mesa-vulkan-drivers:amd64/bookworm-backports)
  dpkg-deb -x $radv/mesa-vulkan-drivers_*_amd64.deb $radv/root
  echo "{\"file_format_version\": \"1.0.0\", \"ICD\": {\"library_path\":" \
       "\"$PWD/$radv/root/usr/lib/x86_64-linux-gnu/libvulkan_radeon.so\", \"api_version\": \"1.3.0\"}}" > "$icd"
fi
export VK_DRIVER_FILES=$icd VK_ICD_FILENAMES=$icd RADV_FORCE_FAMILY=navi31 VKLLM_COOPMAT=1

models=$build/coopmat-check-models
mkdir -p "$models"
for type in f16 bf16 q4_1 q5_0 q5_1; do
  [ -f "$models/llama-tiny-$type.gguf" ] ||
    "$vkllm" synth --arch llama --preset tiny --type $type -o "$models/llama-tiny-$type.gguf" >/dev/null
done
[ -f "$models/llama-1b-q5_k.gguf" ] ||
  "$vkllm" synth --arch llama --preset 1b --type q5_k --threads "$(nproc)" -o "$models/llama-1b-q5_k.gguf" >/dev/null
[ -f "$models/gemma3-1b-q4_0.gguf" ] ||
  "$vkllm" synth --arch gemma3 --preset 1b --type q4_0 --threads "$(nproc)" -o "$models/gemma3-1b-q4_0.gguf" >/dev/null

failed=0
for model in ../shared/fixtures/{llama_f32,llama_q4_0,llama_q8_0,llama_q4k_q6k,gemma3_f32,mistral4_q8_0,minimax_m3_f32}/model.gguf \
             "$models"/*.gguf; do
  [ -f "$model" ] || continue
  echo "== $model"
  if ! out=$("$vkllm" shaders --stats -m "$model" --device "null hardware" 2>&1); then
    failed=1
  fi
  grep -E "coopmat|summary|error|cannot" <<< "$out" | grep -v "invalid pci bus info" || true
  grep -q "coopmat" <<< "$out" || { echo "   no cooperative-matrix pipeline: the driver reports none"; failed=1; }
done
[ $failed -eq 0 ] && echo "== every cooperative-matrix pipeline compiles for navi31 without spills"
exit $failed
