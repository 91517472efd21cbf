// Matrix-vector product y = W in (decode), or y += W in with p.accumulate (the residual add fused in).
// Included after a dequant_<type>.glsl. Bindings: 0 weights (one split segment), 1 x, 2 y, 3 the
// RMSNorm weight (bound but unread for the other inputs); with TEXEL_READS 0, 1 and 3 are uniform
// texel buffers (shaders/dequant_common.glsl says why).
// The input vector `in` is formed from x as it is loaded (specialization INPUT), so no pass writes it:
//   INPUT_PLAIN     in = x
//   INPUT_RMS_NORM  in = x / sqrt(mean(x^2) + p.eps) * norm_weight, as a scalar epilogue: the rows are
//                   dotted with x * norm_weight while each team sums the x^2 of the same loads (a team
//                   reads all of x once), and its results are scaled by 1 / rms at the end
//   INPUT_SWIGLU    in = swiglu(gate, up), INPUT_GEGLU in = geglu(gate, up), for x = [gate | up] of
//                   cols values each (shaders/glu.glsl); every team recomputes them (ops::glu_input_pays)
// With TOKENS > 1 (INPUT_PLAIN), W multiplies that many vectors at once: each piece of weights is decoded
// once and dotted with every token's x (a small batch reads the weights once).
// With OUTPUT a GLU (OUTPUT_SWIGLU...), W is [gate | up] (2 n rows, one segment) and y [TOKENS][n] is
// act(gate x) * (up x): a team's first ROWS_PER_TEAM / 2 rows are gate rows, the others the up rows
// of the same outputs, so each activation is computed once, by the team that owns both of its dots.
// With EXPERT_IDS (ops/expert_matmul.h) W is a stack of expert matrices and workgroup z is a slot:
// y[slot] = W_{ids[slot]} in[slot] (INPUT_PLAIN or a GLU). Bindings: 0 weights, 1 x, 2 ids, 3 y.
//
// A team of THREADS_PER_ROW lanes shares ROWS_PER_TEAM rows: lane l takes pieces l, l + T, ... of
// each row, so consecutive lanes read consecutive weight bytes and one x load serves all the team's
// rows. A piece is what a lane decodes in one step: on GPUs (storage buffers) a slice of about 16 bytes
// of quants (dequant_slices.glsl), dotted in fp32; on CPU devices (TEXEL_READS) a 32-element unit,
// summed as matmul_lanes.glsl sums it. Partial sums meet through subgroupAdd, and through shared
// memory when a team spans several subgroups. The host picks THREADS_PER_ROW so that no invocation
// loops more than a few thousand times (lavapipe stops longer loops) and wide enough to keep the
// device's memory busy.
#include "params.h"
#include "glu.glsl"

const uint MAX_ROWS_PER_TEAM = 8;
const uint MAX_TOKENS = 8;
const uint INPUT_PLAIN = 0, INPUT_RMS_NORM = 1, INPUT_SWIGLU = 2, INPUT_GEGLU = 3, INPUT_SWIGLU_OAI = 4;  // ops::MatvecInput::Kind
const uint OUTPUT_PLAIN = 0, OUTPUT_SWIGLU = INPUT_SWIGLU, OUTPUT_GEGLU = INPUT_GEGLU, OUTPUT_SWIGLU_OAI = INPUT_SWIGLU_OAI;

layout(local_size_x_id = 0) in;
layout(constant_id = 3) const uint THREADS_PER_ROW = 32;  // 1 or a multiple of the subgroup size
layout(constant_id = 4) const uint ROWS_PER_TEAM = 1;     // 1..MAX_ROWS_PER_TEAM
layout(constant_id = 5) const uint INPUT = INPUT_PLAIN;
layout(constant_id = 6) const uint OUTPUT = OUTPUT_PLAIN;  // a GLU: ROWS_PER_TEAM even
layout(constant_id = 7) const uint TOKENS = 1;  // 1..MAX_TOKENS vectors (more than 1: INPUT_PLAIN)

