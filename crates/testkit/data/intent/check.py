#!/usr/bin/env python3
"""Validate the intent-classification evaluation corpus (labelled.jsonl).

Standard library only. Usage:

    python3 crates/testkit/data/intent/check.py [path/to/labelled.jsonl]

Checks every line for the record schema, the per-format request-body rules
(tool call <-> result pairing, role order, required fields, images), the
consistency of the derived tags, and the corpus-level mix requirements, then
prints the counts table. Exits non-zero on the first class of failure found
(all errors are listed).
"""
import base64
import json
import os
import re
import sys
from collections import Counter

CLASSES = ["reasoning", "code", "ordinary", "cheap", "vision"]
FORMATS = ["openai-chat", "anthropic", "openai-responses", "gemini"]
TAGS = ["misleading", "multilingual", "agent", "agent-context", "long", "image", "multi-turn"]
RECORD_KEYS = {"id", "format", "class", "why", "tags", "body"}
LONG_CHARS = 2000
IMAGE_MIME = {"image/png", "image/jpeg", "image/gif", "image/webp"}

# Corpus-level minimums (see README.md).
MIN_TOTAL = 240
MIN_PER_CLASS = 40
MIN_PER_FORMAT = 50
MIN_SHARE = {"misleading": 0.25, "multilingual": 0.10, "multi-turn": 0.25}
MIN_COUNT = {"long": 15, "agent": 25}
MAX_CLASS_RUN = 6  # lines must be shuffled, not grouped by class


class Bad(Exception):
    pass


def need(cond, msg):
    if not cond:
        raise Bad(msg)


def is_str(x):
    return isinstance(x, str) and x != ""


def json_object_string(s, where):
    need(isinstance(s, str), f"{where}: arguments must be a JSON string")
    try:
        v = json.loads(s)
    except ValueError as e:
        raise Bad(f"{where}: arguments are not valid JSON ({e})")
    need(isinstance(v, dict), f"{where}: arguments must encode a JSON object")
    return v


def check_b64(data, where):
    need(is_str(data), f"{where}: image data missing")
    try:
        raw = base64.b64decode(data, validate=True)
    except (ValueError, base64.binascii.Error):
        raise Bad(f"{where}: image data is not valid base64")
    need(len(raw) > 0, f"{where}: image data is empty")
    return raw


def check_image_url(url, where):
    need(is_str(url), f"{where}: image url missing")
    if url.startswith("data:"):
        m = re.match(r"^data:(image/[a-z+]+);base64,(.+)$", url, re.S)
        need(m is not None, f"{where}: malformed data URL")
        need(m.group(1) in IMAGE_MIME, f"{where}: unsupported mime {m.group(1)}")
        check_b64(m.group(2), where)
    else:
        need(url.startswith("https://"), f"{where}: image URL must be https:// or data:")


def check_turns(turns, label, roles):
    """A conversation that starts and ends with the user and alternates between
    `roles` (Anthropic's messages, Gemini's contents)."""
    need(isinstance(turns, list) and turns, f"{label} must be a non-empty list")
    need(turns[0].get("role") == "user", f"first of {label} must be from the user")
    need(turns[-1].get("role") == "user", f"last of {label} must be from the user")
    for k, t in enumerate(turns):
        need(t.get("role") in roles, f"{label}[{k}]: role must be one of {roles}")
        if k > 0:
            need(t.get("role") != turns[k - 1].get("role"), f"{label}[{k}]: roles must alternate")


def check_function(f, where, schema_key, seen, schema_required=True):
    """A declared function tool: its name (unique among `seen`, which it joins),
    description and argument schema, under the format's own field names."""
    need(is_str(f.get("name")), f"{where}.name missing")
    need(is_str(f.get("description")), f"{where}.description missing")
    if schema_required or schema_key in f:
        check_schema(f.get(schema_key), f"{where}.{schema_key}")
    need(f["name"] not in seen, f"{where}: duplicate tool name {f['name']}")


