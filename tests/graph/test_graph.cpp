#include <doctest/doctest.h>

#include <fmt/format.h>

#include <sstream>

#include "gpu/device.h"
#include "graph/baked.h"
#include "gpu_fixture.h"
#include "params.h"

using namespace vkllm;

namespace {

constexpr uint32_t n = 1000;  // not a multiple of the workgroup size
constexpr VkDeviceSize bytes = n * sizeof(float);

// Buffers the tests keep outside the graph: the step values and a few float arrays.
struct Fixture {
    gpu::Buffer step = test::device().allocator().create(64, gpu::MemoryDomain::DeviceMapped);
    std::vector<gpu::Buffer> arrays;

    Fixture(std::initializer_list<uint32_t> steps, size_t count) {
        set_steps(steps);
        for (size_t i = 0; i < count; ++i) {
            std::vector<float> values(n);
            for (uint32_t k = 0; k < n; ++k) values[k] = float(k % 97) + float(i);
            arrays.push_back(test::upload(values));
        }
    }
    void set_steps(std::initializer_list<uint32_t> steps) {
        step.write(0, std::as_bytes(std::span(steps.begin(), steps.size())));
    }
    std::vector<float> read(size_t i) { return test::download(arrays[i], n); }
};

const gpu::Pipeline& scale_pipeline() { return test::device().pipelines().get("graph_scale_step", {{0, 64}}); }

// y = x * step[slot] + offset.
graph::Pass& scale(graph::Graph& g, std::string name, graph::Region step, graph::Region x, graph::Region y,
                   uint32_t slot, float offset = 0) {
    return g.add_pass(std::move(name), scale_pipeline())
        .read(step).read(x).write(y)
        .params(params::GraphScaleParams{n, slot, offset})
        .threads(n);
}

std::vector<float> expected(const std::vector<float>& x, float multiplier, float offset = 0) {
    std::vector<float> y(x.size());
    for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * multiplier + offset;
    return y;
}

}  // namespace

TEST_CASE("read after write: exactly one barrier, through a transient") {
    Fixture f({3, 5}, 2);
    auto input = f.read(0);
    graph::Graph g(test::device());
    auto step = g.persistent("step", f.step.range());
    auto x = g.persistent("x", f.arrays[0].range()), out = g.persistent("out", f.arrays[1].range());
    auto t = g.transient("t", bytes);
    scale(g, "first", step, x, t, 0);
    scale(g, "second", step, t, out, 1);
    graph::BakedGraph baked = std::move(g).bake();
    CHECK(baked.stats().barriers == 1);
    baked.replay();
    CHECK(f.read(1) == expected(input, 15));
}

TEST_CASE("write after read: exactly one barrier, and the reader sees the old contents") {
    Fixture f({2, 7}, 3);
    auto a = f.read(0), b = f.read(1);
    graph::Graph g(test::device());
    auto step = g.persistent("step", f.step.range());
    auto x = g.persistent("x", f.arrays[0].range()), y = g.persistent("y", f.arrays[1].range());
    auto z = g.persistent("z", f.arrays[2].range());
    scale(g, "read x", step, x, z, 0);      // z = 2x
    scale(g, "overwrite x", step, y, x, 1);  // x = 7y
    graph::BakedGraph baked = std::move(g).bake();
    CHECK(baked.stats().barriers == 1);
    baked.replay();
    CHECK(f.read(2) == expected(a, 2));
    CHECK(f.read(0) == expected(b, 7));
}

TEST_CASE("write after write: exactly one barrier, and the later write wins") {
    Fixture f({2, 9}, 2);
    auto a = f.read(0);
    graph::Graph g(test::device());
    auto step = g.persistent("step", f.step.range());
    auto x = g.persistent("x", f.arrays[0].range()), y = g.persistent("y", f.arrays[1].range());
    scale(g, "first write", step, x, y, 0);
    scale(g, "second write", step, x, y, 1);
    graph::BakedGraph baked = std::move(g).bake();
    CHECK(baked.stats().barriers == 1);
    baked.replay();
    CHECK(f.read(1) == expected(a, 9));
}

