"""Leave-one-out per grid, before and after: `python3 loo-compare.py BEFORE.json AFTER.json`
with the files of `loo-json.sh BINARY OUT.json` (each record's `cover --loo --json`): the
guarded and unguarded geomeans x cuBLAS, the points below 0.97x with the guard, the worst."""
import json,sys,math
def summ(path):
    r=json.load(open(path)); out={}
    for k,v in r.items():
        if isinstance(v,str): out[k]=v; continue
        g=[p['guarded_vs_cublas'] for p in v]; ng=[p['vs_cublas'] for p in v]
        gm=math.exp(sum(map(math.log,g))/len(g)); ngm=math.exp(sum(map(math.log,ng))/len(ng))
        out[k]=(len(g),gm,ngm,sum(x<0.97 for x in g),min(g))
    return out
a=summ(sys.argv[1]); b=summ(sys.argv[2]) if len(sys.argv)>2 else None
for k in a:
    if isinstance(a[k],str): print(k,'ERR',a[k][:80]); continue
    line=f"{k[:60]:60s} n={a[k][0]:4d} guard {a[k][1]:.4f} noguard {a[k][2]:.4f} <0.97 {a[k][3]} min {a[k][4]:.3f}"
    if b: line+=f" | new {b[k][1]:.4f} ng {b[k][2]:.4f} <0.97 {b[k][3]} min {b[k][4]:.3f}"
    print(line)
if b:
    raised = sum(1 for k in a if not isinstance(a[k], str) and b[k][1] > a[k][1] + 5e-5)
    more = sum(1 for k in a if not isinstance(a[k], str) and b[k][3] > a[k][3])
    print(f"records: {len(a)}; guarded geomean raised on {raised}; more points below 0.97 on {more}")
