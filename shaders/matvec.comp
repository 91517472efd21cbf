#version 450
// y = W x (or y += W x), one vector with weights of the type TYPE_<TYPE> names, read in their GGUF
// layout.
#include "weight_type.glsl"
#include "matvec_body.glsl"
