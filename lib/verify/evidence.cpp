#include "verify/evidence.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>

namespace forge::verify::evidence {
namespace {

bool Under(std::string_view path, std::string_view dir) {
  if (dir == "/") return !path.empty() && path[0] == '/';
  return path == dir || (path.size() > dir.size() && path.starts_with(dir) && path[dir.size()] == '/');
}

std::string_view Basename(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

std::string_view Dirname(std::string_view path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string_view::npos) return "";
  return slash == 0 ? std::string_view("/") : path.substr(0, slash);
}

std::vector<std::string_view> Components(std::string_view path) {
  std::vector<std::string_view> out;
  size_t at = 0;
  while (at < path.size()) {
    size_t end = path.find('/', at);
    if (end == std::string_view::npos) end = path.size();
    if (end > at) out.push_back(path.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

// Directories holding the system's programs and libraries, where no task's
// working area can be.
constexpr std::array<std::string_view, 22> kSystemDirs = {
    "/bin",     "/sbin",          "/lib",           "/lib32",         "/lib64",  "/libx32", "/usr/bin", "/usr/sbin",
    "/usr/lib", "/usr/lib32",     "/usr/lib64",     "/usr/local/bin", "/usr/local/sbin", "/usr/local/lib",
    "/etc",     "/proc",          "/sys",           "/dev",           "/boot",   "/var/lib", "/tests", "/logs"};

// Read by the loader, by libc's user lookups, by dpkg and apt: they name
// other files (libraries, home directories, shells, packages) that are
// checked when they are opened, and run nothing themselves.
constexpr std::array<std::string_view, 10> kAllowedFiles = {
    "/etc/ld.so.cache",         "/etc/passwd",           "/etc/group",
    "/var/lib/dpkg/status",     "/var/lib/dpkg/status-old", "/var/lib/dpkg/available",
    "/var/lib/dpkg/diversions", "/var/lib/dpkg/statoverride", "/var/lib/dpkg/arch",
    "/var/lib/apt/extended_states"};
// dpkg's per-package data (not its maintainer scripts, which are run).
constexpr std::array<std::string_view, 7> kDpkgInfoData = {".list",    ".md5sums", ".conffiles", ".shlibs",
                                                           ".symbols", ".triggers", ".templates"};
// Entry point groups that only installers read (to write a script, which
// is then a file of its own).
constexpr std::array<std::string_view, 2> kScriptGroups = {"console_scripts", "gui_scripts"};

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// "" when every entry point names a module the image does not have (so
// loading it reads a file of the agent's, which is checked in its turn);
// else why not: naming the image's own code would let the agent choose
// which of the image's modules the verifier loads as a plugin.
std::string EntryPointsCheck(std::string_view text, const Image& image) {
  std::string group;
  size_t at = 0;
  while (at <= text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = Trim(text.substr(at, end - at));
    at = end + 1;
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[' && line.back() == ']') {
      group = std::string(Trim(line.substr(1, line.size() - 2)));
      continue;
    }
    if (std::find(kScriptGroups.begin(), kScriptGroups.end(), group) != kScriptGroups.end()) continue;
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos) continue;
    std::string_view value = Trim(line.substr(eq + 1));
    value = Trim(value.substr(0, std::min(value.find(':'), value.find('['))));
    const std::string top(value.substr(0, value.find('.')));
    if (top.empty() || (image.has_module && image.has_module(top))) {
      return "an entry point the agent wrote (group " + group + ") names the image's module " + std::string(value);
    }
  }
  return "";
}

// The `env` script uv's installer (cargo-dist) writes next to the binaries
// it installs: it only puts that directory first on PATH, and the commands
// then found there are checked when they run.
bool IsInstallerEnvScript(std::string_view text) {
  constexpr std::string_view head =
      "#!/bin/sh\n# add binaries to PATH if they aren't added yet\n"
      "# affix colons on either side of $PATH to simplify matching\ncase \":${PATH}:\" in\n    *:\"";
  constexpr std::string_view middle =
      "\":*)\n        ;;\n    *)\n        # Prepending path in case a system-installed binary needs to be "
      "overridden\n        export PATH=\"";
  constexpr std::string_view tail = ":$PATH\"\n        ;;\nesac\n";
  if (!text.starts_with(head) || !text.ends_with(tail)) return false;
  text.remove_prefix(head.size());
  text.remove_suffix(tail.size());
  const size_t split = text.find(middle);
  if (split == std::string_view::npos) return false;
  const std::string_view dir = text.substr(0, split);
  if (text.substr(split + middle.size()) != dir) return false;
  std::string_view rest = dir.starts_with("$HOME") ? dir.substr(5) : dir;
  return !rest.empty() && std::all_of(rest.begin(), rest.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '/' || c == '.' || c == '_' || c == '-';
  });
}

bool IsModuleFile(std::string_view name) {
  for (std::string_view ext : {".py", ".pyc", ".pyo", ".pyd", ".so"}) {
    if (name.ends_with(ext)) return true;
  }
  return false;
}

bool IsSiteDir(std::string_view name, std::string_view parent) {
  if (name == "site-packages" || name == "dist-packages" || name == "lib-dynload") return true;
  // lib/python3.11, the standard library.
  if (parent != "lib" || !name.starts_with("python") || name.size() == 6) return false;
  return std::all_of(name.begin() + 6, name.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)) || c == '.'; });
}

