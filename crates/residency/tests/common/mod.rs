//! Shared builders for the residency tests.
#![allow(clippy::unwrap_used)]
#![allow(dead_code)]

use fhelium_residency::*;

pub const MIB: u64 = 1 << 20;
pub const N: ResidencyLocation = PINNED_HOST;
pub const P: ResidencyLocation = PAGEABLE_HOST;
pub const C0: ResidencyLocation = ResidencyLocation::Cuda(0);
pub const C1: ResidencyLocation = ResidencyLocation::Cuda(1);
pub const MANAGER: u64 = 1;

pub fn handle(id: u64, ty: &str) -> ResidencyHandle {
    ResidencyHandle::new(MANAGER, id, ty).expect("handle")
}

pub fn spec(ty: &str, n: u64, mode: ReplicaMode, rec: Recoverability) -> ResidencyValueSpec {
    ResidencyValueSpec::new(ty, n, n, mode, rec).expect("spec")
}

/// An adopted (MUST_PRESERVE) value at the given locations.
pub fn adopted(
    id: u64,
    n: u64,
    mode: ReplicaMode,
    at: &[ResidencyLocation],
) -> ResidencyValueSnapshotParts {
    let mut p = ResidencyValueSnapshotParts::new(
        handle(id, "T"),
        spec("T", n, mode, Recoverability::MustPreserve),
    );
    for l in at {
        p = p.at(*l);
    }
    p
}

/// A source-backed (RECONSTRUCTIBLE, REPLICABLE) value with its source at `source`.
pub fn sourced(
    id: u64,
    n: u64,
    source: ResidencyLocation,
    at: &[ResidencyLocation],
) -> ResidencyValueSnapshotParts {
    let mut p = ResidencyValueSnapshotParts::new(
        handle(id, "T"),
        spec(
            "T",
            n,
            ReplicaMode::Replicable,
            Recoverability::Reconstructible,
        ),
    )
    .with_source(source);
    for l in at {
        p = p.at(*l);
    }
    p
}

/// A snapshot of `values` built on `b`.
pub fn build(
    b: ResidencySnapshotBuilder,
    values: Vec<ResidencyValueSnapshotParts>,
) -> ResidencySnapshot {
    values
        .into_iter()
        .fold(b, |b, v| b.value(v.build().expect("value")))
        .build()
        .expect("snapshot")
}

pub fn req(
    name: &str,
    reqs: &[(&ResidencyHandle, ResidencyLocation)],
    res: Vec<MemoryReservation>,
) -> ResidencyRequest {
    ResidencyRequest::new(
        name,
        reqs.iter()
            .map(|(h, l)| ResidencyRequirement::new((*h).clone(), *l)),
        res,
    )
    .expect("request")
}

pub fn reservation(l: ResidencyLocation, n: u64, label: &str) -> MemoryReservation {
    MemoryReservation::new(l, n, label).expect("reservation")
}

pub fn drop_(h: &ResidencyHandle, l: ResidencyLocation) -> ResidencyAction {
    ResidencyAction::DropResident {
        handle: h.clone(),
        location: l,
    }
}
pub fn ensure(h: &ResidencyHandle, l: ResidencyLocation) -> ResidencyAction {
    ResidencyAction::EnsureResident {
        handle: h.clone(),
        location: l,
    }
}
pub fn move_(
    h: &ResidencyHandle,
    to: ResidencyLocation,
    from: Option<ResidencyLocation>,
) -> ResidencyAction {
    ResidencyAction::MoveResident {
        handle: h.clone(),
        to,
        from,
    }
}

/// The seed situation of FHElium's example 14: returns (snapshot, request, policy, handles
/// cold, weight, key, source).
pub fn seed() -> (
    ResidencySnapshot,
    ResidencyRequest,
    DeterministicTieredLRU,
    [ResidencyHandle; 4],
) {
    let cold = ResidencyHandle::new(MANAGER, 0xb7bd_a0d2, "Plaintext").unwrap();
    let weight = ResidencyHandle::new(MANAGER, 0x2222_0001, "Plaintext").unwrap();
    let key = ResidencyHandle::new(MANAGER, 0x3333_0002, "RotationKey").unwrap();
    let source = ResidencyHandle::new(MANAGER, 0x4444_0003, "Ciphertext").unwrap();
    let pt = |h: &ResidencyHandle, n: u64, mode| {
        ResidencyValueSnapshotParts::new(
            h.clone(),
            ResidencyValueSpec::adopted(h.value_type(), n, n, mode).unwrap(),
        )
    };
    let workspace = 6 * MIB;
    let budget = MIB + 18 * MIB + 2 * MIB + workspace;
    let snapshot = ResidencySnapshotBuilder::new(MANAGER, 6)
        .budget(N, 2 * MIB)
        .budget(C0, budget)
        .value(
            pt(&cold, MIB, ReplicaMode::Replicable)
                .at(P)
                .at(C0)
                .build()
                .unwrap(),
        )
        .value(
            pt(&weight, MIB, ReplicaMode::Replicable)
                .at(P)
                .build()
                .unwrap(),
        )
        .value(
            pt(&key, 18 * MIB, ReplicaMode::Replicable)
                .at(P)
                .build()
                .unwrap(),
        )
        .value(
            pt(&source, 2 * MIB, ReplicaMode::Exclusive)
                .at(N)
                .build()
                .unwrap(),
        )
        .available_devices(vec![C0])
        .build()
        .unwrap();
    let request = req(
        "automatic/rotate-scale/tile-0",
        &[(&source, C0), (&key, C0), (&weight, C0)],
        vec![reservation(
            C0,
            workspace,
            "rotate/multiply outputs and workspace",
        )],
    );
    let policy = DeterministicTieredLRU::with_fallback_tiers([(C0, vec![N, P])]).unwrap();
    (snapshot, request, policy, [cold, weight, key, source])
}
