#!/usr/bin/env bash
# SDK smoke test: the official Python `openai` and `anthropic` SDKs (and, with
# --clients, Claude Code, Codex, OpenCode, Gemini CLI and GitHub Copilot CLI, each on
# its default settings) against the gateway in front of fake
# upstreams. Needs network access to PyPI (and npm for the CLIs) the first time.
#   scripts/sdk-smoke/run.sh [--clients]   (--clients: also the agent CLIs, from npm)
# SWITCHYARD_LOG=debug shows more of the gateway's log when a step fails; the
# fakes log what they receive to $work/fake-log/<vendor>.jsonl. SMOKE_WORK=DIR
# (an empty or new directory) keeps the work directory (logs, client output).
# With --clients it writes docs/compatibility.md (scripts/sdk-smoke/matrix.py) from
# every step's result, $work/results.tsv (scripts/sdk-smoke/results.py), whether or
# not steps failed.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
run_date=$(date -u +%Y-%m-%d)
# The commit the gateway is built from, now (the tree may change while the run
# goes on); changes not committed, but to the matrix itself, are said.
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
dirty=""
[ -z "$(GIT_OPTIONAL_LOCKS=0 git status --porcelain --untracked-files=no -- . ':(exclude)docs/compatibility.md' \
  2>/dev/null)" ] || dirty=--dirty
if [ -n "${SMOKE_WORK:-}" ]; then
  mkdir -p "$SMOKE_WORK"; work=$(cd "$SMOKE_WORK" && pwd)
  trap 'kill $(jobs -p) 2>/dev/null || true' EXIT
else
  work=$(mktemp -d)
  trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
fi

cargo build --release -q -p switchyard -p switchyard-testkit --bin switchyard --bin fake-upstream

mkdir -p "$work/fake-log"
rm -f "$work/results.tsv" "$work/results.marks"
target/release/fake-upstream --log "$work/fake-log" openai anthropic gemini bedrock vertex-anthropic \
  vertex-gemini azure > "$work/fakes" &
for _ in $(seq 50); do [ "$(wc -l < "$work/fakes")" -ge 7 ] && break; sleep 0.1; done
url() { awk -v v="$1" '$1==v {print $2}' "$work/fakes"; }
# The service account the Vertex fake grants tokens to (the testkit's test key).
# Each Vertex fake grants tokens at its own /token.
for v in vertex-anthropic vertex-gemini; do
python3 - "$(url $v)/token" "$root/crates/testkit/data/rsa-test.key" > "$work/$v-sa.json" <<'PY'
import json, sys
print(json.dumps({"type": "service_account", "project_id": "test-project",
    "private_key": open(sys.argv[2]).read(), "token_uri": sys.argv[1],
    "client_email": "gateway@test-project.iam.gserviceaccount.com"}))
PY
done

export GATEWAY_KEY="sk-gw-smoke-0123456789"
cat > "$work/config.yaml" <<YAML
gateway:
  api_keys: ["$GATEWAY_KEY"]
providers:
  # No server_tools here: Codex declares OpenAI's hosted web_search on every
  # request, and the gateway serves it without the tool where a deployment cannot
  # run it (Gemini's API runs it by default). The smoke drives Codex on its defaults.
  openai: { wire: openai-chat, endpoint: "$(url openai)/v1", credentials: { keys: [sk-fake-openai] } }
  anthropic: { wire: anthropic, endpoint: "$(url anthropic)", credentials: { keys: [sk-fake-anthropic] } }
  gemini: { wire: gemini, endpoint: "$(url gemini)", credentials: { keys: [fake-gemini] } }
  # Claude on Bedrock (SigV4 with the fake's keys) and on Vertex AI (a service account's token).
  bedrock:
    wire: bedrock
    endpoint: "$(url bedrock)"
    region: us-east-1
    credentials: { aws: { access_key_id: AKIDFAKEBEDROCK, secret_access_key: "fake/bedrock/secret+KEY0001" } }
  # Claude on Bedrock in Anthropic's own body (InvokeModel), on the same fake.
  bedrock-claude:
    wire: bedrock-anthropic
    endpoint: "$(url bedrock)"
    region: us-east-1
    credentials: { aws: { access_key_id: AKIDFAKEBEDROCK, secret_access_key: "fake/bedrock/secret+KEY0001" } }
  vertex:
    wire: vertex-anthropic
    endpoint: "$(url vertex-anthropic)/v1/projects/{project}/locations/{region}"
    region: us-east5
    credentials: { google: { service_account_file: "$work/vertex-anthropic-sa.json" } }
  vertex-gemini:
    wire: vertex-gemini
    endpoint: "$(url vertex-gemini)/v1/projects/{project}/locations/{region}"
    region: global
    credentials: { google: { service_account_file: "$work/vertex-gemini-sa.json" } }
  # Azure OpenAI: Chat Completions on a deployment, and the Responses API.
  azure: { wire: azure-openai, endpoint: "$(url azure)", credentials: { keys: [azure-test-key-0123456789abcdef] } }
  azure-responses: { wire: azure-openai-responses, endpoint: "$(url azure)", credentials: { keys: [azure-test-key-0123456789abcdef] } }
  # OpenAI's Responses API (the OpenAI fake serves it too).
  responses: { wire: openai-responses, endpoint: "$(url openai)/v1", credentials: { keys: [sk-fake-openai] } }
  mock: { wire: mock }
