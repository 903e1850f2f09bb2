#!/bin/bash
cd /work/main
for v in "AT_NB=8" "AT_RISK=0.5" "AT_RISK=1" "AT_NB=4" "AT_NB=12" "AT_EPS=0.2" "AT_EPS=0.01" "AT_PW=2" "AT_PW=0.5"; do
  for set in train test; do
    if [ $set = train ]; then F='results/untuned/evaluate-gemm-30*-h100.json'; else F='results/untuned/evaluate-gemm-311[67]-h100.json'; fi
    r=$(env $v python3 scripts/guard-replay.py --after /tmp/at-exp --files "$F" --jobs 3 | grep "^after" | sed 's/.*geomean \([0-9.]*\) over.*kernel regret geomean \([0-9.]*\), p90 \([0-9.]*\).*/guard \1 regret \2 p90 \3/')
    echo "$v $set $r"
  done
done
