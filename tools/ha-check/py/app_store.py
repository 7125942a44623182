"""Read a repository checkout as the Supervisor's app store reads a custom
app repository, with the Supervisor's own code: _read_git_repository (a
repository.{json,yaml,yml} at the root, SCHEMA_REPOSITORY_CONFIG), the same
"**/config.*" search as StoreData._find_app_configs, SCHEMA_APP_CONFIG on
each config found, and _read_app_translations. Runs in the chroot of
tools/ha-check (app-store.sh calls it).

usage: python3 app_store.py NAME PATH
NAME is what the user passed (shown in the result), PATH the copy in the
chroot. Prints one line per finding, then "apps: slug,...". Exits 0 when the
repository is read, at least one app is found, every config found is a valid
app with its translations read, and the Supervisor warned about nothing."""
import logging
import sys
import types
from pathlib import Path

sys.path.insert(0, "/opt/sup")

# As in app_validate.py: the Supervisor's aiohttp is newer than Debian
# trixie's, and cpe is an optional dependency of a module the store imports.
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

warnings = []


class Collect(logging.Handler):
    def emit(self, record):
        if record.levelno >= logging.WARNING:
            warnings.append(record.getMessage())


logging.getLogger().addHandler(Collect())

from supervisor.apps.validate import SCHEMA_APP_CONFIG  # noqa: E402
from supervisor.const import FILE_SUFFIX_CONFIGURATION  # noqa: E402
from supervisor.store import data  # noqa: E402
from supervisor.utils.common import read_json_or_yaml_file  # noqa: E402


def main(name, path):
    root = Path(path)
    ok = True
    repo = data._read_git_repository(root)
    if repo is None:
        print("FAIL repository %s: not read (%s)" % (name, "; ".join(warnings)[:300]))
        ok = False
    else:
        print("OK   repository %s: %s" % (name, repo.config))
    configs = [
        c
        for c in root.glob("**/config.*")
        if not [p for p in c.relative_to(root).parts if p.startswith(".") or p == "rootfs"]
        and c.suffix in FILE_SUFFIX_CONFIGURATION
    ]
    apps = []
    for c in sorted(configs):
        try:
            app = SCHEMA_APP_CONFIG(read_json_or_yaml_file(c))
            tr = data._read_app_translations(c.parent)
        except Exception as e:  # the schema's errors, and a file that is no mapping
            ok = False
            print("FAIL %s: %s" % (c.relative_to(root), str(e)[:300]))
            continue
        apps.append(app["slug"])
        print("OK   app %s: %s (version %s, arch %s, image %s, translations %s)" % (
            c.relative_to(root), app["slug"], app["version"], app.get("arch"), app.get("image"), sorted(tr)))
    for w in warnings:
        print("WARN", w[:300])
        ok = False
    print("apps: %s" % ",".join(apps))
    return 0 if ok and apps else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