#ifdef TEXEL_READS
#include "texel_reads.glsl"
layout(set = 0, binding = 1) uniform utextureBuffer x_texels;
vec4 x_at(uint i4) { return texel_vec4(x_texels, i4); }
#else
layout(set = 0, binding = 1, std430) readonly buffer Input { vec4 x4[]; };
vec4 x_at(uint i4) { return x4[i4]; }
#endif
#ifdef EXPERT_IDS
layout(set = 0, binding = 2, std430) readonly buffer ExpertIds { uint expert_ids[]; };
layout(set = 0, binding = 3, std430) writeonly buffer Output { float y[]; };
layout(push_constant) uniform Push { MatvecIdParams p; };
#else
layout(set = 0, binding = 2, std430) buffer Output { float y[]; };
#ifdef TEXEL_READS
layout(set = 0, binding = 3) uniform utextureBuffer norm_weight_texels;
vec4 norm_weight_at(uint i4) { return texel_vec4(norm_weight_texels, i4); }
#else
layout(set = 0, binding = 3, std430) readonly buffer NormWeight { vec4 norm_weight4[]; };
vec4 norm_weight_at(uint i4) { return norm_weight4[i4]; }
#endif
layout(push_constant) uniform Push { MatvecParams p; };
#endif
#include "subgroup_ops.glsl"

// in[4 i4 .. 4 i4 + 3], before INPUT_RMS_NORM's 1 / rms (whose x^2 go to sum_squares).
vec4 input4(uint i4, inout float sum_squares) {
#ifndef EXPERT_IDS
    if (INPUT == INPUT_RMS_NORM) {
        const vec4 x = x_at(i4);
        sum_squares = fma(x.x, x.x, fma(x.y, x.y, fma(x.z, x.z, fma(x.w, x.w, sum_squares))));
        return x * norm_weight_at(i4);
    }
#endif
    if (INPUT == INPUT_SWIGLU) return swiglu(x_at(i4), x_at(i4 + p.cols / 4));
    if (INPUT == INPUT_GEGLU) return geglu(x_at(i4), x_at(i4 + p.cols / 4));
    if (INPUT == INPUT_SWIGLU_OAI) return swiglu_oai(x_at(i4), x_at(i4 + p.cols / 4));
    return x_at(i4);
}

// acc[row * MAX_TOKENS + token], then the lane's sum of x^2 (INPUT_RMS_NORM). Per subgroup and sum,
// when a team spans several subgroups (lanes are assumed to fill subgroups in local invocation order,
// as every driver does for a 1-D workgroup).
const uint SUMS = MAX_ROWS_PER_TEAM * MAX_TOKENS + 1, SUM_SQUARES = SUMS - 1;
const uint USED_SUMS = ROWS_PER_TEAM * TOKENS + 1;  // the last only with INPUT_RMS_NORM
shared float subgroup_sums[USED_SUMS * gl_WorkGroupSize.x];

bool sum_used(uint i) {
    if (i == SUM_SQUARES) return INPUT == INPUT_RMS_NORM;
    return i / MAX_TOKENS < ROWS_PER_TEAM && i % MAX_TOKENS < TOKENS;
}
uint sum_slot(uint i) { return i == SUM_SQUARES ? USED_SUMS - 1 : i / MAX_TOKENS * TOKENS + i % MAX_TOKENS; }

// Sums each row's (and token's) partial sums over the team; the result is valid in the team's lane 0.
// A team is one invocation or whole subgroups (the host keeps THREADS_PER_ROW a multiple of the
// subgroup size).
void reduce_team(inout float acc[SUMS], uint lane, uint team) {
    if (THREADS_PER_ROW == 1) return;
    [[unroll]] for (uint i = 0; i < SUMS; ++i)
        if (sum_used(i)) acc[i] = subgroupAdd(acc[i]);
    if (THREADS_PER_ROW == gl_SubgroupSize) return;

    const uint subgroups_per_team = THREADS_PER_ROW / gl_SubgroupSize, used = USED_SUMS;
    if (subgroupElect())
        [[unroll]] for (uint i = 0; i < SUMS; ++i)
            if (sum_used(i)) subgroup_sums[gl_SubgroupID * used + sum_slot(i)] = acc[i];
    barrier();
    if (lane != 0) return;
    [[unroll]] for (uint i = 0; i < SUMS; ++i) {
        if (!sum_used(i)) continue;
        acc[i] = 0.0;
        for (uint s = 0; s < subgroups_per_team; ++s)
            acc[i] += subgroup_sums[(team * subgroups_per_team + s) * used + sum_slot(i)];
    }
}

