#version 450
// Y = W X (or Y += W X), a batch of token vectors with weights of the type TYPE_<TYPE> names, read in
// their GGUF layout.
#include "weight_type.glsl"
#include "matmul_body.glsl"
