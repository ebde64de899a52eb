use super::*;

fn limits() -> Connections {
    Connections {
        max: 0,
        header_read_timeout: Duration::from_secs(10),
        idle_timeout: Duration::from_secs(60),
        http2_max_concurrent_streams: 128,
        http2_max_header_list_bytes: 65536,
    }
}

#[test]
fn the_cap_sits_below_the_file_limit() {
    assert_eq!(connection_cap(0, Some(1024)), 512, "half by default");
    assert_eq!(connection_cap(100, Some(1024)), 100);
    assert_eq!(connection_cap(5000, Some(1024)), 960, "never the whole limit");
    assert_eq!(connection_cap(0, Some(10)), 5);
    assert_eq!(connection_cap(0, None), 4096);
    assert_eq!(connection_cap(7, None), 7);
}

#[test]
fn a_silent_connection_has_until_the_header_deadline() {
    let a = Activity::new();
    let l = limits();
    assert_eq!(a.check(&l, a.born), Check::Wait(a.born + l.header_read_timeout));
    assert_eq!(
        a.check(&l, a.born + Duration::from_secs(9)),
        Check::Wait(a.born + l.header_read_timeout)
    );
    assert_eq!(a.check(&l, a.born + Duration::from_secs(10)), Check::Close);
    // Bytes that trickle in do not move it.
    a.on_read(b"GET / HTTP/1.1\r\n");
    assert_eq!(a.check(&l, a.born + Duration::from_secs(10)), Check::Close);
}

#[test]
fn a_request_in_flight_is_never_cut_and_idle_follows_it() {
    let a = Arc::new(Activity::new());
    let l = limits();
    a.on_read(b"GET / HTTP/1.1\r\n\r\n");
    let guard = a.begin();
    let late = a.born + Duration::from_secs(600);
    assert_eq!(a.check(&l, late), Check::Wait(late + l.header_read_timeout));
    drop(guard);
    let idle = a.at(a.idle_since.load(Ordering::Relaxed));
    assert_eq!(a.check(&l, idle), Check::Wait(idle + l.idle_timeout));
    assert_eq!(a.check(&l, idle + l.idle_timeout), Check::Drain);
}

#[test]
fn the_next_requests_headers_have_their_own_deadline() {
    let a = Arc::new(Activity::new());
    let l = limits();
    a.on_read(b"GET / HTTP/1.1\r\n\r\n");
    drop(a.begin());
    a.on_read(b"GET /again HTTP/1.1\r\n");
    let arriving = a.at(a.arriving.load(Ordering::Relaxed) - 1);
    assert_eq!(a.check(&l, arriving), Check::Wait(arriving + l.header_read_timeout));
    assert_eq!(a.check(&l, arriving + l.header_read_timeout), Check::Close);
}

#[test]
fn http2_frames_between_requests_are_not_a_request() {
    let a = Arc::new(Activity::new());
    let l = limits();
    a.on_read(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
    drop(a.begin());
    a.on_read(b"\0\0\x08\x06\0\0\0\0\0ping....");
    assert_eq!(a.arriving.load(Ordering::Relaxed), 0);
    let idle = a.at(a.idle_since.load(Ordering::Relaxed));
    assert_eq!(a.check(&l, idle + l.header_read_timeout), Check::Wait(idle + l.idle_timeout));
}

/// A burst of connects larger than tokio's own backlog (128) is queued by the
/// kernel, not dropped: with nothing accepting, every handshake still completes.
/// Against a backlog of 128 the connects past it would wait out SYN retries
/// until the timeout below.
#[tokio::test]
async fn a_burst_of_connects_waits_in_the_backlog() {
    let listener = bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let mut tasks = Vec::new();
    for _ in 0..300 {
        tasks.push(tokio::spawn(async move {
            tokio::time::timeout(Duration::from_secs(20), TcpStream::connect(addr)).await
        }));
    }
    for t in tasks {
        t.await.unwrap().expect("the handshake completed").unwrap();
    }
    drop(listener);
}

#[tokio::test]
async fn bind_names_what_it_cannot_resolve() {
    assert!(bind("no-such-host.invalid:1").await.is_err());
}