#ifndef SLICES
// CPU devices: 32-element units, summed through unit_dot as matmul_lanes.glsl sums them, so that a
// token's result does not depend on the kernel.
#include "unit_dot.glsl"
const uint PIECE_ELEMS = UNIT_ELEMS, PIECE_RUNS = UNIT_RUNS, PIECE_GROUPS = SCALE_GROUPS;
#define PIECE_VEC4 QVEC4
// The index (in vec4s) of run `run` of a piece of the block whose x values start at x_offset.
uint piece_x4(uint x_offset, uint piece, uint run) { return (x_offset + run_element(piece, run)) >> 2; }
QVEC4 piece_input(vec4 x, uint run) { return QVEC4(x * run_scale(run)); }
void decode_piece(uint block_byte, uint piece, uint runs, out QVEC4 q[PIECE_RUNS], out vec2 scale_bias[PIECE_GROUPS]) {
    decode_unit(block_byte, piece, runs, q, scale_bias);
}
float piece_dot(QVEC4 q[PIECE_RUNS], vec2 scale_bias[PIECE_GROUPS], QVEC4 xs[PIECE_RUNS], float xsum[PIECE_GROUPS],
                float acc) {
    return unit_dot(q, scale_bias, xs, xsum, acc);
}
#else
// GPUs: slices (dequant_slices.glsl), their values exact in fp32 (the fp16 variants dequantize in packed
// fp16) and dotted with x in fp32: four independent FMA chains per scale group, then its scale and bias
// once.
const uint PIECE_ELEMS = SLICE_ELEMS, PIECE_RUNS = SLICE_RUNS, PIECE_GROUPS = SLICE_GROUPS;
#define PIECE_VEC4 vec4
uint piece_x4(uint x_offset, uint piece, uint run) {
    return ((x_offset + slice_first(piece)) >> 2) + slice_run(run) / 4;
}
vec4 piece_input(vec4 x, uint run) { return x; }
void decode_piece(uint block_byte, uint piece, uint runs, out vec4 q[PIECE_RUNS], out vec2 scale_bias[PIECE_GROUPS]) {
    decode_slice(block_byte, piece, runs, q, scale_bias);
}
float piece_dot(vec4 q[PIECE_RUNS], vec2 scale_bias[PIECE_GROUPS], vec4 xs[PIECE_RUNS], float xsum[PIECE_GROUPS],
                float acc) {
    const uint runs_per_group = PIECE_RUNS / PIECE_GROUPS;
    [[unroll]] for (uint g = 0; g < PIECE_GROUPS; ++g) {
        vec4 sums = q[g * runs_per_group] * xs[g * runs_per_group];
        [[unroll]] for (uint k = 1; k < runs_per_group; ++k)
            sums = fma(q[g * runs_per_group + k], xs[g * runs_per_group + k], sums);
        acc = fma(scale_bias[g].x, (sums.x + sums.y) + (sums.z + sums.w), acc);
        if (HAS_BIAS) acc = fma(scale_bias[g].y, xsum[g], acc);
    }
    return acc;
}
#endif

// The input values of one piece (from x_offset, in floats) and each scale group's sum of them.
void load_piece_input(uint x_offset, uint piece, uint runs, inout float sum_squares, out PIECE_VEC4 xs[PIECE_RUNS],
                      out float xsum[PIECE_GROUPS]) {
    const uint runs_per_group = PIECE_RUNS / PIECE_GROUPS;
    [[unroll]] for (uint i = 0; i < PIECE_RUNS; ++i) {
        vec4 x = vec4(0.0);
        if (i < runs) x = input4(piece_x4(x_offset, piece, i), sum_squares);
        xs[i] = piece_input(x, i);
        if (HAS_BIAS) {
            if (i % runs_per_group == 0) xsum[i / runs_per_group] = 0.0;
            xsum[i / runs_per_group] += dot(x, vec4(1.0));
        }
    }
}

