// The Jinja2 subset against transformers' renders of the real templates, its Python-like
// semantics, and its errors: malformed templates name their line and never crash.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "chat/jinja.h"
#include "core/error.h"
#include "test_main.h"

namespace fs = std::filesystem;
using vkllm::chat::JinjaTemplate;
using json = nlohmann::ordered_json;

namespace {

std::string read_file(const fs::path& path) {
    std::ifstream file(path, std::ios::binary);
    std::ostringstream text;
    text << file.rdbuf();
    return text.str();
}

std::string render(std::string_view source, const json& variables = json::object()) {
    return JinjaTemplate(source, "t.jinja").render(variables, "2025-01-01");
}

}  // namespace

TEST_CASE("the real chat templates render transformers' outputs byte for byte") {
    const auto shared_dir = vkllm::test::shared_path("testdata/chat_templates");
    if (!shared_dir) return;
    const fs::path& dir = *shared_dir;
    const json renders = json::parse(read_file(dir / "chat_template_renders.derived.json"));
    int n_cases = 0;
    for (const json& test : renders.at("cases")) {
        const std::string file = test.at("template").get<std::string>();
        CAPTURE(file);
        CAPTURE(test.at("conversation").get<std::string>());
        CAPTURE(test.at("add_generation_prompt").get<bool>());
        const JinjaTemplate tmpl(read_file(dir / file), file);
        const json variables = {{"messages", test.at("messages")},
                                {"add_generation_prompt", test.at("add_generation_prompt")},
                                {"bos_token", test.at("bos_token")},
                                {"eos_token", test.at("eos_token")}};
        REQUIRE(test.at("error").is_null());
        CHECK(tmpl.render(variables, "2025-01-01") == test.at("output").get<std::string>());
        ++n_cases;
    }
    CHECK(n_cases == 12);
}

TEST_CASE("Jinja semantics: whitespace control, scoping, filters, tests, Python printing") {
    CHECK(render("a\n  {% if true %}\n  b\n  {% endif %}\nc") == "a\n  b\nc");  // trim/lstrip_blocks
    CHECK(render("x  {{- ' y ' -}}  z") == "x y z");
    CHECK(render("{% for i in range(3) %}{{ i }}{% if not loop.last %},{% endif %}{% endfor %}") == "0,1,2");
    CHECK(render("{% set x = 1 %}{% for i in [1] %}{% set x = 2 %}{% endfor %}{{ x }}") == "1");
    CHECK(render("{% set ns = namespace(x=1) %}{% for i in [1] %}{% set ns.x = 2 %}{% endfor %}{{ ns.x }}") == "2");
    CHECK(render("{{ [1, 'a', none, true, 1.5] }}") == "[1, 'a', None, True, 1.5]");
    CHECK(render("{{ {'a': [1, 2]} | tojson }}") == "{\"a\": [1, 2]}");
    CHECK(render("{{ 'héllo'[1:4] }}|{{ 'abcdef'[-2:] }}|{{ [1,2,3][::-1] }}") == "éll|ef|[3, 2, 1]");
    CHECK(render("{{ m | selectattr('r', 'equalto', 'u') | map(attribute='c') | join(',') }}",
                 {{"m", json::parse(R"([{"r":"u","c":"1"},{"r":"a","c":"2"},{"r":"u","c":"3"}])")}}) == "1,3");
    CHECK(render("{{ x is defined }} {{ y is none }} {{ 'ab' is string }} {{ 3 is odd }}", {{"y", nullptr}}) ==
          "False True True True");
    CHECK(render("{{ d.get('k', 'no') }} {{ d.k2 is defined }} {% for k, v in d.items() %}{{ k }}={{ v }}{% endfor %}",
                 {{"d", {{"a", 1}}}}) == "no False a=1");
    CHECK(render("{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ 1 / 4 }} {{ 2 ** 10 }} {{ 'ab' * 2 }} {{ 1 ~ 'x' }}") ==
          "3 -4 1 0.25 1024 abab 1x");
    CHECK(render("{{ 1e-05 }} {{ 1e16 }} {{ 100.0 }} {{ 0.1 + 0.2 }} {{ -2.5e-7 }}") ==
          "1e-05 1e+16 100.0 0.30000000000000004 -2.5e-07");  // Python's float repr
    CHECK(render("{{ '  x  ' | trim }}|{{ 'a\\\nb' }}|{{ \"it's\" }}") == "x|ab|it's");
    CHECK(render("{% macro greet(name, punct='!') %}hi {{ name }}{{ punct }}{% endmacro %}{{ greet('bob') }}") == "hi bob!");
    CHECK(render("{% for x in [1,2,3,4] if x is even %}{{ x }}{% else %}none{% endfor %}") == "24");
    CHECK(render("{% for x in [] %}{{ x }}{% else %}empty{% endfor %}") == "empty");
    CHECK(render("{% for x in [1,2,3] %}{% if x == 2 %}{% break %}{% endif %}{{ x }}{% endfor %}") == "1");
    CHECK(render("{{ strftime_now('%Y-%m-%d') }}") == "2025-01-01");
    CHECK(render("{% raw %}{{ not parsed }}{% endraw %}") == "{{ not parsed }}");
    CHECK(render("{# comment #}x\n") == "x");  // the final newline goes (keep_trailing_newline=False)
}

