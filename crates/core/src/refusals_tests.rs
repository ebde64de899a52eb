#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::*;

fn refused(betas: &[&str], fields: &[&str]) -> Refused {
    Refused {
        betas: betas.iter().map(|s| (*s).to_owned()).collect(),
        fields: fields.iter().map(|s| (*s).to_owned()).collect(),
    }
}

#[test]
fn learns_per_provider_and_says_whether_anything_was_new() {
    let r = Refusals::default();
    assert!(r.get("vertex").is_none());
    assert!(r.learn("vertex", &refused(&["effort-2025-11-24"], &["context_management"])));
    // The same lesson again is nothing new: no second re-send.
    assert!(!r.learn("vertex", &refused(&["effort-2025-11-24"], &[])));
    let l = r.get("vertex").unwrap();
    assert!(l.refuses_beta("effort-2025-11-24"));
    assert!(!l.refuses_beta("interleaved-thinking-2025-05-14"));
    assert_eq!(l.fields().collect::<Vec<_>>(), ["context_management"]);
    assert!(r.get("vertex-eu").is_none());
}

#[test]
fn a_lesson_lapses_after_an_hour() {
    let r = Refusals::default();
    let t0 = Instant::now();
    assert!(r.learn_at("v", &refused(&["a-1"], &[]), t0));
    let later = t0 + Duration::from_secs(1800);
    assert!(r.learn_at("v", &refused(&[], &["f"]), later));
    // At t0 + 1 h + 1 s the flag lapsed; the field, learned later, stays.
    let l = r.get_at("v", t0 + REMEMBERED + Duration::from_secs(1)).unwrap();
    assert!(!l.refuses_beta("a-1"));
    assert_eq!(l.fields().collect::<Vec<_>>(), ["f"]);
    // And then nothing is left.
    assert!(r.get_at("v", later + REMEMBERED + Duration::from_secs(1)).is_none());
}
