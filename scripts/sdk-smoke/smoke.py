"""Drive the official Python SDKs against a running gateway (see run.sh).

Each check prints one line; the script exits non-zero on the first failure.
Models: m-openai / m-anthropic / m-gemini are served by fake upstreams of each
wire; `mock` by the built-in mock provider.
"""
import os
import sys

import anthropic
import openai

BASE = os.environ["GATEWAY_URL"]
KEY = os.environ["GATEWAY_KEY"]

oa = openai.OpenAI(base_url=f"{BASE}/v1", api_key=KEY)
an = anthropic.Anthropic(base_url=BASE, api_key=KEY)


def check(name, cond, detail=""):
    print(("ok   " if cond else "FAIL ") + name + (f"  ({detail})" if detail and not cond else ""))
    if not cond:
        sys.exit(1)


for model in ["m-openai", "m-anthropic", "m-gemini"]:
    r = oa.chat.completions.create(model=model, messages=[{"role": "user", "content": "hello"}])
    check(f"openai chat -> {model}", r.choices[0].message.content == "echo: hello", r)
    check(f"openai chat usage -> {model}", r.usage.prompt_tokens > 0 and r.usage.completion_tokens > 0, r.usage)

    text, usage = "", None
    for chunk in oa.chat.completions.create(
        model=model, messages=[{"role": "user", "content": "stream please"}],
        stream=True, stream_options={"include_usage": True},
    ):
        if chunk.choices:
            text += chunk.choices[0].delta.content or ""
        if chunk.usage:
            usage = chunk.usage
    check(f"openai chat stream -> {model}", text == "echo: stream please" and usage is not None, (text, usage))

    r = oa.responses.create(model=model, input="respond")
    check(f"openai responses -> {model}", r.output_text == "echo: respond", r)
    done = None
    deltas = ""
    with oa.responses.stream(model=model, input="respond stream") as s:
        for ev in s:
            if ev.type == "response.output_text.delta":
                deltas += ev.delta
        done = s.get_final_response()
    check(f"openai responses stream -> {model}", deltas == "echo: respond stream" and done.usage.output_tokens > 0, (deltas, done))

    m = an.messages.create(model=model, max_tokens=64, messages=[{"role": "user", "content": "hi claude"}])
    check(f"anthropic messages -> {model}", m.content[0].text == "echo: hi claude", m)
    with an.messages.stream(model=model, max_tokens=64, messages=[{"role": "user", "content": "hi stream"}]) as s:
        final = s.get_final_message()
    check(f"anthropic messages stream -> {model}", final.content[0].text == "echo: hi stream" and final.usage.output_tokens > 0, final)

for model in ["m-anthropic", "m-gemini", "m-openai"]:
    t = an.messages.count_tokens(model=model, messages=[{"role": "user", "content": "count me please"}])
    check(f"anthropic count_tokens -> {model}", t.input_tokens > 0, t)
# POST /v1/responses/input_tokens, in SDKs recent enough to have it.
if hasattr(oa.responses, "input_tokens"):
    for model in ["m-anthropic", "m-gemini", "m-openai"]:
        t = oa.responses.input_tokens.count(model=model, input="count me please")
        check(f"openai responses input_tokens -> {model}", t.input_tokens > 0, t)

tools = [{"name": "get_weather", "description": "weather", "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}]
m = an.messages.create(model="mock", max_tokens=64, tools=tools, tool_choice={"type": "any"},
                       messages=[{"role": "user", "content": "weather?"}])
check("anthropic tool_use (mock)", m.stop_reason == "tool_use" and m.content[-1].type == "tool_use", m)
r = oa.chat.completions.create(model="mock", tool_choice="required", messages=[{"role": "user", "content": "x"}],
                               tools=[{"type": "function", "function": {"name": "get_weather", "parameters": tools[0]["input_schema"]}}])
check("openai tool_calls (mock)", r.choices[0].finish_reason == "tool_calls" and r.choices[0].message.tool_calls[0].function.name == "get_weather", r)

try:
    oa.chat.completions.create(model="no-such-model", messages=[{"role": "user", "content": "x"}])
    check("openai unknown model -> 404", False)
except openai.NotFoundError as e:
    check("openai unknown model -> 404", e.body.get("code") == "model_not_found", e.body)
try:
    an.messages.create(model="no-such-model", max_tokens=8, messages=[{"role": "user", "content": "x"}])
    check("anthropic unknown model -> 404", False)
except anthropic.NotFoundError as e:
    check("anthropic unknown model -> 404", e.body["error"]["type"] == "not_found_error", e.body)
try:
    openai.OpenAI(base_url=f"{BASE}/v1", api_key="wrong").models.list()
    check("bad key -> 401", False)
except openai.AuthenticationError:
    check("bad key -> 401", True)
ids = [m.id for m in oa.models.list()]
check("models list", "m-openai" in ids and "mock-echo" in ids, ids)
print("all SDK checks passed")
