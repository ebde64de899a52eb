//! `gateway.metrics: false` records no series, whatever recorder the process has.
//! Its own file: the recorder is process-wide.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Mutex;

use metrics::{Counter, Gauge, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit};
use switchyard_core::embed::prelude::*;

/// The names of the series registered so far.
static SEEN: Mutex<Vec<String>> = Mutex::new(Vec::new());

struct Seen;

impl Seen {
    fn note(key: &Key) {
        SEEN.lock().unwrap().push(key.name().to_owned());
    }
}

impl Recorder for Seen {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        Self::note(key);
        Counter::noop()
    }
    fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
        Self::note(key);
        Gauge::noop()
    }
    fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
        Self::note(key);
        Histogram::noop()
    }
}

fn gateway(metrics: bool) -> Gateway {
    Gateway::builder()
        .provider("local", Provider::mock())
        .model(Model::new("echo").deployment("local", "echo-1"))
        .settings(|s| s.metrics = metrics)
        .build()
        .unwrap()
}

fn ask(model: &str) -> Request {
    Request { model: model.into(), messages: vec![Message::user("hi")], ..Request::default() }
}

#[tokio::test]
async fn metrics_off_records_nothing_and_on_records_the_series() {
    metrics::set_global_recorder(Seen).unwrap();
    let off = gateway(false);
    off.generate(Generate::new(ask("echo"))).await.unwrap();
    off.stream(Generate::new(ask("echo"))).await.unwrap().into_response().await.unwrap();
    off.generate(Generate::new(ask("nope"))).await.unwrap_err();
    assert_eq!(*SEEN.lock().unwrap(), Vec::<String>::new(), "nothing recorded with metrics off");

    let on = gateway(true);
    on.generate(Generate::new(ask("echo"))).await.unwrap();
    on.generate(Generate::new(ask("nope"))).await.unwrap_err();
    let seen = SEEN.lock().unwrap().clone();
    for series in [
        "gateway_requests_total",
        "gateway_request_duration_seconds",
        "gateway_time_to_first_token_seconds",
    ] {
        assert!(seen.iter().any(|s| s == series), "{series} in {seen:?}");
    }
}
