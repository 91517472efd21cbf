// BF16 weights: value = bits << 16 as f32 (model-notes.md A.3). A unit is 32 consecutive elements
// (8 uvec2 loads); the last unit of a row may be partial (`runs` < 8). Rows must hold a multiple of 4
// elements. No fp16 variant: bf16's range does not fit in fp16.
#include "dequant_common.glsl"

const bool DENSE = true;
const uint BLOCK_ELEMS = UNIT_ELEMS;
const uint BLOCK_BYTES = UNIT_ELEMS * 2;
const uint SCALE_GROUPS = 1;
const bool HAS_BIAS = false;

uint weight_row_bytes(uint cols) { return cols * 2; }

uint run_element(uint unit, uint run) { return 4 * run; }

vec2 unpack_bf16x2(uint word) { return uintBitsToFloat(uvec2(word << 16, word & 0xFFFF0000u)); }

void decode_unit(uint block_byte, uint unit, uint runs, out QVEC4 q[UNIT_RUNS], out vec2 scale_bias[SCALE_GROUPS]) {
    [[unroll]] for (uint i = 0; i < UNIT_RUNS; ++i) {
        q[i] = QVEC4(0);
        if (i < runs) {
            uvec2 pair = weight_words2((block_byte >> 3) + i);
            q[i] = QVEC4(unpack_bf16x2(pair.x), unpack_bf16x2(pair.y));
        }
    }
    scale_bias[0] = vec2(1.0, 0.0);
}

#ifdef SLICES
const uint SLICE_ELEMS = 8;  // as F16's
#define SLICE_PAIR_VALUES unpack_bf16x2
#include "dequant_slices.glsl"
#endif
