// A call record as bytes, for the call log (call_log.h): every field in a
// fixed order, strings and arrays with their lengths, Json as its text (the
// upstream's placeholder ranges last, and only when it sent any).
// Encoding copies only the small fields; a long text (a 200 KB request) is
// handed to writev(2) from where it already is.
#pragma once

#include <sys/uio.h>

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "store/store_types.h"

namespace forge::store {

// Where a call's prompt ids begin, when not all of them are in its record:
// the first `prefix` prompt ids of the call record at byte `at` of the same
// log, which holds all of its own (call_log.h). at = 0: none.
struct PromptBase {
  uint64_t at = 0;
  uint64_t prefix = 0;
};

class EncodedCall {
 public:
  // Refers to the call's strings: the call must outlive this object. With
  // request_text_at, the request text is not encoded but referred to: it is
  // in the log's request record at that byte offset (call_log.h). With a
  // prompt base, only the prompt ids after its prefix are encoded.
  explicit EncodedCall(const CallRecord& call, uint64_t request_text_at = 0, PromptBase prompt_base = {});
  EncodedCall(const EncodedCall&) = delete;
  EncodedCall& operator=(const EncodedCall&) = delete;

  // The encoding, in order, as pieces for writev(2).
  const std::vector<iovec>& pieces() const { return pieces_; }
  size_t size() const { return size_; }

 private:
  void U64(uint64_t value);
  void F64(double value);
  void Bytes(std::string_view bytes);

  std::string small_;  // everything but the long texts
  std::array<std::string, 6> json_texts_;  // the documents' texts, one per document field
  // Long texts, each spliced in at an offset of small_.
  std::vector<std::pair<size_t, std::string_view>> long_texts_;
  std::vector<iovec> pieces_;
  size_t size_ = 0;
};

// The call an EncodedCall's bytes hold. InvalidData names the field that does
// not fit (a torn or foreign record). A call whose request text is in a
// request record comes back without it, and that record's offset in
// *request_text_at (InvalidData if request_text_at is null); one encoded with a
// prompt base comes back with only the ids after the base's prefix, and the
// base in *prompt_base (InvalidData if prompt_base is null).
Result<CallRecord> DecodeCall(std::string_view bytes, uint64_t* request_text_at = nullptr,
                              PromptBase* prompt_base = nullptr);

}  // namespace forge::store
