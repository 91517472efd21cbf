#include "gpu_fixture.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <random>

#include "core/env.h"
#include "test_main.h"

namespace vkllm::test {
namespace {

uint64_t expected_messages = 0;

uint64_t unexpected_messages() { return gpu::validation_message_count() - expected_messages; }

struct Context {
    std::unique_ptr<gpu::Instance> instance;
    std::unique_ptr<gpu::Device> device;
    std::unique_ptr<gpu::Transfer> transfer;
};

Context& context() {
    static Context context = [] {
        // Tests keep their pipeline cache to themselves.
        if (!env::get("VKLLM_CACHE_DIR"))
            setenv("VKLLM_CACHE_DIR", (std::filesystem::temp_directory_path() / "vkllm-test-cache").c_str(), 1);
        Context c;
        c.instance = std::make_unique<gpu::Instance>(gpu::InstanceOptions{.validation = true});
        c.device = std::make_unique<gpu::Device>(*c.instance);
        c.transfer = std::make_unique<gpu::Transfer>(*c.device);
        return c;
    }();
    return context;
}

// Names the test case during which the validation layer spoke, and fails the run at its end.
struct ValidationListener : doctest::IReporter {
    uint64_t before = 0;
    const char* name = "";
    explicit ValidationListener(const doctest::ContextOptions&) {}
    void test_case_start(const doctest::TestCaseData& test) override {
        before = unexpected_messages();
        name = test.m_name;
    }
    void test_case_end(const doctest::CurrentTestCaseStats&) override {
        if (uint64_t count = unexpected_messages() - before)
            std::fprintf(stderr, "FAILED: %llu validation messages in test case '%s'\n", (unsigned long long)count, name);
    }
    void test_case_reenter(const doctest::TestCaseData&) override {}
    void test_case_exception(const doctest::TestCaseException&) override {}
    void subcase_start(const doctest::SubcaseSignature&) override {}
    void subcase_end() override {}
    void log_assert(const doctest::AssertData&) override {}
    void log_message(const doctest::MessageData&) override {}
    void test_case_skipped(const doctest::TestCaseData&) override {}
    void report_query(const doctest::QueryData&) override {}
    void test_run_start() override {}
    void test_run_end(const doctest::TestRunStats&) override {}
};
REGISTER_LISTENER("validation", 1, ValidationListener);

const bool registered = [] {
    end_of_run_checks().push_back([] {
        // Tear down before counting: leaks and destruction errors are reported then.
        Context& c = context();
        c.transfer.reset();
        c.device.reset();
        c.instance.reset();
        uint64_t messages = unexpected_messages();
        if (messages == 0) return 0;
        std::fprintf(stderr, "FAILED: the Vulkan validation layer reported %llu messages\n", (unsigned long long)messages);
        return 1;
    });
    return true;
}();

}  // namespace

ExpectValidationMessages::ExpectValidationMessages() : before_(gpu::validation_message_count()) {}
ExpectValidationMessages::~ExpectValidationMessages() { expected_messages += seen(); }
uint64_t ExpectValidationMessages::seen() const { return gpu::validation_message_count() - before_; }

gpu::Instance& instance() { return *context().instance; }
gpu::Device& device() { return *context().device; }
gpu::Transfer& transfer() { return *context().transfer; }

Float32Kernels::Float32Kernels() : before_(device().caps().use_float16()) { device().enable_float16_kernels(false); }

Float32Kernels::~Float32Kernels() { device().enable_float16_kernels(before_); }

std::vector<float> random_floats(size_t count, uint64_t seed, float low, float high) {
    std::mt19937_64 engine(seed);
    std::vector<float> values(count);
    // mt19937_64's output is fixed by the standard; map it to floats ourselves (distributions are not).
    for (float& value : values) value = low + (high - low) * float(double(engine() >> 11) * 0x1.0p-53);
    return values;
}

double relative_error(std::span<const float> got, std::span<const float> want) {
    if (got.size() != want.size()) return INFINITY;
    double error = 0, norm = 0;
    for (size_t i = 0; i < got.size(); ++i) {
        if (!std::isfinite(got[i]) || !std::isfinite(want[i])) return INFINITY;
        error += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
        norm += double(want[i]) * want[i];
    }
    return norm == 0 ? std::sqrt(error) : std::sqrt(error / norm);
}

gpu::Buffer upload(std::span<const float> values, gpu::MemoryDomain domain) {
    gpu::Buffer buffer = device().allocator().create(values.size_bytes(), domain);
    transfer().upload(buffer, values);
    transfer().flush();
    return buffer;
}

std::vector<float> download(const gpu::Buffer& buffer, size_t count) {
    std::vector<float> values(count);
    transfer().readback(buffer, std::span(values));
    return values;
}

}  // namespace vkllm::test
