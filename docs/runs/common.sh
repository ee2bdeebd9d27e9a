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
