//! Values adopted while their producers still run (`Resident::pending_events`, e.g. a CUDA
//! engine's result adopted in stream order): the manager orders the first replica after the
//! producers, so a lease's consumer stream and every copy out of the value wait on the GPU
//! (here: their events stay pending while the producer's simulated stream is held), and the
//! host never blocks on them.
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use fhelium_cuda::{Event, MemoryError, Resident, Stream, Tensors};
use fhelium_residency::{ReplicaMode, ResidencyLocation};
use fhelium_runtime::RuntimeError;

/// A value at `sim:0` whose buffer is declared produced by work on `producer` (held).
fn produced(mem: &fhelium_cuda::Memory, producer: &Stream, seed: u64) -> (Tensors, Event) {
    let v = value_at(mem, S0, seed);
    let ready = producer.record_event().unwrap();
    for view in v.views() {
        view.buffer().order_after(&ready).unwrap();
    }
    (v, ready)
}

#[test]
fn a_lease_and_a_copy_of_an_adopted_value_wait_for_its_producer() {
    let mem = memory();
    let m = manager(&mem, &[]);
    let producer = mem.stream(&S0).unwrap();
    producer.hold().unwrap();
    let (v, _) = produced(&mem, &producer, 7);
    assert_eq!(v.pending_events().unwrap().len(), 1);
    let h = m.adopt(v, Some(S0), ReplicaMode::Replicable).unwrap();
    assert_eq!(used(&m, S0), NB);

    let consumer = mem.stream(&S0).unwrap();
    let lease = m.acquire(&[h.raw()], S0, Some(&consumer)).unwrap();
    let after_lease = consumer.record_event().unwrap();
    assert!(
        !after_lease.query().unwrap(),
        "the consumer stream did not wait for the producer"
    );
    lease.release().unwrap();

    // A replica on pageable host memory must be complete when `ensure` returns, so the host
    // waits, for the producer too: released by another thread after 200 ms.
    let releaser = {
        let producer = producer.clone();
        std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(200));
            producer.release_hold().unwrap();
        })
    };
    let start = std::time::Instant::now();
    m.ensure(h.raw(), P, None).unwrap();
    assert!(start.elapsed() >= std::time::Duration::from_millis(150));
    releaser.join().unwrap();
    assert!(after_lease.query().unwrap());
    m.poll().unwrap();
    let lease = m.acquire(&[h.raw()], P, None).unwrap();
    assert_eq!(
        words(&mem, lease.get(&h).unwrap()),
        (0..8).map(|i| 7000 + i).collect::<Vec<_>>()
    );
    lease.release().unwrap();
}

#[test]
fn producers_on_two_streams_are_joined_into_one_ready_event() {
    let mem = memory();
    let m = manager(&mem, &[]);
    let (a, b) = (mem.stream(&S0).unwrap(), mem.stream(&S0).unwrap());
    a.hold().unwrap();
    b.hold().unwrap();
    let v = Tensors::new(vec![
        produced(&mem, &a, 1).0.views()[0].clone(),
        produced(&mem, &b, 2).0.views()[0].clone(),
    ]);
    assert_eq!(v.pending_events().unwrap().len(), 2);
    let h = m.adopt(v, Some(S0), ReplicaMode::Exclusive).unwrap();
    let consumer = mem.stream(&S0).unwrap();
    let lease = m.acquire(&[h.raw()], S0, Some(&consumer)).unwrap();
    let ev = consumer.record_event().unwrap();
    a.release_hold().unwrap();
    assert!(!ev.query().unwrap(), "ready before the second producer");
    b.release_hold().unwrap();
    assert!(ev.query().unwrap());
    lease.release().unwrap();
}

#[test]
fn a_value_with_complete_contents_is_adopted_without_a_ready_event() {
    let mem = memory();
    let m = manager(&mem, &[]);
    let producer = mem.stream(&S0).unwrap();
    let (v, ready) = produced(&mem, &producer, 3);
    assert!(ready.query().unwrap());
    assert!(v.pending_events().unwrap().is_empty());
    let h = m.adopt(v, Some(S0), ReplicaMode::Replicable).unwrap();
    let consumer = mem.stream(&S0).unwrap();
    consumer.hold().unwrap();
    let lease = m.acquire(&[h.raw()], S0, Some(&consumer)).unwrap();
    consumer.release_hold().unwrap();
    assert!(consumer.record_event().unwrap().query().unwrap());
    lease.release().unwrap();
}

/// A value whose producers cannot be queried (the driver failed): the adoption fails with a
/// typed error naming the handle, location and bytes, and nothing changes.
#[test]
fn a_failing_producer_query_refuses_the_adoption_and_changes_nothing() {
    #[derive(Debug)]
    struct Broken(Tensors);
    impl Resident for Broken {
        fn type_tag(&self) -> &'static str {
            "Broken"
        }
        fn placement(&self) -> Result<ResidencyLocation, MemoryError> {
            self.0.placement()
        }
        fn nbytes(&self) -> u64 {
            self.0.nbytes()
        }
        fn storage_nbytes(&self) -> u64 {
            self.0.storage_nbytes()
        }
        fn storage_keys(&self) -> Vec<fhelium_cuda::StorageKey> {
            self.0.storage_keys()
        }
        fn pending_events(&self) -> Result<Vec<Event>, MemoryError> {
            Err(MemoryError::Cuda {
                op: "cuEventQuery",
                location: S0,
                message: "CUDA_ERROR_ILLEGAL_ADDRESS".to_owned(),
            })
        }
        fn materialize(
            &self,
            mem: &fhelium_cuda::Memory,
            to: &ResidencyLocation,
            stream: Option<&Stream>,
        ) -> Result<fhelium_cuda::Materialized<Self>, MemoryError> {
            let m = self.0.materialize(mem, to, stream)?;
            Ok(fhelium_cuda::Materialized {
                value: Broken(m.value),
                ready: m.ready,
            })
        }
    }
    let mem = memory();
    let m = manager(&mem, &[(S0, 4 * NB)]);
    let before = (
        m.snapshot().unwrap().values().len(),
        used(&m, S0),
        m.state_version().unwrap(),
    );
    let e = m
        .adopt(
            Broken(value_at(&mem, S0, 9)),
            Some(S0),
            ReplicaMode::Exclusive,
        )
        .unwrap_err();
    match &e {
        RuntimeError::Memory {
            handle: Some(h),
            location,
            nbytes,
            source: MemoryError::Cuda { .. },
        } => {
            assert_eq!((*location, *nbytes), (S0, NB));
            assert_eq!(h.value_type(), "Broken");
        }
        other => panic!("{other:?}"),
    }
    let text = e.to_string();
    assert!(text.contains("sim:0") && text.contains("64"), "{text}");
    let after = (
        m.snapshot().unwrap().values().len(),
        used(&m, S0),
        m.state_version().unwrap(),
    );
    assert_eq!(before, after);
}
