#!/bin/sh
# Installs gpu-admission from the plain manifests in this directory (no Helm), in an order that
# never leaves the cluster with a registered webhook that is not ready:
#   1. namespace, 2. TLS Secret (from `gpu-admission certs`, kept if it already exists),
#   3. policy ConfigMap, 4. webhook Deployment/Service/PDB/NetworkPolicy, 5. wait until ready,
#   6. the webhook configurations, with the CA bundle filled in.
#
# Environment:
#   GPU_ADMISSION    the gpu-admission binary used for `certs` and `policy lint` (default: from PATH)
#   IMAGE            image to run (default: the image running now; gpu-admission:0.1.0 on a new
#                    install)
#   POLICY           a policy file to install (linted first); without it an existing policy is kept
#                    and a new install gets the built-in default policy
#   ENFORCEMENT      audit, warn or enforce: serve --enforcement (default: keep the current one;
#                    audit on a new install, which observes: nothing is denied or patched)
#   FAILURE_POLICY   Fail or Ignore (default: keep the current one; on a new install Fail under
#                    ENFORCEMENT=enforce, else Ignore)
#   ROTATE=1         issue a new certificate even if the Secret exists
#   DAYS             certificate validity in days, passed to `gpu-admission certs --days`
#   KUBECTL          kubectl command (default: kubectl), e.g. "kubectl --context prod"
set -eu

here=$(cd "$(dirname "$0")" && pwd)
NS=gpu-admission
SVC=gpu-admission
SECRET=gpu-admission-tls
CONFIGMAP=gpu-admission-policy
BIN=${GPU_ADMISSION:-gpu-admission}
KUBECTL=${KUBECTL:-kubectl}
# Server-side apply: no last-applied annotation holding the private key or a large policy.
kapply() { $KUBECTL apply --server-side --force-conflicts --field-manager=gpu-admission-install "$@"; }
if [ -z "${ENFORCEMENT:-}" ]; then
  # Keep what runs now (a re-run must not start enforcing); audit on a new install.
  ENFORCEMENT=$($KUBECTL -n "$NS" get deployment "$SVC" \
    -o 'jsonpath={range .spec.template.spec.containers[0].args[*]}{@}{"\n"}{end}' 2>/dev/null |
    awk 'prev == "--enforcement" { print; exit } { prev = $0 }' || true)
  ENFORCEMENT=${ENFORCEMENT:-audit}
fi
case "$ENFORCEMENT" in
  audit|warn|enforce) ;;
  *) echo "ENFORCEMENT must be audit, warn or enforce" >&2; exit 2 ;;
esac
if [ -z "${FAILURE_POLICY:-}" ]; then
  # Keep what is registered now (a re-run must not flip Ignore to Fail); on a new install it
  # follows the enforcement, as the chart's default does.
  FAILURE_POLICY=$($KUBECTL get validatingwebhookconfiguration "$SVC" -o 'jsonpath={.webhooks[0].failurePolicy}' 2>/dev/null || true)
  if [ -z "$FAILURE_POLICY" ]; then
    FAILURE_POLICY=Ignore
    [ "$ENFORCEMENT" = enforce ] && FAILURE_POLICY=Fail
  fi
fi
DEFAULT_IMAGE='"gpu-admission:0.1.0"'

case "$FAILURE_POLICY" in
  Fail|Ignore) ;;
  *) echo "FAILURE_POLICY must be Fail or Ignore" >&2; exit 2 ;;
esac
if ! command -v "$BIN" >/dev/null 2>&1; then
  echo "gpu-admission binary not found: build it (cmake -B build && cmake --build build) and set GPU_ADMISSION=build/gpu-admission" >&2
  exit 2
fi
if ! grep -q "image: $DEFAULT_IMAGE" "$here/gpu-admission.yaml"; then
  echo "gpu-admission.yaml does not contain image: $DEFAULT_IMAGE; update DEFAULT_IMAGE in $0" >&2
  exit 2
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

# Keep the running image unless IMAGE says otherwise (a re-run must not roll back the image).
if [ -z "${IMAGE:-}" ]; then
  IMAGE=$($KUBECTL -n "$NS" get deployment "$SVC" -o 'jsonpath={.spec.template.spec.containers[0].image}' 2>/dev/null || true)
fi

apply_webhooks() {
  sed -e "s|\${CA_BUNDLE}|$CA_BUNDLE|" -e "s/failurePolicy: Fail$/failurePolicy: $FAILURE_POLICY/" \
    -e "s/failurePolicy: Ignore$/failurePolicy: $FAILURE_POLICY/" \
    "$here/webhooks.yaml" | kapply -f -
}

