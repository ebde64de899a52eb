use super::*;

fn bounds(max_entries: u64, max_bytes: u64) -> CacheBounds {
    CacheBounds { max_entries, max_bytes, max_entry_bytes: max_bytes }
}

fn v(s: &str) -> Arc<[u8]> {
    Arc::from(s.as_bytes())
}

fn keys(k: &[&str]) -> Vec<String> {
    k.iter().map(|s| (*s).to_owned()).collect()
}

const TTL: Duration = Duration::from_secs(60);

#[test]
fn the_first_key_holding_an_answer_is_found() {
    let c = LocalCache::default();
    let now = Instant::now();
    c.put_at("b".into(), v("B"), TTL, now);
    let got = c.get_at(&keys(&["a", "b"]), now);
    assert_eq!(got.map(|(i, v)| (i, v.to_vec())), Some((1, b"B".to_vec())));
    assert!(c.get_at(&keys(&["a"]), now).is_none());
}

#[test]
fn an_answer_lapses_after_its_ttl() {
    let c = LocalCache::default();
    let now = Instant::now();
    c.put_at("a".into(), v("A"), TTL, now);
    assert!(c.get_at(&keys(&["a"]), now + TTL - Duration::from_millis(1)).is_some());
    assert!(c.get_at(&keys(&["a"]), now + TTL).is_none());
    assert!(c.is_empty(), "an expired answer is dropped when found");
}

#[test]
fn the_least_recently_used_goes_first_when_entries_are_full() {
    let c = LocalCache::new(bounds(2, 1 << 20));
    let now = Instant::now();
    c.put_at("a".into(), v("A"), TTL, now);
    c.put_at("b".into(), v("B"), TTL, now);
    // Reading `a` makes `b` the least recently used.
    assert!(c.get_at(&keys(&["a"]), now).is_some());
    c.put_at("c".into(), v("C"), TTL, now);
    assert_eq!(c.len(), 2);
    assert!(c.get_at(&keys(&["b"]), now).is_none());
    assert!(c.get_at(&keys(&["a"]), now).is_some());
    assert!(c.get_at(&keys(&["c"]), now).is_some());
}

#[test]
fn bytes_are_bounded_and_an_oversized_answer_is_not_kept() {
    // Each entry weighs 1 (key) + 4 (value) = 5 bytes.
    let c = LocalCache::new(bounds(100, 12));
    let now = Instant::now();
    c.put_at("a".into(), v("AAAA"), TTL, now);
    c.put_at("b".into(), v("BBBB"), TTL, now);
    c.put_at("c".into(), v("CCCC"), TTL, now);
    assert_eq!(c.len(), 2, "10 bytes held, a third would be 15");
    assert!(c.get_at(&keys(&["a"]), now).is_none());
    c.put_at("d".into(), v("DDDDDDDDDDDDDDDD"), TTL, now);
    assert!(c.get_at(&keys(&["d"]), now).is_none());
    assert_eq!(c.len(), 2, "an answer over the bound evicts nothing");
}

#[test]
fn replacing_a_key_counts_its_bytes_once() {
    let c = LocalCache::new(bounds(100, 10));
    let now = Instant::now();
    for _ in 0..5 {
        c.put_at("a".into(), v("AAAA"), TTL, now);
    }
    c.put_at("b".into(), v("BBBB"), TTL, now);
    assert_eq!(c.len(), 2);
}
