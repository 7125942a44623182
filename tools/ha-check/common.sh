# Sourced by the ha-check scripts: where the Home Assistant chroot is, and
# how to get it ready for a command.
#
# The chroot is HA_ROOT when set, else the one setup.sh prepared last (its
# path is kept in $HA_CHECK_STATE, /tmp/ha-check.root by default), else
# /tmp/ha-root.

HA_CHECK_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
HA_CHECK_STATE=${HA_CHECK_STATE:-/tmp/ha-check.root}

ha_root() {
  if [ -n "${HA_ROOT:-}" ]; then
    echo "$HA_ROOT"
  elif [ -s "$HA_CHECK_STATE" ]; then
    cat "$HA_CHECK_STATE"
  else
    echo /tmp/ha-root
  fi
}

# ha_ready ROOT: fail with the fix unless setup.sh prepared ROOT; mount what
# Home Assistant needs and copy the check's own Python files in (so a root
# prepared by an older setup.sh runs today's scripts).
ha_ready() {
  local r=$1
  if [ ! -d "$r/opt/ha/homeassistant" ]; then
    echo "ha-check: no Home Assistant in $r; run tools/ha-check/setup.sh HA_CORE_SOURCE $r first (docs/ha-check.md)" >&2
    exit 2
  fi
  [ "$(id -u)" = 0 ] || { echo "ha-check: needs root (Home Assistant runs in a chroot)" >&2; exit 2; }
  mountpoint -q "$r/proc" || mount -t proc proc "$r/proc"
  mountpoint -q "$r/dev" || mount --bind /dev "$r/dev"
  mkdir -p "$r/opt/ha-check"
  cp "$HA_CHECK_DIR"/py/*.py "$r/opt/ha-check/"
}

# ha_pidfile ROOT: where hass.sh keeps the pid of the Home Assistant it runs.
ha_pidfile() { echo "$1/opt/ha-check/hass.pid"; }
