#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::config::ConfigSource;
use crate::otel::Protocol;
use crate::{Catalog, InvalidRegistry};

fn compile(telemetry: &str, env: &[(&str, &str)]) -> Result<Catalog, InvalidRegistry> {
    let yaml = format!("providers:\n  m: {{ wire: mock }}\n{telemetry}");
    let lookup = |name: &str| env.iter().find(|(k, _)| *k == name).map(|(_, v)| (*v).to_owned());
    let raw = ConfigSource::from_text("t.yaml", &yaml).parse_with(&lookup).unwrap();
    Catalog::compile(&raw, "t.yaml", &lookup)
}

fn problems(telemetry: &str) -> String {
    let err = compile(telemetry, &[]).unwrap_err();
    err.problems.iter().map(|p| p.render("t.yaml")).collect::<Vec<_>>().join("\n")
}

#[test]
fn off_by_default() {
    assert!(compile("", &[]).unwrap().telemetry.is_none());
    // The other keys alone export nothing.
    assert!(compile("telemetry: { sample_ratio: 0.5 }\n", &[]).unwrap().telemetry.is_none());
}

#[test]
fn an_endpoint_turns_it_on_with_its_defaults() {
    let c = compile("telemetry:\n  otlp: { endpoint: \"http://collector:4318\" }\n", &[]).unwrap();
    let t = c.telemetry.unwrap();
    assert_eq!(
        t.endpoint.as_str(),
        "http://collector:4318/v1/traces",
        "the conventional path added"
    );
    assert_eq!(t.protocol, Protocol::HttpProtobuf);
    assert_eq!(t.service_name, "switchyard");
    assert_eq!((t.sample_ratio, t.capture_content), (1.0, false));
    assert_eq!(t.timeout.as_millis(), 10_000);
    // A path as given is kept (Langfuse's).
    let c = compile(
        "telemetry:\n  otlp: { endpoint: \"https://cloud.langfuse.com/api/public/otel/v1/traces\" }\n",
        &[],
    )
    .unwrap();
    assert_eq!(c.telemetry.unwrap().endpoint.path(), "/api/public/otel/v1/traces");
}

#[test]
fn grpc_and_headers_from_the_environment() {
    let c = compile(
        "telemetry:\n  otlp:\n    endpoint: http://collector:4317\n    protocol: grpc\n    headers: { authorization: \"Basic ${AUTH}\" }\n  capture_content: true\n",
        &[("AUTH", "cGs6c2s=")],
    )
    .unwrap();
    let t = c.telemetry.unwrap();
    assert_eq!(t.protocol, Protocol::Grpc);
    assert_eq!(t.endpoint.path(), "/", "gRPC's path is the method's");
    assert_eq!(t.headers.len(), 1);
    assert_eq!(
        (t.headers[0].0.as_str(), t.headers[0].1.expose()),
        ("authorization", "Basic cGs6c2s=")
    );
    assert!(t.capture_content);
    assert!(!format!("{t:?}").contains("cGs6c2s="), "header values are not printed");
}

#[test]
fn problems_name_the_field_and_never_a_header_value() {
    let p = problems("telemetry:\n  otlp: { endpoint: \"ftp://x\" }\n  sample_ratio: 2\n");
    assert!(p.contains(": telemetry.otlp.endpoint: expected an http:// or https:// URL"), "{p}");
    assert!(p.starts_with("t.yaml:3:") || p.starts_with("t.yaml:4:"), "at the block's line: {p}");
    assert!(p.contains("telemetry.sample_ratio: 2: expected 0 to 1"), "{p}");
    let p = problems("telemetry:\n  otlp: { endpoint: \"http://u:secretpw@x\" }\n");
    assert!(p.contains("credentials belong in telemetry.otlp.headers"), "{p}");
    assert!(!p.contains("secretpw"), "{p}");
    let p = problems(
        "telemetry:\n  otlp: { endpoint: \"http://x\", headers: { auth: \"bad\\nsecretvalue\" } }\n",
    );
    assert!(
        p.contains("telemetry.otlp.headers.auth: the value is not a valid header value"),
        "{p}"
    );
    assert!(!p.contains("secretvalue"), "{p}");
    let thrift = "telemetry:\n  otlp: { endpoint: \"http://x\", protocol: thrift }\n";
    assert!(ConfigSource::from_text("t.yaml", thrift).parse_with(&|_| None).is_err());
    let p = problems(
        "telemetry:\n  otlp: { endpoint: \"http://x\" }\n  queue_size: 0\n  batch_size: 0\n",
    );
    assert!(p.contains("telemetry.queue_size") && p.contains("telemetry.batch_size"), "{p}");
}
