#version 450
// y = W x (or y += W x), one vector with weights of the type TYPE_<TYPE> names, read in their GGUF
// layout. GPUs (storage buffers) decode the types' slices, CPU devices (TEXEL_READS) their units
// (matvec_body.glsl).
#ifndef TEXEL_READS
#define SLICES
#endif
#include "weight_type.glsl"
#include "matvec_body.glsl"
