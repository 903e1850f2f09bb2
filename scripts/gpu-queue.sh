# Sourced by a GPU plan (a bash script run from the repository root on the GPU machine, with the
# binaries scripts/build-gpu.sh puts in .gpu/): runs the plan's steps strictly in order within
# one call's time, keeping state on the machine so the next call on the same warm machine goes
# on where this one stopped.
#
#   Q=/tmp/q1 LIMIT=570 source scripts/gpu-queue.sh
#   step verify 300 "$AT" verify --db "$DB"
#   step evaluate 60 "$AT" evaluate --op gemm --random 60 --seed 4001 --db "$DB" --out "$Q/e.md"
#   finish   # archives $Q into $OUT/<name of $Q>.tgz
#
# A step runs when it has not succeeded in an earlier call (a file in $Q/done), no earlier step
# of this call was left over, and its estimate fits in the time left; it is killed at the
# call's limit. Its log is $Q/logs/<name>.log; $Q/summary.txt gets its exit status, time and
# the lines of its log that carry results. Commands are programs, not shell functions (wrap a
# function in `bash -c "$(declare -f f); f ..."`).
# shellcheck shell=bash

# The GPU's short name, for the files a plan writes: h100, h200, or gpu for another card.
gpu_tag() {
  case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in
  *H100*) echo h100 ;;
  *H200*) echo h200 ;;
  *) echo gpu ;;
  esac
}
G=${G:-$(gpu_tag)}
# A plan sets Q, or PLAN for Q=/tmp/PLAN-G (one state directory per kind of GPU).
[ -n "${Q:-}" ] || [ -z "${PLAN:-}" ] || Q=/tmp/$PLAN-$G
: "${Q:?set Q to the state directory of the plan, e.g. /tmp/q1, or PLAN to its name}"
LIMIT=${LIMIT:-570}
mkdir -p "$Q/done" "$Q/logs"
[ -f "$Q/gpu.txt" ] ||
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv >"$Q/gpu.txt"
AT=$PWD/.gpu/autotune
# Worker processes and the GPU tests start the carried binary, not the path cargo built.
export AUTOTUNE_BIN=$AT
STOP=0
# Lines of a log that carry results.
RESULT_LINES=${RESULT_LINES:-'^test result|^cover: (gemm|measured)|^leave-one-out|^  x cuBLAS|^Error|^error|^summary|^policy|^runtime|^no guard|^regret|geometric mean|^verify|^\| [0-9]|SUMMARY'}

step() { # name estimate-seconds command...
  local name=$1 est=$2
  shift 2
  [ -f "$Q/done/$name" ] && return 0
  [ "$STOP" = 1 ] && return 0
  if [ $((SECONDS + est)) -gt "$LIMIT" ]; then
    STOP=1
    echo "== $name: left for the next call (needs ~$est s, $((LIMIT - SECONDS)) s left)" | tee -a "$Q/summary.txt"
    return 0
  fi
  local s=$SECONDS
  timeout $((LIMIT - SECONDS)) "$@" >"$Q/logs/$name.log" 2>&1
  local rc=$?
  echo "== $name: rc $rc, $((SECONDS - s)) s" | tee -a "$Q/summary.txt"
  grep -E "$RESULT_LINES" "$Q/logs/$name.log" | cut -c1-200 | tail -n 40 | tee -a "$Q/summary.txt"
  [ $rc = 0 ] && touch "$Q/done/$name"
  return 0
}

# Writes to $3 the database $1 without the gemm entries of the shapes of suite $2: what a
# product gets on the suite untuned. A step runs it as
#   step NAME EST bash -c "$(declare -f without_suite); without_suite DB SUITE OUT && ..."
without_suite() { # db suite out
  python3 - "$1" "$2" "$3" <<'P'
import sys, re
db, suite, dst = sys.argv[1:]
shapes = set(re.findall(r'"(\d+x\d+x\d+[^"]*)"', open(suite).read()))
parts = re.split(r'(?m)^(?=\[\[)', open(db).read())
keep = [p for p in parts if not (p.startswith("[[entry]]") and 'op = "gemm"' in p and re.search(r'(?m)^shape = "(%s)"$' % "|".join(map(re.escape, shapes)), p))]
open(dst, "w").write("".join(keep))
print(len(parts) - len(keep), "entries dropped")
P
}

# Writes to $3 the database $1 without the entries whose params set $2 (e.g. 'TRUNC = 2'):
#   without_param results/tuning.toml 'TRUNC = 2' $Q/no-trunc2.toml
without_param() { # db assignment out
  python3 - "$1" "$2" "$3" <<'P'
import re, sys
db, assignment, dst = sys.argv[1:]
parts = re.split(r'(?m)^(?=\[\[)', open(db).read())
hit = re.compile(r'(?m)^params = .*\b%s\b' % re.escape(assignment))
keep = [p for p in parts if not (p.startswith("[[entry]]") and hit.search(p))]
open(dst, "w").write("".join(keep))
print(len(parts) - len(keep), "entries dropped")
P
}

