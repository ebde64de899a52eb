#!/usr/bin/env bash
# SDK smoke test: the official Python `openai` and `anthropic` SDKs (and, with
# --clients, Claude Code, Gemini CLI and Codex) against the gateway in front of fake
# upstreams.
# Needs network access to PyPI (and npm for Claude Code) the first time.
#   scripts/sdk-smoke/run.sh [--clients]   (--clients: also Claude Code, Gemini CLI and Codex, from npm)
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

cargo build --release -q -p switchyard -p switchyard-testkit --bin switchyard --bin fake-upstream

target/release/fake-upstream openai anthropic gemini > "$work/fakes" &
for _ in $(seq 50); do [ "$(wc -l < "$work/fakes")" -ge 3 ] && break; sleep 0.1; done
url() { awk -v v="$1" '$1==v {print $2}' "$work/fakes"; }

export GATEWAY_KEY="sk-gw-smoke-0123456789"
cat > "$work/config.yaml" <<YAML
gateway:
  api_keys: ["$GATEWAY_KEY"]
providers:
  openai: { wire: openai-chat, endpoint: "$(url openai)/v1", credentials: { keys: [sk-fake-openai] } }
  anthropic: { wire: anthropic, endpoint: "$(url anthropic)", credentials: { keys: [sk-fake-anthropic] } }
  gemini: { wire: gemini, endpoint: "$(url gemini)", credentials: { keys: [fake-gemini] } }
  mock: { wire: mock }
models:
  - { id: m-openai, deployments: [{ provider: openai, model: gpt-fake }], capabilities: [tools, vision] }
  - { id: m-anthropic, deployments: [{ provider: anthropic, model: claude-fake }], capabilities: [tools, vision] }
  - { id: m-gemini, deployments: [{ provider: gemini, model: gemini-fake }], capabilities: [tools, vision] }
  - { id: mock-echo, aliases: [mock], deployments: [{ provider: mock }], capabilities: [tools] }
YAML
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
export GATEWAY_URL="http://127.0.0.1:$port"
SWITCHYARD_LOG=warn target/release/switchyard serve --config "$work/config.yaml" --listen "127.0.0.1:$port" &
for _ in $(seq 50); do curl -sf "$GATEWAY_URL/healthz" >/dev/null && break; sleep 0.1; done

venv="$root/target/sdk-venv"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install -q --upgrade openai anthropic
"$venv/bin/python" -c 'import openai, anthropic; print("openai", openai.__version__, "anthropic", anthropic.__version__)'
"$venv/bin/python" scripts/sdk-smoke/smoke.py

if [ "${1:-}" = "--clients" ]; then
  # Claude Code: one headless turn per upstream wire (Anthropic fast path, and
  # translated to OpenAI-chat and Gemini).
  cc="$root/target/claude-code"
  [ -x "$cc/node_modules/.bin/claude" ] || npm install --silent --prefix "$cc" @anthropic-ai/claude-code
  for model in m-anthropic m-openai m-gemini; do
    mkdir -p "$work/home-$model"
    out=$(HOME="$work/home-$model" ANTHROPIC_BASE_URL="$GATEWAY_URL" ANTHROPIC_API_KEY="$GATEWAY_KEY" \
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 ANTHROPIC_MODEL=$model ANTHROPIC_SMALL_FAST_MODEL=$model \
      ANTHROPIC_DEFAULT_HAIKU_MODEL=$model ANTHROPIC_DEFAULT_SONNET_MODEL=$model ANTHROPIC_DEFAULT_OPUS_MODEL=$model \
      timeout 120 "$cc/node_modules/.bin/claude" -p "say hello" --output-format json --model $model --max-turns 1 || true)
    if echo "$out" | grep -q '"is_error":false' && echo "$out" | grep -q 'say hello'; then
      echo "ok   claude code -> $model"
    else
      echo "FAIL claude code -> $model: $out"; exit 1
    fi
  done
  # Gemini CLI: one headless turn per upstream wire (Gemini's own API, streamed:
  # the fast path to Gemini, translated to Anthropic and OpenAI-chat).
  gc="$root/target/gemini-cli"
  [ -x "$gc/node_modules/.bin/gemini" ] || npm install --silent --prefix "$gc" @google/gemini-cli
  for model in m-gemini m-anthropic m-openai; do
    mkdir -p "$work/gemini-$model/home/.gemini" "$work/gemini-$model/project"
    echo '{"security":{"auth":{"selectedType":"gemini-api-key"}}}' > "$work/gemini-$model/home/.gemini/settings.json"
    out=$(cd "$work/gemini-$model/project" && HOME="$work/gemini-$model/home" GOOGLE_GEMINI_BASE_URL="$GATEWAY_URL" \
      GEMINI_API_KEY="$GATEWAY_KEY" GEMINI_CLI_TRUST_WORKSPACE=true \
      timeout 120 "$gc/node_modules/.bin/gemini" -m $model -p "say hello" 2> "$work/gemini-$model/log" || true)
    if echo "$out" | grep -q "echo:" && echo "$out" | grep -q 'say hello'; then
      echo "ok   gemini cli -> $model"
    else
      echo "FAIL gemini cli -> $model: $out"; tail -20 "$work/gemini-$model/log"; exit 1
    fi
  done
  # Codex: the Responses API, streaming.
  cx="$root/target/codex"
  [ -x "$cx/node_modules/.bin/codex" ] || npm install --silent --prefix "$cx" @openai/codex
  for model in m-openai m-anthropic; do
    mkdir -p "$work/codex-$model"
    cat > "$work/codex-$model/config.toml" <<TOML
model = "$model"
model_provider = "switchyard"
[model_providers.switchyard]
name = "Switchyard"
base_url = "$GATEWAY_URL/v1"
env_key = "GATEWAY_KEY"
wire_api = "responses"
TOML
    if CODEX_HOME="$work/codex-$model" timeout 120 "$cx/node_modules/.bin/codex" exec --skip-git-repo-check \
        --output-last-message "$work/codex-$model/last.txt" "say hello" > "$work/codex-$model/log" 2>&1 \
        && grep -q "echo:" "$work/codex-$model/last.txt"; then
      echo "ok   codex -> $model"
    else
      echo "FAIL codex -> $model"; tail -20 "$work/codex-$model/log"; exit 1
    fi
  done
fi
