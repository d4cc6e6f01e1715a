// forge-box (sandbox/box_protocol.h) from the library's side: the argv that
// runs its subcommands, and what its mark line says.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "sandbox/box_protocol.h"

namespace forge::sandbox {

// The moment a harness started and the processes alive then (forge-box
// mark), as forge-launch records it ("baseline" in a rollout record) and
// forge-verify reads it: what exists then is the task's environment.
struct Baseline {
  int64_t t0_ns = 0;    // CLOCK_REALTIME_COARSE
  int64_t boot_ns = 0;  // CLOCK_BOOTTIME, at the same moment
  std::vector<std::pair<int64_t, int64_t>> processes;  // pid, start (clock ticks since boot)

  nlohmann::json ToJson() const;
  static Result<Baseline> FromJson(const nlohmann::json& json);
  // "PID:START,..." as forge-box sweep --keep takes it.
  std::string KeepList() const;
};

// argv run as: forge-box mark -- argv (the box at its sandbox path).
std::vector<std::string> WithMark(const std::vector<std::string>& argv);

// Finds the mark line (the first line of stderr starting with kMarkTag),
// removes it from stderr and returns what it says; nullopt when there is
// none (the harness's wrapper stopped before the mark, or no box).
std::optional<Baseline> TakeMark(std::string* stderr_data);

// PID 1 of a held sandbox: the box's keep-alive for `seconds`.
std::vector<std::string> KeepAliveArgv(int64_t seconds);

// A timer that runs nothing from the image: forge-box sleep `seconds`.
std::vector<std::string> SleepArgv(int64_t seconds);

}  // namespace forge::sandbox