# Makes the executables a plan carries xz-compressed in DIR (e.g. .gpu48, from
# scripts/build-gpu.sh) runnable from .gpu/, as $AT expects:  carried DIR autotune gpu-tests
carried() { # dir name...
  local dir=$1 name
  shift
  mkdir -p .gpu
  for name in "$@"; do
    [ -f "$dir/$name" ] || xz -d -k -f "$dir/$name.xz" || return 1
    cp -f "$dir/$name" .gpu/ && chmod +x ".gpu/$name" || return 1
  done
}

# The steps plans repeat, over the plan's database $DB, writing files named by the GPU's tag $G.
# evaluate on 60 random problems over all forms:  ev NAME EST OP SEED [flags...]
ev() { # name estimate op seed extra...
  local name=$1 est=$2 op=$3 seed=$4
  shift 4
  step "$name" "$est" "$AT" evaluate --op "$op" --random 60 --seed "$seed" --forms all \
    --db "$DB" --out "$Q/evaluate-$name-$G.md" --json "$Q/evaluate-$name-$G.json" "$@"
}
# the parts of an evaluate rescored as one run:  joined NAME PART.json...
joined() { # name parts-json...
  local name=$1
  shift
  step "$name" 20 "$AT" evaluate --db "$DB" --rescore "$@" \
    --out "$Q/evaluate-$name-$G.md" --json "$Q/evaluate-$name-$G.json"
}
# evaluate with the kernel regret (--tune-budget 30) in five parts, then joined:  tb_seed SEED EST
tb_seed() { # seed estimate-per-part
  local s=$1 est=$2 k
  for k in 1 2 3 4 5; do
    ev "gemm-$s-tb-p$k" "$est" gemm "$s" --tune-budget 30 --part "$k/5"
  done
  joined "gemm-$s-tb" "$Q"/evaluate-gemm-$s-tb-p{1,2,3,4,5}-$G.json
}
# a coverage grid's portfolio widened by the two fastest winners of some families:
#   add_winners NAME EST --layout tt --beta 1 --family F...
add_winners() { # name estimate flags...
  local name=$1 est=$2
  shift 2
  step "$name" "$est" "$AT" cover --op gemm --add-winners 2 --db "$DB" "$@"
}

# The machine may go back between two calls (it is released after a short idle time), and a
# fresh one starts with $Q empty. Carrying the archive `finish` left in the last call's $OUT
# (copied into the carried folder) lets the plan go on where that call stopped instead of
# running its finished steps again:  resume_from .gpu49/s49next.tgz
resume_from() { # archive
  [ -n "$(ls -A "$Q/done")" ] && return 0
  [ -f "$1" ] || return 0
  tar xzf "$1" -C "$(dirname "$Q")" && echo "resumed $Q from $1: done $(ls "$Q/done" | tr '\n' ' ')"
}

# Marks as done the steps that succeeded in an earlier session's call whose database is
# committed (results/tuning.toml) and whose summary is committed beside its plan, so a new
# session's plan goes on from there:  done_from results/runs/session57/summary-h100.txt
# (Not for the parts of an evaluation whose join has not run: their files were on that machine.)
done_from() { # summary
  [ -n "$(ls -A "$Q/done")" ] && return 0
  [ -f "$1" ] || return 0
  local n
  for n in $(sed -n 's/^== \([^:]*\): rc 0,.*/\1/p' "$1"); do touch "$Q/done/$n"; done
  echo "done before (from $1): $(ls "$Q/done" | tr '\n' ' ')"
}

# The start most plans share: the carried autotune of DIR runnable, the state of the last call
# (DIR/PLAN-G.tgz) or of a committed summary (when given) taken over, and the plan's database
# $DB (a copy of results/tuning.toml on first use):
#   begin_plan .gpu58 results/runs/session58/summary-$G.txt
begin_plan() { # carried-dir [summary]
  carried "$1" autotune || return 1
  resume_from "$1/$(basename "$Q").tgz"
  [ -z "${2:-}" ] || done_from "$2"
  DB=$Q/tuning.toml
  [ -f "$DB" ] || cp results/tuning.toml "$DB"
}

finish() {
  echo "done: $(ls "$Q/done" | tr '\n' ' ')"
  [ -n "${OUT:-}" ] && tar czf "$OUT/$(basename "$Q").tgz" -C "$(dirname "$Q")" "$(basename "$Q")"
  return 0
}