TEST_CASE("independent passes share a level: no barrier, even reading the same input") {
    Fixture f({4, 6}, 3);
    auto a = f.read(0);
    graph::Graph g(test::device());
    auto step = g.persistent("step", f.step.range());
    auto x = g.persistent("x", f.arrays[0].range());
    scale(g, "left", step, x, g.persistent("y", f.arrays[1].range()), 0);
    scale(g, "right", step, x, g.persistent("z", f.arrays[2].range()), 1);
    graph::BakedGraph baked = std::move(g).bake();
    CHECK(baked.stats().barriers == 0);
    baked.replay();
    CHECK(f.read(1) == expected(a, 4));
    CHECK(f.read(2) == expected(a, 6));
}

TEST_CASE("disjoint regions of one buffer do not conflict; overlapping ones do") {
    Fixture f({4}, 2);
    for (auto [second_offset, barriers] : {std::pair{bytes / 2, size_t(0)}, std::pair{bytes / 2 - 256, size_t(1)}}) {
        graph::Graph g(test::device());
        auto step = g.persistent("step", f.step.range());
        auto x = g.persistent("x", f.arrays[0].range()), y = g.persistent("y", f.arrays[1].range());
        g.add_pass("low half", scale_pipeline()).read(step).read(x.sub(0, bytes / 2)).write(y.sub(0, bytes / 2))
            .params(params::GraphScaleParams{n / 2, 0, 0}).threads(n / 2);
        g.add_pass("second", scale_pipeline()).read(step).read(x.sub(0, bytes / 2)).write(y.sub(second_offset, bytes / 2))
            .params(params::GraphScaleParams{n / 2, 0, 0}).threads(n / 2);
        CHECK(std::move(g).bake().stats().barriers == barriers);
    }
}

TEST_CASE("a diamond: one source, two independent middles, one join; two barriers") {
    Fixture f({2, 3, 5}, 2);
    auto input = f.read(0);
    graph::Graph g(test::device());
    auto step = g.persistent("step", f.step.range());
    auto x = g.persistent("x", f.arrays[0].range()), out = g.persistent("out", f.arrays[1].range());
    auto top = g.transient("top", bytes), left = g.transient("left", bytes), right = g.transient("right", bytes);
    scale(g, "top", step, x, top, 0);
    scale(g, "left", step, top, left, 1);
    scale(g, "right", step, top, right, 2);
    g.add_pass("join", test::device().pipelines().get("axpy_f32", {{0, 64}}))
        .read(left).read_write(right)
        .params(params::AxpyParams{n, 1.0f})
        .threads(n);
    scale(g, "out", step, right, out, 0);
    graph::BakedGraph baked = std::move(g).bake();
    CHECK(baked.stats().passes == 5);
    CHECK(baked.stats().barriers == 3);  // top | left, right | join | out
    baked.replay();
    CHECK(f.read(1) == expected(expected(input, 2 * 3 + 2 * 5), 2));
}

TEST_CASE("transients whose lifetimes do not overlap share memory, and results stay exact") {
    Fixture f({2, 3, 5, 7}, 2);
    auto input = f.read(0);
    graph::Graph g(test::device());
    auto step = g.persistent("step", f.step.range());
    auto x = g.persistent("x", f.arrays[0].range()), out = g.persistent("out", f.arrays[1].range());
    std::vector<graph::Region> chain = {x};
    for (int i = 0; i < 3; ++i) chain.push_back(g.transient(fmt::format("t{}", i), bytes));
    chain.push_back(out);
    for (uint32_t i = 0; i + 1 < chain.size(); ++i)
        scale(g, fmt::format("step{}", i), step, chain[i], chain[i + 1], i, float(i));
    graph::BakedGraph baked = std::move(g).bake();
    const auto& stats = baked.stats();
    CHECK(stats.transient_bytes == 3 * 4096);
    CHECK(stats.transient_bytes_aliased == 2 * 4096);  // t0 and t2 live at different times
    CHECK(baked.physical(chain[1]).offset == baked.physical(chain[3]).offset);
    baked.replay();
    CHECK(f.read(1) == expected(expected(expected(expected(input, 2, 0), 3, 1), 5, 2), 7, 3));
}