models:
  - { id: m-openai, deployments: [{ provider: openai, model: gpt-fake }], capabilities: [tools, vision] }
  # A Claude 4.5 id: the fake then refuses what Claude 4.5 refuses (temperature with top_p).
  - { id: m-anthropic, deployments: [{ provider: anthropic, model: claude-haiku-4-5 }], capabilities: [tools, vision] }
  # A Gemini 3 id: the fake then refuses a tool history whose calls lost their thought signatures.
  - { id: m-gemini, deployments: [{ provider: gemini, model: gemini-3-fake }], capabilities: [tools, vision] }
  - { id: m-bedrock, deployments: [{ provider: bedrock, model: "us.anthropic.claude-haiku-4-5-20251001-v1:0" }], capabilities: [tools, vision] }
  - { id: m-bedrock-claude, deployments: [{ provider: bedrock-claude, model: "us.anthropic.claude-haiku-4-5-20251001-v1:0" }], capabilities: [tools, vision] }
  - { id: m-vertex, deployments: [{ provider: vertex, model: "claude-haiku-4-5@20251001" }], capabilities: [tools, vision] }
  - { id: m-vertex-gemini, deployments: [{ provider: vertex-gemini, model: gemini-3-fake }], capabilities: [tools, vision] }
  - { id: m-azure, deployments: [{ provider: azure, model: gpt-4o-prod }], capabilities: [tools, vision] }
  - { id: m-azure-responses, deployments: [{ provider: azure-responses, model: gpt-5-prod }], capabilities: [tools, vision] }
  - { id: m-responses, deployments: [{ provider: responses, model: gpt-5 }], capabilities: [tools, vision] }
  - { id: mock-echo, aliases: [mock], deployments: [{ provider: mock }], capabilities: [tools] }
  # Named for Claude Code's gateway discovery, which keeps only ids that start with
  # 'claude' or 'anthropic' (no backquotes: this heredoc expands them).
  - { id: claude-smoke, deployments: [{ provider: anthropic, model: claude-haiku-4-5 }], capabilities: [tools] }
YAML
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
export GATEWAY_URL="http://127.0.0.1:$port"
SWITCHYARD_LOG=${SWITCHYARD_LOG:-warn} target/release/switchyard serve --config "$work/config.yaml" \
  --listen "127.0.0.1:$port" > "$work/gateway.log" 2>&1 &
for _ in $(seq 50); do curl -sf "$GATEWAY_URL/healthz" >/dev/null && break; sleep 0.1; done

venv="$root/target/sdk-venv"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install -q --upgrade openai anthropic
"$venv/bin/python" -c 'import openai, anthropic; print("openai", openai.__version__, "anthropic", anthropic.__version__)'
# smoke.py, its output as it prints it, each check recorded (results.py). With
# --clients a failure here is counted at the end, so that the clients still run and
# the matrix is written; without, it ends the run.
sdk_ok=true
"$venv/bin/python" scripts/sdk-smoke/results.py sdk "$work" scripts/sdk-smoke/smoke.py || sdk_ok=false
$sdk_ok || [ "${1:-}" = "--clients" ] || exit 1

