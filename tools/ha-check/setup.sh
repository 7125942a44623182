#!/usr/bin/env bash
# Prepare a real Home Assistant, run from its own source with Debian trixie's
# Python packages (no PyPI), in a chroot. Needs root, debootstrap (installed
# when missing) and the Home Assistant core source.
#
#   tools/ha-check/setup.sh HA_CORE_SOURCE [ROOT]
#
# HA_CORE_SOURCE  a git directory of Home Assistant core (a clone's .git or a
#                 bare mirror), or a source tree with homeassistant/ in it.
# ROOT            the chroot to prepare (default /tmp/ha-root); setup.sh
#                 remembers it for the other scripts (in $HA_CHECK_STATE).
# HA_REV          the commit or tag taken from a git directory; default the
#                 tag 2025.1.4 when the repository has it, else commit
#                 63daa653 (2025.1.4 in esaaprillia/core2, a small copy of
#                 Home Assistant core). docs/ha-check.md says how to get it.
# HA_RELEASE      the release the check's expectations were set on
#                 (2025.1.4); another one is taken with a warning.
# MIRROR          the Debian mirror (default: the one apt uses here).
#
# A second run reuses what the first installed; a different revision
# replaces the Home Assistant source. Afterwards: validate.sh, hass.sh,
# app-setup.sh and app-validate.sh (docs/ha-check.md).
set -euo pipefail
. "$(dirname "$0")/common.sh"
SRC=${1:?usage: setup.sh HA_CORE_SOURCE [ROOT]   (docs/ha-check.md says how to get the source)}
R=${2:-/tmp/ha-root}
RELEASE=${HA_RELEASE:-2025.1.4}
[ "$(id -u)" = 0 ] || { echo "setup.sh: needs root (debootstrap, chroot, mounts)" >&2; exit 2; }

# The source: a tree, or a revision of a git directory.
if [ -f "$SRC/homeassistant/const.py" ]; then
  rev="tree:$(cd "$SRC" && pwd)"
elif git --git-dir="$SRC" rev-parse --git-dir >/dev/null 2>&1; then
  rev=${HA_REV:-}
  if [ -z "$rev" ]; then
    if git --git-dir="$SRC" rev-parse -q --verify "refs/tags/$RELEASE^{commit}" >/dev/null; then
      rev=$RELEASE
    else
      rev=63daa653
    fi
  fi
  git --git-dir="$SRC" rev-parse -q --verify "$rev^{commit}" >/dev/null ||
    { echo "setup.sh: $SRC has no revision $rev; set HA_REV to a commit or tag of release $RELEASE" >&2; exit 2; }
  rev=$(git --git-dir="$SRC" rev-parse "$rev^{commit}")
else
  echo "setup.sh: $SRC is neither a git directory nor a source tree with homeassistant/const.py" >&2
  exit 2
fi

command -v debootstrap >/dev/null || { apt-get update -q >/dev/null; apt-get install -y -q debootstrap >/dev/null; }
MIRROR=${MIRROR:-$(grep -h '^URIs:' /etc/apt/sources.list.d/debian.sources 2>/dev/null | awk '{print $2}' | grep -v security | head -1)}
[ -n "$MIRROR" ] || MIRROR=$(awk '/^deb / && !/security/ {print $2; exit}' /etc/apt/sources.list 2>/dev/null)
[ -n "$MIRROR" ] || { echo "setup.sh: no Debian mirror found in apt's sources; set MIRROR" >&2; exit 2; }
if [ ! -x "$R/usr/bin/python3" ]; then
  echo "setup.sh: debootstrap trixie into $R (a few minutes)" >&2
  debootstrap --variant=minbase --include=python3,ca-certificates trixie "$R" "$MIRROR" >/dev/null
fi
mountpoint -q "$R/proc" || mount -t proc proc "$R/proc"
mountpoint -q "$R/dev" || mount --bind /dev "$R/dev"
cp /etc/resolv.conf "$R/etc/resolv.conf"

# Home Assistant's Python dependencies, as Debian packages them.
if [ ! -f "$R/opt/.deps-ok" ]; then
  echo "setup.sh: installing Home Assistant's dependencies from Debian" >&2
  chroot "$R" sh -c 'apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
   python3-voluptuous python3-voluptuous-serialize python3-voluptuous-openapi python3-aiohttp python3-aiohttp-cors \
   python3-aiohttp-fast-zlib python3-aiodns python3-aiohasupervisor python3-aiozoneinfo python3-astral python3-async-interrupt \
   python3-attr python3-atomicwrites python3-audioop-lts python3-awesomeversion python3-bcrypt python3-certifi python3-ciso8601 \
   python3-cronsim python3-fnv-hash-fast python3-hass-nabucasa python3-httpx python3-home-assistant-bluetooth python3-ifaddr \
   python3-jinja2 python3-lru-dict python3-jwt python3-cryptography python3-pil python3-propcache python3-openssl python3-orjson \
   python3-packaging python3-psutil-home-assistant python3-slugify python3-yaml python3-requests python3-securetar \
   python3-sqlalchemy python3-standard-aifc python3-typing-extensions python3-ulid-transform python3-urllib3 python3-yarl \
   python3-webrtc-models python3-paho-mqtt python3-mashumaro python3-zeroconf >/dev/null'
  touch "$R/opt/.deps-ok"
fi

# The Home Assistant source, replaced when another revision is asked for.
if [ "$(cat "$R/opt/ha/.revision" 2>/dev/null)" != "$rev" ]; then
  rm -rf "$R/opt/ha" && mkdir -p "$R/opt/ha"
  case $rev in
  tree:*) cp -r "${rev#tree:}/homeassistant" "$R/opt/ha/" ;;
  *) git --git-dir="$SRC" archive "$rev" homeassistant | tar -x -C "$R/opt/ha" ;;
  esac
  echo "$rev" > "$R/opt/ha/.revision"
fi
ha_ready "$R"
echo "$R" > "$HA_CHECK_STATE"
version=$(chroot "$R" python3 -c "import sys; sys.path.insert(0, '/opt/ha'); from homeassistant.const import __version__; print(__version__)")
if [ "$version" != "$RELEASE" ]; then
  echo "setup.sh: warning: this is Home Assistant $version; the check's expectations were set on $RELEASE" >&2
fi
echo "ready: Home Assistant $version ($rev) in $R"
