use super::*;
use serde_json::{Value, json};
use switchyard_protocol::ClientFormat;

fn chat(body: Value) -> Request {
    ClientFormat::OpenAiChat.parse_request(body.to_string().as_bytes(), None).unwrap()
}

fn user(text: &str) -> Request {
    chat(json!({"model": "auto", "messages": [{"role": "user", "content": text}]}))
}

const PNG: &str = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

fn coding_tools() -> Value {
    let tool = |name: &str| {
        json!({"type": "function", "function": {"name": name, "description": name,
            "parameters": {"type": "object", "properties": {}}}})
    };
    json!([tool("read_file"), tool("run_shell_command"), tool("apply_patch")])
}

#[test]
fn a_table_of_prompts_and_their_class() {
    let table: &[(&str, Intent, &str)] = &[
        ("hi!", Intent::Cheap, "small_talk"),
        ("Thanks a lot, that was helpful", Intent::Cheap, "small_talk"),
        ("gracias", Intent::Cheap, "small_talk"),
        ("ありがとうございます", Intent::Cheap, "small_talk"),
        ("What is the capital of Australia?", Intent::Cheap, "short"),
        ("If I have 2 apples and eat 1, how many are left?", Intent::Cheap, "short"),
        ("Write a poem about the Python programming language", Intent::Ordinary, "writing"),
        (
            "Summarize this: the quarterly meeting moved to Thursday, budget is unchanged.",
            Intent::Ordinary,
            "writing",
        ),
        ("Explain how vaccines train the immune system", Intent::Ordinary, "default"),
        ("Prove that the square root of 2 is irrational.", Intent::Reasoning, "reasoning_text"),
        (
            "Two dice are rolled. What is the probability that the sum is prime, given that one die shows 3?",
            Intent::Reasoning,
            "reasoning_text",
        ),
        (
            "Why does this fail?\n```python\ndef f(x):\n    return x +\n```",
            Intent::Code,
            "code_text",
        ),
        (
            "Traceback (most recent call last):\n  File \"app.py\", line 3, in <module>\nKeyError: 'id'\nwhat's wrong?",
            Intent::Code,
            "code_text",
        ),
        ("Write a regex that matches ISO dates in Python", Intent::Code, "code_text"),
        (
            "How do I make git forget a file I already committed? I added it to .gitignore afterwards but git still tracks it.",
            Intent::Code,
            "code_text",
        ),
        (
            "Ice at -10 °C, 2.0 kg, to steam: use c_ice = 2.09 kJ/kg, L_f = 334 kJ/kg, L_v = 2256 kJ/kg. How much energy in total? Show every stage.",
            Intent::Reasoning,
            "reasoning_text",
        ),
        (
            "What time do the doors open? Just the time please.\n\nDear members, the autumn dinner is on Saturday; drinks from 18:30, doors at 19:00, dinner at 19:30.",
            Intent::Cheap,
            "terse",
        ),
    ];
    for (prompt, intent, rule) in table {
        let d = classify(&user(prompt));
        assert_eq!((d.intent, d.rule), (*intent, *rule), "{prompt:?}: {:?}", d.signals);
    }
}

#[test]
fn an_image_in_the_last_turn_is_vision_and_one_before_it_is_not() {
    let with_image = chat(json!({"model": "auto", "messages": [{"role": "user", "content": [
        {"type": "text", "text": "What breed is this dog?"},
        {"type": "image_url", "image_url": {"url": PNG}}]}]}));
    assert_eq!(classify(&with_image).rule, "image");
    let earlier = chat(json!({"model": "auto", "messages": [
        {"role": "user", "content": [{"type": "text", "text": "Look at this"},
            {"type": "image_url", "image_url": {"url": PNG}}]},
        {"role": "assistant", "content": "A dog."},
        {"role": "user", "content": "Prove that there are infinitely many primes."}]}));
    assert_eq!(classify(&earlier).intent, Intent::Reasoning);
    // A short turn right after the image, with nothing else to say what it is.
    let still = chat(json!({"model": "auto", "messages": [
        {"role": "user", "content": [{"type": "text", "text": "Here is our living room"},
            {"type": "image_url", "image_url": {"url": PNG}}]},
        {"role": "assistant", "content": "A bright room with two side tables."},
        {"role": "user", "content": "which side table would you get rid of?"}]}));
    let d = classify(&still);
    assert_eq!((d.intent, d.rule), (Intent::Vision, "image_recent"));
}

