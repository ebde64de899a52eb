use super::*;

const FILE: &str = "gateway:\n  listen: 127.0.0.1:0\n\nroutes:\n  - name: a\n    match: \"a-*\"\n# the models\nmodels:\n  - id: m\n";

#[test]
fn the_routes_section_ends_at_the_next_top_level_key() {
    let (start, end) = section(FILE);
    assert_eq!((start, end), (Some(3), 6));
    let lines: Vec<&str> = FILE.lines().collect();
    assert_eq!(lines[3], "routes:");
    // A sequence written at the key's own indentation is part of it.
    let flush = "routes:\n- name: a\n  match: x\nstorage:\n  url: none\n";
    assert_eq!(section(flush), (Some(0), 3));
    assert_eq!(section("gateway: {}\n").0, None);
}

#[test]
fn a_splice_replaces_the_section_and_keeps_the_rest() {
    let (out, offset) = splice(FILE, "routes:\n  - name: b\n    match: \"b-*\"\n");
    assert_eq!(offset, 3);
    assert_eq!(
        out,
        "gateway:\n  listen: 127.0.0.1:0\n\nroutes:\n  - name: b\n    match: \"b-*\"\n# the models\nmodels:\n  - id: m\n"
    );
    // A file without routes gets them at its end.
    let (out, offset) = splice("gateway: {}\n", "routes: []");
    assert_eq!((out.as_str(), offset), ("gateway: {}\nroutes: []\n", 1));
}

#[test]
fn the_editor_changes_routes_only() {
    assert!(only_routes("routes:\n  - name: a\n# note\n").is_ok());
    assert!(only_routes("routes: []").is_ok());
    assert!(only_routes("providers:\n  x: {}\n").is_err());
    let smuggled = only_routes("routes: []\nproviders:\n  evil: {}\n").unwrap_err();
    assert!(smuggled.contains("line 2"), "{smuggled}");
    assert!(only_routes("routesx: []").is_err());
}
