// The subgroup operations beyond the basic ones that vkllm's kernels use: reductions (subgroupAdd,
// subgroupMax, subgroupMin), ballots and broadcasts. Built with SUBGROUP_BASIC (each such kernel's `_basic`
// pipeline, chosen on devices with only basic subgroup operations: the Vulkan 1.1 minimum) they go
// through shared memory within each subgroup instead. Every call must then be made by every
// invocation of the subgroup, as the kernels do (between workgroup barriers), and lanes are taken to
// fill subgroups in local invocation order, as matvec's teams already assume. Include it after the
// workgroup size's layout declaration, which sizes the shared slots.
#extension GL_KHR_shader_subgroup_basic : require
#ifdef SUBGROUP_BASIC

const uint SUBGROUP_SLOTS = gl_WorkGroupSize.x * gl_WorkGroupSize.y * gl_WorkGroupSize.z;
shared uint subgroup_slots[SUBGROUP_SLOTS];

uint subgroup_lanes() { return min(gl_SubgroupSize, SUBGROUP_SLOTS - gl_SubgroupID * gl_SubgroupSize); }
uint subgroup_slot(uint lane) { return subgroup_slots[gl_SubgroupID * gl_SubgroupSize + lane]; }

// Every lane's value into the subgroup's slots, once the subgroup has read what it published before.
void subgroup_publish(uint value) {
    subgroupBarrier();
    subgroup_slots[gl_SubgroupID * gl_SubgroupSize + gl_SubgroupInvocationID] = value;
    subgroupBarrier();
}

float subgroup_add_basic(float value) {
    subgroup_publish(floatBitsToUint(value));
    float sum = 0.0;
    for (uint lane = 0; lane < subgroup_lanes(); ++lane) sum += uintBitsToFloat(subgroup_slot(lane));
    return sum;
}

float subgroup_max_basic(float value) {
    subgroup_publish(floatBitsToUint(value));
    float result = uintBitsToFloat(subgroup_slot(0));
    for (uint lane = 1; lane < subgroup_lanes(); ++lane) result = max(result, uintBitsToFloat(subgroup_slot(lane)));
    return result;
}

uint subgroup_min_basic(uint value) {
    subgroup_publish(value);
    uint result = subgroup_slot(0);
    for (uint lane = 1; lane < subgroup_lanes(); ++lane) result = min(result, subgroup_slot(lane));
    return result;
}

uvec4 subgroup_ballot_basic(bool value) {
    subgroup_publish(value ? 1u : 0u);
    uvec4 bits = uvec4(0);
    for (uint lane = 0; lane < subgroup_lanes(); ++lane)
        if (subgroup_slot(lane) != 0u) bits[lane / 32] |= 1u << (lane % 32);
    return bits;
}

uint subgroup_ballot_bit_count_basic(uvec4 bits) {
    return bitCount(bits.x) + bitCount(bits.y) + bitCount(bits.z) + bitCount(bits.w);
}

// Set bits of the lanes below this one.
uint subgroup_ballot_exclusive_bit_count_basic(uvec4 bits) {
    uint count = 0;
    for (uint word = 0; word < 4; ++word) {
        const uint below = gl_SubgroupInvocationID - min(gl_SubgroupInvocationID, 32 * word);
        const uint mask = below >= 32 ? 0xFFFFFFFFu : (1u << below) - 1u;
        count += bitCount(bits[word] & mask);
    }
    return count;
}

float subgroup_broadcast_basic(float value, uint lane) {
    subgroup_publish(floatBitsToUint(value));
    return uintBitsToFloat(subgroup_slot(lane));
}

#define subgroupAdd subgroup_add_basic
#define subgroupMax subgroup_max_basic
#define subgroupMin subgroup_min_basic
#define subgroupBallot subgroup_ballot_basic
#define subgroupBroadcast subgroup_broadcast_basic
#define subgroupBallotBitCount subgroup_ballot_bit_count_basic
#define subgroupBallotExclusiveBitCount subgroup_ballot_exclusive_bit_count_basic

#else
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_ballot : require
#endif
