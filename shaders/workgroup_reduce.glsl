// Reductions over a 1-D workgroup: a subgroup reduction, then one partial per subgroup through
// shared memory. Every invocation of the workgroup must call them (they contain barriers), and each
// gets the same result, summed or compared in the same order.
#include "subgroup_ops.glsl"

// 1024 invocations (the most any device allows) in subgroups of 8 (the smallest we meet: lavapipe).
const uint REDUCE_MAX_SUBGROUPS = 128;
shared float reduce_values[REDUCE_MAX_SUBGROUPS];
shared uint reduce_indices[REDUCE_MAX_SUBGROUPS];

float workgroup_sum(float value) {
    value = subgroupAdd(value);
    if (subgroupElect()) reduce_values[gl_SubgroupID] = value;
    barrier();
    float total = 0.0;
    for (uint i = 0; i < gl_NumSubgroups; ++i) total += reduce_values[i];
    barrier();
    return total;
}

float workgroup_max(float value) {
    value = subgroupMax(value);
    if (subgroupElect()) reduce_values[gl_SubgroupID] = value;
    barrier();
    float result = reduce_values[0];
    for (uint i = 1; i < gl_NumSubgroups; ++i) result = max(result, reduce_values[i]);
    barrier();
    return result;
}

// The (value, index) order of argmax and top-k: larger values first, equal values by lower index.
// NaN never comes first; an empty candidate is (-inf, 0xFFFFFFFF).
bool ranks_before(float value, uint index, float other_value, uint other_index) {
    return value > other_value || (value == other_value && index < other_index);
}

// The first of the workgroup's (value, index) candidates in that order: the largest value, then the
// lowest index holding it (a subgroup max, then a min over the indices holding it).
void workgroup_best(inout float value, inout uint index) {
    const float subgroup_value = subgroupMax(value);
    index = subgroupMin(value == subgroup_value ? index : 0xFFFFFFFFu);
    value = subgroup_value;
    if (subgroupElect()) {
        reduce_values[gl_SubgroupID] = value;
        reduce_indices[gl_SubgroupID] = index;
    }
    barrier();
    value = reduce_values[0];
    index = reduce_indices[0];
    for (uint i = 1; i < gl_NumSubgroups; ++i) {
        if (ranks_before(reduce_values[i], reduce_indices[i], value, index)) {
            value = reduce_values[i];
            index = reduce_indices[i];
        }
    }
    barrier();
}
