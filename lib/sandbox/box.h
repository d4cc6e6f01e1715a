// forge-box (sandbox/box_protocol.h) from the library's side: the argv that
// runs its subcommands, and what its mark line says.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
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

// What forge-box supervise said when its command ended (box_protocol.h).
struct SuperviseReport {
  int exit_code = -1;
  bool timed_out = false;
  bool truncated = false;
  size_t stdout_bytes = 0;
  size_t stderr_bytes = 0;
};

// One status line (a terminationMessage), tag included, a final newline
// allowed; nullopt when it is not one.
std::optional<SuperviseReport> ParseSuperviseLine(std::string_view line);

// From a supervisor's log: the last status line that the output after it
// matches (its stdout, then its stderr, to the end), so nothing written
// before it can pass for it. Fills out and err.
std::optional<SuperviseReport> TakeSuperviseOutput(std::string_view log, std::string* out, std::string* err);

// "TAG key=N key=N ...", a final newline allowed: the numbers by key;
// nullopt when the line is not of that form.
std::optional<std::map<std::string, long long>> ParseStatusLine(std::string_view line, std::string_view tag);

// What forge-box verify said (box_protocol.h).
struct VerifyReport {
  int exit_code = -1;
  bool timed_out = false;
  bool truncated = false;
  std::string stdout_data, stderr_data;
  std::optional<std::string> reward_txt, reward_json;  // nullopt: missing, or not a regular file
  std::optional<std::string> evidence;  // the tracer's report (verify/tracer.h); nullopt: not traced
};

// From forge-box verify's stdout: its status line (the first line with the
// tag) and the bytes it counts, which must be all that follows; *before gets
// what came first (the sweep's lines). nullopt when there is no such line.
std::optional<VerifyReport> TakeVerifyReport(std::string_view out, std::string* before);

// forge-box verify's input archive: the command, its environment and (when
// tests_dir is not empty) that host directory's contents as tests/.
Result<std::string> VerifyInput(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                                const std::string& tests_dir);

// PID 1 of a held sandbox: the box's keep-alive for `seconds`.
std::vector<std::string> KeepAliveArgv(int64_t seconds);

// A timer that runs nothing from the image: forge-box sleep `seconds`.
std::vector<std::string> SleepArgv(int64_t seconds);

}  // namespace forge::sandbox
