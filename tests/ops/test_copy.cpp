// copy_rows against a plain loop: blocks of columns between layouts of different strides.
#include <doctest/doctest.h>

#include "op_harness.h"
#include "ops/copy.h"

using namespace vkllm;

TEST_CASE("copy_rows moves a block of columns between row layouts of different strides") {
    const uint64_t seed = test::base_seed() + 900;
    for (auto [rows, src_stride, src_offset, width, dst_stride, dst_offset] :
         {std::tuple{7u, 384u, 256u, 64u, 64u, 0u}, std::tuple{512u, 1000u, 3u, 997u, 2000u, 1001u},
          std::tuple{1u, 5u, 0u, 5u, 5u, 0u}}) {
        CAPTURE(rows);
        CAPTURE(width);
        const std::vector<float> src = test::random_floats(size_t(rows) * src_stride, seed + rows);
        const std::vector<float> before = test::random_floats(size_t(rows) * dst_stride, seed + rows + 1);
        gpu::Buffer src_buffer = test::upload(src), dst_buffer = test::upload(before);
        std::vector<float> want = before;
        for (uint32_t r = 0; r < rows; ++r)
            for (uint32_t c = 0; c < width; ++c) want[r * dst_stride + dst_offset + c] = src[r * src_stride + src_offset + c];
        test::OpGraph g;
        g.run(ops::copy_rows(test::device(), g(src_buffer), {src_stride, src_offset}, g(dst_buffer),
                             {dst_stride, dst_offset}, rows, width));
        CHECK(test::download(dst_buffer, want.size()) == want);
    }
    gpu::Buffer small = test::zero_buffer(64);
    test::OpGraph g;
    CHECK_THROWS_AS(ops::copy_rows(test::device(), g(small), {16, 0}, g(small), {8, 0}, 2, 9), Error);
    CHECK_THROWS_AS(ops::copy_rows(test::device(), g(small), {16, 0}, g(small), {16, 0}, 2, 16), Error);
}
