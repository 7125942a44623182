#!/usr/bin/env bash
# Run the whole of Home Assistant (without its web frontend) against an MQTT
# broker on 127.0.0.1 (setup.sh first; root).
#
#   tools/ha-check/hass.sh start BROKER_PORT   start it in the background, on a fresh configuration
#   tools/ha-check/hass.sh stop                stop it
#
# Its configuration and log are in ROOT/opt/hacfg (ha.log). Every entity's
# state and attributes are mirrored to hastate/<domain>/<object>/<state|attribute>
# (mqtt_statestream), and a message on e2e/call such as
#   {"action":"light.turn_on","entity_id":"light.desk_lamp","data":{"brightness":255}}
# makes Home Assistant call that service, as a user's click would. One Home
# Assistant runs per ROOT (its pid is kept in ROOT/opt/ha-check/hass.pid).
set -euo pipefail
. "$(dirname "$0")/common.sh"
R=$(ha_root)
pidfile=$(ha_pidfile "$R")
case "${1:-}" in
start)
  PORT=${2:?usage: hass.sh start BROKER_PORT}
  ha_ready "$R"
  if [ -s "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
    echo "hass.sh: Home Assistant already runs in $R (pid $(cat "$pidfile")); hass.sh stop first" >&2
    exit 1
  fi
  rm -rf "$R/opt/hacfg"; mkdir -p "$R/opt/hacfg/.storage"
  cp "$HA_CHECK_DIR/hass/configuration.yaml" "$R/opt/hacfg/"
  sed "s/@PORT@/$PORT/" "$HA_CHECK_DIR/hass/core.config_entries.json" > "$R/opt/hacfg/.storage/core.config_entries"
  chroot "$R" python3 /opt/ha-check/run_hass.py > "$R/opt/hacfg/ha.log" 2>&1 &
  echo $! > "$pidfile"
  echo "started Home Assistant in $R, pid $(cat "$pidfile"), log $R/opt/hacfg/ha.log";;
stop)
  if [ -s "$pidfile" ]; then
    pid=$(cat "$pidfile")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    if kill -0 "$pid" 2>/dev/null; then
      echo "hass.sh: Home Assistant (pid $pid) still runs 10 s after SIGTERM" >&2
      exit 1
    fi
  fi
  rm -f "$pidfile";;
*) echo "usage: hass.sh start BROKER_PORT | hass.sh stop" >&2; exit 2;;
esac