TEST_CASE("graphs baked with shared arenas share transient memory; a larger one grows it, the older keeps its own") {
    Fixture f({2, 3}, 3);
    auto input = f.read(0);
    graph::SharedArenas arenas;
    // x -> t -> out: y = (x * 2) * 3, through a transient of `size` bytes.
    auto bake = [&](graph::Region* t_region, VkDeviceSize size, size_t out) {
        graph::Graph g(test::device());
        auto step = g.persistent("step", f.step.range());
        auto x = g.persistent("x", f.arrays[0].range()), y = g.persistent("out", f.arrays[out].range());
        *t_region = g.transient("t", size);
        scale(g, "first", step, x, *t_region, 0);
        scale(g, "second", step, *t_region, y, 1);
        return std::move(g).bake({.shared_arenas = &arenas});
    };
    graph::Region t1, t2, t3;
    graph::BakedGraph small = bake(&t1, bytes, 1), same = bake(&t2, bytes, 2);
    REQUIRE(arenas.arenas.size() == 1);
    auto same_memory = [](const gpu::BufferRange& a, const gpu::BufferRange& b) {
        return a.buffer == b.buffer && a.offset == b.offset;
    };
    CHECK(same_memory(small.physical(t1), same.physical(t2)));
    const gpu::Buffer* first = arenas.arenas[0].get();
    graph::BakedGraph larger = bake(&t3, 2 * bytes, 2);
    CHECK(arenas.arenas[0].get() != first);
    CHECK(arenas.arenas[0]->size() >= 2 * bytes);
    CHECK(!same_memory(larger.physical(t3), small.physical(t1)));
    for (graph::BakedGraph* baked : {&small, &same, &larger, &small}) baked->replay();
    CHECK(f.read(1) == expected(input, 6));
    CHECK(f.read(2) == expected(input, 6));
}

TEST_CASE("a graph replayed 1000 times with changing step values matches a fresh recording each time") {
    Fixture replayed({1, 1}, 3), fresh({1, 1}, 3);
    auto build = [](Fixture& f) {
        graph::Graph g(test::device());
        auto step = g.persistent("step", f.step.range());
        auto x = g.persistent("x", f.arrays[0].range()), out = g.persistent("out", f.arrays[1].range());
        auto acc = g.persistent("acc", f.arrays[2].range());
        auto t = g.transient("t", bytes);
        scale(g, "scale", step, x, t, 0, 0.5f);
        scale(g, "shift", step, t, out, 1, -1.0f);
        // acc = out + acc: state carried from one replay to the next, like a KV cache.
        g.add_pass("accumulate", test::device().pipelines().get("axpy_f32", {{0, 64}}))
            .read(out).read_write(acc).params(params::AxpyParams{n, 1.0f}).threads(n);
        return std::move(g).bake();
    };
    graph::BakedGraph baked = build(replayed);
    for (uint32_t i = 0; i < 1000; ++i) {
        uint32_t a = i % 13 + 1, b = (i * 7) % 5 + 1;
        replayed.set_steps({a, b});
        fresh.set_steps({a, b});
        baked.replay();
        build(fresh).replay();
        if (i % 97 == 0 || i == 999) REQUIRE(replayed.read(2) == fresh.read(2));
    }
    CHECK(replayed.read(1) == fresh.read(1));
    CHECK(baked.stats().replays == 1000);
    CHECK(baked.stats().recordings == 1);
}

