#!/bin/sh
# Runs the chart renderer and its tests with Debian's Go packages, offline (GOPATH mode).
#
#   test/chart/run.sh test [BINARY]   render charts/gpu-admission and check every object against
#                                     the chart's contract; BINARY (or $GPU_ADMISSION_BINARY) is the built
#                                     gpu-admission, used to lint the rendered policy
#   test/chart/run.sh template ...    print the manifests like `helm template` (flags: main.go)
#   test/chart/run.sh deploy          regenerate deploy/{gpu-admission,policy-configmap,webhooks}.yaml
#   test/chart/run.sh backstop BINARY regenerate charts/gpu-admission/files/backstop.yaml (the backstop
#                                     of the default policy, `BINARY policy export --format vap`)
#
# Needs: apt-get install golang-go golang-github-masterminds-sprig-dev golang-k8s-sigs-yaml-dev,
# promtool (apt-get install prometheus) for the alert rule tests, and node with npm for the CEL
# engine (test/vap/install.sh installs it into $GPU_ADMISSION_CEL_MODULES, by default a folder
# under $TMPDIR)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
gopath=${CHART_TEST_GOPATH:-/usr/share/gocode}

if ! command -v go >/dev/null 2>&1; then
  echo "FAIL: 'go' not found. Install: apt-get install golang-go golang-github-masterminds-sprig-dev golang-k8s-sigs-yaml-dev" >&2
  exit 1
fi
for pkg in github.com/Masterminds/sprig sigs.k8s.io/yaml github.com/Masterminds/semver; do
  if [ ! -d "$gopath/src/$pkg" ]; then
    echo "FAIL: Go package $pkg not found under $gopath/src. Install: apt-get install golang-github-masterminds-sprig-dev golang-k8s-sigs-yaml-dev" >&2
    exit 1
  fi
done

# Debian ships the libraries as GOPATH sources, so build in GOPATH mode and never touch a network.
export GOPATH="$gopath" GO111MODULE=off GOFLAGS='' GOPROXY=off GOTOOLCHAIN=local
export GOCACHE="${GOCACHE:-${TMPDIR:-/tmp}/gpu-admission-chart-gocache}"

cmd=${1:-test}
[ $# -gt 0 ] && shift
orig=$(pwd)
cd "$here"
case "$cmd" in
  test)
    if [ $# -gt 0 ]; then GPU_ADMISSION_BINARY=$1; export GPU_ADMISSION_BINARY; shift; fi
    # The CEL engine the matchConditions and the backstop are evaluated with (cel_test.go); without
    # it (77: no node, npm or registry) those tests skip, and fail in CI.
    GPU_ADMISSION_CEL_MODULES=${GPU_ADMISSION_CEL_MODULES:-${TMPDIR:-/tmp}/gpu-admission-cel-harness}
    sh "$here/../vap/install.sh" "$GPU_ADMISSION_CEL_MODULES" || [ $? -eq 77 ] || exit 1
    export GPU_ADMISSION_CEL_MODULES
    exec go test -count=1 "$@" .
    ;;
  template|deploy)
    exec go run . "$cmd" "$@"
    ;;
  backstop)
    [ $# -eq 1 ] || { echo "usage: $0 backstop BINARY" >&2; exit 2; }
    case $1 in /*) bin=$1 ;; *) bin=$orig/$1 ;; esac
    exec go run . backstop "$bin"
    ;;
  *)
    echo "usage: $0 test [BINARY] [go test flags] | template [flags] | deploy | backstop BINARY" >&2
    exit 2
    ;;
esac
