//! Buffers whose contents are produced by work on a stream (`Buffer::order_after`): copies
//! into and out of them are ordered after the producer on the GPU (here: their events stay
//! pending while the producer's simulated stream is held), nothing waits on the host, and
//! host memory is refused.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use fhelium_cuda::{Buffer, Memory, MemoryError, ResidencyLocation as L, Stream};

fn data(n: usize, salt: u64) -> Vec<u64> {
    (0..n as u64)
        .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ salt)
        .collect()
}

/// A buffer at `loc` holding `words`, whose contents are declared produced by work on a
/// held stream of `loc` (returned, with the producer's event).
fn produced(mem: &Memory, loc: L, words: &[u64]) -> (Buffer, Stream, fhelium_cuda::Event) {
    let (buf, ev) = mem.alloc_from(&loc, words, None).unwrap();
    assert!(ev.is_none_or(|e| e.query().unwrap()));
    let producer = mem.stream(&loc).unwrap();
    producer.hold().unwrap();
    let ready = producer.record_event().unwrap();
    buf.order_after(&ready).unwrap();
    (buf, producer, ready)
}

#[test]
fn a_copy_out_of_a_produced_buffer_completes_only_after_its_producer() {
    let mem = Memory::with_sim_devices(2);
    let words = data(4096, 1);
    let (buf, producer, ready) = produced(&mem, L::Sim(0), &words);
    assert_eq!(buf.pending_events().unwrap().len(), 1);
    assert_eq!(buf.pending_events().unwrap()[0].id(), ready.id());

    // To the other device on its own stream, to pageable host on the default stream.
    let s1 = mem.stream(&L::Sim(1)).unwrap();
    let (peer, peer_ev) = buf.copy_to(&mem, &L::Sim(1), Some(&s1)).unwrap();
    let (host, host_ev) = buf.copy_to(&mem, &L::PageableHost, None).unwrap();
    let (peer_ev, host_ev) = (peer_ev.unwrap(), host_ev.unwrap());
    assert!(
        !peer_ev.query().unwrap(),
        "the copy ran before its producer"
    );
    assert!(
        !host_ev.query().unwrap(),
        "the copy ran before its producer"
    );
    // The stream that copied inherits the wait: its later work is ordered too.
    assert!(!s1.record_event().unwrap().query().unwrap());

    producer.release_hold().unwrap();
    assert!(peer_ev.query().unwrap() && host_ev.query().unwrap());
    assert!(buf.pending_events().unwrap().is_empty());
    assert_eq!(peer.to_vec(&mem).unwrap(), words);
    assert_eq!(host.host_slice().unwrap(), &words[..]);
}

#[test]
fn a_copy_into_a_produced_buffer_is_ordered_after_its_producer() {
    let mem = Memory::with_sim_devices(1);
    let (mut buf, producer, _) = produced(&mem, L::Sim(0), &data(512, 2));
    let (src, _) = mem.alloc_from(&L::PinnedHost, &data(512, 3), None).unwrap();
    let s = mem.stream(&L::Sim(0)).unwrap();
    let ev = buf.copy_from(&mem, &src, Some(&s)).unwrap().unwrap();
    assert!(!ev.query().unwrap());
    producer.release_hold().unwrap();
    assert!(ev.query().unwrap());
    assert_eq!(buf.to_vec(&mem).unwrap(), data(512, 3));
}

#[test]
fn a_later_event_of_the_same_stream_replaces_the_earlier_and_other_streams_add_theirs() {
    let mem = Memory::with_sim_devices(1);
    let (buf, a, first) = produced(&mem, L::Sim(0), &data(64, 4));
    let second = a.record_event().unwrap();
    buf.order_after(&second).unwrap();
    let ids: Vec<u64> = buf
        .pending_events()
        .unwrap()
        .iter()
        .map(fhelium_cuda::Event::id)
        .collect();
    assert_eq!(ids, vec![second.id()], "{} was kept", first.id());

    let b = mem.stream(&L::Sim(0)).unwrap();
    b.hold().unwrap();
    let other = b.record_event().unwrap();
    buf.order_after(&other).unwrap();
    assert_eq!(buf.pending_events().unwrap().len(), 2);

    // Completed events are forgotten; a copy waits only for what is still pending.
    a.release_hold().unwrap();
    let pending = buf.pending_events().unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].id(), other.id());
    let (_, ev) = buf.copy_to(&mem, &L::PageableHost, None).unwrap();
    let ev = ev.unwrap();
    assert!(!ev.query().unwrap());
    b.release_hold().unwrap();
    assert!(ev.query().unwrap());
}

#[test]
fn host_memory_cannot_be_ordered_after_an_event_and_stays_unchanged() {
    let mem = Memory::with_sim_devices(1);
    let s = mem.stream(&L::Sim(0)).unwrap();
    s.hold().unwrap();
    let ev = s.record_event().unwrap();
    for loc in [L::PageableHost, L::PinnedHost] {
        let (buf, _) = mem.alloc_from(&loc, &data(100, 5), None).unwrap();
        match buf.order_after(&ev) {
            Err(MemoryError::NotStreamOrdered {
                op: "order_after",
                location,
                bytes: 800,
                ..
            }) => assert_eq!(location, loc),
            other => panic!("{loc}: {other:?}"),
        }
        let text = buf.order_after(&ev).unwrap_err().to_string();
        assert!(
            text.contains("800 bytes") && text.contains(&loc.to_string()),
            "{text}"
        );
        assert!(buf.pending_events().unwrap().is_empty());
        // Host copies stay synchronous: nothing waits on the held event.
        let (copy, none) = buf.copy_to(&mem, &L::PageableHost, None).unwrap();
        assert!(none.is_none());
        assert_eq!(copy.host_slice().unwrap(), &data(100, 5)[..]);
    }
    s.release_hold().unwrap();
}

#[test]
fn dropping_a_produced_buffer_does_not_wait_for_its_producer() {
    let mem = Memory::with_sim_devices(1);
    let (buf, producer, ready) = produced(&mem, L::Sim(0), &data(1 << 16, 6));
    assert_eq!(mem.usage(&L::Sim(0)).unwrap().allocated_bytes, 8 << 16);
    let start = Instant::now();
    drop(buf);
    // A host wait would block until the hold times out (30 s).
    assert!(start.elapsed() < Duration::from_secs(5));
    assert!(!ready.query().unwrap());
    assert_eq!(mem.usage(&L::Sim(0)).unwrap().allocated_bytes, 0);
    producer.release_hold().unwrap();
}
