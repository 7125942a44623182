#!/usr/bin/env bash
# Add the Home Assistant Supervisor's own app (add-on) config schema to the
# chroot setup.sh prepared, so app-validate.sh can judge a config.yaml the way
# the Supervisor reads it (root).
#
#   tools/ha-check/app-setup.sh SUPERVISOR_GIT_DIR [REVISION]
#
# SUPERVISOR_GIT_DIR is a git directory of github.com/home-assistant/supervisor;
# REVISION defaults to its HEAD.
set -euo pipefail
. "$(dirname "$0")/common.sh"
SRC=${1:?usage: app-setup.sh SUPERVISOR_GIT_DIR [REVISION]}
REV=${2:-HEAD}
R=$(ha_root)
ha_ready "$R"
rm -rf "$R/opt/sup" && mkdir -p "$R/opt/sup"
git --git-dir="$SRC" archive "$REV" supervisor | tar -x -C "$R/opt/sup"
# The Supervisor is written for Python 3.14 ("except A, B:"); the chroot has 3.13.
grep -rlE "except [A-Za-z_.]+, [A-Za-z_., ]+:" "$R/opt/sup/supervisor" |
  xargs -r sed -i -E 's/except ([A-Za-z_.]+(, [A-Za-z_.]+)+):/except (\1):/'
for p in python3-pyudev python3-dbus-fast python3-sentry-sdk python3-docker python3-deepmerge python3-colorlog python3-git; do
  chroot "$R" sh -c "DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $p >/dev/null 2>&1" ||
    echo "app-setup.sh: could not install $p" >&2
done
echo "Supervisor app schema ready in $R ($(git --git-dir="$SRC" log -1 --format='%h %cs' "$REV"))"
