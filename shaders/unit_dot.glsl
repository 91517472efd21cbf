// Shared by matvec_body.glsl and matmul_lanes.glsl; included after a dequant_<type>.glsl.

// One unit of one row dotted with the matching x values; xsum holds each scale group's sum of x.
float unit_dot(QVEC4 q[UNIT_RUNS], vec2 scale_bias[SCALE_GROUPS], QVEC4 xs[UNIT_RUNS], float xsum[SCALE_GROUPS]) {
    const uint runs_per_group = UNIT_RUNS / SCALE_GROUPS;
    float sum = 0.0;
    [[unroll]] for (uint g = 0; g < SCALE_GROUPS; ++g) {
        // Each 4-term dot in the variant's precision; longer sums in fp32, which keeps fp16 rounding
        // to one dot's worth.
        float group_dot = 0.0;
        [[unroll]] for (uint k = 0; k < runs_per_group; ++k)
            group_dot += float(dot(q[g * runs_per_group + k], xs[g * runs_per_group + k]));
        sum += scale_bias[g].x * group_dot;
        if (HAS_BIAS) sum += scale_bias[g].y * xsum[g];
    }
    return sum;
}
