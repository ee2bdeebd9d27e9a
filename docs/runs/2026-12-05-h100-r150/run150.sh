#!/bin/bash
# Run 150 (twenty-seventh session): runs 148 and 149 in one device call, in order of value, each
# step skipped when the call's 10 minutes would not hold it (device starts were scarce: one
# start has to carry everything). Carry [".gpu/bin/z", ".peer"] (47 MiB: .gpu/bin/y without basic_ckks and explicit_residency, so that the tree fits 64 MiB).
# 1. correctness of decision 0302 on the GPU (the tests run148.sh runs, gpu_encrypt second: the
#    twenty-eighth session's refused-encryption test; the examples);
# 2. the matrix A/B/C of run148.sh, once alternated twice (predictions in perf.md, twenty-sixth
#    session: ~5 ms less wall with pageable keys, ~8-12 ms less with pinned, same words);
# 3. memcheck of the stream-ordered adoption;
# 4. FHElium built and timed in this call, then gpu_oplat (issue 7's same-call table);
# 5. FHElium and ours again, both pinned to one core (`taskset -c 3`), then both plain.
set -u
T0=$(date +%s)
LIMIT=${LIMIT:-585}
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
need() { [ "$(left)" -ge "$1" ] || { echo "skip $2 ($(left) s left)"; return 1; }; }
export FHELIUM_REQUIRE_GPU=1
W=.gpu/bin/z
mkdir -p $OUT/logs
r() { local name=$1; shift; local t0=$(date +%s); timeout 150 "$@" > $OUT/logs/$name.log 2>&1; echo "$name rc=$? ($(( $(date +%s)-t0 )) s)"; grep -E '^test result|FAILED|panicked|refused|ERROR SUMMARY' $OUT/logs/$name.log | head -6; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
cat $W/COMMIT
r gpu_ops $W/gpu_ops --test-threads=1
r gpu_encrypt $W/gpu_encrypt --test-threads=1
r gpu_memory $W/gpu_memory --test-threads=1
r examples_lib $W/examples_lib --test-threads=1
r matrix_test $W/matrix_test --test-threads=1 --nocapture
r example_parity $W/example_parity --test-threads=1
r cuda_lib $W/cuda_lib --test-threads=1
for ex in automatic_residency; do (timeout 60 $W/$ex --device cuda:0; echo "$ex exit=$?") > $OUT/logs/$ex.txt 2>&1; tail -1 $OUT/logs/$ex.txt; done
m() { local tag=$1 bin=$2; shift 2; (timeout 60 $W/$bin --device cuda:0 "$@"; echo "exit=$?") > $OUT/logs/matrix-$tag.txt 2>&1; echo "matrix $tag [$bin $*]: $(grep -E '^(Time|Result|Rotation)' $OUT/logs/matrix-$tag.txt | tr '\n' ' ') $(tail -1 $OUT/logs/matrix-$tag.txt)"; }
for i in 1 2; do
  need 360 "matrix round $i" || break
  m a$i matrix_residency_51b --schedule key-major
  m b$i matrix_residency --schedule key-major
  m c$i matrix_residency --schedule key-major --keys-at pinned-host
done
need 330 memcheck && r memcheck-ordered /usr/local/cuda/bin/compute-sanitizer --tool memcheck $W/gpu_memory --test-threads=1 stream_ordered_adoption
if need 240 peer; then
  echo "== peer"; t0=$(date +%s); timeout $(( $(left) - 40 )) bash .peer/build-and-time.sh .peer > $OUT/logs/peer-run.log 2>&1; echo "peer rc=$? ($(( $(date +%s)-t0 )) s)"
  cat $OUT/peer-oplat.txt 2>/dev/null | head -14
  export FHELIUM_PEER_OPLAT=$OUT/peer-oplat.txt FHELIUM_BENCH_DEVICE=0
  timeout 40 $W/gpu_oplat --nocapture --test-threads=1 > $OUT/logs/oplat-y1.log 2>&1; echo "y1 rc=$?"; grep -E '^[a-z_0-9]+ +[0-9]' $OUT/logs/oplat-y1.log | head -16 | tr -s ' ' | cut -d' ' -f1-2,5-8
  export PYTHONPATH=/tmp/peer-fh:/tmp/peer-site
  for c in t p t p; do
    need 50 "conditions $c" || break
    P=; [ $c = t ] && P="taskset -c 3"
    n=$c$(date +%s)
    timeout 45 $P python3 .peer/fhelium_oplat.py > $OUT/logs/F-$n.txt 2>&1; echo "F-$n rc=$?: $(grep -E '^(coefficient_to_ntt|ntt_to_coefficient) ' $OUT/logs/F-$n.txt | tr -s ' ' | tr '\n' ' ')"
    FHELIUM_PEER_OPLAT=$OUT/logs/F-$n.txt timeout 30 $P $W/gpu_oplat --nocapture --test-threads=1 > $OUT/logs/oplat-$n.log 2>&1; echo "ours-$n rc=$?"; grep -E '^(coefficient_to_ntt|ntt_to_coefficient|rotate_with_key) ' $OUT/logs/oplat-$n.log | tr -s ' ' | cut -d' ' -f1-2,5-8
  done
fi
rm -f $OUT/logs/peer-build.log
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
echo "total $(( $(date +%s) - T0 )) s"
