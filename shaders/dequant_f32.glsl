// F32 weights. Dense types have no blocks: a unit is 32 consecutive elements (8 uvec4 loads), and
// the last unit of a row may be partial (`runs` < 8). Rows must hold a multiple of 4 elements so that
// every run is one aligned 16-byte load.
#include "dequant_common.glsl"

const bool DENSE = true;
const uint BLOCK_ELEMS = UNIT_ELEMS;
const uint BLOCK_BYTES = UNIT_ELEMS * 4;
const uint SCALE_GROUPS = 1;
const bool HAS_BIAS = false;

uint weight_row_bytes(uint cols) { return cols * 4; }

uint run_element(uint unit, uint run) { return 4 * run; }

void decode_unit(uint block_byte, uint unit, uint runs, out QVEC4 q[UNIT_RUNS], out vec2 scale_bias[SCALE_GROUPS]) {
    [[unroll]] for (uint i = 0; i < UNIT_RUNS; ++i) {
        q[i] = QVEC4(0);
        if (i < runs) q[i] = QVEC4(uintBitsToFloat(weight_words4((block_byte >> 4) + i)));
    }
    scale_bias[0] = vec2(1.0, 0.0);
}

#ifdef SLICES
const uint SLICE_ELEMS = 8;  // two 16-byte loads
#include "dequant_slices.glsl"

void decode_slice(uint block_byte, uint part, uint runs, out vec4 q[SLICE_RUNS], out vec2 scale_bias[SLICE_GROUPS]) {
    [[unroll]] for (uint i = 0; i < SLICE_RUNS; ++i) {
        q[i] = vec4(0.0);
        if (i < runs) q[i] = uintBitsToFloat(weight_words4((block_byte >> 4) + 2 * part + i));
    }
    scale_bias[0] = vec2(1.0, 0.0);
}
#endif
