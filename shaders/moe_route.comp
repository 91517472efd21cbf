#version 450
// Mixture-of-experts routing (model-notes.md C.0, llama.cpp build_moe_ffn), one workgroup per token:
//   scores     softmax or sigmoid of the router logits;
//   selection  scores + the optional bias; with expert groups, the experts of all but the
//              n_group_used groups whose two best selection values sum highest are set to -inf;
//   experts    the n_expert_used best selection values, best first, ties to the lower index
//              (each round takes the best candidate ranked after the previous round's winner);
//   weights    the experts' unbiased scores, divided by max(their sum, 6.103515625e-5) with
//              norm_topk, then multiplied by routed_scale.
// NaN is never selected; a round that finds no candidate (all NaN) writes expert 0 with weight NaN.
#extension GL_GOOGLE_include_directive : require
#include "params.h"

layout(local_size_x_id = 0) in;
#include "workgroup_reduce.glsl"

layout(std430, binding = 0) readonly buffer Logits { float logits[]; };
layout(std430, binding = 1) readonly buffer Bias { float bias[]; };  // read only with has_bias
layout(std430, binding = 2) writeonly buffer Ids { uint ids[]; };
layout(std430, binding = 3) writeonly buffer Weights { float weights[]; };
layout(push_constant) uniform Push { MoeRouteParams p; };

const uint MAX_EXPERTS = 512;  // ops::moe_max_experts
const uint MAX_USED = 32;      // ops::moe_max_experts_used
const float NEG_INF = -1.0 / 0.0;

shared float scores[MAX_EXPERTS];
shared float selection[MAX_EXPERTS];
shared float group_scores[MAX_EXPERTS];
shared uint chosen[MAX_USED];

void compute_scores(uint token, uint tid, uint threads) {
    float local_max = NEG_INF;
    for (uint i = tid; i < p.n_expert; i += threads) {
        const float logit = logits[token * p.n_expert + i];
        scores[i] = logit;
        local_max = max(local_max, logit);
    }
    if (p.scoring == 1u) {
        // As ggml_soft_max: exp(x - max), then times 1 / sum.
        const float row_max = workgroup_max(local_max);
        float part = 0.0;
        for (uint i = tid; i < p.n_expert; i += threads) {
            const float e = exp(scores[i] - row_max);
            scores[i] = e;
            part += e;
        }
        const float inverse = 1.0 / workgroup_sum(part);
        for (uint i = tid; i < p.n_expert; i += threads) scores[i] *= inverse;
    } else {
        for (uint i = tid; i < p.n_expert; i += threads) scores[i] = 1.0 / (1.0 + exp(-scores[i]));
    }
    for (uint i = tid; i < p.n_expert; i += threads) selection[i] = scores[i] + (p.has_bias != 0u ? bias[i] : 0.0);
    barrier();
}

// Keeps the experts of the n_group_used groups with the highest sum of their two best selection values.
void limit_groups(uint tid, uint threads) {
    const uint per_group = p.n_expert / p.n_group;
    for (uint g = tid; g < p.n_group; g += threads) {
        float best = NEG_INF, second = NEG_INF;
        uint best_index = 0xFFFFFFFFu, second_index = 0xFFFFFFFFu;
        for (uint i = g * per_group; i < (g + 1) * per_group; ++i) {
            const float value = selection[i];
            if (ranks_before(value, i, best, best_index)) {
                second = best;
                second_index = best_index;
                best = value;
                best_index = i;
            } else if (ranks_before(value, i, second, second_index)) {
                second = value;
                second_index = i;
            }
        }
        group_scores[g] = best + second;
    }
    barrier();
    for (uint g = tid; g < p.n_group; g += threads) {
        uint rank = 0;
        for (uint h = 0; h < p.n_group; ++h) rank += ranks_before(group_scores[h], h, group_scores[g], g) ? 1u : 0u;
        if (rank >= p.n_group_used)
            for (uint i = g * per_group; i < (g + 1) * per_group; ++i) selection[i] = NEG_INF;
    }
    barrier();
}

void main() {
    const uint token = gl_WorkGroupID.x, tid = gl_LocalInvocationID.x, threads = gl_WorkGroupSize.x;
    compute_scores(token, tid, threads);
    if (p.n_group > 1u) limit_groups(tid, threads);

    float previous_value = 1.0 / 0.0;
    uint previous_index = 0;
    for (uint round = 0; round < p.n_expert_used; ++round) {
        float best_value = NEG_INF;
        uint best_index = 0xFFFFFFFFu;
        for (uint i = tid; i < p.n_expert; i += threads) {
            const float value = selection[i];
            const bool remaining = round == 0u || ranks_before(previous_value, previous_index, value, i);
            if (remaining && ranks_before(value, i, best_value, best_index)) {
                best_value = value;
                best_index = i;
            }
        }
        workgroup_best(best_value, best_index);
        if (tid == 0u) chosen[round] = best_index;
        previous_value = best_value;
        previous_index = best_index;
    }
    if (tid != 0u) return;

    float sum = 0.0;
    for (uint s = 0; s < p.n_expert_used; ++s)
        sum += chosen[s] < p.n_expert ? scores[chosen[s]] : 0.0 / 0.0;
    const float divisor = p.norm_topk != 0u ? max(sum, 6.103515625e-5) : 1.0;
    for (uint s = 0; s < p.n_expert_used; ++s) {
        const uint expert = chosen[s];
        float weight = expert < p.n_expert ? scores[expert] : 0.0 / 0.0;
        if (p.norm_topk != 0u) weight /= divisor;
        if (p.routed_scale != 1.0) weight *= p.routed_scale;
        ids[token * p.n_expert_used + s] = expert < p.n_expert ? expert : 0u;
        weights[token * p.n_expert_used + s] = weight;
    }
}
