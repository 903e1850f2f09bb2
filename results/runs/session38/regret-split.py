"""Splits the runtime's kernel regret on recorded gemm evaluations (H100) in two: the
prediction's pick over the best config of the coverage portfolios that was timed there, and
that best over the best config found at all (the portfolio's own shortfall). Run from the
repository root: python3 results/runs/session38/regret-split.py EVALUATION.json..."""
import json,sys,glob,math,tomllib
d=tomllib.load(open('results/tuning.toml','rb'))
port={}
for c in d['coverage']:
    if 'H100' not in c['gpu'] or c['op']!='gemm': continue
    f=c.get('form') or {}
    key=(f.get('layout','nn'),f.get('beta',False),f.get('scaled',False))
    port[key]=set(x['family']+' '+' '.join('%s=%s'%(k,v) for k,v in sorted(x['params'].items())) for x in c['configs'])
allport=set().union(*port.values())
def g(xs): return math.exp(sum(map(math.log,xs))/len(xs)) if xs else float('nan')
files=sys.argv[1:]
A=[];B=[];C=[];rows=[]
for fn in files:
    for s in json.load(open(fn))['shapes']:
        f=s['shape']['form']
        key=(f['layout'],f['beta'],f['scaled'] and f['layout']=='nn' and not f['beta'])
        p=port.get(key) or port.get((f['layout'],f['beta'],False))
        times=dict((n,t) for n,t in s['times'] if t)
        rt=[c for c in s['chosen'] if c['policy']=='no guard'][0]
        if not rt['kernel_ms'] or not s['best_ms']: continue
        pb=min([t for n,t in times.items() if n in allport] or [float('inf')])
        if pb==float('inf'): continue
        A.append(rt['kernel_ms']/pb); B.append(pb/s['best_ms']); C.append(rt['kernel_ms']/s['best_ms'])
        rows.append((rt['kernel_ms']/pb, pb/s['best_ms'], s['label']))
print(len(A), 'chosen/portfolio-best %.3f  portfolio-best/best %.3f  total %.3f'%(g(A),g(B),g(C)))
A.sort(); 
print('p90: pick %.3f, portfolio %.3f' % (A[int(.9*len(A))], sorted(B)[int(.9*len(B))]))
for r in sorted(rows)[-8:]: print('%.3f %.3f %s'%r)
