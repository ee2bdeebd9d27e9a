# Splits run 176's ncu source pages (src-<kernel>.csv from logs.tgz) by code region and stall reason.
# Usage: mkdir /tmp/r176 && tar xzf logs.tgz -C /tmp/r176 && python3 split.py /tmp/r176
import csv,re,sys
reasons=['stall_barrier','stall_long_sb','stall_wait','stall_short_sb','stall_math','stall_membar','stall_selected','stall_not_selected','stall_dispatch','stall_no_inst','stall_imc','stall_drain','stall_branch_resolving','stall_lg','stall_mio']
for k in ['ntt_inv_gp','ntt_fwd_gp']:
    lines=open(f'{sys.argv[1] if len(sys.argv) > 1 else "."}/src-{k}.csv').read().splitlines()
    i=[n for n,l in enumerate(lines) if l.startswith('"Address"')][0]
    r=csv.reader(lines[i:]); hdr=next(r)
    ix={h:hdr.index(h) for h in hdr}
    rows=[row for row in r if len(row)>=len(hdr)-1]
    src=[row[ix['Source']].strip() for row in rows]
    # regions: find the f64 region start (first DFMA/DMUL) and the wide region (between first IMAD.HI after prelude and f64 start)
    f64s=min(n for n,x in enumerate(src) if re.match(r'(DFMA|DMUL|DADD)',x))
    def region(n):
        if n<150: return 'start'
        return 'wide' if n<f64s-60 else 'f64'
    tot={}
    for n,row in enumerate(rows):
        g=region(n)
        d=tot.setdefault(g,{x:0 for x in reasons+['all','exec']})
        d['all']+=int(row[ix['Warp Stall Sampling (All Samples)']] or 0)
        d['exec']+=int(row[ix['Instructions Executed']] or 0)
        for x in reasons: d[x]+=int(row[ix[x]] or 0)
    allsum=sum(d['all'] for d in tot.values())
    print(f'== {k}: {allsum} samples; f64 code from instruction {f64s}')
    for g in ['start','wide','f64']:
        d=tot[g]; warps={'start':1024,'wide':128,'f64':896}[g]
        top=sorted(reasons,key=lambda x:-d[x])[:6]
        print(f'  {g:5s} samples {d["all"]:6d} ({100*d["all"]/allsum:4.1f}%) per warp {d["all"]/warps:6.2f} warp-instr {d["exec"]:8d} per warp {d["exec"]/warps:7.1f} | '+' '.join(f'{x[6:]} {d[x]}' for x in top))
