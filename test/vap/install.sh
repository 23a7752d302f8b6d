#!/bin/sh
# Installs the CEL engine the tests evaluate gpu-admission's CEL with: @bufbuild/cel, a
# conformance-tested CEL implementation for ECMAScript, exactly as pinned by test/vap/package.json
# and package-lock.json (npm ci), into DIR/node_modules. DIR is a build-tree folder; node_modules is
# never committed.
#
#   test/vap/install.sh DIR
#
# Exit status: 0 installed (or already there); 77 it cannot be installed here (no node or npm, no
# registry): callers report the test as skipped; in CI (CI=true) that is a failure instead (1).
set -u
here=$(cd "$(dirname "$0")" && pwd)
dir=${1:?usage: install.sh DIR}

cannot() {
  echo "cannot install the CEL engine (@bufbuild/cel): $1" >&2
  if [ "${CI:-}" = true ]; then
    echo "FAIL: CI=true, where the CEL tests must run" >&2
    exit 1
  fi
  exit 77
}

installed() {
  [ -f "$dir/node_modules/@bufbuild/cel/package.json" ] && cmp -s "$here/package-lock.json" "$dir/package-lock.json"
}

command -v node >/dev/null 2>&1 || cannot "node not found (install Node.js 18 or later)"
command -v npm >/dev/null 2>&1 || cannot "npm not found"
mkdir -p "$dir" || cannot "cannot create $dir"
# One installer at a time (the chart and backstop tests may start together).
exec 9>"$dir/.install.lock"
if command -v flock >/dev/null 2>&1; then flock 9; fi
installed && exit 0
cp "$here/package.json" "$here/package-lock.json" "$dir/" || cannot "cannot write to $dir"
if ! (cd "$dir" && npm ci --no-audit --no-fund --ignore-scripts >npm.log 2>&1); then
  rm -f "$dir/package-lock.json"
  cannot "npm ci failed (see $dir/npm.log)"
fi
installed || cannot "npm ci left no @bufbuild/cel in $dir/node_modules"
exit 0
