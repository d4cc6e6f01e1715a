#include "sandbox/display.h"

#include <charconv>

#include <fmt/format.h>

namespace forge::sandbox {
namespace {

bool ValidDepth(int depth) {
  return depth == 8 || depth == 15 || depth == 16 || depth == 24 || depth == 30;
}

Status CheckDisplay(const Display& display, std::string_view what) {
  if (display.width < 1 || display.width > 32767 || display.height < 1 || display.height > 32767) {
    return Status::InvalidArgument(fmt::format("{}: width and height must be 1..32767", what));
  }
  if (!ValidDepth(display.depth)) {
    return Status::InvalidArgument(fmt::format("{}: depth must be 8, 15, 16, 24 or 30, not {}", what, display.depth));
  }
  return Status::Ok();
}

}  // namespace

std::string Display::ToString() const { return fmt::format("{}x{}x{}", width, height, depth); }

Result<Display> ParseDisplay(std::string_view text) {
  const std::string what = fmt::format("display '{}'", text);
  int parts[3] = {0, 0, 24};
  size_t count = 0;
  const char* p = text.data();
  const char* end = text.data() + text.size();
  bool dangling_x = false;  // "640x480x": an 'x' with no number after it
  while (count < 3) {
    auto [next, ec] = std::from_chars(p, end, parts[count]);
    if (ec != std::errc() || next == p) break;
    ++count;
    p = next;
    dangling_x = false;
    if (p == end || *p != 'x') break;
    ++p;
    dangling_x = true;
  }
  if (p != end || dangling_x || count < 2) {
    return Status::InvalidArgument(what + ": expected WIDTHxHEIGHT or WIDTHxHEIGHTxDEPTH (1280x800x24)");
  }
  Display display{parts[0], parts[1], parts[2]};
  FORGE_RETURN_IF_ERROR(CheckDisplay(display, what));
  return display;
}

Result<Display> DisplayFromJson(const nlohmann::json& value) {
  if (value.is_string()) return ParseDisplay(value.get<std::string>());
  if (!value.is_object()) {
    return Status::InvalidArgument("display: expected \"WxHxD\" or {\"width\", \"height\", \"depth\"}");
  }
  Display display;
  for (auto [key, into] : {std::pair{"width", &display.width}, std::pair{"height", &display.height},
                           std::pair{"depth", &display.depth}}) {
    if (!value.contains(key)) {
      if (std::string_view(key) == "depth") continue;
      return Status::InvalidArgument(std::string("display: missing ") + key);
    }
    if (!value[key].is_number_integer()) return Status::InvalidArgument(std::string("display: ") + key + ": expected an integer");
    *into = value[key].get<int>();
  }
  FORGE_RETURN_IF_ERROR(CheckDisplay(display, "display"));
  return display;
}

std::vector<std::string> WithDisplay(const Display& display, const std::vector<std::string>& argv) {
  const std::string fail = " >&2; exit " + std::to_string(kDisplaySetupExit);
  // Xvfb writes its display number to -displayfd once it accepts clients; a
  // fifo hands it over with no polling, and an Xvfb that dies first closes
  // the fifo, so `read` ends empty instead of waiting forever.
  std::string script =
      "if ! command -v Xvfb >/dev/null 2>&1; then echo \"forge-display: no Xvfb on PATH ($PATH)\"" +
      fail + "; fi\n"
      "forge_x=${TMPDIR:-/tmp}/forge-display.$$\n"
      "rm -rf \"$forge_x\"\n"
      "if ! { mkdir -p \"$forge_x\" && mkfifo \"$forge_x/ready\"; }; then "
      "echo \"forge-display: cannot create $forge_x/ready\"" + fail + "; fi\n"
      "Xvfb -displayfd 3 -screen 0 " + display.ToString() + " -nolisten tcp "
      "3>\"$forge_x/ready\" </dev/null >/dev/null 2>\"$forge_x/log\" &\n"
      "forge_xvfb=$!\n"
      "forge_display=\n"
      "read forge_display <\"$forge_x/ready\"\n"
      "if [ -z \"$forge_display\" ]; then\n"
      "  wait $forge_xvfb; forge_status=$?\n"
      "  echo \"forge-display: Xvfb did not start (exit $forge_status): "
      "$(tail -n 3 \"$forge_x/log\" 2>/dev/null | tr '\\n' ' ')\" >&2\n"
      "  rm -rf \"$forge_x\"; exit " + std::to_string(kDisplaySetupExit) + "\n"
      "fi\n"
      "export DISPLAY=\":$forge_display\"\n"
      "\"$@\"\n"
      "forge_status=$?\n"
      "kill $forge_xvfb 2>/dev/null; wait $forge_xvfb 2>/dev/null\n"
      "rm -rf \"$forge_x\"\n"
      // The local backend tells a CPU-limit kill (SIGXCPU) from the harness's
      // own exit status by the signal; pass that one on.
      "[ $forge_status -eq 152 ] && kill -XCPU $$\n"
      "exit $forge_status\n";
  std::vector<std::string> wrapped = {"/bin/sh", "-c", std::move(script), "forge-display"};
  wrapped.insert(wrapped.end(), argv.begin(), argv.end());
  return wrapped;
}

std::optional<DisplayFailure> DisplayFailed(const ExecResult& result) {
  if (result.timed_out || result.exit_code != kDisplaySetupExit) return std::nullopt;
  const std::string& err = result.stderr_data;
  size_t at = err.rfind(std::string(kDisplayMarker));
  // Only a marker at the start of a line: the harness's output cannot be
  // mistaken for it halfway through a line.
  while (at != std::string::npos && at != 0 && err[at - 1] != '\n') {
    at = err.rfind(std::string(kDisplayMarker), at - 1);
  }
  if (at == std::string::npos) return std::nullopt;
  DisplayFailure failure;
  size_t start = at + kDisplayMarker.size();
  size_t end = err.find('\n', start);
  failure.detail = err.substr(start, end == std::string::npos ? std::string::npos : end - start);
  failure.missing_xvfb = failure.detail.rfind("no Xvfb", 0) == 0;
  return failure;
}

}  // namespace forge::sandbox
