// Harbor's reward files. test.sh writes either /logs/verifier/reward.txt (one
// number) or /logs/verifier/reward.json (a flat object of named numbers).
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "base/status.h"

namespace forge::verify {

struct Reward {
  double value = 0;                       // the one number compared with the threshold
  std::map<std::string, double> named;    // reward.json's entries; empty for reward.txt
};

// One finite number, surrounding whitespace allowed. InvalidData saying what was
// found otherwise ("reward.txt: expected one number, got \"ok\"").
Result<Reward> ParseRewardTxt(std::string_view text);

// A flat JSON object of finite numbers. The value compared with the
// threshold is the entry named "reward" when there is one, else the mean of
// all entries (a single entry is its own mean).
Result<Reward> ParseRewardJson(std::string_view text);

}  // namespace forge::verify