// Adds one piece of each of the team's rows (row_byte[r] their first bytes; the piece lies block_offset
// bytes and x_offset floats into them) dotted with every token's input to acc.
void accumulate_piece(inout float acc[SUMS], uint row_byte[MAX_ROWS_PER_TEAM], uint x_offset, uint block_offset,
                      uint piece, uint runs) {
    PIECE_VEC4 xs[PIECE_RUNS];
    float xsum[PIECE_GROUPS];
    if (TOKENS == 1) {  // one x load serves every row of the team
        load_piece_input(x_offset, piece, runs, acc[SUM_SQUARES], xs, xsum);
        [[unroll]] for (uint r = 0; r < MAX_ROWS_PER_TEAM; ++r) {
            if (r < ROWS_PER_TEAM) {
                PIECE_VEC4 q[PIECE_RUNS];
                vec2 scale_bias[PIECE_GROUPS];
                decode_piece(row_byte[r] + block_offset, piece, runs, q, scale_bias);
                acc[r * MAX_TOKENS] = piece_dot(q, scale_bias, xs, xsum, acc[r * MAX_TOKENS]);
            }
        }
    } else {  // the team's rows decoded once for every token, each token's x loaded once for every row
        PIECE_VEC4 q[MAX_ROWS_PER_TEAM][PIECE_RUNS];
        vec2 scale_bias[MAX_ROWS_PER_TEAM][PIECE_GROUPS];
        [[unroll]] for (uint r = 0; r < MAX_ROWS_PER_TEAM; ++r)
            if (r < ROWS_PER_TEAM) decode_piece(row_byte[r] + block_offset, piece, runs, q[r], scale_bias[r]);
        [[unroll]] for (uint t = 0; t < MAX_TOKENS; ++t) {
            if (t >= TOKENS) continue;
            load_piece_input(x_offset + t * p.cols, piece, runs, acc[SUM_SQUARES], xs, xsum);
            [[unroll]] for (uint r = 0; r < MAX_ROWS_PER_TEAM; ++r) {
                const uint sum = r * MAX_TOKENS + t;
                if (r < ROWS_PER_TEAM) acc[sum] = piece_dot(q[r], scale_bias[r], xs, xsum, acc[sum]);
            }
        }
    }
}

