# Sandboxes of the end-to-end tests' own runs. Tests share one Docker engine
# (and may run beside a user's forge), so each removes only the containers
# whose forge.run label starts with its own run prefix.

# remove_run_containers PREFIX
remove_run_containers() {
  local prefix=$1 c
  for c in $(docker ps -aq --filter "label=forge.managed=1"); do
    case "$(docker inspect -f '{{index .Config.Labels "forge.run"}}' "$c" 2>/dev/null)" in
      "$prefix"*) docker rm -f "$c" >/dev/null 2>&1 || true ;;
    esac
  done
}
