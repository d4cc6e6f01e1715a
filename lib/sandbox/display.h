// A virtual X display for GUI tasks. The harness's argv is wrapped in a
// small /bin/sh script that starts Xvfb, waits until it accepts connections,
// exports DISPLAY, runs the harness and stops Xvfb when the harness ends.
// Wrapping the argv is the one place every sandbox shape shares: the one-shot
// script, the exec'd sandbox (docker, k8s) and the local backend all run the
// same ExecRequest, so they all start the display the same way.
//
// Xvfb comes from the sandbox (the image, or the host on the local backend):
// nothing is installed when a rollout starts. Xvfb picks its own display
// number (-displayfd), the first free one, so rollouts sharing a /tmp or a
// network namespace (the local backend, docker with host networking) never
// clash.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "sandbox/sandbox.h"

namespace forge::sandbox {

struct Display {
  int width = 1280;
  int height = 800;
  int depth = 24;
  std::string ToString() const;  // "1280x800x24"
};

// "1280x800" or "1280x800x24" (depth 8, 15, 16, 24 or 30: what Xvfb accepts).
Result<Display> ParseDisplay(std::string_view text);
// A task's "display": that string, or {"width": .., "height": .., "depth": ..}
// with depth optional (24).
Result<Display> DisplayFromJson(const nlohmann::json& value);

// argv run with a display: /bin/sh -c <script> forge-display argv...
std::vector<std::string> WithDisplay(const Display& display, const std::vector<std::string>& argv);

// The wrapper's exit status when the display did not come up; its stderr then
// has a line starting with kDisplayMarker. The harness never ran.
inline constexpr int kDisplaySetupExit = 197;
inline constexpr std::string_view kDisplayMarker = "forge-display: ";

struct DisplayFailure {
  bool missing_xvfb = false;  // no Xvfb on the sandbox's PATH
  std::string detail;         // the wrapper's own line, without the marker
};

// Why the display did not come up, when that is what ended this exec.
std::optional<DisplayFailure> DisplayFailed(const ExecResult& result);

}  // namespace forge::sandbox
