#![allow(clippy::unwrap_used)]
use super::*;
use crate::record::RequestRecord;

pub(super) fn config() -> TraceConfig {
    TraceConfig {
        endpoint: reqwest::Url::parse("http://127.0.0.1:4318/v1/traces").unwrap(),
        protocol: Protocol::HttpProtobuf,
        headers: Vec::new(),
        timeout: Duration::from_secs(1),
        service_name: "t".into(),
        sample_ratio: 1.0,
        capture_content: false,
        queue: 4,
        batch: 8,
        flush: Duration::from_millis(10),
    }
}

fn begin(incoming: &Incoming, config: &TraceConfig) -> RequestTrace {
    let (traces, _rx) = Traces::for_tests(config.clone(), 1);
    RequestTrace::begin(incoming, &traces, config, &Arc::new(Request::default()), Instant::now())
}

#[test]
fn a_clients_trace_is_continued_and_its_sampled_flag_followed() {
    let p = TraceParent::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00").unwrap();
    let incoming = Incoming { parent: Some(p), state: Some("a=b".into()) };
    let t = begin(&incoming, &config());
    assert_eq!(t.trace_id, p.trace_id);
    assert_eq!(t.parent, Some(p.span_id));
    assert!(!t.sampled, "the client's decision, whatever the ratio");
    let attempt = propagation::new_span_id();
    let header = t.traceparent(attempt);
    assert_eq!(TraceParent::parse(&header).unwrap().span_id, attempt);
    assert!(header.ends_with("-00"));
}

#[test]
fn new_traces_are_kept_at_the_ratio() {
    let none = Incoming::default();
    let all = begin(&none, &config());
    assert!(all.sampled && all.parent.is_none() && all.flags == 1);
    let never = begin(&none, &TraceConfig { sample_ratio: 0.0, ..config() });
    assert!(!never.sampled && never.flags == 0);
    // About half at 0.5, decided by the trace id alone.
    let half = TraceConfig { sample_ratio: 0.5, ..config() };
    let kept = (0..2000).filter(|_| begin(&none, &half).sampled).count();
    assert!((700..1300).contains(&kept), "{kept}");
    let mut id = [0u8; 16];
    assert!(sampled_by_ratio(&id, 0.5));
    id[8] = 0xff;
    assert!(!sampled_by_ratio(&id, 0.5));
}

#[test]
fn content_is_kept_only_when_enabled_and_sampled() {
    let none = Incoming::default();
    assert!(!begin(&none, &config()).wants_text());
    let capture = TraceConfig { capture_content: true, ..config() };
    let mut t = begin(&none, &capture);
    assert!(t.wants_text());
    t.capture("hello ");
    t.capture("world");
    assert_eq!(t.content.as_ref().unwrap().output, "hello world");
    let unsampled = TraceConfig { sample_ratio: 0.0, ..capture };
    assert!(!begin(&none, &unsampled).wants_text());
}

#[test]
fn a_full_queue_drops_and_counts_never_waits() {
    let (traces, mut rx) = Traces::for_tests(config(), 1);
    let finished = || Finished {
        record: RequestRecord::new("r", 0),
        trace: begin(&Incoming::default(), &config()),
    };
    traces.submit(finished());
    traces.submit(finished());
    traces.submit(finished());
    assert_eq!(traces.dropped(), 2);
    assert!(rx.try_recv().is_ok());
    assert!(rx.try_recv().is_err());
}

#[test]
fn provider_names_follow_the_conventions() {
    use switchyard_protocol::Wire;
    assert_eq!(provider_name(Some(Wire::OpenAiChat)), "openai");
    assert_eq!(provider_name(Some(Wire::Anthropic)), "anthropic");
    assert_eq!(provider_name(Some(Wire::Bedrock)), "aws.bedrock");
    assert_eq!(provider_name(Some(Wire::VertexGemini)), "gcp.vertex_ai");
    assert_eq!(provider_name(Some(Wire::AzureOpenAi)), "azure.ai.openai");
    assert_eq!(provider_name(Some(Wire::Gemini)), "gcp.gemini");
    assert_eq!(provider_name(None), "switchyard.mock");
}
