// Dot products of packed vectors of 4 signed bytes (SPV_KHR_integer_dot_product), declared directly:
// Debian 12's glslc (shaderc 2023.2) lacks GL_EXT_integer_dot_product. Capabilities DotProduct (6019)
// and DotProductInput4x8BitPacked (6018); the last operand is PackedVectorFormat4x8Bit (0).
#ifndef INTEGER_DOT_GLSL
#define INTEGER_DOT_GLSL
#extension GL_EXT_spirv_intrinsics : require
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4453)
int dot_packed_4x8_acc_sat(uint a, uint b, int accumulator, spirv_literal int packed_vector_format);

// accumulator + a . b, a and b each 4 signed bytes (lowest first); the add saturates.
int dot4_i8(uint a, uint b, int accumulator) { return dot_packed_4x8_acc_sat(a, b, accumulator, 0); }
#endif