def check_schema(schema, where):
    need(isinstance(schema, dict), f"{where}: parameters must be an object")
    need(schema.get("type") == "object", f"{where}: parameters.type must be 'object'")
    props = schema.get("properties", {})
    need(isinstance(props, dict), f"{where}: properties must be an object")
    for r in schema.get("required", []):
        need(r in props, f"{where}: required '{r}' not in properties")


class Info:
    """What the format checkers learn about a body, for tag consistency."""

    def __init__(self):
        self.user_text = 0
        self.images = 0
        self.tool_calls = 0
        self.tools_declared = 0
        self.assistant_turns = 0


# ---------------------------------------------------------------- openai-chat

def check_openai_chat(body, info):
    need(body.get("model") == "auto", "model must be 'auto'")
    msgs = body.get("messages")
    need(isinstance(msgs, list) and msgs, "messages must be a non-empty list")
    tool_names = set()
    if "tools" in body:
        need(isinstance(body["tools"], list) and body["tools"], "tools must be a non-empty list")
        for k, t in enumerate(body["tools"]):
            w = f"tools[{k}]"
            need(t.get("type") == "function", f"{w}.type must be 'function'")
            f = t.get("function")
            need(isinstance(f, dict), f"{w}.function missing")
            check_function(f, f"{w}.function", "parameters", tool_names)
            tool_names.add(f["name"])
        info.tools_declared = len(tool_names)
    pending = []  # tool_call ids awaiting a tool message
    seen_ids = set()
    seen_non_system = False
    for k, m in enumerate(msgs):
        w = f"messages[{k}]"
        need(isinstance(m, dict), f"{w} must be an object")
        role = m.get("role")
        need(role in ("system", "developer", "user", "assistant", "tool"), f"{w}: bad role {role!r}")
        if role != "tool":
            need(not pending, f"{w}: tool calls {pending} not answered before a {role} message")
        if role in ("system", "developer"):
            need(not seen_non_system, f"{w}: {role} message after conversation start")
            c = m.get("content")
            if isinstance(c, list):
                for p in c:
                    need(p.get("type") == "text" and is_str(p.get("text")), f"{w}: system parts must be text")
            else:
                need(is_str(c), f"{w}: system content must be a string")
            continue
        seen_non_system = True
        if role == "user":
            c = m.get("content")
            if isinstance(c, str):
                need(c != "", f"{w}: empty user content")
                info.user_text += len(c)
            else:
                need(isinstance(c, list) and c, f"{w}: user content must be a string or non-empty list")
                for j, p in enumerate(c):
                    t = p.get("type")
                    if t == "text":
                        need(is_str(p.get("text")), f"{w}.content[{j}]: empty text")
                        info.user_text += len(p["text"])
                    elif t == "image_url":
                        need(isinstance(p.get("image_url"), dict), f"{w}.content[{j}]: image_url must be an object")
                        check_image_url(p["image_url"].get("url"), f"{w}.content[{j}]")
                        info.images += 1
                    else:
                        raise Bad(f"{w}.content[{j}]: unsupported part type {t!r}")
        elif role == "assistant":
            info.assistant_turns += 1
            c = m.get("content")
            tcs = m.get("tool_calls")
            need(c is None or is_str(c) or isinstance(c, list), f"{w}: bad assistant content")
            need(is_str(c) or tcs, f"{w}: assistant needs content or tool_calls")
            if tcs is not None:
                need(isinstance(tcs, list) and tcs, f"{w}: tool_calls must be a non-empty list")
                for j, tc in enumerate(tcs):
                    ww = f"{w}.tool_calls[{j}]"
                    need(is_str(tc.get("id")) and tc["id"].startswith("call_"), f"{ww}: id must start with call_")
                    need(tc["id"] not in seen_ids, f"{ww}: duplicate id")
                    seen_ids.add(tc["id"])
                    need(tc.get("type") == "function", f"{ww}: type must be 'function'")
                    fn = tc.get("function")
                    need(isinstance(fn, dict) and is_str(fn.get("name")), f"{ww}: function.name missing")
                    need(fn["name"] in tool_names, f"{ww}: calls undeclared tool {fn['name']!r}")
                    json_object_string(fn.get("arguments"), ww)
                    pending.append(tc["id"])
                    info.tool_calls += 1
        elif role == "tool":
            tid = m.get("tool_call_id")
            need(tid in pending, f"{w}: tool_call_id {tid!r} does not answer a pending call")
            pending.remove(tid)
            need(isinstance(m.get("content"), (str, list)), f"{w}: tool content missing")
    need(not pending, f"unanswered tool calls at end: {pending}")
    need(msgs[-1]["role"] in ("user", "tool"), "last message must be user or tool (a request awaiting a reply)")


