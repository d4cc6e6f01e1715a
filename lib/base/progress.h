// A display of long work's progress. The Env a stage is given makes one
// (Env::StartProgress): lib/cli draws it on stderr when stderr is a terminal
// and nothing otherwise; a test's fake draws nothing.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace forge {

class Progress {
 public:
  virtual ~Progress() = default;

  virtual void Advance(size_t n = 1) = 0;
  // total 0 means unknown.
  virtual void SetTotal(size_t total) = 0;
  // Free text shown after the counts, e.g. "3 running, 1 failed".
  virtual void SetDetail(std::string detail) = 0;
  // Lines drawn under the overall line, e.g. one per running job with its phase.
  virtual void SetLines(std::vector<std::string> lines) = 0;
  // Clears the display; further calls draw nothing.
  virtual void Finish() = 0;
  // Whether anything is drawn: a caller may skip building lines nobody sees.
  virtual bool shown() const = 0;
};

}  // namespace forge
