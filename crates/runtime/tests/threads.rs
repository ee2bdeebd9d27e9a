//! The manager is `Send + Sync`: four threads drive one manager concurrently.
#![allow(clippy::unwrap_used, clippy::redundant_closure_for_method_calls)]

mod common;

use common::*;
use fhelium_residency::ReplicaMode;
use fhelium_runtime::{ResidencyController, ResidencyManager, RuntimeError};

fn assert_send_sync<T: Send + Sync>() {}

#[test]
fn four_threads_drive_one_manager() {
    assert_send_sync::<ResidencyManager>();
    assert_send_sync::<fhelium_runtime::ResidencyLease>();
    assert_send_sync::<ResidencyController>();
    let mem = memory();
    let m = manager(&mem, &[(S0, 6 * NB), (N, 4 * NB)]);
    let shared: Vec<_> = (0..4).map(|i| repl(&m, 100 + i)).collect();
    std::thread::scope(|scope| {
        for t in 0..4u64 {
            let m = m.clone();
            let shared = &shared;
            let mem = mem.clone();
            scope.spawn(move || {
                let stream = mem.stream(&S0).unwrap();
                let own = m
                    .adopt(value_at(&mem, P, t), None, ReplicaMode::Replicable)
                    .unwrap();
                for i in 0..200u64 {
                    let h = &shared[usize::try_from((t + i) % 4).unwrap()];
                    match m.ensure(h, S0, None) {
                        Ok(_) | Err(RuntimeError::Budget { .. }) => {}
                        Err(e) => panic!("{e}"),
                    }
                    if let Ok(l) = m.acquire(&[h, &own], P, None) {
                        assert_eq!(l.handles().len(), 2);
                        l.release().unwrap();
                    }
                    if let Ok(l) = m.acquire(&[h], S0, Some(&stream)) {
                        l.release().unwrap();
                    }
                    match m.drop_at(h, S0) {
                        Ok(_) | Err(RuntimeError::InUse { .. }) => {}
                        Err(e) => panic!("{e}"),
                    }
                    if let Ok(r) = m.reserve(N, NB, "t") {
                        r.release().unwrap();
                    }
                    let s = m.snapshot().unwrap();
                    let l = s.location(S0).unwrap();
                    assert!(l.used_bytes() + l.reserved_bytes() <= 6 * NB);
                }
                m.discard(&own).unwrap();
            });
        }
    });
    m.poll().unwrap();
    let s = m.snapshot().unwrap();
    assert_eq!(s.location(N).unwrap().reserved_bytes(), 0);
    assert_eq!(s.location(P).unwrap().used_bytes(), 4 * NB);
    assert_eq!(s.location(P).unwrap().parts().use_count, 0);
    m.close(true, false).unwrap();
}
