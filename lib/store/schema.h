// The store's schema as an ordered list of forward migrations. The database's
// PRAGMA user_version is the number of migrations applied; opening a store
// applies the rest, each in its own transaction. Never edit a migration that
// has shipped: add a new one.
#pragma once

#include <string_view>
#include <vector>

namespace forge::store {

const std::vector<std::string_view>& Migrations();

inline int LatestSchemaVersion() { return static_cast<int>(Migrations().size()); }

}  // namespace forge::store
