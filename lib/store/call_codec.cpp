#include "store/call_codec.h"

#include <array>
#include <cstring>
#include <utility>

#include "base/json_dump.h"
#include "store/content.h"
#include "store/little_endian.h"

namespace forge::store {
namespace {

// Texts shorter than this are copied into the small buffer: a writev piece
// of its own costs more than the copy.
constexpr size_t kLongText = 2048;
// In place of the request text's length: the text is in the request record
// at the offset that follows.
constexpr uint64_t kTextInRequestRecord = ~uint64_t{0};
// In place of the prompt ids' length: they begin with an earlier call's; its
// offset and how many of its ids follow, then the rest of this call's.
constexpr uint64_t kPromptAfterEarlierCall = ~uint64_t{0};

std::string JsonText(const Json& value) { return value.is_null() ? std::string() : DumpJson(value); }

class Reader {
 public:
  explicit Reader(std::string_view bytes) : rest_(bytes) {}

  // The next 8 bytes as a number without taking them (0 when fewer are left).
  uint64_t Peek64() const {
    uint64_t value = 0;
    if (rest_.size() >= 8) std::memcpy(&value, rest_.data(), 8);
    return value;
  }
  bool U64(uint64_t* value) {
    if (rest_.size() < 8) return false;
    std::memcpy(value, rest_.data(), 8);  // little-endian, like the rest of the store
    rest_.remove_prefix(8);
    return true;
  }
  bool F64(double* value) {
    uint64_t bits;
    if (!U64(&bits)) return false;
    std::memcpy(value, &bits, 8);
    return true;
  }
  bool Bytes(std::string_view* bytes) {
    uint64_t n;
    if (!U64(&n) || n > rest_.size()) return false;
    *bytes = rest_.substr(0, n);
    rest_.remove_prefix(n);
    return true;
  }
  bool done() const { return rest_.empty(); }

