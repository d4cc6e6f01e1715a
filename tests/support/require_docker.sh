# require_docker [WHAT]: a test (or its part WHAT) that needs the Docker
# engine. Without one it ends as a skip (exit 77, which ctest reports as a
# skip), never as a pass or a failure of forge; with FORGE_REQUIRE_DOCKER set
# (.ci/run sets it, after starting dockerd) a missing engine is a failure, so
# CI skips none.
require_docker() {
  docker info >/dev/null 2>&1 && return 0
  if [ -n "${FORGE_REQUIRE_DOCKER:-}" ]; then
    echo "FAIL: ${1:-this test} needs the Docker engine, and FORGE_REQUIRE_DOCKER is set" >&2
    exit 1
  fi
  echo "SKIP: ${1:-this test} needs the Docker engine (scripts/start-dockerd.sh starts one)"
  exit 77
}