std::string Stem(std::string_view name) { return std::string(name.substr(0, name.find('.'))); }

}  // namespace

std::string WorkingArea(std::string_view workdir) {
  std::string dir(workdir);
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  if (dir.empty() || dir[0] != '/' || dir == "/") return "";
  const auto parts = Components(dir);
  // Home directories hold the shells' start-up files.
  if (dir == "/root" || (parts.size() <= 2 && parts[0] == "home")) return "";
  for (std::string_view system : kSystemDirs) {
    if (Under(dir, system) || Under(system, dir)) return "";
  }
  return dir;
}

bool InWorkingArea(std::string_view path, std::string_view area) { return !area.empty() && Under(path, area); }

bool IsPythonProgram(std::string_view path) {
  const std::string_view name = Basename(path);
  if (!name.starts_with("python")) return false;
  return std::all_of(name.begin() + 6, name.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)) || c == '.'; });
}

bool IsShellProgram(std::string_view path) {
  const std::string_view name = Basename(path);
  for (std::string_view shell : {"sh", "bash", "dash", "ash", "zsh", "ksh", "mksh"}) {
    if (name == shell) return true;
  }
  return false;
}

std::optional<std::string> AllowlistCheck(std::string_view path, const Image& image) {
  if (std::find(kAllowedFiles.begin(), kAllowedFiles.end(), path) != kAllowedFiles.end()) return "";
  const std::string_view dir = Dirname(path), name = Basename(path);
  if (dir == "/var/lib/dpkg/triggers") return "";
  if (dir == "/var/lib/dpkg/info") {
    for (std::string_view ext : kDpkgInfoData) {
      if (name.ends_with(ext)) return "";
    }
    return std::nullopt;
  }
  const std::string_view parent = Basename(dir);
  if (parent.ends_with(".dist-info") || parent.ends_with(".egg-info")) {
    if (name != "entry_points.txt") return "";  // metadata: names, versions, file lists
    auto text = image.content ? image.content(std::string(path)) : std::nullopt;
    if (!text) return "its content could not be read";
    return EntryPointsCheck(*text, image);
  }
  if (name == "env") {
    auto text = image.content ? image.content(std::string(path)) : std::nullopt;
    if (text && IsInstallerEnvScript(*text)) return "";
  }
  return std::nullopt;
}

