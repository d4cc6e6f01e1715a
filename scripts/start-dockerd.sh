#!/usr/bin/env bash
# Starts a Docker daemon without a bridge network (this machine reaches no
# registry and the tests only use --network none or host), unless one answers
# already. Idempotent.
set -euo pipefail
if docker info >/dev/null 2>&1; then
  exit 0
fi
command -v dockerd >/dev/null || { echo "start-dockerd: dockerd missing; run scripts/bootstrap.sh" >&2; exit 69; }
nohup dockerd --bridge=none --iptables=false --ip6tables=false >/var/log/forge-dockerd.log 2>&1 &
for _ in $(seq 1 60); do
  if docker info >/dev/null 2>&1; then
    exit 0
  fi
  sleep 0.5
done
echo "start-dockerd: dockerd did not answer within 30 s; see /var/log/forge-dockerd.log" >&2
exit 69