TEST_CASE("zeroed memory starts at zero and lives as long as the baked graph") {
    Fixture f({3}, 1);
    {  // memory freed with values in it, which the allocator hands out again
        gpu::Buffer used = test::device().allocator().create(bytes, gpu::MemoryDomain::DeviceMapped);
        const std::vector<float> ones(n, 1.0f);
        used.write(0, std::as_bytes(std::span(ones)));
    }
    graph::BakedGraph baked = [&] {
        graph::Graph g(test::device());
        scale(g, "scale", g.persistent("step", f.step.range()), g.zeroed("zeros", bytes),
              g.persistent("y", f.arrays[0].range()), 0, 7.0f);
        return std::move(g).bake();
    }();
    for (int run = 0; run < 2; ++run) {
        baked.replay();
        CHECK(f.read(0) == std::vector<float>(n, 7.0f));
    }
}

TEST_CASE("a pass sized by the GPU: indirect dispatch from arguments an earlier pass wrote") {
    for (uint32_t count : {1u, 64u, 65u, 999u}) {
        Fixture f({count}, 2);
        auto input = f.read(0), before = f.read(1);
        graph::Graph g(test::device());
        auto step = g.persistent("step", f.step.range());
        auto x = g.persistent("x", f.arrays[0].range()), y = g.persistent("y", f.arrays[1].range());
        auto arguments = g.transient("arguments", 3 * sizeof(uint32_t));
        g.add_pass("size", test::device().pipelines().get("graph_indirect_args"))
            .read(step).write(arguments).params(params::GraphIndirectParams{0, 64});
        g.add_pass("scaled", scale_pipeline()).read(step).read(x).write(y).indirect(arguments)
            .params(params::GraphScaleParams{n, 0, 0});
        graph::BakedGraph baked = std::move(g).bake();
        CHECK(baked.stats().barriers == 1);
        baked.replay();
        auto got = f.read(1);
        uint32_t covered = std::min(n, (count + 63) / 64 * 64);
        for (uint32_t i = 0; i < n; ++i) REQUIRE(got[i] == (i < covered ? input[i] * float(count) : before[i]));
    }
}

TEST_CASE("omitting the barriers is caught by synchronization validation (the check can fail)") {
    Fixture f({3, 5}, 2);
    graph::Graph g(test::device());
    auto step = g.persistent("step", f.step.range());
    auto x = g.persistent("x", f.arrays[0].range()), out = g.persistent("out", f.arrays[1].range());
    auto t = g.transient("t", bytes);
    scale(g, "producer", step, x, t, 0);
    scale(g, "consumer", step, t, out, 1);
    test::ExpectValidationMessages expect;
    graph::BakedGraph baked = std::move(g).bake({.omit_barriers = true});
    baked.replay();
    CHECK(expect.seen() > 0);
}

TEST_CASE("graph misuse is an error naming the pass and the resource") {
    Fixture f({1}, 2);
    {
        graph::Graph g(test::device());
        auto step = g.persistent("step", f.step.range());
        scale(g, "reader", step, g.transient("never-written", bytes), g.persistent("y", f.arrays[1].range()), 0);
        CHECK_THROWS_WITH_AS(std::move(g).bake(), doctest::Contains("never-written"), Error);
    }
    {
        graph::Graph g(test::device());
        auto step = g.persistent("step", f.step.range());
        auto x = g.persistent("x", f.arrays[0].range());
        CHECK_THROWS_AS(x.sub(bytes - 4, 8), Error);
        graph::Region past_the_end = x;
        past_the_end.offset = bytes - 4;
        past_the_end.size = 8;
        scale(g, "too far", step, past_the_end, g.persistent("y", f.arrays[1].range()), 0);
        CHECK_THROWS_WITH_AS(std::move(g).bake(), doctest::Contains("too far"), Error);
    }
    {
        graph::Graph g(test::device());
        auto x = g.persistent("x", f.arrays[0].range());
        g.add_pass("missing binding", scale_pipeline()).read(x).write(g.persistent("y", f.arrays[1].range()))
            .params(params::GraphScaleParams{n, 0, 0}).threads(n);
        CHECK_THROWS_WITH_AS(std::move(g).bake(), doctest::Contains("binds 3 buffers"), Error);
    }
}

