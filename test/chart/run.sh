#!/bin/sh
# Runs the chart renderer and its tests with Debian's Go packages, offline (GOPATH mode).
#
#   test/chart/run.sh test [BINARY]   render charts/gpu-admission and check every object against
#                                     the chart's contract; BINARY (or $GPU_ADMISSION_BINARY) is the built
#                                     gpu-admission, used to lint the rendered policy
#   test/chart/run.sh template ...    print the manifests like `helm template` (flags: main.go)
#   test/chart/run.sh deploy          regenerate deploy/{gpu-admission,policy-configmap,webhooks}.yaml
#
# Needs: apt-get install golang-go golang-github-masterminds-sprig-dev golang-k8s-sigs-yaml-dev, and
# promtool (apt-get install prometheus) for the alert rule tests
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
cd "$here"
case "$cmd" in
  test)
    if [ $# -gt 0 ]; then GPU_ADMISSION_BINARY=$1; export GPU_ADMISSION_BINARY; shift; fi
    exec go test -count=1 "$@" .
    ;;
  template|deploy)
    exec go run . "$cmd" "$@"
    ;;
  *)
    echo "usage: $0 test [BINARY] [go test flags] | template [flags] | deploy" >&2
    exit 2
    ;;
esac
