#include "verify/fold.h"

#include <string>
#include <unordered_map>

namespace forge::verify {

size_t FoldByRollout(std::vector<Trial>* trials, std::vector<records::Json>* records) {
  std::unordered_map<std::string, size_t> first;  // rollout id -> index in the output
  size_t kept = 0;
  for (size_t i = 0; i < trials->size(); ++i) {
    Trial& trial = (*trials)[i];
    size_t at = kept;
    bool replaces = false;
    if (!trial.rollout_id.empty()) {
      auto [it, inserted] = first.emplace(trial.rollout_id, kept);
      at = it->second;
      replaces = !inserted;
      if (inserted) ++kept;
    } else {
      ++kept;
    }
    // The kept verdict carries the count of those it replaced, so every
    // report built from it says how many were folded.
    if (replaces) trial.folded += (*trials)[at].folded + 1;
    if (at != i) {
      (*trials)[at] = std::move(trial);
      if (records != nullptr) (*records)[at] = std::move((*records)[i]);
    }
  }
  const size_t folded = trials->size() - kept;
  trials->resize(kept);
  if (records != nullptr) records->resize(kept);
  return folded;
}

}  // namespace forge::verify
