"""The smoke's results, one row a step, for the compatibility matrix (matrix.py).

run.sh calls it (standard library only, Python 3.11):
  results.py mark WORK                    remember where each fake's log ends
  results.py step WORK CLIENT VERSION ok|fail STEP [MODEL]
                                          record a client step (STEP as run.sh
                                          prints it; MODEL where STEP names none)
  results.py sdk WORK SMOKE_PY            run smoke.py (in the SDK venv), its
                                          output unchanged, recording each check

WORK is run.sh's work directory: it reads WORK/config.yaml (which model is on
which provider, on which wire, at which fake), WORK/fakes (each fake's base URL)
and WORK/fake-log/<fake>.jsonl (what each fake received: method, path, query,
body), and appends to WORK/results.tsv, tab-separated, after a header line:

  client  version  model  wire  check  result  requests  streamed  thinking

client: claude-code, codex, gemini-cli, opencode, copilot, python-openai,
python-anthropic. model: the gateway model the step asked for ("" where the
check has none); wire: that model's upstream wire in the config ("mock" for the
built-in mock, "" for none). check: text, tool round trip, websocket text,
websocket tool round trip, remote compaction, gateway model discovery, or an SDK
check's own name. result: ok or fail. requests: the generation requests the
model's fake received during the step (token counts, token grants and other
routes left out); streamed: how many of them were streamed; thinking: how many
asked for thinking or reasoning. Steps run one at a time, so what a fake logged
between the end of the previous step and the end of this one is this step's.
"""
import json
import pathlib
import re
import sys
import time
from urllib.parse import unquote

HEADER = ["client", "version", "model", "wire", "check", "result", "requests", "streamed", "thinking"]

# How each client's steps start in run.sh's output ("claude code text -> m-openai").
PREFIX = {
    "claude-code": "claude code ",
    "codex": "codex ",
    "gemini-cli": "gemini cli ",
    "opencode": "opencode ",
    "copilot": "copilot ",
}
# Step names that say more than the check: Codex's text turn also checks it took
# the gateway's model metadata; its Responses-wire steps say which transport.
CHECKS = {
    "text, gateway model metadata": "text",
    "text (websocket false)": "text",
    "text (websocket true)": "websocket text",
    "tool round trip (websocket false)": "tool round trip",
    "tool round trip (websocket true)": "websocket tool round trip",
}
# The fakes write each request's line a moment after they receive it.
LOG_LAG_S = 0.25


def models(work):
    """{model id or alias: (wire, fake)} from the config run.sh wrote: the wire of
    the model's first deployment's provider, and the fake whose base URL that
    provider's endpoint starts with (None for the mock)."""
    fakes = {}
    for line in (work / "fakes").read_text().splitlines():
        name, _, url = line.partition(" ")
        if url:
            fakes[url.strip()] = name
    providers, current = {}, None
    section = None
    for line in (work / "config.yaml").read_text().splitlines():
        if re.match(r"^\S", line):
            section = line.split(":")[0]
            continue
        if section == "providers":
            m = re.match(r"^  ([\w-]+):\s*(.*)$", line)
            if m:
                current = m.group(1)
                providers[current] = {}
                line = m.group(2)
            if current is None:
                continue
            for key in ("wire", "endpoint"):
                v = re.search(rf"\b{key}:\s*\"?([^\",}}\s]+)", line)
                if v and key not in providers[current]:
                    providers[current][key] = v.group(1)
    table = {}
    for line in (work / "config.yaml").read_text().split("\nmodels:", 1)[-1].splitlines():
        m = re.match(r"^\s*- \{ id: ([^,\s]+),(.*)$", line)
        if not m:
            continue
        provider = re.search(r"deployments: \[\{ provider: ([\w-]+)", m.group(2))
        p = providers.get(provider.group(1), {}) if provider else {}
        endpoint = p.get("endpoint", "")
        fake = next((f for url, f in sorted(fakes.items())
                     if endpoint == url or endpoint.startswith(url + "/")), None)
        entry = (p.get("wire", "?"), fake)
        aliases = re.search(r"aliases: \[([^\]]*)\]", m.group(2))
        for name in [m.group(1)] + ([a.strip() for a in aliases.group(1).split(",")] if aliases else []):
            table[name] = entry
    return table


def generation(path):
    """Whether a request on `path` (as logged) is a generation, and whether its
    route streams; (False, False) for token counts, token grants and the rest."""
    p = unquote(path)
    if "count-tokens" in p or "count_tokens" in p or p.endswith(":countTokens"):
        return False, False
    for suffix, streams in [
        ("/chat/completions", False),  # OpenAI, Azure, Vertex's OpenAI endpoint: the body says
        ("/responses", False),  # the Responses API: the body says
        ("/responses/compact", False),
        ("/v1/messages", False),  # Anthropic: the body says
        (":rawPredict", False),  # Claude on Vertex (Model-as-a-Service: the body says)
        (":streamRawPredict", True),
        (":generateContent", False),  # Gemini, on Google AI and Vertex
        (":streamGenerateContent", True),
        ("/converse", False),  # Bedrock Converse
        ("/converse-stream", True),
        ("/invoke", False),  # Bedrock InvokeModel (Claude's own body)
        ("/invoke-with-response-stream", True),
    ]:
        if p.endswith(suffix):
            return True, streams
    return False, False


def on(value):
    """A thinking setting that asks for thinking (not `disabled`)."""
    return isinstance(value, dict) and value.get("type") in ("enabled", "adaptive")