# ---------------------------------------------------------------- anthropic

def check_anthropic(body, info):
    need(body.get("model") == "auto", "model must be 'auto'")
    mt = body.get("max_tokens")
    need(isinstance(mt, int) and not isinstance(mt, bool) and mt > 0, "max_tokens must be a positive integer")
    if "system" in body:
        s = body["system"]
        if isinstance(s, list):
            for b in s:
                need(b.get("type") == "text" and is_str(b.get("text")), "system blocks must be text")
        else:
            need(is_str(s), "system must be a string or list of text blocks")
    tool_names = set()
    if "tools" in body:
        need(isinstance(body["tools"], list) and body["tools"], "tools must be a non-empty list")
        for k, t in enumerate(body["tools"]):
            check_function(t, f"tools[{k}]", "input_schema", tool_names)
            tool_names.add(t["name"])
        info.tools_declared = len(tool_names)
    msgs = body.get("messages")
    check_turns(msgs, "messages", ("user", "assistant"))
    pending = []
    seen_ids = set()
    for k, m in enumerate(msgs):
        w = f"messages[{k}]"
        role = m.get("role")
        c = m.get("content")
        blocks = [{"type": "text", "text": c}] if isinstance(c, str) else c
        need(isinstance(blocks, list) and blocks, f"{w}: content must be a string or non-empty list")
        if role == "user":
            answered = []
            saw_other = False
            for j, b in enumerate(blocks):
                t = b.get("type")
                ww = f"{w}.content[{j}]"
                if t == "tool_result":
                    need(not saw_other, f"{ww}: tool_result blocks must come first in the user turn")
                    tid = b.get("tool_use_id")
                    need(tid in pending, f"{ww}: tool_use_id {tid!r} does not answer the previous assistant turn")
                    need(tid not in answered, f"{ww}: duplicate tool_result")
                    answered.append(tid)
                    need(isinstance(b.get("content", ""), (str, list)), f"{ww}: bad tool_result content")
                elif t == "text":
                    saw_other = True
                    need(is_str(b.get("text")), f"{ww}: empty text")
                    info.user_text += len(b["text"])
                elif t == "image":
                    saw_other = True
                    src = b.get("source")
                    need(isinstance(src, dict), f"{ww}: image.source missing")
                    if src.get("type") == "base64":
                        need(src.get("media_type") in IMAGE_MIME, f"{ww}: bad media_type")
                        check_b64(src.get("data"), ww)
                    else:
                        need(src.get("type") == "url" and str(src.get("url", "")).startswith("https://"),
                             f"{ww}: image source must be base64 or https url")
                    info.images += 1
                else:
                    raise Bad(f"{ww}: block type {t!r} not allowed in a user turn")
            need(sorted(answered) == sorted(pending), f"{w}: tool_use ids {pending} not all answered")
            pending = []
        else:
            info.assistant_turns += 1
            need(not pending, f"{w}: assistant turn while tool results are pending")
            for j, b in enumerate(blocks):
                t = b.get("type")
                ww = f"{w}.content[{j}]"
                if t == "text":
                    need(is_str(b.get("text")), f"{ww}: empty text")
                elif t == "tool_use":
                    need(is_str(b.get("id")) and b["id"].startswith("toolu_"), f"{ww}: id must start with toolu_")
                    need(b["id"] not in seen_ids, f"{ww}: duplicate id")
                    seen_ids.add(b["id"])
                    need(b.get("name") in tool_names, f"{ww}: uses undeclared tool {b.get('name')!r}")
                    need(isinstance(b.get("input"), dict), f"{ww}: input must be an object")
                    pending.append(b["id"])
                    info.tool_calls += 1
                else:
                    raise Bad(f"{ww}: block type {t!r} not allowed in an assistant turn")
    need(not pending, "tool_use at end without a tool_result")


