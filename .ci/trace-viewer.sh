#!/usr/bin/env bash
# .ci/trace-viewer.sh: fetches the trace viewer tracestat's browser test opens
# gccl's traces in (speedscope, MIT, an offline viewer of the Trace Event
# Format), pinned by version and by the registry's sha512, into a cache, and
# prints the unpacked package's directory (for GCCL_TRACE_VIEWER).
# npm pack when npm is installed, else curl from the npm registry.
set -euo pipefail

version=1.25.0
# npm view speedscope@1.25.0 dist.integrity
integrity=sha512-cpf9HWTZf1ijLXBJrk87Ve/54tnYx6rlf0gUThvn3ook6h63hLXVOQiMf44PT+XoV503cPfvfiT5gP5vojp6Ag==
cache="${XDG_CACHE_HOME:-$HOME/.cache}/gccl/speedscope-$version"
index="$cache/package/dist/release/index.html"

if [ -f "$index" ]; then
  echo "$cache/package"
  exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tgz="$tmp/speedscope-$version.tgz"
if command -v npm >/dev/null; then
  (cd "$tmp" && npm pack --silent "speedscope@$version" >/dev/null)
else
  curl -fsSL -o "$tgz" "https://registry.npmjs.org/speedscope/-/speedscope-$version.tgz"
fi
got="sha512-$(openssl dgst -sha512 -binary "$tgz" | base64 | tr -d '\n')"
if [ "$got" != "$integrity" ]; then
  echo "speedscope-$version.tgz: integrity $got, want the pinned $integrity" >&2
  exit 1
fi
# Unpacked beside the cache and renamed into place, so that an interrupted
# run leaves no half-unpacked viewer for the next to trust.
mkdir -p "$(dirname "$cache")"
rm -rf "$cache.partial"
mkdir "$cache.partial"
tar -xzf "$tgz" -C "$cache.partial"
[ -f "$cache.partial/package/dist/release/index.html" ] || { echo "speedscope-$version.tgz holds no package/dist/release/index.html" >&2; exit 1; }
rm -rf "$cache"
mv "$cache.partial" "$cache"
echo "$cache/package"
