use super::*;

fn decided(intent: Intent, rule: &'static str) -> Decision {
    Decision { intent, rule, signals: super::super::Signals::default() }
}

#[test]
fn the_answer_is_its_first_word() {
    for (text, read) in [
        ("reasoning", Some(true)),
        ("Reasoning.", Some(true)),
        ("  **direct**\n", Some(false)),
        ("DIRECT - it is a fact", Some(false)),
        ("I think reasoning", None),
        ("", None),
        ("directly", None),
    ] {
        assert_eq!(parse(text), read, "{text:?}");
    }
}

#[test]
fn the_model_decides_between_reasoning_and_the_direct_classes_only() {
    let cases = [
        (Intent::Ordinary, true, Intent::Reasoning, "model"),
        (Intent::Cheap, true, Intent::Reasoning, "model"),
        (Intent::Reasoning, false, Intent::Ordinary, "model"),
        (Intent::Reasoning, true, Intent::Reasoning, "model"),
        (Intent::Cheap, false, Intent::Cheap, "rules"),
        (Intent::Ordinary, false, Intent::Ordinary, "rules"),
        (Intent::Code, true, Intent::Code, "rules"),
        (Intent::Vision, true, Intent::Vision, "rules"),
    ];
    for (rules, reasoning, intent, rule) in cases {
        let d = combine(&decided(rules, "rules"), reasoning);
        assert_eq!((d.intent, d.rule), (intent, rule), "{rules:?} + {reasoning}");
    }
    assert!(asks(&decided(Intent::Cheap, "short")));
    assert!(!asks(&decided(Intent::Code, "tool_loop")));
    assert!(!asks(&decided(Intent::Vision, "image")));
}

#[test]
fn the_request_carries_the_tasks_start_and_asks_for_one_word() {
    let spec = ClassifierSpec {
        model: "small".into(),
        timeout: Duration::from_secs(1),
        shadow: false,
        cache_ttl_ms: 0,
    };
    let long = "é".repeat(3_000);
    let req = request(&spec, &long);
    let text = req.messages[0].content.iter().find_map(|p| match p {
        switchyard_protocol::Part::Text(t) => Some(t.text.clone()),
        _ => None,
    });
    let text = text.unwrap();
    assert!(text.len() <= MAX_TASK_BYTES && text.chars().all(|c| c == 'é'));
    assert_eq!((req.model.as_str(), req.max_tokens, req.stream), ("small", Some(8), false));
    assert!(req.system[0].text.contains("exactly one word: reasoning or direct"));
}
