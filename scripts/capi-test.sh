#!/usr/bin/env bash
# The C ABI without a GPU (CI runs it after scripts/test.sh): the library's crate graph, its
# unit tests, the header as C and C++, the exported symbols against the header, and the C and
# C++ examples linked against libautotune (shared and static), which must end with the
# no-device status and exit 0 where there is no driver, not crash.
#   bash scripts/capi-test.sh
# Needs cargo, cc and c++ (and nm); no GPU. The library is built in the release profile with
# the features the tests build the `autotune` crate with (`autotune_rt/default`), so it reuses
# their artifacts; products build it with `cargo build --release -p autotune-capi`, which
# leaves the command line's crates out (checked below).
set -euo pipefail
cd "$(dirname "$0")/.."
features=(--features autotune_rt/default)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
step() { echo "capi-test.sh: $*"; }

step "cargo tree: no command-line crate in the runtime library or libautotune"
for pkg in "-p autotune --no-default-features" "-p autotune-capi"; do
  # shellcheck disable=SC2086
  if cargo tree $pkg -e normal --prefix none | grep -E '^(clap|indicatif|plotters|ctrlc|anyhow) v'; then
    echo "capi-test.sh: cargo tree $pkg pulls in the command line's crates above" >&2
    exit 1
  fi
done

step "cargo test --release -p autotune-capi"
cargo test --release -p autotune-capi "${features[@]}"
cargo build --release -p autotune-capi "${features[@]}"
lib=target/release
header=capi/include/autotune.h

step "the header compiles as C99 and C++17 (-Wall -Wextra -pedantic -Werror)"
printf '#include "autotune.h"\nint main(void) { return (int)AUTOTUNE_STATUS_SUCCESS; }\n' >"$out/h.c"
cp "$out/h.c" "$out/h.cpp"
cc -std=c99 -Wall -Wextra -pedantic -Werror -I capi/include -c "$out/h.c" -o "$out/h.o"
c++ -std=c++17 -Wall -Wextra -pedantic -Werror -I capi/include -c "$out/h.cpp" -o "$out/hpp.o"

step "libautotune.so exports exactly the functions the header declares"
declared=$(grep -oE '\bautotune_[a-z_]+\(' "$header" | tr -d '(' | sort -u)
exported=$(nm -D --defined-only "$lib/libautotune.so" | awk '{print $3}' | grep '^autotune_' | sort -u)
if [ "$declared" != "$exported" ]; then
  diff <(echo "$declared") <(echo "$exported") || true
  echo "capi-test.sh: the header (<) and libautotune.so (>) differ" >&2
  exit 1
fi
echo "$(echo "$declared" | wc -l) functions"

step "examples/c/sgemm.c and examples/cpp/sgemm.cpp, linked against libautotune"
cc -std=c99 -Wall -Wextra -Werror -I capi/include examples/c/sgemm.c -L "$lib" -lautotune -ldl -lm -o "$out/sgemm-c"
cc -std=c99 -Wall -Wextra -Werror -I capi/include examples/c/sgemm.c "$lib/libautotune.a" -lpthread -ldl -lm -o "$out/sgemm-c-static"
c++ -std=c++17 -Wall -Wextra -Werror -I capi/include examples/cpp/sgemm.cpp -L "$lib" -lautotune -o "$out/sgemm-cpp"
for exe in sgemm-c sgemm-c-static sgemm-cpp; do
  status=0
  LD_LIBRARY_PATH="$lib" "$out/$exe" >"$out/$exe.txt" 2>&1 || status=$?
  sed "s/^/  $exe: /" "$out/$exe.txt"
  if [ "$status" != 0 ]; then
    echo "capi-test.sh: $exe exited with $status" >&2
    exit 1
  fi
  # Where there is no driver (CI), the example must have got the no-device status.
  if [ -n "${AUTOTUNE_REQUIRE_NO_CUDA:-}" ] && ! grep -q AUTOTUNE_STATUS_NO_DEVICE "$out/$exe.txt"; then
    echo "capi-test.sh: $exe did not report AUTOTUNE_STATUS_NO_DEVICE" >&2
    exit 1
  fi
done
step "ok"
