#!/usr/bin/env bash
# usage: loo.sh BINARY OUTJSON — per-point LOO of every coverage record
cd "$(dirname "$0")/../../.."
AT=$1; OUT=$2
python3 - "$AT" "$OUT" <<'P'
import sys, tomllib, subprocess, json
at, out = sys.argv[1], sys.argv[2]
d = tomllib.load(open("results/tuning.toml", "rb"))
res = {}
for c in d.get("coverage", []):
    f = c.get("form", {})
    flags = []
    if f.get("layout", "nn") != "nn": flags += ["--layout", f["layout"]]
    if f.get("beta"): flags += ["--beta", "1"]
    if f.get("scaled"): flags += ["--alpha", "2"]
    if f.get("padded"): flags += ["--padded"]
    if f.get("batch", 1) != 1: flags += ["--batch", str(f["batch"])]
    key = c["gpu"] + " " + c["op"] + " " + " ".join(flags)
    p = subprocess.run([at, "cover", "--loo", "--json", "--db", "results/tuning.toml", "--gpu", c["gpu"], "--op", c["op"]] + flags, capture_output=True, text=True)
    res[key] = json.loads(p.stdout) if p.returncode == 0 else p.stderr[-300:]
json.dump(res, open(out, "w"))
P
