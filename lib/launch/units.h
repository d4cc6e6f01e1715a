// Sizes and durations as people type them on a command line.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"

namespace forge::launch {

// "4g", "512m", "64k", "1073741824" (binary units; an optional trailing "b"/"ib").
Result<int64_t> ParseBytes(const std::string& text);
// "90", "90s", "30m", "2h", "1d" -> seconds.
Result<double> ParseDuration(const std::string& text);

}  // namespace forge::launch
