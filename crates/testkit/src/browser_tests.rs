use super::*;

#[test]
fn css_strings_are_quoted_and_escaped() {
    assert_eq!(css_string("plain"), r#""plain""#);
    assert_eq!(css_string(r#"a "b" \c"#), r#""a \"b\" \\c""#);
    assert_eq!(css_string("line\nbreak"), "\"line\\a break\"");
}

#[test]
fn test_names_become_one_safe_path_component() {
    assert_eq!(evidence::file_name("console::login_works"), "console__login_works");
    assert_eq!(evidence::file_name("../../etc"), "______etc");
    assert_eq!(evidence::file_name("a-b"), "a-b");
    assert_eq!(evidence::file_name(""), "unnamed");
}

#[test]
fn output_goes_under_the_target_folder() {
    let dir = test_output_dir("some::test");
    assert!(dir.ends_with("test-output/some__test"), "{}", dir.display());
    // cargo runs this test with CARGO_MANIFEST_DIR set: the workspace root is above it.
    let root = evidence::workspace_root();
    assert!(root.join("Cargo.lock").is_file(), "{}", root.display());
    assert!(dir.starts_with(&root) || std::env::var_os("CARGO_TARGET_DIR").is_some());
}

#[test]
fn chromedriver_startup_line_gives_the_port() {
    let line = "ChromeDriver was started successfully on port 43485.\n";
    assert_eq!(driver::started_port(line), Some(43485));
    assert_eq!(driver::started_port("Starting ChromeDriver 156.0 on port 0\n"), None);
    assert_eq!(driver::started_port("ChromeDriver was started successfully on port 0."), None);
}

#[test]
fn webdriver_errors_read_as_code_and_message() {
    let e = BrowserError::new("no such element", "no such element: Unable to locate element");
    assert!(e.is_transient());
    assert_eq!(e.to_string(), "no such element: no such element: Unable to locate element");
    assert!(!BrowserError::new("timeout", "x").is_transient());
}

#[test]
fn cookies_parse_from_webdriver_json() {
    let v = json!([{ "name": "sid", "value": "1", "path": "/", "domain": "127.0.0.1",
        "secure": false, "httpOnly": true, "sameSite": "Strict" }]);
    let cookies: Vec<Cookie> = serde_json::from_value(v).unwrap();
    assert!(cookies[0].http_only);
    assert_eq!(cookies[0].same_site.as_deref(), Some("Strict"));
    assert_eq!(cookies[0].expiry, None);
}