std::vector<std::string> ModuleNames(std::string_view path, std::string_view area) {
  const std::string_view name = Basename(path);
  if (!IsModuleFile(name)) return {};
  auto parts = Components(path);
  parts.pop_back();  // the file
  if (!parts.empty() && parts.back() == "__pycache__") parts.pop_back();
  // The deepest site directory above the file is its root.
  for (size_t i = parts.size(); i-- > 0;) {
    if (!IsSiteDir(parts[i], i > 0 ? parts[i - 1] : "")) continue;
    if (i + 1 < parts.size()) return {std::string(parts[i + 1])};
    std::string stem = Stem(name);
    if (stem == "__init__") return {};
    return {stem};
  }
  std::vector<std::string> names;
  if (InWorkingArea(path, area)) {
    for (size_t i = Components(area).size(); i < parts.size(); ++i) names.emplace_back(parts[i]);
  }
  if (std::string stem = Stem(name); stem != "__init__") names.push_back(std::move(stem));
  return names;
}

Decision Judge(const ProcessView& process, const Access& access, std::string_view area, const Image& image) {
  Decision d;
  if (process.role != Role::kMachinery) return d;
  const std::string& path = access.path;
  if (Under(path, "/tests")) {
    if (access.origin == Origin::kAgent) d.tampered = path + " is under /tests but neither forge nor the verifier wrote it";
    d.ends_startup = process.python;
    return d;
  }
  if (access.path_unknown) {
    d.tampered = (access.exec ? "executed " : "read ") + path +
                 ", but the path it asked for could not be followed to it (it may have gone through a symlink of "
                 "the agent's)";
    return d;
  }
  if (!access.agent_link.empty()) {
    d.tampered = (access.exec ? "executed " : "read ") + path + " through " + access.agent_link +
                 ", a symlink the agent made";
    return d;
  }
  const bool in_area = InWorkingArea(path, area);
  const bool input = access.named_in_argv && !(access.first_file_arg && (process.python || process.shell));
  if (access.origin != Origin::kAgent) {
    d.ends_startup = process.python && input;
    return d;
  }
  if (access.exec) {
    const bool shadows = image.has_command && image.has_command(std::string(Basename(path)));
    if (in_area && !shadows) {
      d.becomes_agent = true;  // the agent's program, run by the tests
    } else {
      d.tampered = "executed " + path + ", which the agent wrote" +
                   (shadows ? ", in place of the image's command " + std::string(Basename(path))
                            : ", outside the working area");
    }
    return d;
  }
  if (auto listed = AllowlistCheck(path, image)) {
    d.tampered = *listed;
    if (!d.tampered.empty()) d.tampered = "read " + path + ": " + d.tampered;
    return d;
  }
  if (process.python) {
    for (const std::string& module : ModuleNames(path, area)) {
      if (image.has_module && image.has_module(module)) {
        d.tampered = "read " + path + ", which the agent wrote, as the image's Python module " + module +
                     " (shadowed or replaced)";
        return d;
      }
    }
  }
  if (access.first_file_arg && (process.python || process.shell)) {
    // An interpreter's first file is its script: the agent's program when it
    // is in the working area, the agent's hand in the machinery elsewhere.
    // (Another program's is what it works on: its input, below.)
    if (in_area) {
      d.becomes_agent = true;
    } else {
      d.tampered = "ran " + path + ", a script the agent wrote outside the working area";
    }
    return d;
  }
  if (input) {
    d.ends_startup = process.python;
    return d;
  }
  if (process.python && !process.started && (!in_area || IsModuleFile(Basename(path)))) {
    d.tampered = "read " + path + ", which the agent wrote, during the interpreter's start-up (before its input)";
    return d;
  }
  if ((process.python && process.started) || in_area) return d;
  d.tampered = "read " + path + ", which the agent wrote, outside the working area";
  return d;
}

Decision JudgeOpen(const ProcessView& process, const Access& access, std::string_view area, Image image, int fd) {
  image.content = [&](const std::string& path) -> std::optional<std::string> {
    if (path != access.path) return std::nullopt;
    std::string text(64 * 1024, '\0');
    const ssize_t n = pread(fd, text.data(), text.size(), 0);
    if (n < 0) return std::nullopt;
    text.resize(static_cast<size_t>(n));
    return text;
  };
  return Judge(process, access, area, image);
}

}  // namespace forge::verify::evidence
