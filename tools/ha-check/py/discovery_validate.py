"""Judge MQTT discovery payloads with Home Assistant's own code, from its
source in /opt/ha. Runs in the chroot of tools/ha-check (validate.sh calls it).

usage: python3 discovery_validate.py TOPIC FILE [TOPIC FILE ...]   (FILE - is standard input)

It follows homeassistant/components/mqtt/discovery.py: the topic match, the
abbreviations expanded, the device-based discovery schema, the shared options
merged, the '~' base, the origin schema, then the platform's DISCOVERY_SCHEMA.
Unknown keys inside an entity are removed by Home Assistant, not rejected: the
output names the keys it dropped. Exits 1 on any FAIL."""
import importlib
import json
import logging
import sys

sys.path.insert(0, "/opt/ha")

import voluptuous as vol  # noqa: E402
from homeassistant.components.mqtt import discovery as d  # noqa: E402
from homeassistant.components.mqtt.const import SUPPORTED_COMPONENTS  # noqa: E402
from homeassistant.components.mqtt.schemas import (  # noqa: E402
    DEVICE_DISCOVERY_SCHEMA,
    MQTT_ORIGIN_INFO_SCHEMA,
)

logging.basicConfig(level=logging.ERROR)


def platform_schema(component):
    return importlib.import_module(f"homeassistant.components.mqtt.{component}").DISCOVERY_SCHEMA


def components(topic, payload_text, prefix):
    """The (platform, name, payload) of each entity a discovery message
    configures, as Home Assistant reads them; a str is the reason it fails."""
    m = d.TOPIC_MATCHER.match(topic.replace(f"{prefix}/", "", 1))
    if not m:
        return f"FAIL topic {topic!r}: does not match <prefix>/<component>/[<node_id>/]<object_id>/config"
    component, node_id, object_id = m.groups()
    payload = d.MQTTDiscoveryPayload(json.loads(payload_text) if payload_text.strip() else {})
    d._replace_all_abbreviations(payload)
    if component != "device":
        if "origin" in payload:
            try:
                MQTT_ORIGIN_INFO_SCHEMA(payload["origin"])
            except vol.Invalid as e:
                return f"FAIL origin: {e}"
        return [(component, object_id, payload)]
    try:
        DEVICE_DISCOVERY_SCHEMA(payload)
    except vol.Invalid as e:
        return f"FAIL device payload {topic}: {e}"
    out = []
    for cid, cfg in payload["components"].items():
        cfg = dict(cfg)
        plat = cfg.pop("platform")
        p = d.MQTTDiscoveryPayload(cfg)
        if p:
            p["device"] = payload["device"]
            p["origin"] = payload.get("origin")
            d._merge_common_device_options(p, payload)
        out.append((plat, f"{node_id + ' ' if node_id else ''}{cid}", p))
    return out


def check(topic, payload_text, prefix="homeassistant"):
    comps = components(topic, payload_text, prefix)
    if isinstance(comps, str):
        print(comps)
        return False
    ok = True
    for plat, cid, p in comps:
        if plat not in SUPPORTED_COMPONENTS:
            print(f"FAIL {plat} {cid}: unsupported component")
            ok = False
            continue
        if not p:
            print(f"OK   {plat} {cid}: empty payload = removal")
            continue
        if d.TOPIC_BASE in p:
            d._replace_topic_base(p)
        try:
            out = platform_schema(plat)(dict(p))
        except vol.Error as e:
            print(f"FAIL {plat} {cid}: {e}")
            ok = False
            continue
        dropped = sorted(set(p) - set(out))
        print(f"OK   {plat} {cid} unique_id={out.get('unique_id')!r}" + (f"  DROPPED(unknown keys): {dropped}" if dropped else ""))
    return ok


def main(args):
    ok = True
    for topic, path in zip(args[::2], args[1::2]):
        text = sys.stdin.read() if path == "-" else open(path).read()
        ok &= check(topic, text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
