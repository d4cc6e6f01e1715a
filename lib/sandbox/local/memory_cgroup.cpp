#include "sandbox/local/memory_cgroup.h"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

namespace forge::sandbox::local {
namespace {

namespace fs = std::filesystem;

constexpr char kV2Root[] = "/sys/fs/cgroup";
constexpr char kV1Memory[] = "/sys/fs/cgroup/memory";
constexpr char kParent[] = "forge-local";

bool Write(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  out.flush();
  return static_cast<bool>(out);
}

bool IsV2() {
  std::ifstream controllers(std::string(kV2Root) + "/cgroup.controllers");
  std::string line;
  std::getline(controllers, line);
  return (" " + line + " ").find(" memory ") != std::string::npos;
}

}  // namespace

std::string CreateMemoryCgroup(const std::string& name, int64_t bytes) {
  if (bytes <= 0 || name.empty()) return "";
  const bool v2 = IsV2();
  const std::string parent = std::string(v2 ? kV2Root : kV1Memory) + "/" + kParent;
  std::error_code ec;
  if (!v2 && !fs::exists(std::string(kV1Memory) + "/memory.limit_in_bytes", ec)) return "";
  fs::create_directories(parent, ec);
  if (ec) return "";
  // v2 hands the memory controller down only where the parent enables it.
  if (v2 && (!Write(std::string(kV2Root) + "/cgroup.subtree_control", "+memory") ||
             !Write(parent + "/cgroup.subtree_control", "+memory"))) {
    return "";
  }
  const std::string dir = parent + "/" + name;
  fs::create_directory(dir, ec);
  if (ec) return "";
  const std::string limit = std::to_string(bytes);
  if (!Write(dir + (v2 ? "/memory.max" : "/memory.limit_in_bytes"), limit)) {
    ::rmdir(dir.c_str());
    return "";
  }
  // No swapping past the limit either, as Docker's default (memory-swap equal
  // to memory) where the host accounts swap.
  if (v2 && fs::exists(dir + "/memory.swap.max", ec)) Write(dir + "/memory.swap.max", "0");
  if (!v2 && fs::exists(dir + "/memory.memsw.limit_in_bytes", ec)) Write(dir + "/memory.memsw.limit_in_bytes", limit);
  return dir;
}

std::string CgroupProcsFile(const std::string& dir) { return dir + "/cgroup.procs"; }

void RemoveMemoryCgroup(const std::string& dir) {
  if (dir.empty()) return;
  for (int i = 0; i < 100; ++i) {
    if (::rmdir(dir.c_str()) == 0 || errno == ENOENT) return;
    if (errno != EBUSY) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace forge::sandbox::local