void main() {
    const uint teams = gl_WorkGroupSize.x / THREADS_PER_ROW;
    const uint lane = gl_LocalInvocationID.x % THREADS_PER_ROW;
    const uint team = gl_LocalInvocationID.x / THREADS_PER_ROW;
    // Groups may be laid out in 2-D when one dimension cannot hold them all.
    const uint group = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    // A GLU output's team owns ROWS_PER_TEAM / 2 outputs: that many gate rows, then their up rows.
    const uint outputs = OUTPUT == OUTPUT_PLAIN ? ROWS_PER_TEAM : ROWS_PER_TEAM / 2;
    const uint first_row = (group * teams + team) * outputs;
    const uint pieces = (p.cols + PIECE_ELEMS - 1) / PIECE_ELEMS;
    const uint pieces_per_block = BLOCK_ELEMS / PIECE_ELEMS;
    const uint row_bytes = weight_row_bytes(p.cols);
#ifdef EXPERT_IDS
    // Row i of the selection is row `expert_first + i` of the whole stack; the bound segment holds
    // stack rows row_offset .. row_offset + row_count - 1. A workgroup none of whose rows lie in it exits.
    const uint slot = gl_WorkGroupID.z;
    const uint expert_first = expert_ids[slot] * p.expert_rows + p.row_begin;
    const uint x_base = slot * p.x_stride;
    const uint group_first = group * teams * ROWS_PER_TEAM;
    const uint group_end = min(group_first + teams * ROWS_PER_TEAM, p.rows);
    if (group_first >= group_end || expert_first + group_end <= p.row_offset ||
        expert_first + group_first >= p.row_offset + p.row_count)
        return;
#else
    const uint x_base = 0;
#endif

    // Rows past the end repeat the last row (never stored), so every lane runs the same loop.
    uint row_byte[MAX_ROWS_PER_TEAM];
    float acc[SUMS];
    [[unroll]] for (uint r = 0; r < MAX_ROWS_PER_TEAM; ++r) {
#ifdef EXPERT_IDS
        const int local = int(expert_first + first_row + r) - int(p.row_offset);
        row_byte[r] = uint(clamp(local, 0, int(p.row_count) - 1)) * row_bytes;
#else
        if (OUTPUT == OUTPUT_PLAIN) {
            row_byte[r] = min(first_row + r, p.row_count - 1) * row_bytes;
        } else {
            const uint half_rows = p.row_count / 2, gate_row = min(first_row + r % outputs, half_rows - 1);
            row_byte[r] = (gate_row + (r >= outputs ? half_rows : 0)) * row_bytes;
        }
#endif
    }
    [[unroll]] for (uint i = 0; i < SUMS; ++i) acc[i] = 0.0;

    // Lane l takes pieces l, l + T, ... of its rows: each step moves block_step blocks and piece_step
    // pieces on (a team that is a multiple of pieces_per_block, as on GPUs, keeps its piece), so the
    // addresses advance by constants. Dense rows may end inside a piece: that last one is a step of its
    // own, so that the loop's loads need no guard.
    const uint block_step = THREADS_PER_ROW / pieces_per_block, piece_step = THREADS_PER_ROW % pieces_per_block;
    uint piece = lane % pieces_per_block, col0 = lane / pieces_per_block * BLOCK_ELEMS;
    uint block_offset = lane / pieces_per_block * BLOCK_BYTES;
    const uint whole_pieces = DENSE ? p.cols / PIECE_ELEMS : pieces;
    uint u = lane;
    for (; u < whole_pieces; u += THREADS_PER_ROW) {
        accumulate_piece(acc, row_byte, x_base + col0, block_offset, piece, PIECE_RUNS);
        col0 += block_step * BLOCK_ELEMS;
        block_offset += block_step * BLOCK_BYTES;
        if (piece_step != 0) {
            piece += piece_step;
            if (piece >= pieces_per_block) {
                piece -= pieces_per_block;
                col0 += BLOCK_ELEMS;
                block_offset += BLOCK_BYTES;
            }
        }
    }
    if (DENSE && u < pieces)
        accumulate_piece(acc, row_byte, x_base + col0, block_offset, piece, (p.cols % PIECE_ELEMS) / 4);

    reduce_team(acc, lane, team);
    if (lane != 0) return;
#ifndef EXPERT_IDS
    const float norm_scale = INPUT == INPUT_RMS_NORM ? inversesqrt(acc[SUM_SQUARES] / float(p.cols) + p.eps) : 1.0;
#endif
    [[unroll]] for (uint r = 0; r < MAX_ROWS_PER_TEAM; ++r) {
#ifdef EXPERT_IDS
        const uint stack_row = expert_first + first_row + r;
        if (r < ROWS_PER_TEAM && first_row + r < p.rows && stack_row >= p.row_offset &&
            stack_row < p.row_offset + p.row_count)
            y[slot * p.y_stride + p.y_offset + first_row + r] = acc[r * MAX_TOKENS];
#else
        if (OUTPUT != OUTPUT_PLAIN) {
            const uint half_rows = p.rows / 2;
            if (r >= outputs || first_row + r >= half_rows) continue;
            [[unroll]] for (uint t = 0; t < MAX_TOKENS; ++t) {
                if (t >= TOKENS) continue;
                const vec4 gate = vec4(acc[r * MAX_TOKENS + t] * norm_scale), up = vec4(acc[(r + outputs) * MAX_TOKENS + t] * norm_scale);
                const vec4 value = OUTPUT == OUTPUT_SWIGLU ? swiglu(gate, up) : OUTPUT == OUTPUT_GEGLU ? geglu(gate, up) : swiglu_oai(gate, up);
                y[t * half_rows + first_row + r] = value.x;
            }
            continue;
        }
        if (r >= ROWS_PER_TEAM || first_row + r >= p.row_count) continue;
        [[unroll]] for (uint t = 0; t < MAX_TOKENS; ++t) {
            if (t >= TOKENS) continue;
            const uint index = t * p.rows + p.row_offset + first_row + r;
            float value = acc[r * MAX_TOKENS + t] * norm_scale;
            if (p.accumulate != 0u) value += y[index];
            y[index] = value;
        }
#endif
    }
}
