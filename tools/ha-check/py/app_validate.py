"""Judge Home Assistant app (add-on) config files with the Supervisor's own
schema (SCHEMA_APP_CONFIG), as the Supervisor reads them. Runs in the chroot of
tools/ha-check (app-validate.sh calls it).

usage: python3 app_validate.py NAME PATH [NAME PATH ...]
NAME is what the user passed (shown in the result), PATH the copy in the chroot.
Prints OK (slug, architectures) or FAIL (the Supervisor's message) per file;
exits 1 on any FAIL."""
import json
import sys
import types

sys.path.insert(0, "/opt/sup")

# The Supervisor's aiohttp is newer than Debian trixie's: RequestKey only
# types its application keys, and cpe is an optional dependency of a module
# the schema imports.
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

import supervisor.apps.validate as v  # noqa: E402
import yaml  # noqa: E402


def main(args):
    ok = True
    for name, path in zip(args[::2], args[1::2]):
        with open(path) as f:
            data = yaml.safe_load(f) if path.endswith((".yaml", ".yml")) else json.load(f)
        try:
            out = v.SCHEMA_APP_CONFIG(data)
            print("OK  ", name, "slug=%s arch=%s" % (out.get("slug"), out.get("arch")))
        except Exception as e:  # the schema's errors, and a file that is no mapping
            ok = False
            print("FAIL", name, str(e)[:300])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