#[test]
fn a_coding_agents_tool_loop_is_code_and_a_support_bots_is_not() {
    let agent = chat(json!({"model": "auto", "tools": coding_tools(), "messages": [
        {"role": "user", "content": "How long can the retry loop wait in total?"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
            "function": {"name": "read_file", "arguments": "{\"path\":\"src/retry.ts\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "export const MAX = 5;"}]}));
    let d = classify(&agent);
    assert_eq!((d.intent, d.rule), (Intent::Code, "tool_loop"));

    let tools = json!([{"type": "function", "function": {"name": "get_order_details",
        "parameters": {"type": "object"}}}, {"type": "function", "function":
        {"name": "search_flights", "parameters": {"type": "object"}}}]);
    let bot = chat(json!({"model": "auto", "tools": tools, "messages": [
        {"role": "user", "content": "Where is my order 1234?"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
            "function": {"name": "get_order_details", "arguments": "{\"id\":1234}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "{\"status\":\"shipped\"}"}]}));
    let d = classify(&bot);
    // Not code, and not `short` either: the answer is read from the tool's.
    assert_eq!((d.intent, d.rule), (Intent::Ordinary, "default"), "{d:?}");
}

#[test]
fn thanks_at_the_end_of_an_agent_loop_is_small_talk() {
    let req = chat(json!({"model": "auto", "tools": coding_tools(), "messages": [
        {"role": "user", "content": "fix the failing test"},
        {"role": "assistant", "content": "Fixed: the fixture path was wrong."},
        {"role": "user", "content": "thanks!"}]}));
    assert_eq!(classify(&req).rule, "small_talk");
}

#[test]
fn a_short_follow_up_is_read_with_the_turn_before_it() {
    let req = chat(json!({"model": "auto", "messages": [
        {"role": "user", "content": "What is the expected value of the number of rolls of a fair die until a six?"},
        {"role": "assistant", "content": "6."},
        {"role": "user", "content": "why?"}]}));
    assert_eq!(classify(&req).intent, Intent::Reasoning);
}

#[test]
fn tool_names_split_into_words() {
    assert_eq!(signals_words("TodoWrite"), ["todo", "write"]);
    assert_eq!(signals_words("run_shell_command"), ["run", "shell", "command"]);
    assert_eq!(signals_words("get_order_details"), ["get", "order", "details"]);
}

fn signals_words(name: &str) -> Vec<String> {
    super::signals::name_words_for_tests(name)
}

#[test]
fn names_round_trip() {
    for i in Intent::ALL {
        assert_eq!(Intent::parse(i.as_str()), Some(i));
    }
    assert_eq!(Intent::parse("auto"), None);
}

#[test]
fn effort_auto_is_settled_by_the_class() {
    let cases = [
        ("Prove that the square root of 2 is irrational.", true, Effort::High),
        ("Fix this:\n```rust\nfn main() { let x = ; }\n```", true, Effort::Medium),
        ("Explain how tides work to a ten-year-old.", true, Effort::Low),
        ("thanks!", false, Effort::Minimal),
    ];
    for (text, enabled, effort) in cases {
        let mut req = chat(json!({"model": "m", "reasoning_effort": "auto",
            "messages": [{"role": "user", "content": text}]}));
        assert!(req.extras.reasoning_auto && req.reasoning.is_none());
        assert!(settle_reasoning(&mut req).is_some());
        let r = req.reasoning.unwrap();
        assert_eq!((r.enabled, r.effort), (enabled, Some(effort)), "{text}");
    }
    // Asked for a level, or nothing: left as the client asked.
    let mut req = chat(json!({"model": "m", "reasoning_effort": "low",
        "messages": [{"role": "user", "content": "Prove it."}]}));
    assert_eq!(settle_reasoning(&mut req), None);
    assert_eq!(req.reasoning.unwrap().effort, Some(Effort::Low));
}
