#!/bin/sh
# Removes the plain-manifest install. The webhook configurations go first, so no request is ever
# sent to a webhook that is shutting down.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
KUBECTL=${KUBECTL:-kubectl}
$KUBECTL delete --ignore-not-found validatingwebhookconfiguration/gpu-admission mutatingwebhookconfiguration/gpu-admission
$KUBECTL delete --ignore-not-found -f "$here/gpu-admission.yaml" -f "$here/policy-configmap.yaml"
$KUBECTL -n gpu-admission delete --ignore-not-found secret/gpu-admission-tls
$KUBECTL delete --ignore-not-found -f "$here/namespace.yaml"
