// Opens a store for a test, failing the test (not crashing it) when it cannot.
#pragma once

#include <doctest/doctest.h>

#include <memory>
#include <string>

#include "store/store.h"

namespace forge::testing {

inline std::unique_ptr<store::Store> OpenOrDie(const std::string& path, store::OpenOptions options = {}) {
  auto opened = store::Store::Open(path, options);
  REQUIRE_MESSAGE(opened.ok(), opened.status().message());
  return std::move(*opened);
}

}  // namespace forge::testing
