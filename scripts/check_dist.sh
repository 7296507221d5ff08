#!/usr/bin/env bash
# Checks a release tarball of make_dist.sh: every file a user of the tarball
# is told to use (README.md "Install", docs/usage.md) is in it. Prints one
# line per missing entry and exits 1; exits 0 when all are there.
# Usage: check_dist.sh TARBALL, or check_dist.sh --list (the entries checked).
set -euo pipefail
required=(
  VERSION README.md
  bin/xpu_timer_supervisor bin/xpu_timer_stack bin/xpu_timer_stacktrace_viewer
  bin/xpu_timer_gen_trace_timeline bin/xpu_timer_slow_replay
  lib/libxpu_timer_inject.so
  share/xpu_timer/plugin_host.py share/xpu_timer/describe_hang.py
  docs/quickstart.md docs/architecture.md docs/usage.md docs/metrics.md
  deploy/prometheus/prometheus.yml deploy/prometheus/scrape-kubernetes.yml
  deploy/prometheus/xpu_timer_alerts.yml deploy/grafana/xpu_timer_dashboard.json
  deploy/kubernetes/xpu-timer-pytorch-job.yaml deploy/kubernetes/README.md
)
if [ "${1:-}" = --list ]; then printf '%s\n' "${required[@]}"; exit 0; fi
tarball=${1:?usage: check_dist.sh TARBALL}
listing=$(tar -tzf "$tarball") || { echo "check_dist: cannot list $tarball" >&2; exit 1; }
top=${listing%%/*}  # the tarball's one folder
missing=0
for f in "${required[@]}"; do
  if ! grep -qxF "$top/$f" <<<"$listing"; then
    echo "check_dist: $tarball lacks $f" >&2
    missing=1
  fi
done
exit $missing