def thinking(body):
    """Whether an upstream body asks for thinking or reasoning, in its wire's terms."""
    if not isinstance(body, dict):
        return False
    # Anthropic, Claude on Vertex, Bedrock InvokeModel.
    if on(body.get("thinking")):
        return True
    # Bedrock Converse: Claude's in its own fields (Nova's reasoningConfig likewise).
    extra = body.get("additionalModelRequestFields")
    if isinstance(extra, dict) and (on(extra.get("thinking")) or on(extra.get("reasoningConfig"))):
        return True
    # Chat Completions (OpenAI, Azure).
    effort = body.get("reasoning_effort")
    if isinstance(effort, str) and effort != "none":
        return True
    # The Responses API (OpenAI, Azure).
    reasoning = body.get("reasoning")
    if isinstance(reasoning, dict) and reasoning.get("effort") != "none":
        return True
    # Gemini (Google AI, Vertex): thoughts asked for, or a budget that is not 0 (off).
    config = body.get("generationConfig")
    tc = config.get("thinkingConfig") if isinstance(config, dict) else None
    if isinstance(tc, dict):
        budget = tc.get("thinkingBudget")
        if tc.get("includeThoughts") is True or (isinstance(budget, int) and budget != 0):
            return True
    return False


def log_lines(work):
    """{fake log name: its complete lines}."""
    out = {}
    for log in sorted((work / "fake-log").glob("*.jsonl")):
        text = log.read_text(errors="replace")
        out[log.stem] = text[: text.rfind("\n") + 1].splitlines()
    return out


def mark(work):
    marks = {name: len(lines) for name, lines in log_lines(work).items()}
    (work / "results.marks").write_text(json.dumps(marks, sort_keys=True))
    results = work / "results.tsv"
    if not results.exists():
        results.write_text("\t".join(HEADER) + "\n")


def record(work, client, version, model, check, result, table=None):
    """Appends the step's row: what the model's fake received since the last mark."""
    time.sleep(LOG_LAG_S)
    table = table if table is not None else models(work)
    wire, fake = table.get(model, ("", None)) if model else ("", None)
    marks_file = work / "results.marks"
    marks = json.loads(marks_file.read_text()) if marks_file.exists() else {}
    logs = log_lines(work)
    requests = streamed = thought = 0
    for line in logs.get(fake, [])[marks.get(fake, 0):] if fake else []:
        try:
            r = json.loads(line)
        except ValueError:
            continue
        body = r.get("body")
        gen, route_streams = generation(r.get("path", ""))
        if not gen:
            continue
        requests += 1
        streamed += route_streams or (isinstance(body, dict) and body.get("stream") is True)
        thought += thinking(body)
    row = [client, version, model, wire, check, result, str(requests), str(streamed), str(thought)]
    with open(work / "results.tsv", "a") as f:
        f.write("\t".join(v.replace("\t", " ").replace("\n", " ") for v in row) + "\n")
    mark(work)


def step(work, client, version, result, name, model=""):
    rest = name.removeprefix(PREFIX.get(client, ""))
    check, sep, named = rest.rpartition(" -> ")
    if not sep:
        check = rest
    else:
        model = named
    record(work, client, version, model, CHECKS.get(check, check), result)


class Tee:
    """smoke.py's stdout, passed through unchanged; each `ok   NAME` or `FAIL NAME`
    line it prints (right after the check, before the next one starts) records
    the check."""

    def __init__(self, out, work, versions):
        self.out, self.work, self.versions, self.buf = out, work, versions, ""
        self.failed = False
        self.table = models(work)

    def write(self, s):
        self.buf += s
        while "\n" in self.buf:
            line, self.buf = self.buf.split("\n", 1)
            m = re.match(r"^(ok   |FAIL )(.*?)(  \(.*)?$", line)
            if m:
                self.failed |= m.group(1) == "FAIL "
                self.check(m.group(1).strip().lower(), m.group(2))
        self.out.write(s)
        if "\n" in s:
            self.out.flush()
        return len(s)

    def check(self, result, name):
        # Checks named "openai ..." use the openai SDK, "anthropic ..." the
        # anthropic SDK; the others (bad key, models list) use the openai one.
        sdk = "anthropic" if name.startswith("anthropic ") else "openai"
        rest = name.removeprefix(sdk + " ")
        check, sep, model = rest.rpartition(" -> ")
        if not sep or model not in self.table:  # "-> 404": a status, not a model
            check, model = rest, ""
        mock = re.match(r"^(.*) \((mock)\)$", check)
        if mock:
            check, model = mock.group(1), mock.group(2)
        record(self.work, f"python-{sdk}", self.versions[sdk], model, check, result, self.table)

    def flush(self):
        self.out.flush()

    def __getattr__(self, name):
        return getattr(self.out, name)


def sdk(work, smoke):
    import runpy

    import anthropic
    import openai

    mark(work)
    versions = {"openai": openai.__version__, "anthropic": anthropic.__version__}
    tee = sys.stdout = Tee(sys.stdout, work, versions)
    sys.argv = [smoke]
    try:
        runpy.run_path(smoke, run_name="__main__")
    except BaseException as e:
        # smoke.py stops at its first failed check, which is recorded; an error
        # outside a check (a connection refused, say) is recorded here, for both
        # SDKs, since which one raised it is not known.
        if not (isinstance(e, SystemExit) and e.code in (0, None)) and not tee.failed:
            for name, version in sorted(versions.items()):
                record(work, f"python-{name}", version, "", f"smoke.py ran to its end ({type(e).__name__})",
                       "fail", tee.table)
        raise


def main(argv):
    cmd, work = argv[1], pathlib.Path(argv[2])
    if cmd == "mark":
        mark(work)
    elif cmd == "step":
        step(work, *argv[3:8])
    elif cmd == "sdk":
        sdk(work, argv[3])
    else:
        sys.exit(f"unknown command {cmd!r}")


if __name__ == "__main__":
    main(sys.argv)
