// Elementwise ops on the GPU against the references, on the vec4 path and the scalar one.
#include <doctest/doctest.h>

#include "op_harness.h"
#include "ops/elementwise.h"
#include "ops/ref/elementwise_ref.h"

using namespace vkllm;

TEST_CASE("add: residuals and repeated biases, sizes on and off multiples of 4, in place") {
    const uint64_t seed = test::base_seed() + 400;
    for (auto [n, b_n] : {std::pair{4099u, 4099u}, {12288u, 4096u}, {4098u, 2u}, {3u, 3u}}) {
        CAPTURE(n);
        CAPTURE(b_n);
        const std::vector<float> a = test::random_floats(n, seed + n), b = test::random_floats(b_n, seed + b_n + 1);
        gpu::Buffer a_buffer = test::upload(a), b_buffer = test::upload(b), y_buffer = test::zero_buffer(n * 4);
        std::vector<float> want(n);
        ref::add(a, b, want);
        test::OpGraph g;
        g.run(ops::add(test::device(), g(a_buffer), g(b_buffer), g(y_buffer), n, b_n));
        test::check_close(test::download(y_buffer, n), want, test::f32_tolerance, seed, "add");
        test::OpGraph in_place;
        in_place.run(ops::add(test::device(), in_place(a_buffer), in_place(b_buffer), in_place(a_buffer), n, b_n));
        test::check_close(test::download(a_buffer, n), want, test::f32_tolerance, seed, "add in place");
    }
}

TEST_CASE("scale, softcap, SwiGLU and GeGLU, saturated inputs included") {
    const uint64_t seed = test::base_seed() + 500;
    for (uint32_t n : {1001u, 11011u, 8u}) {
        CAPTURE(n);
        std::vector<float> gate = test::random_floats(n, seed + n, -12.0f, 12.0f);
        gate[0] = -200.0f;  // e^-z overflows to inf: the result must be -0, not NaN
        gate[n - 1] = 200.0f;
        const std::vector<float> up = test::random_floats(n, seed + n + 1, -2.0f, 2.0f);
        gpu::Buffer gate_buffer = test::upload(gate), up_buffer = test::upload(up), y = test::zero_buffer(n * 4);
        std::vector<float> want(n);

        ref::scale(gate, 0.125f, want);
        test::OpGraph scaled;
        scaled.run(ops::scale(test::device(), scaled(gate_buffer), scaled(y), n, 0.125f));
        test::check_close(test::download(y, n), want, test::f32_tolerance, seed, "scale");
        ref::softcap(gate, 30.0f, want);
        test::OpGraph capped;
        capped.run(ops::softcap(test::device(), capped(gate_buffer), capped(y), n, 30.0f));
        test::check_close(test::download(y, n), want, test::f32_tolerance, seed, "softcap");
        ref::swiglu(gate, up, want);
        test::OpGraph swiglu;
        swiglu.run(ops::glu(test::device(), ops::Glu::SwiGlu, swiglu(gate_buffer), swiglu(up_buffer), swiglu(y), n));
        test::check_close(test::download(y, n), want, test::f32_tolerance, seed, "swiglu");
        ref::geglu(gate, up, want);
        test::OpGraph geglu;
        geglu.run(ops::glu(test::device(), ops::Glu::GeGlu, geglu(gate_buffer), geglu(up_buffer), geglu(y), n));
        test::check_close(test::download(y, n), want, test::f32_tolerance, seed, "geglu");
    }
}

TEST_CASE("SwiGLU-OAI: gate and up clamped at 7 on both sides of the limits") {
    const uint64_t seed = test::base_seed() + 520;
    for (uint32_t n : {1003u, 8u}) {
        CAPTURE(n);
        std::vector<float> gate = test::random_floats(n, seed + n, -12.0f, 12.0f);
        const std::vector<float> up = test::random_floats(n, seed + n + 1, -12.0f, 12.0f);
        gate[0] = -200.0f;  // e^(-1.702 z) overflows to inf: the result must be -0, not NaN
        gpu::Buffer gate_buffer = test::upload(gate), up_buffer = test::upload(up), y = test::zero_buffer(n * 4);
        std::vector<float> want(n);
        ref::swiglu_oai(gate, up, want);
        test::OpGraph g;
        g.run(ops::glu(test::device(), ops::Glu::SwiGluOai, g(gate_buffer), g(up_buffer), g(y), n));
        test::check_close(test::download(y, n), want, test::f32_tolerance, seed, "swiglu_oai");
    }
}
