// Helpers shared by the op kernels (not matvec/matmul). Include it after the local_size layout:
// glslang folds gl_WorkGroupSize to (1, 1, 1) in functions compiled before that declaration.

// Workgroups are laid out in 2-D when one dimension would pass maxComputeWorkGroupCount (65,535 on
// many devices): the host splits a count into x * y and the kernel flattens it back.
uint flat_workgroup() { return gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x; }
uint flat_invocation() { return flat_workgroup() * gl_WorkGroupSize.x + gl_LocalInvocationID.x; }
