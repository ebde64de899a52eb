use super::*;

fn lanes() -> Arc<Lanes> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client =
        HttpClient::new(&super::super::ClientOptions::default(), Duration::from_secs(1)).unwrap();
    client.lanes
}

#[test]
fn the_first_lane_until_it_is_full_then_the_next() {
    let lanes = lanes();
    let mut held: Vec<(usize, Busy)> = (0..LANE_STREAMS).map(|_| lanes.take()).collect();
    assert!(held.iter().all(|(lane, _)| *lane == 0));
    let (lane, busy) = lanes.take();
    assert_eq!(lane, 1, "the hundred-and-first request opens the second lane");
    held.push((lane, busy));
    // One of the first lane's requests ends: the next goes back to it.
    held.swap_remove(0);
    let (lane, _held) = lanes.take();
    assert_eq!(lane, 0);
}

#[test]
fn past_every_lane_the_least_busy_queues() {
    let lanes = lanes();
    let mut held: Vec<(usize, Busy)> =
        (0..MAX_LANES * LANE_STREAMS).map(|_| lanes.take()).collect();
    assert!(held.iter().all(|(lane, _)| *lane < MAX_LANES));
    // Free two on lane 7 and one on lane 3: lane 7 is the least busy.
    let mut freed = 0;
    held.retain(|(lane, _)| {
        let free = *lane == 7 && freed < 2;
        freed += usize::from(free);
        !free
    });
    let on_three = held.iter().position(|(lane, _)| *lane == 3).unwrap();
    held.swap_remove(on_three);
    // Each taken place is held (a dropped one is given back at once).
    let next: Vec<(usize, Busy)> = (0..4).map(|_| lanes.take()).collect();
    let order: Vec<usize> = next.iter().map(|(lane, _)| *lane).collect();
    assert_eq!(
        order,
        [3, 7, 7, 0],
        "a lane below its hundred first, in lane order; all full: the least busy, the first of equals"
    );
}

#[test]
fn a_request_gives_its_place_back_when_it_ends() {
    let lanes = lanes();
    let (_, busy) = lanes.take();
    assert_eq!(lanes.busy[0].load(Ordering::Relaxed), 1);
    drop(busy);
    assert_eq!(lanes.busy[0].load(Ordering::Relaxed), 0);
}
