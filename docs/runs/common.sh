# Helpers of the device run scripts (source it from the repository root, after setting LIMIT):
# T0, left (seconds left of LIMIT), need N WHAT (false and a "skip" line when fewer than N
# seconds are left), r NAME CMD... (runs CMD into $OUT/logs/NAME.log under a 150 s timeout and
# prints its rc, time and the test / sanitizer summary lines).
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
# harness_passes "V1 V2 ..." [ROWS]: ntt_bench rows (default 46-49, the paired kernels) of
# .gpu/exp2/bench_<v>, three passes alternated, then each variant's hashes from pass 1.
harness_passes() {
  local vs=$1 rows=${2:-46-49} pass v
  for pass in 1 2 3; do
    for v in $vs; do
      need 20 "$v $pass" || return 0
      ROWS=$rows timeout 60 .gpu/exp2/bench_$v 8 2 > $OUT/logs/$v-$pass.txt 2>&1
      echo "== $v pass $pass rc=$?"; grep -E "^(fwd|inv)-gp" $OUT/logs/$v-$pass.txt
    done
  done
  for v in $vs; do echo "$v: $(grep -h hash $OUT/logs/$v-1.txt | tr -s ' ' | tr '\n' ' ')"; done
}
