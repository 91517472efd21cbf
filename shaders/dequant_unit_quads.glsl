// decode_unit for the types that gather a unit's quants as quads (Q4_K, Q5_K, Q6_K: unit_quads, quants
// centred on QUANT_CENTRE), and their slices: one unit each, as the same quads. Included after
// unit_quads.

void decode_unit(uint block_byte, uint unit, uint runs, out QVEC4 q[UNIT_RUNS], out vec2 scale_bias[SCALE_GROUPS]) {
    uint quads[UNIT_RUNS];
    unit_quads(block_byte, unit, quads, scale_bias);
    [[unroll]] for (uint i = 0; i < UNIT_RUNS; ++i) q[i] = QVEC4(ivec4(bytes_of(quads[i])) - int(QUANT_CENTRE));
}

#ifdef SLICES
#define SLICE_LAYOUT_UNITS
#include "dequant_slices.glsl"

void decode_slice(uint block_byte, uint part, uint runs, out vec4 q[SLICE_RUNS], out vec2 scale_bias[SLICE_GROUPS]) {
    uint quads[UNIT_RUNS];
    unit_quads(block_byte, part, quads, scale_bias);
    [[unroll]] for (uint i = 0; i < SLICE_RUNS; ++i) q[i] = quad_values(quads[i], ~0u, QUANT_CENTRE);
}
#endif
