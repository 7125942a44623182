"""Validate an app's options as the Supervisor validates what the user saves
(supervisor.apps.options.AppOptions over the config's schema) before it writes
/data/options.json. Runs in the chroot of tools/ha-check (app-options.sh calls
it).

usage: python3 app_options.py CONFIG OPTIONS [OPTIONS ...]
Each OPTIONS file (JSON or YAML) is laid over the config's default options.
Prints OK with the options the app would get, or FAIL with the Supervisor's
message, per file; exits 1 on any FAIL."""
import json
import sys
import types

sys.path.insert(0, "/opt/sup")

# As in app_validate.py.
import aiohttp.web as web


class RequestKey:
    def __init__(self, *a, **k):
        pass

    def __class_getitem__(cls, item):
        return cls


web.RequestKey = RequestKey
try:
    import cpe  # noqa: F401
except ImportError:
    m = types.ModuleType("cpe")
    m.CPE = object
    sys.modules["cpe"] = m

import yaml  # noqa: E402
from supervisor.apps.options import AppOptions  # noqa: E402


def load(path):
    with open(path) as f:
        return yaml.safe_load(f) if path.endswith((".yaml", ".yml")) else json.load(f)


def main(config, files):
    cfg = load(config)
    check = AppOptions(None, cfg.get("schema", {}), cfg["name"], cfg["slug"])
    ok = True
    for name, path in zip(files[::2], files[1::2]):
        opts = dict(cfg.get("options", {}))
        opts.update(load(path))
        try:
            print("OK  ", name, json.dumps(check(opts), sort_keys=True))
        except Exception as e:  # the Supervisor's refusal
            ok = False
            print("FAIL", name, str(e)[:300])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2:]))
