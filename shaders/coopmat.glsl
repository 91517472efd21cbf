// Cooperative matrices (GL_KHR_cooperative_matrix, the device's matrix units) of the shape a kernel is
// specialized for: A is TM x TK and B TK x TN of f16, the accumulator TM x TN of f32, each held by a
// whole subgroup. Include it after TM, TN and TK are declared. Every operand comes from shared memory:
// A and B from arrays of f16vec4, accumulators from and to arrays of float (or a float storage
// buffer); offsets and strides count the array's elements, `stride` of them from one row to the next
// (ROW_MAJOR) or from one column to the next (COLUMN_MAJOR). The kernels keep each row (or column)
// aligned to the lesser of 16 bytes and its own size, as the extension asks of loads and stores.
//
// COOPMAT_EMULATED builds the same kernel with every invocation holding each matrix whole and the
// products summed in plain arithmetic (f16 products, f32 sums, as the matrix units round): slow, but
// it runs where the extension does not (lavapipe), so the tests check a kernel's tiling, staging and
// stores against the reference there. The operations are macros because they name their arrays.
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_shader_subgroup_basic : require
#ifndef COOPMAT_EMULATED
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require

#define MatrixA coopmat<float16_t, gl_ScopeSubgroup, TM, TK, gl_MatrixUseA>
#define MatrixB coopmat<float16_t, gl_ScopeSubgroup, TK, TN, gl_MatrixUseB>
#define MatrixAcc coopmat<float, gl_ScopeSubgroup, TM, TN, gl_MatrixUseAccumulator>
#define ROW_MAJOR gl_CooperativeMatrixLayoutRowMajor
#define COLUMN_MAJOR gl_CooperativeMatrixLayoutColumnMajor

#define matrix_load_a(m, array, offset, stride, layout) coopMatLoad(m, array, offset, stride, layout)
#define matrix_load_b(m, array, offset, stride, layout) coopMatLoad(m, array, offset, stride, layout)
#define matrix_load_acc(m, array, offset, stride, layout) coopMatLoad(m, array, offset, stride, layout)
#define matrix_store(m, array, offset, stride, layout) coopMatStore(m, array, offset, stride, layout)
#define matrix_zero(m) m = MatrixAcc(0.0)
#define matrix_mul_add(a, b, c) c = coopMatMulAdd(a, b, c)
#define matrix_add(c, other) c += other
#else
#define MatrixA float16_t[TM * TK]
#define MatrixB float16_t[TK * TN]
#define MatrixAcc float[TM * TN]
#define ROW_MAJOR 0u
#define COLUMN_MAJOR 1u

// Element e of a matrix with `cols` columns sits at (e / cols, e % cols).
#define EMULATED_AT(e, cols, offset, stride, layout) \
    ((layout) == ROW_MAJOR ? (offset) + ((e) / (cols)) * (stride) + (e) % (cols) \
                           : (offset) + ((e) % (cols)) * (stride) + (e) / (cols))
// A or B from an array of f16vec4: the element's index counted in halves, then its vector and lane.
#define EMULATED_LOAD_HALVES(m, cols, array, offset, stride, layout) \
    [[dont_unroll]] for (uint e_ = 0; e_ < m.length(); ++e_) { \
        const uint at_ = EMULATED_AT(e_, cols, 4 * (offset), 4 * (stride), layout); \
        m[e_] = array[at_ / 4][at_ % 4]; \
    }
#define matrix_load_a(m, array, offset, stride, layout) EMULATED_LOAD_HALVES(m, TK, array, offset, stride, layout)
#define matrix_load_b(m, array, offset, stride, layout) EMULATED_LOAD_HALVES(m, TN, array, offset, stride, layout)
#define matrix_load_acc(m, array, offset, stride, layout) \
    [[dont_unroll]] for (uint e_ = 0; e_ < m.length(); ++e_) m[e_] = array[EMULATED_AT(e_, TN, offset, stride, layout)];
// Each lane stores a share of the elements (every lane holds them all).
#define matrix_store(m, array, offset, stride, layout) \
    [[dont_unroll]] for (uint e_ = gl_SubgroupInvocationID; e_ < m.length(); e_ += gl_SubgroupSize) \
        array[EMULATED_AT(e_, TN, offset, stride, layout)] = m[e_];
#define matrix_zero(m) [[dont_unroll]] for (uint e_ = 0; e_ < m.length(); ++e_) m[e_] = 0.0;
#define matrix_mul_add(a, b, c) \
    [[dont_unroll]] for (uint e_ = 0; e_ < c.length(); ++e_) { \
        float sum_ = c[e_]; \
        for (uint k_ = 0; k_ < TK; ++k_) sum_ += float(a[(e_ / TN) * TK + k_]) * float(b[k_ * TN + e_ % TN]); \
        c[e_] = sum_; \
    }
#define matrix_add(c, other) [[dont_unroll]] for (uint e_ = 0; e_ < c.length(); ++e_) c[e_] += other[e_];
#endif
