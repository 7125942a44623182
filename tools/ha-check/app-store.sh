#!/usr/bin/env bash
# Read a repository as the Home Assistant Supervisor's app store reads a
# custom app repository, with the Supervisor's own code (app-setup.sh
# first; root): the repository file at its root, the search for app
# configs, the app schema, the translations.
#
#   tools/ha-check/app-store.sh DIR      (like . or deploy/homeassistant)
#
# DIR is copied into the chroot without .git. Prints OK/FAIL/WARN lines and
# "apps: slug,..."; exits 1 unless the repository and every app in it are read
# without a warning.
set -euo pipefail
. "$(dirname "$0")/common.sh"
[ $# -eq 1 ] || { echo "usage: app-store.sh DIR" >&2; exit 2; }
R=$(ha_root)
ha_ready "$R"
[ -d "$R/opt/sup/supervisor" ] || { echo "app-store.sh: no Supervisor in $R; run tools/ha-check/app-setup.sh SUPERVISOR_GIT_DIR first" >&2; exit 2; }
tmp=$(mktemp -d "$R/tmp/store.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
tar -C "$1" --exclude=.git -cf - . | tar -C "$tmp" -xf -
chroot "$R" python3 /opt/ha-check/app_store.py "$1" "/tmp/$(basename "$tmp")"