namespace {

// As an op describes a pass: a graph::Dispatch over regions.
graph::Dispatch scale_dispatch(graph::Region step, graph::Region in, graph::Region out, uint32_t slot) {
    graph::Dispatch d{.pipeline = &scale_pipeline()};
    d.bindings = {{step, gpu::Access::Read}, {in, gpu::Access::Read}, {out, gpu::Access::Write}};
    d.params(params::GraphScaleParams{n, slot, 0}).groups = {scale_pipeline().groups_x(n), 1, 1};
    return d;
}

}  // namespace

TEST_CASE("dispatches described by ops become passes on the regions they declare") {
    Fixture f({3, 5}, 2);
    auto input = f.read(0);
    graph::Graph g(test::device());
    auto step = g.persistent("step", f.step.range());
    auto x = g.persistent("x", f.arrays[0].range()), out = g.persistent("out", f.arrays[1].range());
    auto t = g.transient("t", bytes);
    g.add("first", scale_dispatch(step, x, t, 0), 123);
    g.add("second", scale_dispatch(step, t, out, 1));
    CHECK(g.persistent("x", f.arrays[0].range()).resource == x.resource);  // the same memory, the same resource
    CHECK_THROWS_AS(g.persistent("x", f.arrays[1].range()), Error);
    graph::BakedGraph baked = std::move(g).bake();
    CHECK(baked.stats().barriers == 1);
    CHECK(baked.stats().weight_bytes == 123);
    baked.replay();
    CHECK(f.read(1) == expected(input, 15));
    std::ostringstream text;
    baked.dump(text);
    for (const char* declared : {"persistent step", "persistent x", "persistent out", "transient  t", "write      t",
                                 "read       t", "write      out"})
        CHECK(text.str().find(declared) != std::string::npos);
}

TEST_CASE("a pass binding a buffer its graph did not declare is refused") {
    Fixture f({3}, 2);
    graph::Graph g(test::device()), other(test::device());
    auto step = g.persistent("step", f.step.range());
    auto x = g.persistent("x", f.arrays[0].range());
    auto elsewhere = other.persistent("y", f.arrays[1].range());
    const char* refusal =
        "pass 'scale' binds a buffer that no persistent(), transient() or zeroed() of its graph declared";
    CHECK_THROWS_WITH_AS(g.add("scale", scale_dispatch(step, x, elsewhere, 0)), refusal, Error);
    CHECK_THROWS_WITH_AS(g.add("scale", scale_dispatch(step, x, graph::Region{}, 0)), refusal, Error);
    CHECK_THROWS_WITH_AS(scale(g, "scale", step, x, elsewhere, 0), refusal, Error);
}

TEST_CASE("the dump lists levels, barriers and placements; profiling times every pass") {
    Fixture f({3, 5}, 2);
    graph::Graph g(test::device());
    auto step = g.persistent("step", f.step.range());
    auto x = g.persistent("x", f.arrays[0].range()), out = g.persistent("out", f.arrays[1].range());
    auto t = g.transient("blk.0.t", bytes);
    scale(g, "blk.0.first", step, x, t, 0).bytes(bytes);
    scale(g, "blk.0.second", step, t, out, 1);
    graph::BakedGraph baked = std::move(g).bake();
    std::ostringstream text;
    baked.dump(text);
    for (const char* expected_text : {"2 passes", "1 barriers", "blk.0.first", "blk.0.second", "-- barrier", "transient  blk.0.t"})
        CHECK(text.str().find(expected_text) != std::string::npos);
    CHECK(baked.stats().weight_bytes == bytes);
    auto times = baked.profile();
    REQUIRE(times.size() == 2);
    CHECK(times[0].name == "blk.0.first");
    for (const auto& time : times) CHECK(time.milliseconds >= 0);
}
