// F16 weights: a unit is 32 consecutive elements (8 uvec2 loads, unpacked in pairs); the last unit
// of a row may be partial (`runs` < 8). Rows must hold a multiple of 4 elements (8-byte runs).
#include "dequant_common.glsl"

const bool DENSE = true;
const uint BLOCK_ELEMS = UNIT_ELEMS;
const uint BLOCK_BYTES = UNIT_ELEMS * 2;
const uint SCALE_GROUPS = 1;
const bool HAS_BIAS = false;

uint weight_row_bytes(uint cols) { return cols * 2; }

uint run_element(uint unit, uint run) { return 4 * run; }

void decode_unit(uint block_byte, uint unit, uint runs, out QVEC4 q[UNIT_RUNS], out vec2 scale_bias[SCALE_GROUPS]) {
    [[unroll]] for (uint i = 0; i < UNIT_RUNS; ++i) {
        q[i] = QVEC4(0);
        if (i < runs) {
            uvec2 halves = weight_words2((block_byte >> 3) + i);
#ifdef F16
            q[i] = f16vec4(unpackFloat2x16(halves.x), unpackFloat2x16(halves.y));
#else
            q[i] = vec4(unpackHalf2x16(halves.x), unpackHalf2x16(halves.y));
#endif
        }
    }
    scale_bias[0] = vec2(1.0, 0.0);
}

#ifdef SLICES
const uint SLICE_ELEMS = 8;  // one 16-byte load where rows are 16-byte aligned (a multiple of 8 columns)
#define SLICE_PAIR_VALUES unpackHalf2x16
#include "dequant_slices.glsl"
#endif
