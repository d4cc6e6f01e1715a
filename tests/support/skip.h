// A unit test that cannot run on this host says so instead of passing.
//
// Such a test case is in the doctest suite "host" and runs as a ctest entry of
// its own (CMakeLists.txt), never in the main "unit" entry. FORGE_SKIP counts
// the skip, and forge-tests then exits 77, which ctest reports as a skip
// (SKIP_RETURN_CODE) rather than a pass.
#pragma once

#include <doctest/doctest.h>

#include <cstdlib>

namespace forge::testing {

inline int& SkippedTestCases() {
  static int skipped = 0;
  return skipped;
}

}  // namespace forge::testing

#define FORGE_SKIP(reason)                      \
  do {                                          \
    MESSAGE("SKIP: " reason);                   \
    ++::forge::testing::SkippedTestCases();     \
    return;                                     \
  } while (false)

// A case that needs the Docker engine (in the suite "host", with a ctest entry
// of its own): a skip when `backend` gets no answer, unless
// FORGE_REQUIRE_DOCKER is set (.ci/run sets it after starting dockerd), where
// the missing engine fails the case.
#define FORGE_REQUIRE_DOCKER(backend)                                                     \
  do {                                                                                    \
    if (!(backend).Ping().ok()) {                                                         \
      REQUIRE_MESSAGE(std::getenv("FORGE_REQUIRE_DOCKER") == nullptr,                     \
                      "no Docker engine, and FORGE_REQUIRE_DOCKER is set");               \
      FORGE_SKIP("no Docker engine on the socket (scripts/start-dockerd.sh starts one)"); \
    }                                                                                     \
  } while (false)
