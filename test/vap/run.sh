#!/bin/sh
# The backstop test (test/vap/backstop_test.mjs): `gpu-admission policy export --format vap` evaluated
# by a real CEL engine (@bufbuild/cel, installed by install.sh into DIR) against the webhook's
# decisions. Registered with CTest as vap:backstop (label vap).
#
#   test/vap/run.sh BINARY DIR
#
# Exit status: 0 passed; 1 failed; 77 skipped (the CEL engine cannot be installed here; in CI, with
# CI=true, that is a failure).
set -u
here=$(cd "$(dirname "$0")" && pwd)
binary=${1:?usage: run.sh BINARY DIR}
dir=${2:?usage: run.sh BINARY DIR}
sh "$here/install.sh" "$dir"
status=$?
if [ "$status" -eq 77 ]; then
  echo "skipped: the CEL engine (@bufbuild/cel) cannot be installed here (node, npm or the registry is missing)"
  exit 77
fi
[ "$status" -eq 0 ] || exit 1
exec node "$here/backstop_test.mjs" --binary "$binary" --modules "$dir" --source "$here/../.."
