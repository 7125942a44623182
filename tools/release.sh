#!/usr/bin/env bash
# Build every release artifact of VERSION into dist/ (the archives, the
# Debian packages, the OCI images, SHA256SUMS): tools/release/main.go says
# what each holds. SOURCE_DATE_EPOCH defaults to the last commit's time, so
# two runs on the same commit give byte-identical files.
#
#   tools/release.sh 0.1.0
set -euo pipefail
if [ $# -ne 1 ] || [ -z "$1" ]; then
  echo "usage: tools/release.sh VERSION   (like 0.1.0)" >&2
  exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)
export PATH="$PATH:/usr/local/go/bin"
if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
  SOURCE_DATE_EPOCH=$(git -C "$root" log -1 --format=%ct)
  export SOURCE_DATE_EPOCH
fi
if [ -n "$(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
  echo "release.sh: warning: the work tree has uncommitted changes; the artifacts hold them, but their time stamps are the last commit's" >&2
fi
rm -rf "$root/dist"
cd "$root/tools/release"
exec go run . -repo "$root" -out "$root/dist" "$1"
