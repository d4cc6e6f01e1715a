// Writing a whole file so that readers see the old one or the new one, never
// a part: the bytes go to a temporary next to it, which is then renamed.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace forge {

// CannotCreate when the temporary cannot be made, IoError when a write or the
// rename fails (the temporary is removed).
Status WriteFileAtomically(const std::string& path, std::string_view data);

}  // namespace forge
