#!/usr/bin/env bash
# Validate app options as the Home Assistant Supervisor validates what the
# user saves on the app's Configuration tab, with its own code (app-setup.sh
# first; root).
#
#   tools/ha-check/app-options.sh path/to/config.yaml OPTIONS.json [...]
#
# Each OPTIONS file (JSON or YAML) is laid over config.yaml's defaults.
# Prints OK (the options the app gets) or FAIL (the Supervisor's message)
# per file; exits 1 on any FAIL.
set -euo pipefail
. "$(dirname "$0")/common.sh"
[ $# -ge 2 ] || { echo "usage: app-options.sh CONFIG_FILE OPTIONS_FILE [...]" >&2; exit 2; }
R=$(ha_root)
ha_ready "$R"
[ -d "$R/opt/sup/supervisor" ] || { echo "app-options.sh: no Supervisor in $R; run tools/ha-check/app-setup.sh SUPERVISOR_GIT_DIR first" >&2; exit 2; }
tmp=$(mktemp -d "$R/tmp/opts.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cp "$1" "$tmp/config.yaml"
shift
args=(); n=0
for f in "$@"; do
  n=$((n+1)); ext=${f##*.}
  cp "$f" "$tmp/$n.$ext"
  args+=("$f" "/tmp/$(basename "$tmp")/$n.$ext")
done
chroot "$R" python3 /opt/ha-check/app_options.py "/tmp/$(basename "$tmp")/config.yaml" "${args[@]}"