# ---------------------------------------------------------------- openai-responses

def check_openai_responses(body, info):
    need(body.get("model") == "auto", "model must be 'auto'")
    if "instructions" in body:
        need(is_str(body["instructions"]), "instructions must be a non-empty string")
    tool_names = set()
    if "tools" in body:
        need(isinstance(body["tools"], list) and body["tools"], "tools must be a non-empty list")
        for k, t in enumerate(body["tools"]):
            w = f"tools[{k}]"
            need(t.get("type") == "function", f"{w}.type must be 'function'")
            check_function(t, w, "parameters", tool_names)
            tool_names.add(t["name"])
        info.tools_declared = len(tool_names)
    inp = body.get("input")
    if isinstance(inp, str):
        need(inp != "", "input string is empty")
        info.user_text += len(inp)
        return
    need(isinstance(inp, list) and inp, "input must be a string or a non-empty list")
    pending = []
    seen = set()
    for k, it in enumerate(inp):
        w = f"input[{k}]"
        need(isinstance(it, dict), f"{w} must be an object")
        typ = it.get("type", "message")
        if typ == "message":
            role = it.get("role")
            need(role in ("user", "assistant", "system", "developer"), f"{w}: bad role {role!r}")
            need(not pending, f"{w}: function calls {pending} not answered before a message")
            c = it.get("content")
            if role == "assistant":
                info.assistant_turns += 1
                need(isinstance(c, list) and c, f"{w}: assistant content must be a list")
                for j, p in enumerate(c):
                    need(p.get("type") == "output_text" and is_str(p.get("text")), f"{w}.content[{j}]: must be output_text")
                continue
            if isinstance(c, str):
                need(c != "", f"{w}: empty content")
                if role == "user":
                    info.user_text += len(c)
                continue
            need(isinstance(c, list) and c, f"{w}: content must be a string or non-empty list")
            for j, p in enumerate(c):
                t = p.get("type")
                ww = f"{w}.content[{j}]"
                if t == "input_text":
                    need(is_str(p.get("text")), f"{ww}: empty text")
                    if role == "user":
                        info.user_text += len(p["text"])
                elif t == "input_image":
                    need(role == "user", f"{ww}: images only in user messages")
                    check_image_url(p.get("image_url"), ww)
                    info.images += 1
                else:
                    raise Bad(f"{ww}: unsupported content type {t!r}")
        elif typ == "function_call":
            cid = it.get("call_id")
            need(is_str(cid) and cid.startswith("call_"), f"{w}: call_id must start with call_")
            need(cid not in seen, f"{w}: duplicate call_id")
            seen.add(cid)
            need(it.get("name") in tool_names, f"{w}: calls undeclared tool {it.get('name')!r}")
            json_object_string(it.get("arguments"), w)
            pending.append(cid)
            info.tool_calls += 1
            if k == 0 or inp[k - 1].get("type") != "function_call":
                info.assistant_turns += 1  # a run of function calls is one assistant turn
        elif typ == "function_call_output":
            cid = it.get("call_id")
            need(cid in pending, f"{w}: call_id {cid!r} does not answer a pending function_call")
            pending.remove(cid)
            need(isinstance(it.get("output"), str), f"{w}: output must be a string")
        else:
            raise Bad(f"{w}: unsupported item type {typ!r}")
    need(not pending, f"unanswered function calls at end: {pending}")
    last = inp[-1]
    need(last.get("type") == "function_call_output" or last.get("role") == "user",
         "last input item must be a user message or a function_call_output")


# ---------------------------------------------------------------- gemini

