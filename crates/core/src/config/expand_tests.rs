use super::*;
use crate::catalog::Catalog;
use crate::config::ConfigSource;

/// Recognisable, and longer than `${KEY}`, so columns after it move.
const SECRET: &str = "sk-live-SECRET-do-not-print-0123456789";

fn env(k: &str) -> Option<String> {
    match k {
        "KEY" => Some(SECRET.to_owned()),
        "TWO_LINES" => Some("first\nsecond".to_owned()),
        _ => None,
    }
}

fn parse_error(text: &str) -> String {
    let err = ConfigSource::from_text("conf.yaml", text).parse_with(&env).unwrap_err();
    let shown = err.to_string();
    assert!(!shown.contains(SECRET), "the secret leaked:\n{shown}");
    assert!(!shown.contains("do-not-print"), "part of the secret leaked:\n{shown}");
    shown
}

#[test]
fn a_typo_near_a_variable_shows_the_reference_not_its_value() {
    let text = "providers:\n  openai:\n    wire: openai-chat\n    endpont: https://api.example\n    credentials: { keys: [\"${KEY}\"] }\n";
    let err = parse_error(text);
    assert!(err.starts_with("conf.yaml:4:5: unknown field `endpont`"), "{err}");
    assert!(err.contains("5 |     credentials: { keys: [\"${KEY}\"] }\n"), "{err}");
}

#[test]
fn columns_after_a_longer_value_are_the_written_ones() {
    let text = "providers:\n  openai:\n    credentials: { keys: [\"${KEY}\"], bogus: 1 }\n";
    let err = parse_error(text);
    let column = text.lines().nth(2).unwrap().find("bogus").unwrap() + 1;
    assert!(err.starts_with(&format!("conf.yaml:3:{column}: unknown field `bogus`")), "{err}");
    let caret = format!("\n  | {}^\n", " ".repeat(column - 1));
    assert!(err.contains(&caret), "{err}");
}

#[test]
fn a_message_quoting_a_value_names_the_variable_instead() {
    let err = parse_error("providers:\n  p:\n    wire: ${KEY}\n");
    assert!(err.starts_with("conf.yaml:3:11: unknown variant `${KEY}`, expected one of"), "{err}");
}

#[test]
fn lines_after_a_value_with_a_line_break_are_the_written_ones() {
    // The quoted value folds its line break; the text after it moved down one
    // line in the expanded text, but not in the file.
    let text = "gateway:\n  listen: \"${TWO_LINES}\"\n  default_model: x\n  bogus: 1\n";
    let err = parse_error(text);
    assert!(err.starts_with("conf.yaml:4:3: unknown field `bogus`"), "{err}");
    assert!(err.contains("4 |   bogus: 1\n  |   ^\n"), "{err}");
}

#[test]
fn an_error_inside_a_value_points_at_its_reference() {
    // An unquoted value with a line break breaks the YAML inside the value.
    let text = "gateway:\n  listen: ${TWO_LINES}\n  bogus: [\n";
    let err = ConfigSource::from_text("conf.yaml", text).parse_with(&env).unwrap_err();
    let ConfigError::Parse { line: Some(line), .. } = err else { panic!("{err}") };
    assert!(line == 2 || line == 3, "{err}");
    assert!(!err.to_string().contains("second"), "{err}");
}

#[test]
fn offsets_map_back_through_every_kind_of_replacement() {
    let text = "a: ${KEY} $${X} ${EMPTY:-} ${NOPE:-dflt}|\n";
    let e = expand(text, "f", &env).unwrap();
    let bar = e.text.find('|').unwrap();
    assert_eq!(e.map.written_offset(bar), text.find('|').unwrap());
    // Inside the value: its `${`.
    assert_eq!(e.map.written_offset(5), 3);
    assert_eq!(e.map.written_position(bar + 1), (1, text.find('\n').unwrap() + 1));
    assert_eq!(e.map.written_line(1), 1);
}

#[test]
fn short_values_and_defaults_are_not_scrubbed() {
    let e = expand("a: ${SHORT}\nb: ${NOPE:-default-value}\nc: ${KEY}\n", "f", &|k| match k {
        "SHORT" => Some("on".to_owned()),
        "KEY" => Some(SECRET.to_owned()),
        _ => None,
    })
    .unwrap();
    assert_eq!(e.map.scrub("on default-value x"), "on default-value x");
    assert_eq!(e.map.scrub(&format!("{SECRET:?} and {SECRET}")), "\"${KEY}\" and ${KEY}");
    assert!(!format!("{:?}", e.map).contains(SECRET));
}

#[test]
fn compile_problems_name_written_lines_and_no_values() {
    let text = "gateway:\n  listen: \"${TWO_LINES}\"\nproviders:\n  p:\n    wire: openai-chat\n    endpoint: \"ftp://${KEY}@host\"\n    credentials: { none: true }\nmodels:\n  - id: m\n    deployments: [{ provider: \"${KEY}\" }]\n";
    let raw = ConfigSource::from_text("conf.yaml", text).parse_with(&env).unwrap();
    let err = Catalog::compile(&raw, "conf.yaml", &env).unwrap_err().to_string();
    assert!(!err.contains(SECRET), "{err}");
    assert!(err.contains("conf.yaml:6: providers.p.endpoint: \"ftp://****@host\""), "{err}");
    assert!(
        err.contains("conf.yaml:10: models[m].deployments: unknown provider \"${KEY}\""),
        "{err}"
    );
}
