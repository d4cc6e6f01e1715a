# Sourced first by every real-harness test: re-runs the test inside a fresh
# network namespace whose only interface is loopback, so the network rule
# (tests reach 127.0.0.0/8 and nothing else) is enforced rather than
# configured. A harness that tried to phone home (telemetry, update checks,
# a model catalog) fails to connect instead of leaking. Everything the test
# starts (fake upstream, forge-proxy, forge-launch's sandbox, the harness)
# runs inside the namespace with it.
#
# Without the privilege to make one (unshare needs root or user namespaces)
# the test fails, unless FORGE_HARNESS_HOST_NETWORK=1 says running on the
# host's network is acceptable.
if [[ -z "${FORGE_HARNESS_NETNS:-}" ]]; then
  if unshare -n true 2>/dev/null && command -v ip >/dev/null; then
    # $0 is the test script itself (this file is sourced).
    exec env FORGE_HARNESS_NETNS=loopback-only unshare -n \
      bash -c 'ip link set lo up && exec bash "$0" "$@"' "$0" "$@"
  fi
  if [[ "${FORGE_HARNESS_HOST_NETWORK:-}" != 1 ]]; then
    echo "FAIL: cannot make a loopback-only network namespace (unshare -n and ip are needed, as root);" \
      "set FORGE_HARNESS_HOST_NETWORK=1 to run this harness on the host's network" >&2
    exit 1
  fi
  FORGE_HARNESS_NETNS=host
fi
if [[ "$FORGE_HARNESS_NETNS" == loopback-only ]] && [[ "$(ip -o link show | awk -F': ' '{print $2}')" != lo ]]; then
  echo "FAIL: the test's network namespace has interfaces besides loopback: $(ip -o link show)" >&2
  exit 1
fi
echo "network: $FORGE_HARNESS_NETNS"
