"""Start Home Assistant from its source (/opt/ha) on the configuration in
/opt/hacfg, without the web frontend (hass_frontend is not packaged in
Debian). Runs in the chroot of tools/ha-check (hass.sh starts it)."""
import sys

sys.path.insert(0, "/opt/ha")

# Home Assistant 2025.1 pins paho-mqtt 1.6.1; Debian trixie ships 2.1.0:
# give it the 1.x constructor (callback API version 1) and helper it calls.
import paho.mqtt.client as _pc  # noqa: E402

if not hasattr(_pc, "base62"):
    _pc.base62 = _pc._base62
_orig_init = _pc.Client.__init__


def _init(self, *a, **kw):
    if not (a and isinstance(a[0], _pc.CallbackAPIVersion)) and "callback_api_version" not in kw:
        a = (_pc.CallbackAPIVersion.VERSION1,) + a
    _orig_init(self, *a, **kw)


_pc.Client.__init__ = _init

import homeassistant.bootstrap as b  # noqa: E402

# Without the frontend, a critical integration would be missing and Home
# Assistant would start in recovery mode; these defaults need it or the cloud.
b.CRITICAL_INTEGRATIONS.clear()
for d in ("frontend", "cloud", "backup", "analytics", "hardware", "onboarding", "repairs", "config", "usb", "network"):
    b.DEFAULT_INTEGRATIONS.discard(d)

from homeassistant.__main__ import main  # noqa: E402

sys.argv = ["hass", "--config", "/opt/hacfg", "--skip-pip", "--log-no-color"]
sys.exit(main())
