#!/usr/bin/env bash
# The Kubernetes manifests in deploy/kubernetes against the schemas of a
# current Kubernetes version, strictly (unknown fields refused), with
# kubernetes-validate from PyPI. The Prometheus Operator's kinds
# (ServiceMonitor, PrometheusRule) have no schema there: the metrics they name
# are checked against the binary by crates/switchyard/tests/deploy_artifacts.rs.
set -euo pipefail
cd "$(dirname "$0")/.."
version="${KUBERNETES_VERSION:-1.34.0}"
if ! command -v kubernetes-validate >/dev/null 2>&1; then
  python3 -m pip install --quiet --disable-pip-version-check 'kubernetes-validate>=1.34'
fi
kubernetes-validate --strict --quiet -k "$version" deploy/kubernetes/*.yaml
echo "deploy/kubernetes: valid against Kubernetes $version"
