#include "sandbox/box.h"

#include <cstdlib>
#include <cstring>

#include "sandbox/tar.h"

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

std::optional<std::map<std::string, long long>> ParseStatusLine(std::string_view line, std::string_view tag) {
  if (line.substr(0, tag.size()) != tag) return std::nullopt;
  line.remove_prefix(tag.size());
  if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
  std::map<std::string, long long> fields;
  while (!line.empty()) {
    const size_t space = line.find(' ');
    const std::string_view field = line.substr(0, space);
    line = space == std::string_view::npos ? std::string_view() : line.substr(space + 1);
    const size_t eq = field.find('=');
    if (eq == std::string_view::npos) return std::nullopt;
    const std::string value(field.substr(eq + 1));
    char* end = nullptr;
    const long long number = std::strtoll(value.c_str(), &end, 10);
    if (value.empty() || *end != '\0') return std::nullopt;
    fields[std::string(field.substr(0, eq))] = number;
  }
  return fields;
}

std::optional<SuperviseReport> ParseSuperviseLine(std::string_view line) {
  auto fields = ParseStatusLine(line, kSuperviseTag);
  if (!fields) return std::nullopt;
  const char* keys[] = {"exit", "timed_out", "truncated", "stdout", "stderr"};
  for (const char* key : keys) {
    auto it = fields->find(key);
    if (it == fields->end() || it->second < 0) return std::nullopt;
  }
  SuperviseReport report;
  report.exit_code = static_cast<int>((*fields)["exit"]);
  report.timed_out = (*fields)["timed_out"] != 0;
  report.truncated = (*fields)["truncated"] != 0;
  report.stdout_bytes = static_cast<size_t>((*fields)["stdout"]);
  report.stderr_bytes = static_cast<size_t>((*fields)["stderr"]);
  return report;
}

std::optional<SuperviseReport> TakeSuperviseOutput(std::string_view log, std::string* out, std::string* err) {
  const std::string tag = kSuperviseTag;
  for (size_t at = log.rfind(tag); at != std::string_view::npos; at = at == 0 ? std::string_view::npos : log.rfind(tag, at - 1)) {
    if (at > 0 && log[at - 1] != '\n') continue;
    const size_t eol = log.find('\n', at);
    if (eol == std::string_view::npos) continue;
    auto report = ParseSuperviseLine(log.substr(at, eol + 1 - at));
    if (!report || log.size() - (eol + 1) != report->stdout_bytes + report->stderr_bytes) continue;
    *out = std::string(log.substr(eol + 1, report->stdout_bytes));
    *err = std::string(log.substr(eol + 1 + report->stdout_bytes));
    return report;
  }
  return std::nullopt;
}

std::optional<VerifyReport> TakeVerifyReport(std::string_view out, std::string* before) {
  const std::string tag = kVerifyTag;
  size_t at = out.substr(0, tag.size()) == tag ? 0 : out.find("\n" + tag);
  if (at == std::string_view::npos) return std::nullopt;
  if (at > 0) ++at;
  const size_t eol = out.find('\n', at);
  if (eol == std::string_view::npos) return std::nullopt;
  auto fields = ParseStatusLine(out.substr(at, eol + 1 - at), tag);
  if (!fields) return std::nullopt;
  long long sizes[5] = {0, 0, 0, 0, -1};
  const char* keys[] = {"stdout", "stderr", "reward.txt", "reward.json", "evidence"};
  long long total = 0;
  for (int i = 0; i < 5; ++i) {
    auto it = fields->find(keys[i]);
    if (i == 4 && it == fields->end()) continue;  // a forge-box without a tracer
    if (it == fields->end() || it->second < (i < 2 ? 0 : -1)) return std::nullopt;
    sizes[i] = it->second;
    total += std::max(0LL, it->second);
  }
  if (!fields->count("exit") || !fields->count("timed_out") || !fields->count("truncated") ||
      static_cast<long long>(out.size() - (eol + 1)) != total) {
    return std::nullopt;
  }
  VerifyReport report;
  report.exit_code = static_cast<int>((*fields)["exit"]);
  report.timed_out = (*fields)["timed_out"] != 0;
  report.truncated = (*fields)["truncated"] != 0;
  std::string_view rest = out.substr(eol + 1);
  std::string* parts[] = {&report.stdout_data, &report.stderr_data};
  std::optional<std::string>* optional_parts[] = {&report.reward_txt, &report.reward_json, &report.evidence};
  for (int i = 0; i < 5; ++i) {
    const size_t n = static_cast<size_t>(std::max(0LL, sizes[i]));
    if (i < 2) *parts[i] = std::string(rest.substr(0, n));
    else if (sizes[i] >= 0) *optional_parts[i - 2] = std::string(rest.substr(0, n));
    rest.remove_prefix(n);
  }
  if (before != nullptr) *before = std::string(out.substr(0, at));
  return report;
}

Result<std::string> VerifyInput(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                                const std::string& tests_dir) {
  TarWriter tar;
  std::string list;
  for (const auto& a : argv) list.append(a).push_back('\0');
  tar.AddFile(kVerifyArgv, list, 0600);
  list.clear();
  for (const auto& [k, v] : env) list.append(k + "=" + v).push_back('\0');
  tar.AddFile(kVerifyEnv, list, 0600);
  if (!tests_dir.empty()) {
    std::string prefix = kVerifyTests;
    prefix.pop_back();
    FORGE_RETURN_IF_ERROR(AddCopy(tar, tests_dir, prefix));
  }
  return tar.Finish();
}

std::vector<std::string> KeepAliveArgv(int64_t seconds) {
  return {kBoxSandboxPath, "keepalive", std::to_string(std::max<int64_t>(1, seconds))};
}

std::vector<std::string> SleepArgv(int64_t seconds) {
  return {kBoxSandboxPath, "sleep", std::to_string(std::max<int64_t>(0, seconds))};
}

}  // namespace forge::sandbox