TEST_CASE("template errors are vkllm::Error naming the template and line") {
    const std::pair<const char*, const char*> cases[] = {
        {"line1\n{% if x %}\nno end", "t.jinja:2:"},
        {"{{ 1 +  }}", "t.jinja:1:"},
        {"a\nb\n{% for %}", "t.jinja:3:"},
        {"{{ x | nosuchfilter }}", "unknown filter"},
        {"\n{{ raise_exception('boom') }}", "t.jinja:2: raise_exception: boom"},
        {"{{ x.y }}", "'x' is undefined"},
        {"{% endif %}", "t.jinja:1:"},
        {"{{ 'unterminated }}", "t.jinja:1:"},
        {"{% set x = [] %}{{ x.append(1) }}", "not callable"},
        {"{{ 1 / 0 }}", "division by zero"},
    };
    for (auto [source, message] : cases) {
        CAPTURE(source);
        CHECK_THROWS_WITH_AS(render(source), doctest::Contains(message), vkllm::Error);
    }
    const std::string deep = std::string(1000, '(') + "1" + std::string(1000, ')');
    CHECK_THROWS_AS(render("{{ " + deep + " }}"), vkllm::Error);
    CHECK_THROWS_WITH_AS(render("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}"), doctest::Contains("nested too deeply"), vkllm::Error);
    CHECK_THROWS_WITH_AS(render("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"),
                         doctest::Contains("steps"), vkllm::Error);
}

TEST_CASE("random mutations of the real templates never crash: they render or throw vkllm::Error") {
    const auto shared_dir = vkllm::test::shared_path("testdata/chat_templates");
    if (!shared_dir) return;
    const fs::path& dir = *shared_dir;
    const json variables = {{"messages", json::parse(R"([{"role":"system","content":"S"},{"role":"user","content":"Hi"},
                                                        {"role":"assistant","content":"Yo"},{"role":"user","content":"Q"}])")},
                            {"add_generation_prompt", true}, {"bos_token", "<s>"}, {"eos_token", "</s>"}};
    const std::string pieces = "{}%#-+()[]'\"|.,:=~ \nifendforsetnotinis";
    for (const char* file : {"google-gemma-3-it.chat_template.jinja", "mistralai-Mistral-Small-3.1-24B-Instruct-2503.jinja"}) {
        const std::string original = read_file(dir / file);
        const uint32_t seed = 1234;
        std::mt19937 rng(seed);  // mt19937's sequence is fixed by the standard
        int rendered = 0, rejected = 0;
        for (int round = 0; round < 400; ++round) {
            std::string source = original;
            for (int edit = 0, n = 1 + int(rng() % 4); edit < n; ++edit) {
                const size_t at = rng() % (source.size() + 1);
                switch (rng() % 3) {
                    case 0: if (at < source.size()) source.erase(at, 1 + rng() % 8); break;
                    case 1: source.insert(at, 1, pieces[rng() % pieces.size()]); break;
                    default: if (at < source.size()) source[at] = pieces[rng() % pieces.size()];
                }
            }
            CAPTURE(seed);
            CAPTURE(round);
            try {
                JinjaTemplate(source, file).render(variables, "2025-01-01");
                ++rendered;
            } catch (const vkllm::Error& error) {
                CHECK(std::string(error.what()).starts_with(std::string(file) + ":"));
                ++rejected;
            }
        }
        CHECK(rendered + rejected == 400);
        CHECK(rejected > 0);
    }
}
