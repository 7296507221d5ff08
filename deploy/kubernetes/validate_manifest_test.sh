#!/usr/bin/env bash
# ctest deploy_kubernetes_manifest_test: xpu-timer-pytorch-job.yaml passes
# validate_manifest.js, and copies of it with one mistake each do not, each
# with the line that names the mistake (so the validator cannot pass by
# checking nothing). Exit 77 (ctest: skipped) when node, ajv or js-yaml is
# missing: scripts/install_deps.sh (run by `make test`) installs them.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
manifest="$here/xpu-timer-pytorch-job.yaml"
prometheus="$root/deploy/prometheus/scrape-kubernetes.yml"

if ! command -v node >/dev/null 2>&1; then
  echo "SKIP: node is not installed (scripts/install_deps.sh installs it with ajv and js-yaml)"
  exit 77
fi
# Global npm packages: where this machine's npm puts them, and the usual places.
NODE_PATH="$( (npm root -g) 2>/dev/null):/usr/local/lib/node_modules:/usr/lib/node_modules${NODE_PATH:+:$NODE_PATH}"
export NODE_PATH

validate() { node "$here/validate_manifest.js" --prometheus-config "$prometheus" "$@"; }

out="$(validate "$manifest" 2>&1)"
rc=$?
if [ "$rc" -eq 77 ]; then
  echo "SKIP: $out"
  exit 77
fi
echo "$out"
if [ "$rc" -ne 0 ]; then
  echo "FAIL: $manifest is not valid (exit $rc)"
  exit 1
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
failures=0
names=()
expects=()
# broken NAME SED_SCRIPT EXPECTED: a copy of the manifest with one mistake,
# which must differ from it; all copies are checked by one validator run
# below (--each: as if each were given alone), each of which must fail with
# exit 1 and print EXPECTED.
broken() {
  local name="$1" script="$2" expected="$3" copy="$tmp/$1.yaml"
  sed "$script" "$manifest" >"$copy"
  if cmp -s "$copy" "$manifest"; then
    echo "FAIL: $name: '$script' changed nothing in the manifest"
    failures=$((failures + 1))
    return
  fi
  names+=("$name")
  expects+=("$expected")
}

# Schema: an unknown field in the training pod (PyTorchJob CRD) and in the
# etcd pod (Kubernetes), a wrong type.
broken unknown_field_in_job 's/terminationGracePeriodSeconds: 60/terminationGracePeriod: 60/' \
  'spec.pytorchReplicaSpecs.Master.template.spec: unknown field "terminationGracePeriod"'
broken unknown_field_in_etcd 's/readinessProbe:/readinesProbe:/' \
  'Deployment xpu-timer-etcd: spec.template.spec.containers[0]: unknown field "readinesProbe"'
broken wrong_type 's/nprocPerNode: "8"/nprocPerNode: 8/' 'spec.nprocPerNode: must be string'
# xpu-timer's parts: the coordinator's Service, the scrape port, an
# environment variable of the command line.
broken coordinator_service 's#etcd://xpu-timer-etcd:2379#etcd://xpu-timer-etc:2379#' \
  '--coordinator host "xpu-timer-etc" names no Service of these files'
broken scrape_port 's#prometheus.io/port: "18888"#prometheus.io/port: "18889"#' \
  'annotation prometheus.io/port is "18889", the supervisor'"'"'s port 18888'
broken supervisor_port 's#--port=18888#--port=18889#' \
  'Prometheus job xpu_timer_k8s scrapes pods annotated xpu-timer/scrape on port 18888, the supervisor listens on 18889'
broken undefined_variable 's#$(PET_NODE_RANK)#$(PET_NODE_RNK)#' \
  'refers to $(PET_NODE_RNK), which is not in the container'"'"'s environment'

copies=()
for name in "${names[@]}"; do copies+=("$tmp/$name.yaml"); done
all="$(validate --each "${copies[@]}" 2>&1)"
for i in "${!names[@]}"; do
  name="${names[$i]}" expected="${expects[$i]}" copy="$tmp/${names[$i]}.yaml"
  # This copy's lines: those after the previous copy's "== ...: exit N".
  got="$(awk -v end="== $copy: exit " 'index($0, end) == 1 { printf "%s", block; print; exit }
    /^== / { block = ""; next } { block = block $0 "\n" }' <<<"$all")"
  if [[ "$got" != *"== $copy: exit 1" ]] || [[ "$got" != *"$expected"* ]]; then
    echo "FAIL: $name: expected exit 1 and '$expected', got:"
    echo "$got"
    failures=$((failures + 1))
    continue
  fi
  echo "ok: $name rejected: $(grep -F -m1 -- "$expected" <<<"$got")"
done

if [ "$failures" -ne 0 ]; then
  echo "FAIL: $failures broken copies were not rejected as expected"
  exit 1
fi
echo "PASS: the manifest is valid and 7 broken copies were rejected"
