# Debian's docker-registry on 127.0.0.1 for end-to-end tests, after
# `source "$FORGE_SRC/tests/support/e2e.sh"` (which sets WORK), with an array
# `pids` the caller kills on exit.
#
#   registry_or_skip NAME        exits 77 (SKIP) when docker-registry is not installed
#   start_registry NAME PORT [EXTRA_YAML] [HTTP_YAML]
#                                serves 127.0.0.1:PORT, storing under $WORK/NAME, every
#                                request logged (level info) to $WORK/NAME.log; EXTRA_YAML
#                                goes under the top level (auth:, storage's maintenance:
#                                indented by two), HTTP_YAML under http: (tls:, indented by
#                                two). Returns once it answers (any status: one with
#                                htpasswd says 401, one with TLS asked over HTTP 400), 1 if
#                                it never does.
#   start_private_registry NAME PORT [HTTP_YAML]
#                                start_registry with htpasswd basic auth for robot:s3cret,
#                                and docker configs with those credentials for it in
#                                $WORK/login/config.json, with robot:wrong in $WORK/wrong/
#   drop_registry_images PORT RUN...
#                                removes the engine's images of 127.0.0.1:PORT and those
#                                built for the runs (label forge.run)
#   make_built_task DIR WORD     a Harbor task in DIR whose environment/Dockerfile (FROM
#                                forge-busybox) writes WORD-$$ to /etc/built-for, and whose
#                                test.sh gives reward 1
#   free_port                    a TCP port free on 127.0.0.1 now

registry_or_skip() {
  [ -x /usr/bin/docker-registry ] && return 0
  echo "SKIP: $1: no docker-registry (scripts/bootstrap.sh installs it)" >&2
  exit 77
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

start_registry() {
  printf 'version: 0.1\nlog:\n  level: info\nstorage:\n  filesystem:\n    rootdirectory: %s\n%s\nhttp:\n  addr: 127.0.0.1:%s\n%s\n' \
    "$WORK/$1" "${3:-}" "$2" "${4:-}" >"$WORK/$1.yml"
  /usr/bin/docker-registry serve "$WORK/$1.yml" >"$WORK/$1.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$2/v2/")" != 000 ] && return 0
    sleep 0.1
  done
  return 1
}

start_private_registry() {
  python3 -W ignore -c 'import crypt; print("robot:" + crypt.crypt("s3cret", crypt.mksalt(crypt.METHOD_BLOWFISH)))' \
    >"$WORK/$1.htpasswd"
  mkdir -p "$WORK/login" "$WORK/wrong"
  printf '{"auths":{"127.0.0.1:%s":{"auth":"%s"}}}' "$2" "$(printf robot:s3cret | base64)" >"$WORK/login/config.json"
  printf '{"auths":{"127.0.0.1:%s":{"auth":"%s"}}}' "$2" "$(printf robot:wrong | base64)" >"$WORK/wrong/config.json"
  start_registry "$1" "$2" "auth:
  htpasswd:
    realm: forge-e2e
    path: $WORK/$1.htpasswd" "${3:-}"
}

drop_registry_images() {
  local port=$1 r
  shift
  docker image rm -f $(docker images --format '{{.Repository}}:{{.Tag}}' | grep "^127.0.0.1:$port/") \
    $(docker images --digests --format '{{.Repository}}@{{.Digest}}' | grep "^127.0.0.1:$port/") \
    $(for r in "$@"; do docker images -q --filter "label=forge.run=$r"; done) >/dev/null 2>&1
}

make_built_task() {
  mkdir -p "$1/environment" "$1/tests"
  printf 'FROM forge-busybox:latest\nRUN echo %s-%s > /etc/built-for\n' "$2" "$$" >"$1/environment/Dockerfile"
  echo 'Say what you were built from.' >"$1/instruction.md"
  : >"$1/task.toml"
  printf '#!/bin/sh\necho 1 > /logs/verifier/reward.txt\n' >"$1/tests/test.sh"
}
