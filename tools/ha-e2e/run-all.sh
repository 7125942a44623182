#!/usr/bin/env bash
# Developer check (not CI): run tools/ha-e2e against the demo catalogue (also
# with a daily limit) and every fixture catalogue, one after the other (one Home Assistant).
# Needs root, mosquitto and tools/ha-check set up (docs/ha-check.md). Prints the Markdown
# of docs/ha-check.md's results; exits 1 when any catalogue failed.
#   tools/ha-e2e/run-all.sh [output-dir]
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
fixtures=${FIXTURES:-$root/testdata}
out=${1:-$(mktemp -d /tmp/ha-e2e-all.XXXXXX)}
mkdir -p "$out"
cd "$root" || exit 2
go build -o "$out/ha-e2e" ./tools/ha-e2e || exit 2
go build -o "$out/bridge" ./cmd/bridge || exit 2
rc=0
run() { # name catalogue [extra flags]
  local name=$1; shift
  mkdir -p "$out/$name"
  echo "ha-e2e: $name (logs in $out/$name)" >&2
  "$out/ha-e2e" -bridge "$out/bridge" -work "$out/$name" "$@" > "$out/$name.md" 2> "$out/$name.err" || rc=1
  cat "$out/$name.md"
}
run demo -catalogue demo
# the demo again with a daily limit: the "Quota left today" sensor exists
run demo_daily_limit -catalogue demo -daily-limit 1000000 -segments=false
for f in list_devices list_devices_2 list_devices_issue4; do
  run "$f" -catalogue "$fixtures/$f.json" -scenes "$fixtures/scenes.json"
done
exit $rc
