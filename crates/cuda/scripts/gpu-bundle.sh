#!/bin/bash
# Builds fhelium-cuda's GPU tests and membench alone (release, feature cuda) into
# target/gpu-cuda/ with a run.sh, for when the workspace-wide `cargo xtask gpu-bundle` cannot build.
# Usage (repo root): bash crates/cuda/scripts/gpu-bundle.sh
# On the device (carry target/gpu-cuda): bash target/gpu-cuda/run.sh   (logs in $OUT)
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$root"
export CUDA_LIBRARY_PATH=${CUDA_LIBRARY_PATH:-$root/target/cuda-link}
[ -e "$CUDA_LIBRARY_PATH/lib64/libcuda.so" ] || cargo xtask cuda-link
dest=$root/target/gpu-cuda
rm -rf "$dest"; mkdir -p "$dest/bin"
cargo build --release -p fhelium-cuda --features cuda --tests --benches --message-format=json \
  | python3 -c '
import json, sys
for line in sys.stdin:
    try: m = json.loads(line)
    except ValueError: continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["kind"][0] in ("test", "bench"):
        print(m["target"]["name"], m["executable"])
' | while read -r name exe; do
  cp "$exe" "$dest/bin/$name"; strip --strip-debug "$dest/bin/$name" || true
done
cat > "$dest/run.sh" <<'EOF'
#!/bin/bash
# fhelium-cuda GPU run. Usage on the device: bash target/gpu-cuda/run.sh (logs in $OUT or /tmp/gpu-out)
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-/tmp/gpu-out}; mkdir -p "$out"
export FHELIUM_REQUIRE_GPU=${FHELIUM_REQUIRE_GPU:-1}
export FHELIUM_KERNELS_DIR=${FHELIUM_KERNELS_DIR:-$here/../../kernels}
fail=0
for t in sim_backend peer_sim gpu_smoke ptx_in_step gpu_memory gpu_peer; do
  echo "== $t" | tee -a "$out/cuda-tests.log"
  "$here/bin/$t" --test-threads=1 --nocapture >> "$out/cuda-tests.log" 2>&1 || { echo "FAILED $t"; fail=1; }
  grep -E '^test result' "$out/cuda-tests.log" | tail -1
done
echo "== membench"
"$here/bin/membench" 2>&1 | tee "$out/membench.txt" || { echo "FAILED membench"; fail=1; }
echo "== peerbench"
"$here/bin/peerbench" 2>&1 | tee "$out/peerbench.txt" || { echo "FAILED peerbench"; fail=1; }
echo "cuda run: fail=$fail"
exit $fail
EOF
chmod +x "$dest/run.sh"
ls "$dest/bin"; du -sh "$dest"
