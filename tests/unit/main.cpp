// forge-tests' main: doctest's, except that a run in which every test passed
// but some were skipped (FORGE_SKIP) exits 77, for ctest to report as a skip.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "support/skip.h"

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  int failed = context.run();
  if (context.shouldExit() || failed != 0) return failed;
  return forge::testing::SkippedTestCases() > 0 ? 77 : 0;
}
