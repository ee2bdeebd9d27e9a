# Sum the stall_* sample columns of an ncu --page source --csv --print-source sass table,
# per code segment (split after each EXIT), and print the top stalls of each segment.
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
hdr = rows[1]; body = rows[2:]
cols = [i for i, h in enumerate(hdr) if h.startswith('stall_') and 'Not Issued' not in h]
src = hdr.index('Source'); ex = hdr.index('Instructions Executed')
segs = [[]]
for r in body:
    if len(r) < len(hdr): continue
    segs[-1].append(r)
    if r[src].strip().startswith('EXIT'): segs.append([])
tot_all = {}
for k, seg in enumerate(segs):
    if not seg: continue
    sums = {hdr[i]: sum(float(r[i] or 0) for r in seg) for i in cols}
    n = sum(sums.values()); ins = sum(float(r[ex] or 0) for r in seg)
    top = sorted(sums.items(), key=lambda t: -t[1])[:6]
    print(f"seg {k}: {len(seg)} instrs, executed {ins:.0f}, samples {n:.0f}: " + ", ".join(f"{h[6:]} {v:.0f}" for h, v in top))
    for h, v in sums.items(): tot_all[h] = tot_all.get(h, 0) + v
n = sum(tot_all.values())
print("all: samples %.0f: " % n + ", ".join(f"{h[6:]} {v:.0f}" for h, v in sorted(tot_all.items(), key=lambda t: -t[1])[:8]))
