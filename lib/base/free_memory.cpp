#include "base/free_memory.h"

#include <malloc.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace forge {
namespace {

constexpr const char* kTunables = "GLIBC_TUNABLES";
constexpr const char* kTcacheOff = "glibc.malloc.tcache_count=0";
// Set for the re-executed program: GLIBC_TUNABLES as it was, after a '='
// (a bare "-" when it was unset).
constexpr const char* kWas = "FORGE_GLIBC_TUNABLES_WAS";

}  // namespace

void ReturnFreedMemory() {
#ifdef __GLIBC__
  // pad 0: keep nothing spare at the top of the main heap either.
  malloc_trim(0);
#endif
}

void ExecWithoutThreadCaches(char** argv) {
#ifdef __GLIBC__
  if (const char* was = std::getenv(kWas)) {
    const std::string before = was;
    if (before == "-") unsetenv(kTunables);
    else setenv(kTunables, before.substr(1).c_str(), 1);
    unsetenv(kWas);
    return;
  }
  const char* tunables = std::getenv(kTunables);
  const std::string before = tunables ? tunables : "";
  if (before.find("glibc.malloc.tcache_count") != std::string::npos) return;  // the caller's choice
  setenv(kWas, tunables ? ("=" + before).c_str() : "-", 1);
  setenv(kTunables, (before.empty() ? std::string(kTcacheOff) : before + ":" + kTcacheOff).c_str(), 1);
  execv("/proc/self/exe", argv);
  // Not re-executed: run as is, with the environment as it was.
  if (tunables) setenv(kTunables, before.c_str(), 1);
  else unsetenv(kTunables);
  unsetenv(kWas);
#else
  (void)argv;
#endif
}

}  // namespace forge
