#!/bin/bash
# Run 123: encrypt_message's and decrypt_message's follow-on kernels (enc_cols, enc_mul_pk,
# enc_add_err, dec_mul_s, dec_rows, dec_cols) start with griddepcontrol.wait and hang on the
# kernel before them by programmatic edges (.gpu/bin/n = this change; .gpu/bin/s = main before
# it, gpu_oplat only). Verified: gpu_ops, gpu_encrypt, example_parity, the examples,
# memcheck + racecheck of gpu_encrypt; then FHElium built and timed in the same call and
# gpu_oplat alternated n, s, n, s, n.
set -u
export FHELIUM_REQUIRE_GPU=1
N=.gpu/bin/n; S=.gpu/bin/s
mkdir -p $OUT/logs
r() { local name=$1; shift; local t0=$(date +%s); timeout 200 "$@" > $OUT/logs/$name.log 2>&1; echo "$name rc=$? ($(( $(date +%s)-t0 )) s)"; grep -E '^test result|FAILED|panicked|refused|ERROR SUMMARY|RACECHECK SUMMARY' $OUT/logs/$name.log | head -4; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
r gpu_ops $N/gpu_ops --test-threads=1
r gpu_encrypt $N/gpu_encrypt --test-threads=1
r example_parity $N/example_parity --test-threads=1
for ex in automatic_residency basic_ckks explicit_residency; do (timeout 60 $N/$ex --device cuda:0; echo "$ex exit=$?") > $OUT/logs/$ex.txt 2>&1; tail -1 $OUT/logs/$ex.txt; done
CS=/usr/local/cuda/bin/compute-sanitizer
r memcheck-enc $CS --tool memcheck $N/gpu_encrypt --test-threads=1
r racecheck-enc $CS --tool racecheck $N/gpu_encrypt --test-threads=1
echo "== peer"; t0=$(date +%s); timeout 260 bash .peer/build-and-time.sh .peer > $OUT/logs/peer-run.log 2>&1; echo "peer rc=$? ($(( $(date +%s)-t0 )) s)"
cat $OUT/peer-oplat.txt 2>/dev/null | head -14
export FHELIUM_PEER_OPLAT=$OUT/peer-oplat.txt
for n in n1 s1 n2 s2 n3; do D=$N; case $n in s*) D=$S;; esac; r oplat-$n $D/gpu_oplat --nocapture; grep -E '^[a-z_0-9]+ +[0-9]' $OUT/logs/oplat-$n.log | head -10 | tr -s ' ' | cut -d' ' -f1-2,5-8; done
rm -f $OUT/logs/peer-build.log
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