def check_gemini(body, info):
    need("model" not in body, "gemini bodies carry the model in the URL, not a 'model' field")
    if "systemInstruction" in body:
        si = body["systemInstruction"]
        need(isinstance(si, dict) and isinstance(si.get("parts"), list) and si["parts"], "systemInstruction.parts missing")
        for p in si["parts"]:
            need(is_str(p.get("text")), "systemInstruction parts must be text")
    decl = {}
    if "tools" in body:
        need(isinstance(body["tools"], list) and body["tools"], "tools must be a non-empty list")
        for k, t in enumerate(body["tools"]):
            fds = t.get("functionDeclarations")
            need(isinstance(fds, list) and fds, f"tools[{k}].functionDeclarations missing")
            for j, fd in enumerate(fds):
                w = f"tools[{k}].functionDeclarations[{j}]"
                check_function(fd, w, "parameters", decl, schema_required=False)
                decl[fd["name"]] = fd
        info.tools_declared = len(decl)
    contents = body.get("contents")
    check_turns(contents, "contents", ("user", "model"))
    pending = []
    for k, c in enumerate(contents):
        w = f"contents[{k}]"
        role = c.get("role")
        parts = c.get("parts")
        need(isinstance(parts, list) and parts, f"{w}: parts must be a non-empty list")
        responded = []
        for j, p in enumerate(parts):
            ww = f"{w}.parts[{j}]"
            kinds = [x for x in ("text", "inlineData", "fileData", "functionCall", "functionResponse") if x in p]
            need(len(kinds) == 1, f"{ww}: exactly one of text/inlineData/fileData/functionCall/functionResponse")
            kind = kinds[0]
            if kind == "text":
                need(is_str(p["text"]), f"{ww}: empty text")
                if role == "user":
                    info.user_text += len(p["text"])
            elif kind == "inlineData":
                need(role == "user", f"{ww}: inlineData only in user turns")
                need(p["inlineData"].get("mimeType") in IMAGE_MIME, f"{ww}: bad mimeType")
                check_b64(p["inlineData"].get("data"), ww)
                info.images += 1
            elif kind == "fileData":
                need(role == "user", f"{ww}: fileData only in user turns")
                need(is_str(p["fileData"].get("fileUri")), f"{ww}: fileUri missing")
                info.images += 1
            elif kind == "functionCall":
                need(role == "model", f"{ww}: functionCall only in model turns")
                fc = p["functionCall"]
                need(fc.get("name") in decl, f"{ww}: calls undeclared function {fc.get('name')!r}")
                need(isinstance(fc.get("args", {}), dict), f"{ww}: args must be an object")
                pending.append(fc["name"])
                info.tool_calls += 1
            elif kind == "functionResponse":
                need(role == "user", f"{ww}: functionResponse only in user turns")
                fr = p["functionResponse"]
                need(isinstance(fr.get("response"), dict), f"{ww}: response must be an object")
                responded.append(fr.get("name"))
        if role == "model":
            info.assistant_turns += 1
        else:
            need(sorted(responded) == sorted(pending),
                 f"{w}: functionResponses {responded} do not match the previous functionCalls {pending}")
            pending = []
        if role == "model" and pending:
            # the next content must answer them; checked on the next iteration
            need(k + 1 < len(contents), f"{w}: functionCall at end without functionResponse")


CHECKERS = {
    "openai-chat": check_openai_chat,
    "anthropic": check_anthropic,
    "openai-responses": check_openai_responses,
    "gemini": check_gemini,
}