echo "==> namespace $NS"
kapply -f "$here/namespace.yaml"

echo "==> TLS Secret $NS/$SECRET"
if [ "${ROTATE:-0}" != 1 ] && $KUBECTL -n "$NS" get secret "$SECRET" >/dev/null 2>&1; then
  echo "    keeping the existing Secret (ROTATE=1 issues a new one)"
  CA_BUNDLE=$($KUBECTL -n "$NS" get secret "$SECRET" -o 'jsonpath={.data.ca\.crt}')
  if [ -z "$CA_BUNDLE" ]; then
    echo "Secret $NS/$SECRET has no ca.crt; recreate it with ROTATE=1" >&2
    exit 1
  fi
else
  # shellcheck disable=SC2086
  "$BIN" certs --service "$SVC" --namespace "$NS" --out-dir "$tmp/certs" ${DAYS:+--days "$DAYS"} >/dev/null
  CA_BUNDLE=$(base64 < "$tmp/certs/ca.crt" | tr -d '\n')
  if old=$($KUBECTL get validatingwebhookconfiguration "$SVC" -o 'jsonpath={.webhooks[0].clientConfig.caBundle}' 2>/dev/null) && [ -n "$old" ]; then
    # Rotation: make the API server trust the new CA as well as the old one before the webhook
    # pods see the new certificate (they reload it within about a minute). The next run of this
    # script without ROTATE drops the old CA.
    CA_BUNDLE=$( { cat "$tmp/certs/ca.crt"; echo "$old" | base64 -d; } | base64 | tr -d '\n')
    echo "    trusting the new and the old CA while the certificate changes"
    apply_webhooks
  fi
  $KUBECTL -n "$NS" create secret generic "$SECRET" --type=kubernetes.io/tls \
    --from-file=tls.crt="$tmp/certs/tls.crt" --from-file=tls.key="$tmp/certs/tls.key" \
    --from-file=ca.crt="$tmp/certs/ca.crt" --dry-run=client -o yaml | kapply -f -
fi

echo "==> policy ConfigMap $NS/$CONFIGMAP"
if [ -n "${POLICY:-}" ]; then
  "$BIN" policy lint "$POLICY"
  $KUBECTL -n "$NS" create configmap "$CONFIGMAP" --from-file=policy.yaml="$POLICY" \
    --dry-run=client -o yaml | kapply -f -
elif $KUBECTL -n "$NS" get configmap "$CONFIGMAP" >/dev/null 2>&1; then
  echo "    keeping the existing policy (set POLICY=FILE to replace it)"
else
  kapply -f "$here/policy-configmap.yaml"
fi

echo "==> webhook deployment${IMAGE:+ (image $IMAGE)} (enforcement $ENFORCEMENT)"
sed -e "s|image: $DEFAULT_IMAGE|image: \"${IMAGE:-gpu-admission:0.1.0}\"|" \
  -e "/- --enforcement$/{n;s/\"[a-z]*\"/\"$ENFORCEMENT\"/;}" "$here/gpu-admission.yaml" | kapply -f -
$KUBECTL -n "$NS" rollout status "deployment/$SVC" --timeout=300s

echo "==> webhook configurations (failurePolicy $FAILURE_POLICY)"
apply_webhooks

# The probe's answer depends on the mode (docs/deployment.md, "Check the installation"): namespace
# default is in no tenant, so it has the policy's spec.enforcement under ENFORCEMENT.
echo "gpu-admission is installed (enforcement $ENFORCEMENT). Probe it (a server-side dry run, nothing is created):"
echo "  $KUBECTL run gpu-admission-probe --image=busybox --privileged --dry-run=server -n default -- true"
case "$ENFORCEMENT" in
  enforce) echo 'It is refused: ... denied the request: [privileged] container "gpu-admission-probe" is privileged' ;;
  warn) echo 'It is created (dry run) with: Warning: [privileged] would deny: container "gpu-admission-probe" is privileged' ;;
  *) echo "It is created (dry run) and nothing is shown: under audit only the webhook's log has it, with \"wouldDeny\":true:"
     echo "  $KUBECTL -n $NS logs -l app.kubernetes.io/name=gpu-admission --tail=-1 --since=5m | grep '\"name\":\"gpu-admission-probe\"'" ;;
esac
echo "(if the policy's privileged rule denies and its spec.enforcement is not weaker than $ENFORCEMENT)"
