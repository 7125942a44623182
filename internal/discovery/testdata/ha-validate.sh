#!/usr/bin/env bash
# Developer check (not CI): feed every golden discovery payload to Home
# Assistant's own discovery code and schemas (tools/ha-check/validate.sh,
# which needs its Home Assistant set up first: docs/ha-check.md; run as root).
#   internal/discovery/testdata/ha-validate.sh [golden files...]
# Prints one OK/FAIL line per entity and the keys HA dropped; exits 1 on a FAIL.
# A null in a golden file is an empty payload (a removal).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
validate=${HA_VALIDATE:-$here/../../../tools/ha-check/validate.sh}
[ -x "$validate" ] || { echo "ha-validate: $validate not found; set HA_VALIDATE" >&2; exit 2; }
command -v jq >/dev/null || { echo "ha-validate: needs jq" >&2; exit 2; }
files=("$@")
[ ${#files[@]} -gt 0 ] || files=("$here"/golden/*.json)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
args=(); i=0
for f in "${files[@]}"; do
  while IFS= read -r t; do
    jq -c --arg t "$t" '.[$t] // empty' "$f" > "$tmp/$i.json"
    args+=("$t" "$tmp/$i.json"); i=$((i+1))
  done < <(jq -r 'keys[]' "$f")
done
echo "ha-validate: $i payloads from ${#files[@]} files" >&2
"$validate" "${args[@]}"
