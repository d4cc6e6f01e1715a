#include "sandbox/box.h"

#include <cstdlib>
#include <cstring>

namespace forge::sandbox {
namespace {

using Json = nlohmann::json;

// The value of "key=" in a mark line's space-separated fields.
std::optional<std::string> Field(const std::string& line, const std::string& key) {
  size_t at = 0;
  while (at < line.size()) {
    size_t end = line.find(' ', at);
    if (end == std::string::npos) end = line.size();
    if (line.compare(at, key.size() + 1, key + "=") == 0) return line.substr(at + key.size() + 1, end - at - key.size() - 1);
    at = end + 1;
  }
  return std::nullopt;
}

bool ParseInt(const std::string& text, int64_t* out) {
  if (text.empty()) return false;
  char* end = nullptr;
  *out = std::strtoll(text.c_str(), &end, 10);
  return *end == '\0';
}

std::optional<Baseline> ParseMarkLine(const std::string& line) {
  Baseline b;
  auto t0 = Field(line, "t0"), boot = Field(line, "boot"), procs = Field(line, "procs");
  if (!t0 || !boot || !procs || !ParseInt(*t0, &b.t0_ns) || !ParseInt(*boot, &b.boot_ns)) return std::nullopt;
  size_t at = 0;
  while (at < procs->size()) {
    size_t end = procs->find(',', at);
    if (end == std::string::npos) end = procs->size();
    const std::string entry = procs->substr(at, end - at);
    const size_t colon = entry.find(':');
    int64_t pid = 0, start = 0;
    if (colon == std::string::npos || !ParseInt(entry.substr(0, colon), &pid) ||
        !ParseInt(entry.substr(colon + 1), &start)) {
      return std::nullopt;
    }
    b.processes.emplace_back(pid, start);
    at = end + 1;
  }
  return b;
}

}  // namespace

Json Baseline::ToJson() const {
  Json processes_json = Json::array();
  for (const auto& [pid, start] : processes) processes_json.push_back({pid, start});
  return {{"t0_ns", t0_ns}, {"boot_ns", boot_ns}, {"processes", processes_json}};
}

Result<Baseline> Baseline::FromJson(const Json& json) {
  if (!json.is_object()) return Status::InvalidData("baseline: expected an object");
  Baseline b;
  auto number = [&](const char* key, int64_t* out) -> Status {
    auto it = json.find(key);
    if (it == json.end() || !it->is_number_integer()) {
      return Status::InvalidData(std::string("baseline.") + key + ": expected an integer");
    }
    *out = it->get<int64_t>();
    return Status::Ok();
  };
  FORGE_RETURN_IF_ERROR(number("t0_ns", &b.t0_ns));
  FORGE_RETURN_IF_ERROR(number("boot_ns", &b.boot_ns));
  auto processes = json.find("processes");
  if (processes == json.end() || !processes->is_array()) {
    return Status::InvalidData("baseline.processes: expected an array");
  }
  for (const auto& p : *processes) {
    if (!p.is_array() || p.size() != 2 || !p[0].is_number_integer() || !p[1].is_number_integer()) {
      return Status::InvalidData("baseline.processes: expected [pid, start] pairs");
    }
    b.processes.emplace_back(p[0].get<int64_t>(), p[1].get<int64_t>());
  }
  return b;
}

std::string Baseline::KeepList() const {
  std::string text;
  for (const auto& [pid, start] : processes) {
    if (!text.empty()) text += ',';
    text += std::to_string(pid) + ':' + std::to_string(start);
  }
  return text;
}

std::vector<std::string> WithMark(const std::vector<std::string>& argv) {
  std::vector<std::string> wrapped = {kBoxSandboxPath, "mark", "--"};
  wrapped.insert(wrapped.end(), argv.begin(), argv.end());
  return wrapped;
}

std::optional<Baseline> TakeMark(std::string* stderr_data) {
  const std::string tag = kMarkTag;
  size_t at = 0;
  while (at < stderr_data->size()) {
    size_t end = stderr_data->find('\n', at);
    if (end == std::string::npos) end = stderr_data->size();
    if (stderr_data->compare(at, tag.size(), tag) == 0) {
      auto baseline = ParseMarkLine(stderr_data->substr(at + tag.size(), end - at - tag.size()));
      if (baseline) stderr_data->erase(at, std::min(end + 1, stderr_data->size()) - at);
      return baseline;
    }
    at = end + 1;
  }
  return std::nullopt;
}

std::vector<std::string> KeepAliveArgv(int64_t seconds) {
  return {kBoxSandboxPath, "keepalive", std::to_string(std::max<int64_t>(1, seconds))};
}

std::vector<std::string> SleepArgv(int64_t seconds) {
  return {kBoxSandboxPath, "sleep", std::to_string(std::max<int64_t>(0, seconds))};
}

}  // namespace forge::sandbox
