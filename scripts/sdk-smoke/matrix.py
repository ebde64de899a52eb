"""Writes docs/compatibility.md from a smoke run's results (results.py's
results.tsv): per client, its version and a table of upstream wires against the
checks it ran, with what the upstreams received. Standard library only.

  matrix.py RESULTS_TSV OUT_MD --date YYYY-MM-DD --commit SHA [--dirty]

The output depends on the results, the date and the commit alone (rows and
columns in a fixed order), so a rerun with the same results writes the same file.
"""
import argparse
import csv
import pathlib

# The clients, in the order run.sh drives them; how each talks to the gateway,
# and the settings run.sh gives it beyond its defaults.
CLIENTS = [
    ("claude-code", "Claude Code", "npm `@anthropic-ai/claude-code`",
     "Anthropic Messages (`/v1/messages`)", "headless (`claude -p`), Bash allowed for the tool step"),
    ("codex", "Codex", "npm `@openai/codex`",
     "OpenAI Responses (`/v1/responses`), over HTTP and over its WebSocket",
     "as `codex exec` with `model_reasoning_effort = \"medium\"`, its sandbox bypassed for the tool step"),
    ("gemini-cli", "Gemini CLI", "npm `@google/gemini-cli`",
     "the Gemini API", "headless (`gemini -p`), `--yolo` for the tool step"),
    ("opencode", "OpenCode", "npm `opencode-ai`",
     "OpenAI Chat Completions, through its `@ai-sdk/openai-compatible` provider",
     "as `opencode run --variant high` (which sends `reasoning_effort`)"),
    ("copilot", "GitHub Copilot CLI", "npm `@github/copilot`",
     "OpenAI Chat Completions (its own provider settings, `COPILOT_PROVIDER_BASE_URL`)",
     "headless (`copilot -p`), `--allow-all-tools`"),
    ("python-openai", "Python `openai` SDK", "PyPI `openai`",
     "OpenAI Chat Completions and Responses", "by `scripts/sdk-smoke/smoke.py`"),
    ("python-anthropic", "Python `anthropic` SDK", "PyPI `anthropic`",
     "Anthropic Messages", "by `scripts/sdk-smoke/smoke.py`"),
]
# The upstream wires, in the order of the smoke's config.
WIRES = [
    ("anthropic", "Anthropic Messages"),
    ("openai-chat", "OpenAI Chat Completions"),
    ("openai-responses", "OpenAI Responses"),
    ("gemini", "Gemini API"),
    ("bedrock", "Bedrock Converse"),
    ("bedrock-anthropic", "Bedrock InvokeModel, Claude's body"),
    ("vertex-anthropic", "Claude on Vertex AI"),
    ("vertex-gemini", "Gemini on Vertex AI"),
    ("azure-openai", "Azure OpenAI Chat Completions"),
    ("azure-openai-responses", "Azure OpenAI Responses"),
    ("mock", "the gateway's built-in mock"),
]
# Checks in column order; any other goes after these, alphabetically.
CHECKS = [
    "text", "tool round trip", "websocket text", "websocket tool round trip",
    "remote compaction", "gateway model discovery",
    # smoke.py's, as it names them.
    "chat", "chat usage", "chat stream", "responses", "responses stream", "responses input_tokens",
    "messages", "messages stream", "count_tokens", "tool_calls", "tool_use",
]
PASS, FAIL, NONE = "✓", "✗", "—"


def order(items, known):
    rank = {k: i for i, k in enumerate(known)}
    return sorted(items, key=lambda k: (rank.get(k, len(rank)), k))


def md(text):
    return str(text).replace("|", "\\|")


def verdict(results):
    if not results:
        return NONE
    return PASS if all(r == "ok" for r in results) else FAIL


def share(count, total):
    """A measured fact over `total` requests: all, none, or how many."""
    if total == 0:
        return NONE
    if count == total:
        return PASS
    if count == 0:
        return FAIL
    return f"{count} of {total}"


