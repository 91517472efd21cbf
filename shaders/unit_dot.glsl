// Shared by matvec_body.glsl and matmul_lanes.glsl; included after a dequant_<type>.glsl.

// sum + q . x over one run: fp16 variants round once per 4-term dot, fp32 ones fuse every step.
float run_dot(QVEC4 q, QVEC4 x, float sum) {
#ifdef F16
    return sum + float(dot(q, x));
#else
    return fma(q.w, x.w, fma(q.z, x.z, fma(q.y, x.y, fma(q.x, x.x, sum))));
#endif
}

// acc plus one scale group's share: its scale times its runs' dot, and its bias times its sum of x.
float add_group(float acc, vec2 scale_bias, float group_dot, float xsum) {
    acc = fma(scale_bias.x, group_dot, acc);
    return HAS_BIAS ? fma(scale_bias.y, xsum, acc) : acc;
}

// acc plus one unit of one row dotted with the matching x values; xsum holds each scale group's sum
// of x. matvec and matmul_lanes both sum through run_dot and add_group in this order, so a token's
// result does not depend on the kernel (prefill in chunks of any size agrees with prefill in one).
float unit_dot(QVEC4 q[UNIT_RUNS], vec2 scale_bias[SCALE_GROUPS], QVEC4 xs[UNIT_RUNS], float xsum[SCALE_GROUPS],
               float acc) {
    const uint runs_per_group = UNIT_RUNS / SCALE_GROUPS;
    [[unroll]] for (uint g = 0; g < SCALE_GROUPS; ++g) {
        float group_dot = 0.0;
        [[unroll]] for (uint k = 0; k < runs_per_group; ++k)
            group_dot = run_dot(q[g * runs_per_group + k], xs[g * runs_per_group + k], group_dot);
        acc = add_group(acc, scale_bias[g], group_dot, xsum[g]);
    }
    return acc;
}

#ifdef UNIT_DOT_ROWS
// unit_dot of UNIT_DOT_ROWS rows against the same x, their sums advancing together: independent FMAs
// for a CPU's pipelines and each x value loaded once for all the rows; each row's arithmetic is
// unit_dot's.
void unit_dots(QVEC4 q[UNIT_DOT_ROWS][UNIT_RUNS], vec2 scale_bias[UNIT_DOT_ROWS][SCALE_GROUPS], QVEC4 xs[UNIT_RUNS],
               float xsum[SCALE_GROUPS], inout float acc[UNIT_DOT_ROWS]) {
    const uint runs_per_group = UNIT_RUNS / SCALE_GROUPS;
    [[unroll]] for (uint g = 0; g < SCALE_GROUPS; ++g) {
        float group_dot[UNIT_DOT_ROWS];
        [[unroll]] for (uint i = 0; i < UNIT_DOT_ROWS; ++i) group_dot[i] = 0.0;
        [[unroll]] for (uint k = 0; k < runs_per_group; ++k)
            [[unroll]] for (uint i = 0; i < UNIT_DOT_ROWS; ++i)
                group_dot[i] = run_dot(q[i][g * runs_per_group + k], xs[g * runs_per_group + k], group_dot[i]);
        [[unroll]] for (uint i = 0; i < UNIT_DOT_ROWS; ++i) acc[i] = add_group(acc[i], scale_bias[i][g], group_dot[i], xsum[g]);
    }
}
#endif
