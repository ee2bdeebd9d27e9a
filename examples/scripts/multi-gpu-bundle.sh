#!/bin/bash
# Builds the multi-device GPU run (issue 9) into target/gpu-multi/: the multi_gpu example and the
# tests/multi_gpu.rs test binary (release, feature cuda), plus fhelium-cuda's own GPU bundle
# (peer tests + peerbench, crates/cuda/scripts/gpu-bundle.sh) next to it, with a run.sh.
# Usage (repo root): bash examples/scripts/multi-gpu-bundle.sh
# On the device (carry target/gpu-multi and target/gpu-cuda): bash target/gpu-multi/run.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
export CUDA_LIBRARY_PATH=${CUDA_LIBRARY_PATH:-$root/target/cuda-link}
[ -e "$CUDA_LIBRARY_PATH/lib64/libcuda.so" ] || cargo xtask cuda-link
bash crates/cuda/scripts/gpu-bundle.sh
dest=$root/target/gpu-multi
rm -rf "$dest"; mkdir -p "$dest/bin"
{
  cargo build --release -p fhelium-examples --features cuda --bin multi_gpu --message-format=json
  cargo test --release -p fhelium-tests --features cuda --test multi_gpu --no-run --message-format=json
} | python3 -c '
import json, sys
for line in sys.stdin:
    try: m = json.loads(line)
    except ValueError: continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "multi_gpu":
        kind = "test" if m["profile"]["test"] else "bin"
        print(kind, m["executable"])
' | while read -r kind exe; do
  cp "$exe" "$dest/bin/multi_gpu-$kind"; strip --strip-debug "$dest/bin/multi_gpu-$kind" || true
done
cat > "$dest/run.sh" <<'RUN'
#!/bin/bash
# Multi-device GPU run. Usage on the device: bash target/gpu-multi/run.sh (logs in $OUT)
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-/tmp/gpu-out}; mkdir -p "$out"
export FHELIUM_REQUIRE_GPU=1
# NVLink multicast stays off (the device docs); nothing here creates multicast objects.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
nvidia-smi -L | tee "$out/gpus.txt"
ngpu=$(nvidia-smi -L | grep -c '^GPU')
[ "$ngpu" -ge 2 ] && export FHELIUM_REQUIRE_GPUS=2
fail=0
echo "== fhelium-cuda bundle (peer tests, membench, peerbench)"
bash "$here/../gpu-cuda/run.sh" || fail=1
echo "== tests/multi_gpu.rs"
"$here/bin/multi_gpu-test" --test-threads=1 --nocapture > "$out/multi-test.log" 2>&1 || { echo "FAILED multi_gpu test"; fail=1; }
grep -E '^test |^test result' "$out/multi-test.log"
for run in "--devices cuda:0 --batch 8" "--devices all --batch 16" "--devices all --batch 16 --peer staged"; do
  echo "== multi_gpu $run" | tee -a "$out/multi-gpu.txt"
  "$here/bin/multi_gpu-bin" $run 2>&1 | tee -a "$out/multi-gpu.txt" || { echo "FAILED multi_gpu $run"; fail=1; }
done
echo "multi-gpu run: fail=$fail"
exit $fail
RUN
chmod +x "$dest/run.sh"
ls -la "$dest/bin"; du -sh "$dest" "$root/target/gpu-cuda"
