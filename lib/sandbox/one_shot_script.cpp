#include "sandbox/one_shot_script.h"

#include <filesystem>

namespace forge::sandbox {

std::string ShellQuote(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out.push_back(c);
    }
  }
  out.push_back('\'');
  return out;
}

std::string OneShotBootstrap() {
  // $(cat) waits for the launcher to close stdin, so the whole script is read
  // before any of it runs; a script cut short (the launcher died while
  // sending it) lacks the last line and runs nothing.
  return "forge_script=$(cat); case \"$forge_script\" in *'\n# forge-end') eval \"$forge_script\";; "
         "*) echo 'forge-setup: the script arrived incomplete' >&2; exit 198;; esac";
}

std::string OneShotScript(const OneShot& job, const std::string& workdir, int64_t lifetime_seconds) {
  std::string script = "unset forge_script\n";
  auto setup_fail = [](const std::string& what) {
    return " || { echo " + ShellQuote("forge-setup: cannot write " + what) + " >&2; exit " +
           std::to_string(kOneShotSetupExit) + "; }\n";
  };
  for (const auto& [path, content] : job.files) {
    std::string dir = std::filesystem::path(path).parent_path().string();
    if (!dir.empty() && dir != "/") {
      script += "mkdir -p " + ShellQuote(dir) + " 2>/dev/null" + setup_fail(path);
    }
    script += "printf %s " + ShellQuote(content) + " > " + ShellQuote(path) + setup_fail(path);
  }
  for (const auto& [key, value] : job.exec.env) {
    script += "export " + key + "=" + ShellQuote(value) + "\n";
  }
  if (!workdir.empty()) {
    script += "mkdir -p " + ShellQuote(workdir) + " 2>/dev/null; cd " + ShellQuote(workdir) +
              setup_fail(workdir);
  }
  script += "exec </dev/null\n";
  for (const auto& arg : job.exec.argv) script += ShellQuote(arg) + " ";
  script += "&\nforge_pid=$!\n";
  // The sandbox's own deadline: outlives nothing once the shell has exited.
  script += "(sleep " + std::to_string(std::max<int64_t>(1, lifetime_seconds)) +
            "; kill -KILL $forge_pid) >/dev/null 2>&1 &\n";
  script += "wait $forge_pid\nexit $?\n# forge-end\n";
  return script;
}

}  // namespace forge::sandbox