def check_record(rec, ids):
    need(isinstance(rec, dict), "line is not a JSON object")
    keys = set(rec)
    need(keys == RECORD_KEYS, f"keys must be exactly {sorted(RECORD_KEYS)}, got {sorted(keys)}")
    fmt, cls = rec["format"], rec["class"]
    need(fmt in FORMATS, f"bad format {fmt!r}")
    need(cls in CLASSES, f"bad class {cls!r}")
    need(isinstance(rec["id"], str) and re.fullmatch(re.escape(fmt) + r"-\d{3}", rec["id"]),
         f"id {rec['id']!r} must be '<format>-<nnn>'")
    need(rec["id"] not in ids, f"duplicate id {rec['id']}")
    ids.add(rec["id"])
    need(is_str(rec["why"]) and len(rec["why"]) >= 15 and "\n" not in rec["why"], "why must be one sentence")
    tags = rec["tags"]
    need(isinstance(tags, list) and all(t in TAGS for t in tags), f"unknown tag in {tags}")
    need(len(set(tags)) == len(tags), "duplicate tags")
    body = rec["body"]
    need(isinstance(body, dict), "body must be an object")
    info = Info()
    CHECKERS[fmt](body, info)
    # derived-tag consistency
    need(("image" in tags) == (info.images > 0), f"'image' tag must match presence of images ({info.images})")
    need(("agent" in tags) == (info.tool_calls > 0), f"'agent' tag must match presence of tool calls ({info.tool_calls})")
    need(("multi-turn" in tags) == (info.assistant_turns > 0),
         f"'multi-turn' tag must match presence of earlier assistant turns ({info.assistant_turns})")
    need(("long" in tags) == (info.user_text >= LONG_CHARS),
         f"'long' tag must match user text >= {LONG_CHARS} chars ({info.user_text})")
    if "agent-context" in tags:
        need(info.tools_declared > 0 and info.tool_calls == 0, "'agent-context' means tools declared but no tool loop")
    if cls == "vision":
        need(info.images > 0, "a vision request must carry an image")
    return rec


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "labelled.jsonl")
    errors = []
    recs = []
    ids = set()
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                errors.append(f"line {n}: blank line")
                continue
            try:
                rec = json.loads(line)
            except ValueError as e:
                errors.append(f"line {n}: invalid JSON ({e})")
                continue
            try:
                recs.append(check_record(rec, ids))
            except Bad as e:
                errors.append(f"line {n} ({rec.get('id') if isinstance(rec, dict) else '?'}): {e}")

    total = len(recs)
    by_class = Counter(r["class"] for r in recs)
    by_format = Counter(r["format"] for r in recs)
    by_tag = Counter(t for r in recs for t in r["tags"])
    grid = Counter((r["class"], r["format"]) for r in recs)
    mis = Counter(r["class"] for r in recs if "misleading" in r["tags"])

    # corpus-level requirements
    if total < MIN_TOTAL:
        errors.append(f"corpus: {total} records < {MIN_TOTAL}")
    for c in CLASSES:
        if by_class[c] < MIN_PER_CLASS:
            errors.append(f"corpus: class {c} has {by_class[c]} < {MIN_PER_CLASS}")
    for fm in FORMATS:
        if by_format[fm] < MIN_PER_FORMAT:
            errors.append(f"corpus: format {fm} has {by_format[fm]} < {MIN_PER_FORMAT}")
    for t, share in MIN_SHARE.items():
        if total and by_tag[t] < share * total:
            errors.append(f"corpus: tag {t} has {by_tag[t]} < {share:.0%} of {total}")
    for t, n in MIN_COUNT.items():
        if by_tag[t] < n:
            errors.append(f"corpus: tag {t} has {by_tag[t]} < {n}")
    run, longest = 1, 1
    for a, b in zip(recs, recs[1:]):
        run = run + 1 if a["class"] == b["class"] else 1
        longest = max(longest, run)
    if longest > MAX_CLASS_RUN:
        errors.append(f"corpus: {longest} consecutive lines share a class; shuffle the file")

    # counts table
    w = 18
    print(f"{'class':<12}" + "".join(f"{fm:>{w}}" for fm in FORMATS) + f"{'total':>8}{'misleading':>12}")
    for c in CLASSES:
        print(f"{c:<12}" + "".join(f"{grid[(c, fm)]:>{w}}" for fm in FORMATS) + f"{by_class[c]:>8}{mis[c]:>12}")
    print(f"{'total':<12}" + "".join(f"{by_format[fm]:>{w}}" for fm in FORMATS) + f"{total:>8}{sum(mis.values()):>12}")
    print()
    print("tags:")
    for t in TAGS:
        pct = 100.0 * by_tag[t] / total if total else 0.0
        print(f"  {t:<14}{by_tag[t]:>5}  ({pct:4.1f}%)")

    if errors:
        print(f"\n{len(errors)} error(s):", file=sys.stderr)
        for e in errors:
            print("  " + e, file=sys.stderr)
        sys.exit(1)
    print(f"\nOK: {total} records valid")


if __name__ == "__main__":
    main()
