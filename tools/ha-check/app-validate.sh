#!/usr/bin/env bash
# Judge Home Assistant app (add-on) config files with the Supervisor's own
# schema (app-setup.sh first; root).
#
#   tools/ha-check/app-validate.sh path/to/config.yaml [...]
#
# Prints OK (with the slug and architectures) or FAIL (with the Supervisor's
# message) per file; exits 1 on any FAIL.
set -euo pipefail
. "$(dirname "$0")/common.sh"
[ $# -ge 1 ] || { echo "usage: app-validate.sh CONFIG_FILE [...]" >&2; exit 2; }
R=$(ha_root)
ha_ready "$R"
[ -d "$R/opt/sup/supervisor" ] || { echo "app-validate.sh: no Supervisor in $R; run tools/ha-check/app-setup.sh SUPERVISOR_GIT_DIR first" >&2; exit 2; }
tmp=$(mktemp -d "$R/tmp/app.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
args=(); n=0
for f in "$@"; do
  n=$((n+1)); ext=${f##*.}
  cp "$f" "$tmp/$n.$ext"
  args+=("$f" "/tmp/$(basename "$tmp")/$n.$ext")
done
chroot "$R" python3 /opt/ha-check/app_validate.py "${args[@]}"
