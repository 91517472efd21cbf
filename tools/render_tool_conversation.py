#!/usr/bin/env python3
# The reference rendering of a tool-calling conversation (tools, an assistant tool call, its tool result,
# a further turn) through a chat template, by jinja2 as transformers renders chat templates (sandboxed,
# trim_blocks, lstrip_blocks, loopcontrols, its tojson; strftime_now fixed): tests/chat compares vkllm's
# rendering with it. Needs python3-jinja2 (Debian) or jinja2; written once, the output is committed.
#   tools/render_tool_conversation.py TEMPLATE.jinja tests/data/chat/mistral_tool_conversation.json
import json, sys
import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment
template_path, out_path = sys.argv[1], sys.argv[2]
env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
def raise_exception(message): raise jinja2.exceptions.TemplateError(message)
env.globals["raise_exception"] = raise_exception
env.globals["strftime_now"] = lambda fmt: "2025-01-01"
# transformers' own tojson: keys in their order, a plain string (jinja2's sorts keys and returns Markup).
env.filters["tojson"] = lambda x, ensure_ascii=False, indent=None, separators=None, sort_keys=False: json.dumps(
    x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)
tools = [{"type": "function", "function": {"name": "get_weather", "description": "The weather in a city",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
                         "required": ["city"]}}}]
messages = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "What is the weather in Paris?"},
    {"role": "assistant", "content": None, "tool_calls": [{"id": "call0a1b2c3d4", "type": "function",
        "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}}]},
    {"role": "tool", "tool_call_id": "call0a1b2c3d4", "content": "{\"temperature\": 21}"},
    {"role": "assistant", "content": "It is 21 degrees in Paris."},
    {"role": "user", "content": "And in Lyon?"},
]
template = env.from_string(open(template_path).read())
output = template.render(messages=messages, tools=tools, add_generation_prompt=True, bos_token="<s>", eos_token="</s>")
# What a client sends: arguments as a JSON string, as OpenAI's API has them.
sent = json.loads(json.dumps(messages))
sent[2]["tool_calls"][0]["function"]["arguments"] = json.dumps(messages[2]["tool_calls"][0]["function"]["arguments"])
json.dump({"engine": f"jinja2 {jinja2.__version__} as transformers renders chat templates: ImmutableSandboxedEnvironment(trim_blocks, lstrip_blocks, loopcontrols), its tojson, strftime_now 2025-01-01",
           "template": "mistralai-Mistral-Small-3.1-24B-Instruct-2503.jinja", "tools": tools, "messages": sent, "output": output},
          open(out_path, "w"), indent=1)
print(output)
