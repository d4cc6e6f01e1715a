// A unit test that cannot run on this host says so instead of passing.
//
// Such a test case is in the doctest suite "host" and runs as a ctest entry of
// its own (CMakeLists.txt), never in the main "unit" entry. FORGE_SKIP counts
// the skip, and forge-tests then exits 77, which ctest reports as a skip
// (SKIP_RETURN_CODE) rather than a pass.
#pragma once

#include <doctest/doctest.h>

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