 private:
  std::string_view rest_;
};

// The order of the fields is the format: these lists serve the writer and
// the reader alike (Call is CallRecord or const CallRecord). Between the texts
// and the times come five integers, after the documents three arrays.
template <typename Call>
auto TextFields(Call& c) {
  using Field = std::pair<const char*, decltype(&c.rollout_id)>;
  return std::array<Field, 11>{{{"rollout_id", &c.rollout_id},
                                {"client_format", &c.client_format},
                                {"upstream", &c.upstream},
                                {"model", &c.model},
                                {"finish_reason", &c.finish_reason},
                                {"error", &c.error},
                                {"retry_key", &c.retry_key},
                                {"request_text", &c.request_text},
                                {"request_skeleton", &c.request_skeleton},
                                {"response_text", &c.response_text},
                                {"upstream_response_text", &c.upstream_response_text}}};
}

template <typename Call>
auto TimeFields(Call& c) {
  return std::array<decltype(&c.started_at), 3>{&c.started_at, &c.first_token_at, &c.ended_at};
}

// A document may come as its text instead (the record's cheaper forms): the
// bytes are that text, and the reader gets the document.
template <typename Call>
auto JsonFields(Call& c) {
  struct Field {
    const char* name;
    decltype(&c.request) value;
    decltype(&c.usage_text) text;  // or null
  };
  return std::array<Field, 6>{{{"request", &c.request, nullptr},
                               {"response", &c.response, nullptr},
                               {"upstream_request", &c.upstream_request, &c.upstream_request_text},
                               {"upstream_response", &c.upstream_response, nullptr},
                               {"usage", &c.usage, &c.usage_text},
                               {"upstream_request_patch", &c.upstream_request_patch, &c.upstream_request_patch_text}}};
}

}  // namespace

EncodedCall::EncodedCall(const CallRecord& c, uint64_t request_text_at, PromptBase prompt_base) {
  // Room for the short texts, the numbers and the token arrays (the
  // documents' texts are rare on the proxy's path: it relays text).
  size_t room = 256 + c.usage_text.size() + c.upstream_request_patch_text.size() +
                (c.upstream_request_text.size() < kLongText ? c.upstream_request_text.size() : 0) +
                4 * (c.prompt_ids.size() + c.completion_ids.size() + c.logprobs.size());
  for (const auto& [name, text] : TextFields(c)) {
    if (text->size() < kLongText) room += text->size();
  }
  small_.reserve(room);
  for (const auto& [name, text] : TextFields(c)) {
    if (text == &c.request_text && request_text_at != 0) {
      U64(kTextInRequestRecord);
      U64(request_text_at);
      continue;
    }
    Bytes(*text);
  }
  for (int64_t value : {c.seq, c.policy_version_start, c.policy_version_end, static_cast<int64_t>(c.http_status),
                        static_cast<int64_t>(c.side_call ? 1 : 0)}) {
    U64(static_cast<uint64_t>(value));
  }
  for (const double* value : TimeFields(c)) F64(*value);
  size_t i = 0;
  for (const auto& [name, value, text] : JsonFields(c)) {
    std::string& dumped = json_texts_[i++];
    if (value->is_null() && text) {
      Bytes(*text);
      continue;
    }
    dumped = JsonText(*value);
    Bytes(dumped);
  }
  std::string_view prompt = BytesOf(c.prompt_ids);
  if (prompt_base.at != 0) {
    U64(kPromptAfterEarlierCall);
    U64(prompt_base.at);
    U64(prompt_base.prefix);
    prompt.remove_prefix(std::min(prompt.size(), prompt_base.prefix * sizeof(int32_t)));
  }
  Bytes(prompt);
  Bytes(BytesOf(c.completion_ids));
  Bytes(BytesOf(c.logprobs));
  // Last and only when there is one, so a record without it is what an
  // older reader reads.
  if (!c.mm_placeholders.empty()) Bytes(c.mm_placeholders);

  size_t at = 0;
  for (const auto& [offset, text] : long_texts_) {
    if (offset > at) pieces_.push_back({small_.data() + at, offset - at});
    pieces_.push_back({const_cast<char*>(text.data()), text.size()});
    at = offset;
  }
  if (small_.size() > at) pieces_.push_back({small_.data() + at, small_.size() - at});
  size_ = small_.size();
  for (const auto& [offset, text] : long_texts_) size_ += text.size();
}

void EncodedCall::U64(uint64_t value) {
  char bytes[8];
  std::memcpy(bytes, &value, 8);
  small_.append(bytes, 8);
}

void EncodedCall::F64(double value) {
  uint64_t bits;
  std::memcpy(&bits, &value, 8);
  U64(bits);
}

void EncodedCall::Bytes(std::string_view bytes) {
  U64(bytes.size());
  if (bytes.size() < kLongText) {
    small_.append(bytes);
  } else {
    long_texts_.emplace_back(small_.size(), bytes);
  }
}

Result<CallRecord> DecodeCall(std::string_view bytes, uint64_t* request_text_at, PromptBase* prompt_base) {
  CallRecord c;
  Reader in(bytes);
  auto cut = [](const char* field) { return Status::InvalidData(std::string("call record cut short at ") + field); };
  if (request_text_at) *request_text_at = 0;
  if (prompt_base) *prompt_base = {};
  for (const auto& [name, value] : TextFields(c)) {
    if (value == &c.request_text && in.Peek64() == kTextInRequestRecord) {
      uint64_t marker, at;
      if (!in.U64(&marker) || !in.U64(&at)) return cut(name);
      if (!request_text_at) return Status::InvalidData("call record: its request text is in a request record");
      *request_text_at = at;
      continue;
    }
    std::string_view text;
    if (!in.Bytes(&text)) return cut(name);
    value->assign(text);
  }
  uint64_t ints[5];
  for (uint64_t& value : ints) {
    if (!in.U64(&value)) return cut("seq/versions/status");
  }
  c.seq = static_cast<int64_t>(ints[0]);
  c.policy_version_start = static_cast<int64_t>(ints[1]);
  c.policy_version_end = static_cast<int64_t>(ints[2]);
  c.http_status = static_cast<int>(ints[3]);
  c.side_call = ints[4] != 0;
  for (double* value : TimeFields(c)) {
    if (!in.F64(value)) return cut("times");
  }
  for (const auto& [name, value, unused] : JsonFields(c)) {
    std::string_view text;
    if (!in.Bytes(&text)) return cut(name);
    if (text.empty()) continue;
    auto read = ReadStoredJson(text, std::string("call record: field ") + name);
    if (!read.ok()) return read.status();
    *value = std::move(*read);
  }
  std::string_view prompt, completion, logprobs;
  if (in.Peek64() == kPromptAfterEarlierCall) {
    uint64_t marker;
    PromptBase base;
    if (!in.U64(&marker) || !in.U64(&base.at) || !in.U64(&base.prefix)) return cut("prompt_ids");
    if (!prompt_base) return Status::InvalidData("call record: its prompt ids begin with an earlier call's");
    *prompt_base = base;
  }
  if (!in.Bytes(&prompt) || !AssignFromBytes(prompt, &c.prompt_ids)) return cut("prompt_ids");
  if (!in.Bytes(&completion) || !AssignFromBytes(completion, &c.completion_ids)) return cut("completion_ids");
  if (!in.Bytes(&logprobs) || !AssignFromBytes(logprobs, &c.logprobs)) return cut("logprobs");
  if (!in.done()) {
    std::string_view placeholders;
    if (!in.Bytes(&placeholders)) return cut("mm_placeholders");
    c.mm_placeholders.assign(placeholders);
  }
  if (!in.done()) return Status::InvalidData("call record: bytes left after its last field");
  return c;
}

}  // namespace forge::store
