#!/usr/bin/env bash
# Exploratory fuzzing, for developers: run every fuzz target of the given
# packages (default: all) for a while each. CI does not run this: it replays
# the committed corpora (testdata/fuzz/<target>/ of each package) as
# ordinary tests in go test ./..., so that a random new finding never decides
# whether an unrelated change lands. Run it on what you changed before you
# stop; commit each finding as a seed in testdata/fuzz/<target>/ with its fix.
#
#   tools/fuzz.sh                         # every target, 60 s each
#   FUZZTIME=5m tools/fuzz.sh ./internal/cloud
#   tools/fuzz.sh ./internal/bridge ./internal/mqttcmd
#
# Knobs: FUZZTIME (per target, default 60s), FUZZFLAGS (extra go test flags,
# e.g. -fuzzminimizetime=2s for the large answer decoders).
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-60s}
dirs=("$@")
[ "${#dirs[@]}" -gt 0 ] || dirs=(.)

targets=()
for d in "${dirs[@]}"; do
  while IFS=: read -r file name; do
    targets+=("./$(dirname "${file#./}") $name")
  done < <(grep -rEo --include='*_test.go' --exclude-dir=testdata --exclude-dir='.[!.]*' --exclude-dir=node_modules \
    '^func Fuzz[A-Za-z0-9_]*\(' "${d#./}" | sed -E 's|:func (Fuzz[A-Za-z0-9_]*)\($|:\1|' | sort)
done
if [ "${#targets[@]}" -eq 0 ]; then
  echo "no fuzz targets under ${dirs[*]}" >&2
  exit 1
fi
echo "${#targets[@]} fuzz targets, $fuzztime each"
failed=0
for tg in "${targets[@]}"; do
  read -r pkg name <<<"$tg"
  echo "-- $name ($pkg)"
  # shellcheck disable=SC2086
  if ! go test -run='^$' -fuzz="^${name}\$" -fuzztime="$fuzztime" ${FUZZFLAGS:-} "$pkg"; then
    echo "!! $name found a failing input: it is in $pkg/testdata/fuzz/$name/; fix it and commit it as a seed" >&2
    failed=1
  fi
done
exit $failed
