# Helpers of the device run scripts (source it from the repository root, after setting LIMIT):
# T0, left (seconds left of LIMIT), need N WHAT (false and a "skip" line when fewer than N
# seconds are left), r NAME CMD... (runs CMD into $OUT/logs/NAME.log under a 150 s timeout and
# prints its rc, time and the test / sanitizer summary lines).
# header, finish, harness_passes, oplat, peer_oplat, ab_oplat, gpu_tests, engine_check, layout_passes and order_passes: see their comments below (run165.sh and
# run166.sh in docs/runs are the templates: the recorded scripts keep the inline forms they ran
# with).
T0=$(date +%s)
LIMIT=${LIMIT:-585}
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
need() { [ "$(left)" -ge "$1" ] || { echo "skip $2 ($(left) s left)"; return 1; }; }
r() {
  local name=$1; shift; local t0=$(date +%s)
  timeout 150 "$@" > $OUT/logs/$name.log 2>&1
  echo "$name rc=$? ($(( $(date +%s)-t0 )) s)"
  grep -E '^test result|FAILED|panicked|refused|ERROR SUMMARY|RACECHECK SUMMARY' $OUT/logs/$name.log | head -6
}
mkdir -p $OUT/logs
# header: the line every run prints first (the card, its driver, clock and memory).
header() { nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader; }
# finish: the logs packed as $OUT/logs.tgz and the run's wall time (every run's last lines).
finish() { tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs; echo "total $(( $(date +%s) - T0 )) s"; }
# harness_passes "V1 V2 ..." [ROWS]: ntt_bench rows (default 46-49, the paired kernels) of
# $HARNESS/bench_<v> (HARNESS defaults to .gpu/exp2), three passes alternated, every timed row
# printed, then each variant's hashes from pass 1. (Runs 210-211 wrote this loop inline for
# .gpu/exp3 and per-variant rows.)
harness_passes() {
  local vs=$1 rows=${2:-46-49} dir=${HARNESS:-.gpu/exp2} pass v
  for pass in 1 2 3; do
    for v in $vs; do
      need 20 "$v $pass" || return 0
      ROWS=$rows timeout 60 $dir/bench_$v 8 2 > $OUT/logs/$v-$pass.txt 2>&1
      echo "== $v pass $pass rc=$?"; grep -E " burst_us " $OUT/logs/$v-$pass.txt
    done
  done
  for v in $vs; do echo "$v: $(grep -h hash $OUT/logs/$v-1.txt | tr -s ' ' | tr '\n' ' ')"; done
}
# oplat BIN [FHELIUM_TABLE]: $W/BIN (a gpu_oplat build; W = the bundle folder) into
# $OUT/logs/oplat-BIN-<time>.log, FHElium's ratios from the table when one is given; prints the
# NTT, multiply_plaintext and rotate rows (op, median, FHElium, ratio, submit, burst).
oplat() {
  local n=$1-$(date +%s)
  FHELIUM_PEER_OPLAT=${2:-} timeout 30 $W/$1 --nocapture --test-threads=1 > $OUT/logs/oplat-$n.log 2>&1; echo "$n rc=$?"
  grep -E '^(coefficient_to_ntt|ntt_to_coefficient|multiply_plaintext|rotate_with_key) +[0-9]' $OUT/logs/oplat-$n.log | tr -s ' ' | cut -d' ' -f1-2,5-8
}
# peer_oplat BIN...: FHElium built and timed (.peer, ~2-4 min, if 220 s are left), or, when
# .gpu/peer/peer-build.tgz is carried (a build packed by an earlier run: tar czf of /tmp/peer-fh
# and /tmp/peer-site), that build unpacked in a few seconds; then for each BIN an FHElium table
# and oplat BIN beside it, while 15 s are left.
peer_oplat() {
  local t0=$(date +%s) b f
  if [ -f .gpu/peer/peer-build.tgz ]; then
    # A build packed by an earlier run (run 210: /tmp/peer-fh and /tmp/peer-site, 5 MB).
    need 40 peer || return 0
    echo "== peer (prebuilt)"; tar xzf .gpu/peer/peer-build.tgz -C /tmp; echo "peer unpack rc=$? ($(( $(date +%s)-t0 )) s)"
  else
    need 220 peer || return 0
    echo "== peer"
    timeout $(( $(left) - 30 )) bash .peer/build-and-time.sh .peer > $OUT/logs/peer-run.log 2>&1; echo "peer rc=$? ($(( $(date +%s)-t0 )) s)"
    # Packed for the next sessions (copy $OUT's peer-build.tgz to .gpu/peer/ and carry it).
    tar czf $OUT/peer-build.tgz -C /tmp peer-fh peer-site 2>/dev/null || rm -f $OUT/peer-build.tgz
  fi
  export FHELIUM_BENCH_DEVICE=0 PYTHONPATH=/tmp/peer-fh:/tmp/peer-site
  # The first table after an unpacked build starts cold (runs 233 and 240: over 45 s, so it
  # timed out and its oplat pass compared with the reference file): it gets 100 s.
  local tmo=100
  for b in "$@"; do
    need 15 "peer oplat $b" || break
    f=$OUT/logs/F-$b-$(date +%s).txt
    timeout $tmo python3 .peer/fhelium_oplat.py > $f 2>&1; echo "F rc=$?: $(grep -E '^(coefficient_to_ntt|ntt_to_coefficient) ' $f | tr -s ' ' | tr '\n' ' ')"
    tmo=45
    oplat $b $f
  done
  rm -f $OUT/logs/peer-build.log
}
# ab_oplat ROWS_REGEX A B: gpu_oplat of bundles .gpu/bin/A and .gpu/bin/B alternated twice in
# one call (A, B, A, B) into $OUT/logs/ab-<bundle>-<pass>.log; prints the rows matching
# ROWS_REGEX (op, median, submit, burst). The before/after form of runs 191-195. AB_PASSES=n
# alternates n times instead of twice.
ab_oplat() {
  local rows=$1 i b; shift
  for i in $(seq 1 ${AB_PASSES:-2}); do
    for b in "$@"; do
      timeout 30 .gpu/bin/$b/gpu_oplat --nocapture --test-threads=1 > $OUT/logs/ab-$b-$i.log 2>&1; echo "== $b $i rc=$?"
      grep -E "$rows" $OUT/logs/ab-$b-$i.log | tr -s ' ' | cut -d' ' -f1-2,7-8
    done
  done
}
# gpu_tests DIR [KS_TESTS]: the three GPU test binaries of bundle DIR (gpu_ops, gpu_encrypt,
# example_parity, one thread each), then, time allowing, memcheck of gpu_ops's tests matching
# KS_TESTS (space-separated filters) and racecheck of the first of them. The tail of runs 196-199.
gpu_tests() {
  local w=$1 ks=${2:-} san=/usr/local/cuda/bin/compute-sanitizer
  r gpu_ops $w/gpu_ops --test-threads=1
  r gpu_encrypt $w/gpu_encrypt --test-threads=1
  r example_parity $w/example_parity --test-threads=1
  [ -n "$ks" ] || return 0
  need 60 memcheck && r memcheck-ks $san --tool memcheck $w/gpu_ops --test-threads=1 $ks
  need 120 racecheck && r racecheck-ks $san --tool racecheck $w/gpu_ops --test-threads=1 ${ks%% *}
}
# engine_check NEW OLD [SANITIZE_FILTER]: the body runs 224 and 228 wrote inline. The GPU tests
# of bundle .gpu/bin/NEW, gpu_oplat of .gpu/bin/OLD and NEW alternated three times (NTT rows),
# FHElium (peer_oplat) beside NEW's gpu_oplat three times, then memcheck and racecheck of
# gpu_ops's tests matching SANITIZE_FILTER (default paired_ntts_).
engine_check() {
  local new=$1 old=$2 f=${3:-paired_ntts_} san=/usr/local/cuda/bin/compute-sanitizer
  gpu_tests .gpu/bin/$new
  AB_PASSES=3 ab_oplat '^(coefficient_to_ntt|ntt_to_coefficient) +[0-9]' $old $new
  W=.gpu/bin/$new
  peer_oplat gpu_oplat gpu_oplat gpu_oplat
  need 60 memcheck && r memcheck-$new $san --tool memcheck .gpu/bin/$new/gpu_ops --test-threads=1 $f
  need 60 racecheck && r racecheck-$new $san --tool racecheck .gpu/bin/$new/gpu_ops --test-threads=1 $f
}
# layout_passes "V1 V2 ..." [LAYOUTS]: harness rows 46-49 of $HARNESS/bench_<v> in each prime
# layout (WIDE=7: the engine's, the 60-bit prime last; 0: the harness's default, wide first),
# three passes alternated, one line and one log file (<v>-w<layout>-<pass>-<position>.txt) per
# run, then the hashes per layout (runs 230-231 inline).
layout_passes() {
  local vs=$1 lays=${2:-"7 0"} dir=${HARNESS:-.gpu/exp8} pass lay v i f
  for pass in 1 2 3; do
    i=0
    for lay in $lays; do
      i=$((i + 1))
      for v in $vs; do
        need 15 "$v $lay $pass" || return 0
        # One file per run: a layout may come twice in a pass (run 233's "0 7 7 0" overwrote).
        f=$OUT/logs/$v-w$lay-$pass-$i.txt
        WIDE=$lay ROWS=46-49 timeout 60 $dir/bench_$v 8 2 > $f 2>&1
        echo "== $v WIDE=$lay pass $pass.$i rc=$? $(grep -E '^(fwd|inv)-gp' $f | awk '{printf "%s %s  ", $1, $3}')"
      done
    done
  done
  for lay in $(printf "%s\n" $lays | sort -u); do for v in $vs; do echo "$v WIDE=$lay: $(grep -h hash $(ls $OUT/logs/$v-w$lay-1-*.txt | head -1) | tr -s ' ' | tr '\n' ' ')"; done; done
}
# order_passes "V1 V2 V2 V1 ..." [ROWS]: harness rows (default 46-49) of $HARNESS/bench_<v> in
# the given order (a variant may come twice: balance the order), three passes, one log per run
# (<v>-<pass>-<position>.txt) and one line each, then each variant's hashes from pass 1; the
# caller's environment (WIDE, WIDED) reaches the harness; ROWPAT (default '^(fwd|inv)-gp') picks
# the rows each line shows. Runs 235, 236 and 238 wrote it inline.
order_passes() {
  local vs=$1 rows=${2:-46-49} dir=${HARNESS:-.gpu/exp12} pass v i f
  for pass in 1 2 3; do
    i=0
    for v in $vs; do
      i=$((i + 1))
      need 15 "$v $pass" || return 0
      f=$OUT/logs/$v-$pass-$i.txt
      ROWS=$rows timeout 60 $dir/bench_$v 8 2 > $f 2>&1
      echo "== $v pass $pass.$i rc=$? $(grep -E "${ROWPAT:-^(fwd|inv)-gp}" $f | awk '{printf "%s %s  ", $1, $3}')"
    done
  done
  for v in $(printf "%s\n" $vs | awk '!seen[$0]++'); do
    echo "$v: $(grep -h hash $OUT/logs/$v-1-*.txt | sort -u | tr -s ' ' | tr '\n' ' ')"
  done
}
