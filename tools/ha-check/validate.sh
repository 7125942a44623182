#!/usr/bin/env bash
# Judge MQTT discovery payloads with Home Assistant's own discovery code and
# platform schemas (setup.sh first; root). About a second for hundreds.
#
#   tools/ha-check/validate.sh TOPIC FILE [TOPIC FILE ...]    (FILE - is standard input)
#
# Prints OK or FAIL per entity, with the keys Home Assistant would silently
# drop; exits 1 on any FAIL. internal/discovery/testdata/ha-validate.sh feeds
# it every golden payload.
set -euo pipefail
. "$(dirname "$0")/common.sh"
[ $# -ge 2 ] && [ $(($# % 2)) = 0 ] || { echo "usage: validate.sh TOPIC FILE [TOPIC FILE ...]" >&2; exit 2; }
R=$(ha_root)
ha_ready "$R"
tmp=$(mktemp -d "$R/tmp/validate.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
args=(); i=0
while [ $# -ge 2 ]; do
  f="$tmp/$i.json"
  if [ "$2" = - ]; then cat > "$f"; else cp "$2" "$f"; fi
  args+=("$1" "/tmp/$(basename "$tmp")/$i.json"); i=$((i+1)); shift 2
done
# Home Assistant's helpers warn about being called outside its event loop:
# not the payloads' fault, so not shown.
chroot "$R" python3 /opt/ha-check/discovery_validate.py "${args[@]}" 2> >(grep -v 'outside the event loop' >&2)
