#!/bin/bash
# Run 122: where encrypt_message's and decrypt_message's ~49 us go, per kernel. gpu_oplat
# (main's engine, .gpu/bin/s = this session's bundle of 415065e's code: no engine change since
# run 102) under Nsight Compute: every kernel's duration for the first 330 launches (setup,
# then encrypt_message's warm-ups: the chain enc_rows_sample, enc_cols, forward NTT of v,
# enc_mul_pk, inverse NTT, enc_add_err), then the dec_ kernels. L2 not flushed, clocks not
# locked. Then nsys, if the machine has it, for the gaps between the chain's kernels.
set -u
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
ls /usr/local/cuda/bin | tr '\n' ' '; echo
NCU=/usr/local/cuda/bin/ncu
export FHELIUM_REQUIRE_GPU=1
timeout 200 $NCU --clock-control none --cache-control none --metrics gpu__time_duration.sum \
  --csv --print-units base -c 330 .gpu/bin/s/gpu_oplat --exact oplat_table_on_the_gpu --nocapture --test-threads=1 \
  > $OUT/ncu-first330.csv 2> $OUT/ncu-first330.err
echo "ncu rc=$?"
timeout 200 $NCU --clock-control none --cache-control none --metrics gpu__time_duration.sum \
  --csv --print-units base -k regex:'^dec_' -c 60 .gpu/bin/s/gpu_oplat --exact oplat_table_on_the_gpu --nocapture --test-threads=1 \
  > $OUT/ncu-dec.csv 2> $OUT/ncu-dec.err
echo "ncu dec rc=$?"
python3 - <<'PY'
import csv, os, statistics, collections
out = os.environ["OUT"]
for f in ("ncu-first330.csv", "ncu-dec.csv"):
    rows = [r for r in csv.reader(open(os.path.join(out, f))) if len(r) > 10]
    if not rows: print(f, "no rows"); continue
    h = rows[0]; ki = h.index("Kernel Name"); vi = h.index("Metric Value"); gi = h.index("Grid Size") if "Grid Size" in h else None
    d = collections.defaultdict(list)
    for r in rows[1:]:
        try: d[(r[ki].split("(")[0], r[gi] if gi is not None else "")].append(float(r[vi]) / 1000.0)
        except Exception: pass
    print("==", f)
    for k, v in d.items():
        print(f"{k[0]:22s} {k[1]:16s} n={len(v):4d} median_us={statistics.median(v):7.2f} min={min(v):7.2f}")
PY
if [ -x /usr/local/cuda/bin/nsys ]; then
  timeout 200 /usr/local/cuda/bin/nsys profile -t cuda -o $OUT/oplat --force-overwrite true .gpu/bin/s/gpu_oplat --exact oplat_table_on_the_gpu --nocapture --test-threads=1 > $OUT/nsys.log 2>&1
  echo "nsys rc=$?"
fi
