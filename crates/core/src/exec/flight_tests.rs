use std::time::Duration;

use super::*;

fn shared() -> Landing {
    Some(Arc::new(Shared {
        response: Response {
            id: String::new(),
            model: String::new(),
            content: Vec::new(),
            stop_reason: None,
            stop_sequence: None,
            usage: switchyard_protocol::Usage::default(),
        },
        served: Served {
            provider: "p".into(),
            model: "m".into(),
            upstream_model: "u".into(),
            dropped_tools: Vec::new(),
        },
    }))
}

fn lead(flights: &Flights, key: &str) -> (Arc<Flight>, Publisher) {
    match flights.join(key) {
        Joined::Lead { flight, publisher } => (flight, publisher),
        Joined::Follow(_) => panic!("expected to lead"),
    }
}

fn follow(flights: &Flights, key: &str) -> Arc<Flight> {
    match flights.join(key) {
        Joined::Follow(f) => f,
        Joined::Lead { .. } => panic!("expected to follow"),
    }
}

#[tokio::test]
async fn followers_get_the_leaders_answer_and_later_requests_lead_anew() {
    let flights = Flights::default();
    let (leader, publisher) = lead(&flights, "k");
    let follower = follow(&flights, "k");
    let other = lead(&flights, "other");
    publisher.land(shared());
    let got = tokio::time::timeout(Duration::from_secs(5), follower.wait()).await.unwrap();
    assert_eq!(got.map(|s| s.served.provider.clone()).as_deref(), Some("p"));
    assert!(leader.wait().await.is_some());
    // Landed: the next request with the key starts a flight of its own.
    let _next = lead(&flights, "k");
    drop(other);
}

#[tokio::test]
async fn the_leader_leaving_cancels_nothing_and_all_leaving_cancels_the_call() {
    let flights = Flights::default();
    let (leader, publisher) = lead(&flights, "k");
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        // Holds the publisher until told, like an upstream call in progress.
        let _ = stop_rx.await;
        publisher.land(shared());
    });
    leader.started(task.abort_handle());
    let follower = follow(&flights, "k");
    drop(leader);
    assert!(!task.is_finished(), "a follower still waits: the call goes on");
    stop_tx.send(()).unwrap();
    let got = tokio::time::timeout(Duration::from_secs(5), follower.wait()).await.unwrap();
    assert!(got.is_some());

    // This time everyone leaves before it lands.
    let (leader, publisher) = lead(&flights, "k2");
    let task = tokio::spawn(async move {
        std::future::pending::<()>().await;
        publisher.land(None);
    });
    leader.started(task.abort_handle());
    let follower = follow(&flights, "k2");
    drop(leader);
    drop(follower);
    let ended = tokio::time::timeout(Duration::from_secs(5), task).await.unwrap();
    assert!(ended.unwrap_err().is_cancelled(), "the call was cancelled");
    assert_eq!(flights.len(), 0, "and forgotten");
}

#[tokio::test]
async fn a_flight_that_ends_without_landing_has_nothing_to_share() {
    let flights = Flights::default();
    let (leader, publisher) = lead(&flights, "k");
    let follower = follow(&flights, "k");
    drop(publisher);
    assert!(follower.wait().await.is_none());
    drop(leader);
}
