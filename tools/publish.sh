#!/usr/bin/env bash
# Push the images tools/release.sh VERSION wrote to dist/: the Home
# Assistant app's under the name and version its config.yaml gives (what
# the Supervisor pulls), the container image under the name
# deploy/docker/docker-compose.yml runs. REGISTRY (like ghcr.io/you or
# 127.0.0.1:5000/test) replaces their registry and owner. Credentials:
# REGISTRY_USER and REGISTRY_PASSWORD, else the Docker configuration
# (docker login). tools/release/publish.go says the rest.
#
#   tools/release.sh 0.1.0 && tools/publish.sh 0.1.0
set -euo pipefail
if [ $# -lt 1 ] || [ $# -gt 2 ] || [ -z "$1" ]; then
  echo "usage: tools/publish.sh VERSION [REGISTRY]   (like 0.1.0, or 0.1.0 127.0.0.1:5000/test)" >&2
  exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)
export PATH="$PATH:/usr/local/go/bin"
cd "$root/tools/release"
exec go run . publish -repo "$root" -dist "$root/dist" "$@"