if [ "${1:-}" = "--clients" ]; then
  # Every client step runs; the script fails at the end if any did.
  failures=0
  # record ok|fail STEP: the step's row in $work/results.tsv, for the matrix: the
  # client ($client, $client_version, set per client below), the check and model
  # read from STEP (or $step_model), and what the model's fake upstream received
  # since the previous step (the steps run one at a time).
  results="$root/scripts/sdk-smoke/results.py"
  python3 "$results" mark "$work"
  record() {
    python3 "$results" step "$work" "$client" "$client_version" "$1" "$2" "${step_model:-}" \
      || echo "  (not recorded for the matrix: $2)"
  }
  # npm_version DIR PACKAGE: the version of PACKAGE installed under DIR.
  npm_version() {
    python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["version"])' \
      "$1/node_modules/$2/package.json" 2>/dev/null || echo unknown
  }
  # ok STEP [ANSWER]: the step, and the start of the client's final answer (the
  # fake's echo, or its quote of the tool output), lines joined with " | ".
  ok() { echo "ok   $1${2:+  ($(paste -sd'|' <<<"$2" | sed 's/|/ | /g' | cut -c1-200))}"; record ok "$1"; }
  # fail STEP LOG...: the step, the tail of each log, the gateway's log and what the
  # fakes received last, so a failure reads without a rerun.
  fail() {
    local step=$1; shift
    echo "FAIL $step"; failures=$((failures + 1))
    # A report that cannot be read must not end the run (set -e).
    for f in "$@"; do [ -f "$f" ] && [ -s "$f" ] && { echo "  --- $(basename "$f") (tail)"; tail -25 "$f" | awk '{print "  " $0}'; } || true; done
    echo "  --- gateway log (tail)"; tail -15 "$work/gateway.log" | awk '{print "  " $0}'
    python3 - "$work/fake-log" <<'PY' | awk '{print "  " $0}'
import json, pathlib, sys
for log in sorted(pathlib.Path(sys.argv[1]).glob("*.jsonl")):
    lines = log.read_text().splitlines()[-3:]
    for line in lines:
        r = json.loads(line); b = r["body"] if isinstance(r["body"], dict) else {}
        turns = b.get("messages") or b.get("contents") or []
        def kinds(t):
            c = t.get("content", t.get("parts"))
            if isinstance(c, list):
                return ",".join(p.get("type") or next(iter(p), "?") for p in c if isinstance(p, dict))
            return "text"
        shape = " ".join(f"{t.get('role', '?')}[{kinds(t)}]" for t in turns[-4:])
        tools = b.get("tools") or []
        n = sum(len(t.get("functionDeclarations", [t])) for t in tools)
        print(f"--- {log.stem}: {r['method']} {r['path']} ({n} tools) ... {shape}")
PY
    record fail "$step"
  }
  # The fake's closing answer quotes the tool's output after this prefix
  # (switchyard_testkit::tool_loop): both in a final answer mean the client ran its
  # tool and sent the result back through the gateway.
  quoted() { grep -q "tool result: " "$1" && grep -q "switchyard-tool-ok" "$1"; }
  tool_prompt="TOOL_LOOP: run the shell command the tool loop asks for, then report its output."

  # ---- Claude Code (Anthropic Messages): a text turn and a tool round trip per
  # upstream wire (Anthropic fast path, translated to OpenAI-chat and Gemini).
  cc="$root/target/claude-code"
  [ -x "$cc/node_modules/.bin/claude" ] || npm install --silent --prefix "$cc" @anthropic-ai/claude-code
  client=claude-code client_version=$(npm_version "$cc" @anthropic-ai/claude-code)
  run_claude() {
    local model=$1; shift
    mkdir -p "$work/cc-$model"
    (cd "$work/cc-$model" && HOME="$work/cc-$model" ANTHROPIC_BASE_URL="$GATEWAY_URL" ANTHROPIC_API_KEY="$GATEWAY_KEY" \
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 ANTHROPIC_MODEL=$model ANTHROPIC_SMALL_FAST_MODEL=$model \
      ANTHROPIC_DEFAULT_HAIKU_MODEL=$model ANTHROPIC_DEFAULT_SONNET_MODEL=$model ANTHROPIC_DEFAULT_OPUS_MODEL=$model \
      timeout 180 "$cc/node_modules/.bin/claude" --output-format json --model "$model" "$@" < /dev/null)
  }
  cc_result() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["result"])' "$1" 2>/dev/null || true; }
  for model in m-anthropic m-openai m-gemini m-bedrock m-bedrock-claude m-vertex m-vertex-gemini m-azure m-responses; do
    out="$work/cc-$model.text.json"
    run_claude $model -p "say hello" --max-turns 1 > "$out" 2>&1 || true
    if grep -q '"is_error":false' "$out" && grep -q 'say hello' "$out"; then ok "claude code text -> $model" "$(cc_result "$out")"
    else fail "claude code text -> $model" "$out"; fi
    out="$work/cc-$model.tool.json"
    # All its tools, Bash allowed without asking: headless runs cannot answer a prompt.
    run_claude $model -p "$tool_prompt" --max-turns 4 --allowedTools Bash > "$out" 2>&1 || true
    if grep -q '"is_error":false' "$out" && quoted "$out"; then
      ok "claude code tool round trip -> $model" "$(cc_result "$out")"
    else fail "claude code tool round trip -> $model" "$out"; fi
  done
  # Its gateway model discovery (Anthropic's list, `?limit=1000`), which only runs
  # when nonessential traffic is allowed; the debug log says what it kept.
  dir="$work/cc-discovery"; mkdir -p "$dir"; step_model=claude-smoke
  (cd "$dir" && HOME="$dir" ANTHROPIC_BASE_URL="$GATEWAY_URL" ANTHROPIC_API_KEY="$GATEWAY_KEY" \
    CLAUDE_CODE_ENABLE_GATEWAY_MODEL_DISCOVERY=1 DISABLE_AUTOUPDATER=1 DISABLE_TELEMETRY=1 \
    DISABLE_ERROR_REPORTING=1 ANTHROPIC_MODEL=claude-smoke \
    timeout 180 "$cc/node_modules/.bin/claude" --debug --output-format json --model claude-smoke \
    -p "say hello" --max-turns 1 < /dev/null > "$dir/out.json" 2>&1) || true
  cat "$dir"/.claude/debug/*.txt > "$dir/debug.txt" 2>/dev/null || true
  if grep -q '"is_error":false' "$dir/out.json" && grep -q "\[gatewayDiscovery\] cached 1 models" "$dir/debug.txt" \
      && grep -qs '"claude-smoke"' "$dir/.claude/cache/gateway-models.json"; then
    ok "claude code gateway model discovery" "$(grep -h gatewayDiscovery "$dir/debug.txt" | head -1)"
  else fail "claude code gateway model discovery" "$dir/out.json" "$dir/debug.txt"; fi
  unset step_model

  # ---- Gemini CLI (Gemini's own API, streamed): a text turn and a tool round trip
  # per upstream wire (the fast path to Gemini, translated to Anthropic and
  # OpenAI-chat).
  gc="$root/target/gemini-cli"
  [ -x "$gc/node_modules/.bin/gemini" ] || npm install --silent --prefix "$gc" @google/gemini-cli
  client=gemini-cli client_version=$(npm_version "$gc" @google/gemini-cli)
  for model in m-gemini m-anthropic m-openai; do
    dir="$work/gemini-$model"
    mkdir -p "$dir/home/.gemini" "$dir/project"
    echo '{"security":{"auth":{"selectedType":"gemini-api-key"}}}' > "$dir/home/.gemini/settings.json"
    (cd "$dir/project" && HOME="$dir/home" GOOGLE_GEMINI_BASE_URL="$GATEWAY_URL" \
      GEMINI_API_KEY="$GATEWAY_KEY" GEMINI_CLI_TRUST_WORKSPACE=true \
      timeout 120 "$gc/node_modules/.bin/gemini" -m $model -p "say hello" > "$dir/out" 2> "$dir/log" < /dev/null) || true
    if grep -q "echo:" "$dir/out" && grep -q 'say hello' "$dir/out"; then ok "gemini cli text -> $model" "$(head -c 200 "$dir/out")"
    else fail "gemini cli text -> $model" "$dir/out" "$dir/log"; fi
    # Its shell tool (run_shell_command) approved without asking: headless runs
    # cannot answer a prompt.
    (cd "$dir/project" && HOME="$dir/home" GOOGLE_GEMINI_BASE_URL="$GATEWAY_URL" \
      GEMINI_API_KEY="$GATEWAY_KEY" GEMINI_CLI_TRUST_WORKSPACE=true \
      timeout 180 "$gc/node_modules/.bin/gemini" -m $model --yolo -p "$tool_prompt" > "$dir/tool.out" 2> "$dir/tool.log" < /dev/null) || true
    if quoted "$dir/tool.out"; then ok "gemini cli tool round trip -> $model" "$(head -c 200 "$dir/tool.out")"
    else fail "gemini cli tool round trip -> $model" "$dir/tool.out" "$dir/tool.log"; fi
  done

  # ---- Codex (OpenAI Responses, streaming): a text turn and a tool round trip per
  # upstream wire over HTTPS, and a tool round trip per wire over WebSocket.
  cx="$root/target/codex"
  [ -x "$cx/node_modules/.bin/codex" ] || npm install --silent --prefix "$cx" @openai/codex
  client=codex client_version=$(npm_version "$cx" @openai/codex)
  run_codex() {
    local dir=$1 model=$2 ws=$3 prompt=$4
    mkdir -p "$dir/proj"
    cat > "$dir/config.toml" <<TOML
model = "$model"
model_provider = "switchyard"
model_reasoning_effort = "medium"
[model_providers.switchyard]
name = "Switchyard"
base_url = "$GATEWAY_URL/v1"
env_key = "GATEWAY_KEY"
wire_api = "responses"
supports_websockets = $ws
# The gateway's model metadata (context window, reasoning levels), in Codex's shape.
model_catalog_url = "$GATEWAY_URL/v1/models"
TOML
    # The sandbox is bypassed so the shell tool runs in this container (the
    # command is `echo`, in a scratch directory).
    # RUST_LOG: its log says which transport carried the turn.
    (cd "$dir/proj" && CODEX_HOME="$dir" RUST_LOG=codex_api=info timeout 180 "$cx/node_modules/.bin/codex" exec \
      --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox --output-last-message "$dir/last.txt" \
      "$prompt" < /dev/null) > "$dir/log" 2>&1
  }
  for model in m-openai m-anthropic m-gemini m-bedrock m-bedrock-claude m-vertex m-vertex-gemini m-azure; do
    dir="$work/codex-$model-text"
    # Every turn also checks that Codex took the gateway's metadata for the model.
    if run_codex "$dir" $model false "say hello" && grep -q "echo:" "$dir/last.txt" \
        && ! grep -qE "failed to decode models response|Unknown model $model " "$dir/log"; then
      ok "codex text, gateway model metadata -> $model" "$(cat "$dir/last.txt")"
    else fail "codex text, gateway model metadata -> $model" "$dir/log"; fi
    dir="$work/codex-$model-tool"
    if run_codex "$dir" $model false "$tool_prompt" && quoted "$dir/last.txt"; then
      ok "codex tool round trip -> $model" "$(cat "$dir/last.txt")"
    else fail "codex tool round trip -> $model" "$dir/log" "$dir/last.txt"; fi
    dir="$work/codex-$model-ws"
    if run_codex "$dir" $model true "$tool_prompt" && quoted "$dir/last.txt" \
        && grep -q "successfully connected to Responses WebSocket" "$dir/log" \
        && ! grep -q "Falling back from WebSockets" "$dir/log"; then
      ok "codex websocket tool round trip -> $model" "$(cat "$dir/last.txt")"
    else fail "codex websocket tool round trip -> $model" "$dir/log" "$dir/last.txt"; fi
  done
  # Codex's own body on the Responses API itself (OpenAI's, and Azure's): a text
  # turn and a tool round trip, over HTTP and the WebSocket.
  for model in m-responses m-azure-responses; do
    for ws in false true; do
      dir="$work/codex-$model-text-ws-$ws"
      if run_codex "$dir" $model $ws "say hello" && grep -q "echo:" "$dir/last.txt"; then
        ok "codex text (websocket $ws) -> $model" "$(cat "$dir/last.txt")"
      else fail "codex text (websocket $ws) -> $model" "$dir/log"; fi
      dir="$work/codex-$model-tool-ws-$ws"
      if run_codex "$dir" $model $ws "$tool_prompt" && quoted "$dir/last.txt"; then
        ok "codex tool round trip (websocket $ws) -> $model" "$(cat "$dir/last.txt")"
      else fail "codex tool round trip (websocket $ws) -> $model" "$dir/log" "$dir/last.txt"; fi
    done
  done

  # ---- Codex compacting through the gateway on an Anthropic upstream: its built-in
  # OpenAI provider (the one that compacts remotely) pointed at the gateway, logged
  # in with the gateway key, a limit the fakes' usage passes after one turn. The
  # second turn compacts first (Codex says "context compacted"); the upstream gets
  # the summarisation request, then the summary in place of the compaction item.
  dir="$work/codex-compaction"; mkdir -p "$dir/proj"
  cat > "$dir/config.toml" <<TOML
model = "m-anthropic"
openai_base_url = "$GATEWAY_URL/v1"
model_auto_compact_token_limit = 10
model_reasoning_effort = "medium"
TOML
  printf '%s' "$GATEWAY_KEY" | CODEX_HOME="$dir" "$cx/node_modules/.bin/codex" login --with-api-key > "$dir/login.out" 2>&1
  # Not $dir/log: Codex makes a log directory of that name in its home.
  codex_turn() {
    (cd "$dir/proj" && CODEX_HOME="$dir" RUST_LOG=codex_api=info,codex_core=info timeout 180 "$cx/node_modules/.bin/codex" exec \
      --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox --output-last-message "$dir/last.txt" \
      "$@" < /dev/null) >> "$dir/codex.log" 2>&1
  }
  if codex_turn "say hello" && codex_turn resume --last "and now?" && grep -q "context compacted" "$dir/codex.log" \
      && grep -q "this conversation is being compacted" "$work/fake-log/anthropic.jsonl" \
      && grep -q "was compacted into the summary below" "$work/fake-log/anthropic.jsonl" \
      && ! grep -q "Falling back from WebSockets" "$dir/codex.log"; then
    ok "codex remote compaction -> m-anthropic" "$(grep -m1 'context compacted' "$dir/codex.log")"
  else fail "codex remote compaction -> m-anthropic" "$dir/codex.log" "$dir/login.out"; fi

  # ---- OpenCode (OpenAI Chat Completions, through its openai-compatible provider):
  # a text turn and a tool round trip per upstream wire, reasoning on (`--variant
  # high` sends reasoning_effort). Private HOME and XDG dirs; no models.dev fetch,
  # no plugins, no update check.
  oc="$root/target/opencode"
  [ -x "$oc/node_modules/.bin/opencode" ] || npm install --silent --prefix "$oc" opencode-ai@1.18
  client=opencode client_version=$(npm_version "$oc" opencode-ai)
  mkdir -p "$work/oc/config/opencode"
  cat > "$work/oc/config/opencode/opencode.json" <<JSON
{
  "\$schema": "https://opencode.ai/config.json",
  "autoupdate": false,
  "share": "disabled",
  "permission": { "bash": "allow" },
  "provider": {
    "switchyard": {
      "npm": "@ai-sdk/openai-compatible",
      "name": "Switchyard",
      "options": { "baseURL": "$GATEWAY_URL/v1", "apiKey": "{env:GATEWAY_KEY}" },
      "models": {
        "m-openai": { "name": "m-openai", "tool_call": true, "reasoning": true },
        "m-anthropic": { "name": "m-anthropic", "tool_call": true, "reasoning": true },
        "m-gemini": { "name": "m-gemini", "tool_call": true, "reasoning": true }
      }
    }
  }
}
JSON
  run_opencode() {
    local model=$1 out=$2 prompt=$3
    mkdir -p "$work/oc/proj"
    HOME="$work/oc" XDG_CONFIG_HOME="$work/oc/config" XDG_DATA_HOME="$work/oc/data" XDG_CACHE_HOME="$work/oc/cache" \
      XDG_STATE_HOME="$work/oc/state" OPENCODE_DISABLE_MODELS_FETCH=1 OPENCODE_DISABLE_AUTOUPDATE=1 \
      OPENCODE_DISABLE_LSP_DOWNLOAD=1 OPENCODE_DISABLE_DEFAULT_PLUGINS=1 OPENCODE_DISABLE_SHARE=1 \
      timeout 180 "$oc/node_modules/.bin/opencode" run --pure --dir "$work/oc/proj" --format json \
      --variant high -m "switchyard/$model" "$prompt" < /dev/null > "$out" 2> "$out.err"
  }
  # The text of the session's last assistant message, from `--format json` events.
  oc_answer() {
    python3 - "$1" <<'PY'
import json, sys
texts = {}
for line in open(sys.argv[1]):
    try: ev = json.loads(line)
    except ValueError: continue
    part = ev.get("part") or {}
    if part.get("type") == "text":
        texts.setdefault(part.get("messageID"), []).append(part.get("text", ""))
print("".join(list(texts.values())[-1]) if texts else "")
PY
  }
  for model in m-openai m-anthropic m-gemini; do
    out="$work/oc-$model.text.jsonl"
    if run_opencode $model "$out" "say hello" && oc_answer "$out" > "$out.answer" && grep -q "echo:" "$out.answer"; then
      ok "opencode text -> $model" "$(cat "$out.answer")"
    else fail "opencode text -> $model" "$out" "$out.err"; fi
    out="$work/oc-$model.tool.jsonl"
    if run_opencode $model "$out" "$tool_prompt" && oc_answer "$out" > "$out.answer" && quoted "$out.answer"; then
      ok "opencode tool round trip -> $model" "$(cat "$out.answer")"
    else fail "opencode tool round trip -> $model" "$out" "$out.err"; fi
  done

  # ---- GitHub Copilot CLI (OpenAI Chat Completions, bring your own key): a text
  # turn and a tool round trip per upstream wire. It sends temperature and top_p
  # on every request, which Claude 4.5 refuses together.
  cp="$root/target/copilot"
  [ -x "$cp/node_modules/.bin/copilot" ] || npm install --silent --prefix "$cp" @github/copilot
  client=copilot client_version=$(npm_version "$cp" @github/copilot)
  run_copilot() {
    local model=$1 out=$2 prompt=$3
    mkdir -p "$work/copilot/home" "$work/copilot/proj"
    (cd "$work/copilot/proj" && HOME="$work/copilot/home" COPILOT_OFFLINE=true \
      COPILOT_PROVIDER_BASE_URL="$GATEWAY_URL/v1" COPILOT_PROVIDER_API_KEY="$GATEWAY_KEY" COPILOT_MODEL=$model \
      timeout 180 "$cp/node_modules/.bin/copilot" -p "$prompt" --allow-all-tools < /dev/null > "$out" 2> "$out.err")
  }
  for model in m-openai m-anthropic m-gemini; do
    out="$work/copilot-$model.text"
    if run_copilot $model "$out" "say hello" && grep -q "echo:" "$out" && grep -q "say hello" "$out"; then
      ok "copilot text -> $model" "$(grep -m1 'echo:' "$out")"
    else fail "copilot text -> $model" "$out" "$out.err"; fi
    out="$work/copilot-$model.tool"
    if run_copilot $model "$out" "$tool_prompt" && quoted "$out"; then
      ok "copilot tool round trip -> $model" "$(grep -m1 'tool result: ' "$out")"
    else fail "copilot tool round trip -> $model" "$out" "$out.err"; fi
  done

  # The matrix, whatever failed (a failed step reads ✗ there), of the commit
  # read at the start.
  python3 scripts/sdk-smoke/matrix.py "$work/results.tsv" docs/compatibility.md --date "$run_date" \
    --commit "$commit" ${dirty:+"$dirty"}
  echo "wrote docs/compatibility.md ($(($(wc -l < "$work/results.tsv") - 1)) results)"

  $sdk_ok || echo "the SDK checks failed"
  [ "$failures" -eq 0 ] || echo "$failures client step(s) failed"
  { $sdk_ok && [ "$failures" -eq 0 ]; } || exit 1
  echo "all client checks passed"
fi
