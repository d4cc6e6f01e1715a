#!/bin/sh
# forge's reference ReACT loop, small enough to read in a minute and to run
# in a busybox image: POSIX sh plus wget (or curl). Each turn asks the model
# (OpenAI Chat Completions at $OPENAI_BASE_URL, key $OPENAI_API_KEY) for one
# shell command, runs it in the work directory, and sends back its output.
# The model ends the episode by answering DONE. At most $FORGE_MAX_TURNS turns.
set -u
base="${OPENAI_BASE_URL:?OPENAI_BASE_URL is not set}"
key="${OPENAI_API_KEY:-}"
model="${FORGE_MODEL:-policy}"
turns="${FORGE_MAX_TURNS:-20}"
task="$(cat "${FORGE_INSTRUCTION_FILE:-/forge/instruction.md}")"
scratch="${TMPDIR:-/tmp}/react.$$"
mkdir -p "$scratch"
trap 'rm -rf "$scratch"' EXIT

# JSON string escaping for arbitrary text (command output included).
json() {
  printf '%s' "$1" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/	/\\t/g' -e 's/\r/\\r/g' \
    | awk 'BEGIN{ORS=""} NR>1{print "\\n"} {print}' 
}

post() {  # body file -> response on stdout
  if command -v curl >/dev/null 2>&1; then
    curl -sS -X POST "$base/chat/completions" -H "Content-Type: application/json" \
      -H "Authorization: Bearer $key" --data-binary "@$1"
  else
    wget -q -O - --header "Content-Type: application/json" \
      --header "Authorization: Bearer $key" --post-file "$1" "$base/chat/completions"
  fi
}

# The first choice's message content, unescaped (\n, \t, \", \\).
content() {
  tr -d '\n' | sed -n 's/.*"content"[ ]*:[ ]*"\(\([^"\\]\|\\.\)*\)".*/\1/p' \
    | sed -e 's/\\n/\n/g' -e 's/\\t/	/g' -e 's/\\"/"/g' -e 's/\\\\/\\/g'
}

system="You are an agent in a Linux shell. Reply with exactly one shell command and nothing else. Its output comes back to you. When the task is complete, reply DONE."
messages="{\"role\":\"system\",\"content\":\"$(json "$system")\"},{\"role\":\"user\",\"content\":\"$(json "$task")\"}"
turn=0
while [ "$turn" -lt "$turns" ]; do
  turn=$((turn + 1))
  printf '{"model":"%s","messages":[%s]}' "$model" "$messages" >"$scratch/request.json"
  if ! post "$scratch/request.json" >"$scratch/response.json"; then
    echo "react-agent: model call failed on turn $turn" >&2
    exit 3
  fi
  reply="$(content <"$scratch/response.json")"
  # Strip a ``` fence if the model used one.
  command="$(printf '%s\n' "$reply" | sed -e '/^```/d')"
  messages="$messages,{\"role\":\"assistant\",\"content\":\"$(json "$reply")\"}"
  case "$command" in
    DONE|DONE.|"") echo "react-agent: done after $turn turn(s)"; exit 0 ;;
  esac
  echo "\$ $command"
  output="$( (sh -c "$command" 2>&1; echo "[exit status $?]") | tail -c 16384)"
  printf '%s\n' "$output"
  messages="$messages,{\"role\":\"user\",\"content\":\"$(json "$output")\"}"
done
echo "react-agent: stopped after $turns turns" >&2
exit 4
