// What the shared-memory matmul kernels stage for each unit of 32 along k (matmul_body.glsl,
// matmul_coopmat.comp): a tile row's unit of weights, decoded, and the x values it multiplies, run by
// run in the order decode_unit gives (run_element maps a run to its columns). Included after
// matmul_tile.glsl, with x bound as x4 (binding 1, vec4s).

// Unit u of tile row i (rows past the bound segment repeat its last): q * run_scale * scale + bias.
void decode_tile_row(uint first_row, uint i, uint u, uint runs, out QVEC4 values[UNIT_RUNS]) {
    const uint units_per_block = BLOCK_ELEMS / UNIT_ELEMS;
    const uint row = segment_row(first_row + i);
    QVEC4 q[UNIT_RUNS];
    vec2 scale_bias[SCALE_GROUPS];
    decode_unit(row * weight_row_bytes(p.cols) + (u / units_per_block) * BLOCK_BYTES, u % units_per_block, runs, q,
                scale_bias);
    [[unroll]] for (uint r = 0; r < UNIT_RUNS; ++r) {
        const vec2 sb = scale_bias[r / (UNIT_RUNS / SCALE_GROUPS)];
        values[r] = QVEC4(fma(vec4(q[r]) * run_scale(r), vec4(sb.x), vec4(sb.y)));
    }
}

// The x values run r of unit u multiplies for tile token n; zeros past the last token and, for the
// dense types, past the row's end (r >= runs).
vec4 tile_input_run(uint first_token, uint n, uint u, uint r, uint runs) {
    const uint units_per_block = BLOCK_ELEMS / UNIT_ELEMS;
    uint token;
    const bool present = tile_input_row(first_token, n, token);
    vec4 x = vec4(0.0);
    if (present && r < runs)
        x = x4[(token * p.cols + (u / units_per_block) * BLOCK_ELEMS + run_element(u % units_per_block, r)) >> 2];
    return x;
}
