#![allow(missing_docs)] // criterion_group! generates undocumented functions
//! Criterion benchmarks of every CPU engine operation at `slots8192-scale40-levels7-int64`,
//! level 0 (the cells of FHElium's Benchmark v1 depth-aware table, spec §5.4).
//!
//! `cargo bench -p fhelium-ckks --bench ops`

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use fhelium_ckks::{CpuEngine, ModulusBasis, Preset};
use std::time::Duration;

fn ops(c: &mut Criterion) {
    let e = CpuEngine::with_seed(Preset::Slots8192Scale40Levels7Int64, [1; 32]).expect("engine");
    let s = e.num_slots();
    let m: Vec<f64> = (0..s).map(|j| 0.01 * (0.017 * j as f64).sin()).collect();
    let pt = e.encode(&m, 0, None).expect("encode");
    let ct = e.encrypt(&pt).expect("encrypt");
    let ct2 = e.encrypt(&pt).expect("encrypt");
    let ntt = e.coefficient_domain_to_ntt_domain(&ct).expect("ntt");
    let ntt2 = e.coefficient_domain_to_ntt_domain(&ct2).expect("ntt");
    let w = e
        .prepare_plaintext_for_multiplication(&pt, ModulusBasis::Q)
        .expect("prep");
    let wa = e
        .prepare_plaintext_for_addition(&pt, ModulusBasis::Q)
        .expect("prep");
    let prod = e.multiply(&ntt, &ntt2).expect("mul");
    let rlk = e.relinearization_key().expect("rlk");
    // four keys in turn, as the GPU benchmarks do
    let keys: Vec<_> = (1..=4)
        .map(|r| e.create_rotation_key(r, e.secret_key()).expect("key"))
        .collect();
    let table = &e.context().ntt_tables()[0];
    let mut limb: Vec<u64> = ct.words()[..e.n()].to_vec();

    let mut g = c.benchmark_group("ckks-cpu-L0");
    g.sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    g.bench_function("ntt_forward_one_limb", |b| {
        b.iter(|| table.forward(black_box(&mut limb)));
    });
    g.bench_function("ntt_inverse_one_limb", |b| {
        b.iter(|| table.inverse(black_box(&mut limb)));
    });
    g.bench_function("encode", |b| {
        b.iter(|| e.encode(black_box(&m), 0, None).expect("op"));
    });
    g.bench_function("encrypt", |b| {
        b.iter(|| e.encrypt(black_box(&pt)).expect("op"));
    });
    g.bench_function("decrypt", |b| {
        b.iter(|| e.decrypt(black_box(&ct)).expect("op"));
    });
    g.bench_function("decrypt_message", |b| {
        b.iter(|| e.decrypt_message(black_box(&ct)).expect("op"));
    });
    g.bench_function("coefficient_domain_to_ntt_domain", |b| {
        b.iter(|| {
            e.coefficient_domain_to_ntt_domain(black_box(&ct))
                .expect("op")
        });
    });
    g.bench_function("ntt_domain_to_coefficient_domain", |b| {
        b.iter(|| {
            e.ntt_domain_to_coefficient_domain(black_box(&ntt))
                .expect("op")
        });
    });
    g.bench_function("add", |b| {
        b.iter(|| e.add(black_box(&ct), &ct2).expect("op"));
    });
    g.bench_function("add_plaintext", |b| {
        b.iter(|| e.add_plaintext(black_box(&ct), &wa).expect("op"));
    });
    g.bench_function("multiply_plaintext", |b| {
        b.iter(|| e.multiply_plaintext(black_box(&ntt), &w).expect("op"));
    });
    g.bench_function("multiply", |b| {
        b.iter(|| e.multiply(black_box(&ntt), &ntt2).expect("op"));
    });
    g.bench_function("relinearize", |b| {
        b.iter(|| e.relinearize_with_key(black_box(&prod), &rlk).expect("op"));
    });
    let mut i = 0;
    g.bench_function("rotate_with_key", |b| {
        b.iter(|| {
            i = (i + 1) % keys.len();
            e.rotate_with_key(black_box(&ct), &keys[i]).expect("op")
        });
    });
    let key_refs: Vec<_> = keys.iter().collect();
    g.bench_function("rotate_many_with_keys_4", |b| {
        b.iter(|| {
            e.rotate_many_with_keys(black_box(&ct), &key_refs)
                .expect("op")
        });
    });
    g.bench_function("plaintext_coefficient_domain_to_ntt_domain", |b| {
        b.iter(|| {
            e.plaintext_coefficient_domain_to_ntt_domain(black_box(&wa))
                .expect("op")
        });
    });
    g.bench_function("rescale_to_next_level", |b| {
        b.iter(|| e.rescale_to_next_level(black_box(&ct)).expect("op"));
    });
    g.bench_function("mod_switch_to_next_level", |b| {
        b.iter(|| e.mod_switch_to_next_level(black_box(&ct)).expect("op"));
    });
    g.bench_function("create_rotation_key", |b| {
        b.iter(|| e.create_rotation_key(3, e.secret_key()).expect("op"));
    });
    g.finish();
}

criterion_group!(benches, ops);
criterion_main!(benches);
