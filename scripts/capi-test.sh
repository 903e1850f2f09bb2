#!/usr/bin/env bash
# The C ABI without a GPU (CI runs it after scripts/test.sh): the library's crate graph, its
# unit tests, the header as C and C++, the exported symbols against the header, the C example
# linked against libautotune (shared and static) and the C++ example built with CMake as
# docs/shipping.md tells a product to; each must end with the no-device status and exit 0
# where there is no driver, not crash.
#   bash scripts/capi-test.sh
# Needs cargo, cc and c++ (with nm and readelf), python3 (with venv) and make; no GPU. Where
# cmake is not on PATH, the PyPI wheel of CMake 3.18 (the example's minimum) is installed into
# target/cmake-venv (kept between runs), and ninja's too where make is missing. The library is
# built in the release profile with the features the tests build the `autotune` crate with
# (`autotune_rt/default`), so it reuses their artifacts; products build it with `cargo build
# --release -p autotune-capi`, which leaves the command line's crates out (checked below).
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

step "examples/c/sgemm.c, linked against libautotune (shared and static)"
cc -std=c99 -Wall -Wextra -Werror -I capi/include examples/c/sgemm.c -L "$lib" -lautotune -ldl -lm -o "$out/sgemm-c"
cc -std=c99 -Wall -Wextra -Werror -I capi/include examples/c/sgemm.c "$lib/libautotune.a" -lpthread -ldl -lm -o "$out/sgemm-c-static"

step "examples/cpp with CMake, as docs/shipping.md builds it"
started=$SECONDS
cmakelists=examples/cpp/CMakeLists.txt
quoted=$(awk '/^```cmake$/ {on = 1; next} /^```$/ {on = 0} on' docs/shipping.md)
if [ -z "$quoted" ] || [[ "$(cat "$cmakelists")" != *"$quoted"* ]]; then
  echo "capi-test.sh: the cmake block of docs/shipping.md is not a part of $cmakelists" >&2
  exit 1
fi
tools=() generator=()
command -v cmake >/dev/null 2>&1 || tools+=(cmake==3.18.4.post1)
if ! command -v make >/dev/null 2>&1; then
  command -v ninja >/dev/null 2>&1 || tools+=(ninja==1.13.2)
  generator=(-G Ninja)
fi
if [ ${#tools[@]} -gt 0 ]; then
  venv=target/cmake-venv
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  echo "capi-test.sh: installing ${tools[*]} into $venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "${tools[@]}"
  PATH="$PWD/$venv/bin:$PATH"
fi
cmake --version | sed -n 1p
# The command docs/shipping.md gives, with the warnings of the C builds above as errors.
cmake -S examples/cpp -B "$out/cmake" -DAUTOTUNE_ROOT="$PWD" -DCMAKE_CXX_FLAGS="-Wall -Wextra -Werror" "${generator[@]}"
cmake --build "$out/cmake"
cp "$out/cmake/sgemm-cpp" "$out/sgemm-cpp"
# libautotune.so has no SONAME: the program must need it by name, not by the build's path.
dynamic=$(readelf -d "$out/sgemm-cpp")
if ! grep -qF '[libautotune.so]' <<<"$dynamic"; then
  grep NEEDED <<<"$dynamic" >&2
  echo "capi-test.sh: sgemm-cpp does not need libautotune.so by name (IMPORTED_NO_SONAME)" >&2
  exit 1
fi
echo "capi-test.sh: CMake configure and build took $((SECONDS - started)) s"

step "the examples run"
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