def read(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    for r in rows:
        for k in ("requests", "streamed", "thinking"):
            r[k] = int(r.get(k) or 0)
    return rows


def client_section(out, cid, name, package, speaks, settings, rows):
    versions = sorted({r["version"] for r in rows if r["version"]})
    version = ", ".join(versions) if versions else "unknown"
    out.append(f"## {name} {version}" if rows else f"## {name}")
    out.append("")
    if not rows:
        out.append(f"{package}: not run.")
        out.append("")
        return
    out.append(f"{package} {version}. Talks to the gateway in {speaks}. Run {settings}.")
    out.append("")
    wired = [r for r in rows if r["model"]]
    loose = [r for r in rows if not r["model"]]
    if wired:
        checks = order({r["check"] for r in wired}, CHECKS)
        rank = {w: i for i, (w, _) in enumerate(WIRES)}
        keys = sorted({(r["wire"], r["model"]) for r in wired},
                      key=lambda k: (rank.get(k[0], len(rank)), k[0], k[1]))
        head = ["Upstream wire", "Model"] + checks + ["streamed", "thinking requested"]
        out.append("| " + " | ".join(md(h) for h in head) + " |")
        out.append("| --- | --- |" + " :-: |" * (len(checks) + 2))
        for wire, model in keys:
            mine = [r for r in wired if (r["wire"], r["model"]) == (wire, model)]
            label = dict(WIRES).get(wire)
            wire_cell = f"{label} (`{wire}`)" if label else (f"`{wire}`" if wire else "unknown")
            cells = [wire_cell, f"`{model}`"]
            cells += [verdict([r["result"] for r in mine if r["check"] == c]) for c in checks]
            total = sum(r["requests"] for r in mine)
            cells.append(share(sum(r["streamed"] for r in mine), total))
            cells.append(share(sum(r["thinking"] for r in mine), total))
            out.append("| " + " | ".join(md(c) for c in cells) + " |")
        out.append("")
    if loose:
        out.append("Checks not tied to an upstream wire:")
        out.append("")
        for check in order({r["check"] for r in loose}, CHECKS):
            mark = verdict([r["result"] for r in loose if r["check"] == check])
            out.append(f"- {mark} `{check}`")
        out.append("")


LEGEND = """\
## How to read the tables

- **Upstream wire**: the `wire:` of the provider that serves the model in the
  smoke's configuration (in `scripts/sdk-smoke/run.sh`), and the gateway model the
  client asked for. Each model has one deployment, so every request for it went
  to that wire.
- **✓** the check passed, **✗** it failed, **—** this client did not run it on
  this wire.
- **text**: the client sent a plain prompt and its final answer carried the fake
  upstream's echo of it. Codex's text step also checks that Codex took the
  gateway's model metadata (`/v1/models`) for the model.
- **tool round trip**: the client was asked to run the shell command that the
  fake's scripted tool loop calls for; it passes when the client's final answer
  quotes the tool's output as the fake returned it, so the call reached the
  client, the client ran its tool, and the result went back upstream.
- **websocket text**, **websocket tool round trip**: the same, with Codex talking
  to the gateway over the Responses WebSocket; its log must show the connection
  and no fallback to HTTP.
- **remote compaction**: Codex compacting its conversation through the gateway
  (its built-in OpenAI provider pointed at the gateway): the upstream receives
  the summarisation request, then the summary in place of the history.
- **gateway model discovery**: Claude Code listing the gateway's models and
  keeping the one named for it (`claude-smoke`).
- The Python SDKs' columns are `scripts/sdk-smoke/smoke.py`'s checks under their
  own names: `chat`, `responses` and `messages` a whole answer, the `stream` ones
  a streamed answer, each with the exact echo; `chat usage` the token usage of
  the `chat` answer; `count_tokens` and `responses input_tokens` a token count;
  `tool_calls` and `tool_use` a forced tool call, answered by the gateway's
  built-in mock. Listed under the table, the checks that reach no upstream: the
  errors for an unknown model and a bad key, the model list; and, if smoke.py
  stopped on an error outside its checks, `smoke.py ran to its end` ✗.
  smoke.py stops at its first failure: the checks after a ✗ read —.
- **streamed** and **thinking requested** are measured, not configured: they are
  read from the requests the model's fake upstream logged during the row's steps,
  passed or failed. Only generation requests count (not token counts, token
  grants or model lists). ✓ every one of them, ✗ none, *n of m* some, — no
  generation request reached the upstream.
- **streamed**: the request asked for a stream: `"stream": true` in its body, or
  a streaming route (`:streamGenerateContent`, `:streamRawPredict`,
  `/converse-stream`, `/invoke-with-response-stream`).
- **thinking requested**: the request asked the upstream for thinking or
  reasoning, in the wire's own terms: `thinking` of type `enabled` or `adaptive`
  in a Claude body (Anthropic, Vertex AI, Bedrock InvokeModel) or in Bedrock
  Converse's `additionalModelRequestFields`; a `reasoning_effort` other than
  `none` (Chat Completions); a `reasoning` whose `effort` is not `none`
  (Responses); a `generationConfig.thinkingConfig` with `includeThoughts: true`
  or a `thinkingBudget` other than 0 (Gemini). It follows from the client's own
  settings as the gateway translated them; it does not say whether the model
  thought (Gemini 3 models think whether asked or not, and a `thinkingLevel`
  alone is not counted).
"""


def render(rows, date, commit, dirty=False):
    changes = " with changes not committed" if dirty else ""
    out = [
        "# Client compatibility",
        "",
        f"Run of {date} (UTC), gateway commit `{commit}`{changes}.",
        "",
        "This file is generated by `scripts/sdk-smoke/run.sh --clients`: do not edit it",
        "by hand, run the script again. The script drives each client below, as",
        "installed from npm or PyPI at the version shown, through the gateway to the",
        "project's fake upstreams (`fake-upstream`, from `crates/testkit`), which",
        "validate each request as the real API does, refusing what it refuses, and",
        "answer with an echo of the prompt or a scripted tool loop. The vendors' live",
        "services are not called.",
        "",
        "| Client | Version | Checks passed |",
        "| --- | --- | --- |",
    ]
    known = [c[0] for c in CLIENTS]
    extra = sorted({r["client"] for r in rows} - set(known))
    clients = CLIENTS + [(c, c, f"`{c}`", "its own API", "as run.sh says") for c in extra]
    by_client = {c[0]: [r for r in rows if r["client"] == c[0]] for c in clients}
    for cid, name, *_ in clients:
        mine = by_client[cid]
        versions = ", ".join(sorted({r["version"] for r in mine if r["version"]})) or "unknown"
        passed = sum(r["result"] == "ok" for r in mine)
        summary = f"{passed} of {len(mine)}" if mine else "not run"
        out.append(f"| {md(name)} | {md(versions) if mine else NONE} | {summary} |")
    out.append("")
    for client in clients:
        client_section(out, *client, by_client[client[0]])
    out.append(LEGEND)
    return "\n".join(out).rstrip("\n") + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results")
    ap.add_argument("out")
    ap.add_argument("--date", required=True, help="the run's date, UTC (YYYY-MM-DD)")
    ap.add_argument("--commit", required=True, help="the gateway's commit")
    ap.add_argument("--dirty", action="store_true", help="the work tree had changes not committed")
    args = ap.parse_args()
    text = render(read(args.results), args.date, args.commit, args.dirty)
    pathlib.Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
