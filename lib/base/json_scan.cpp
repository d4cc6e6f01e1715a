#include "base/json_scan.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "base/json_bytes.h"

namespace forge {
namespace {

// Byte classes inside a string: 0 plain, 1 quote, 2 backslash, 3 control, 4 UTF-8 lead/continuation.
struct StringClasses {
  unsigned char cls[256];
  constexpr StringClasses() : cls() {
    for (int c = 0; c < 256; ++c) {
      cls[c] = c < 0x20 ? 3 : c == '"' ? 1 : c == '\\' ? 2 : c >= 0x80 ? 4 : 0;
    }
  }
};
constexpr StringClasses kString;

// Eight bytes at a time: whether any is a quote, a backslash, a control
// character or not ASCII (the bit tricks answer "any?" exactly, not "which").
bool HasSpecialByte(uint64_t x) {
  constexpr uint64_t kOnes = 0x0101010101010101ULL, kHighs = 0x8080808080808080ULL;
  auto has_zero = [](uint64_t v) { return ((v - kOnes) & ~v & kHighs) != 0; };
  bool control = ((x - kOnes * 0x20) & ~x & kHighs) != 0;
  return (x & kHighs) != 0 || control || has_zero(x ^ (kOnes * '"')) || has_zero(x ^ (kOnes * '\\'));
}

}  // namespace

// The end of the run of plain string bytes from i. A local index (the byte
// pointer may alias any member), and sixteen bytes at a time where SSE2 is
// (every x86-64), else eight: a 200 KB prompt is validated on the call's path.
size_t SkipPlainJsonBytes(const unsigned char* p, size_t i, size_t n) {
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\'), space = _mm_set1_epi8(0x20);
  for (; i + 16 <= n; i += 16) {
    __m128i block = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
    // A signed compare: bytes >= 0x80 (not ASCII) count as below 0x20 too.
    __m128i special = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(block, quote), _mm_cmpeq_epi8(block, backslash)),
                                   _mm_cmplt_epi8(block, space));
    if (int mask = _mm_movemask_epi8(special)) {
      return i + static_cast<size_t>(__builtin_ctz(static_cast<unsigned>(mask)));
    }
  }
#endif
  for (uint64_t word; i + 8 <= n; i += 8) {
    std::memcpy(&word, p + i, 8);
    if (HasSpecialByte(word)) break;
  }
  while (i < n && kString.cls[p[i]] == 0) ++i;
  return i;
}

size_t Utf8SequenceLength(const unsigned char* p, size_t i, size_t n) {
  unsigned char c = p[i];
  auto cont = [&](size_t k, unsigned char lo, unsigned char hi) {
    return i + k < n && p[i + k] >= lo && p[i + k] <= hi;
  };
  if (c >= 0xC2 && c <= 0xDF) return cont(1, 0x80, 0xBF) ? 2 : 0;
  if (c == 0xE0) return cont(1, 0xA0, 0xBF) && cont(2, 0x80, 0xBF) ? 3 : 0;
  if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) {
    return cont(1, 0x80, 0xBF) && cont(2, 0x80, 0xBF) ? 3 : 0;
  }
  if (c == 0xED) return cont(1, 0x80, 0x9F) && cont(2, 0x80, 0xBF) ? 3 : 0;
  if (c == 0xF0) return cont(1, 0x90, 0xBF) && cont(2, 0x80, 0xBF) && cont(3, 0x80, 0xBF) ? 4 : 0;
  if (c >= 0xF1 && c <= 0xF3) return cont(1, 0x80, 0xBF) && cont(2, 0x80, 0xBF) && cont(3, 0x80, 0xBF) ? 4 : 0;
  if (c == 0xF4) return cont(1, 0x80, 0x8F) && cont(2, 0x80, 0xBF) && cont(3, 0x80, 0xBF) ? 4 : 0;
  return 0;
}

namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Token ids come by the tens of thousands (every prompt token's, in each
// answer), so their digits are read eight bytes at a time.
constexpr uint64_t EveryByte(unsigned char b) { return 0x0101010101010101ULL * b; }

// How many of the 8 bytes at p (all readable) are digits before the first
// that is not. A byte is a digit when it and it plus 6 both have 3 as their
// high nibble; a carry out of a non-digit byte reaches only later bytes.
[[gnu::always_inline]] inline size_t DigitRun8(const char* p) {
  uint64_t x;
  std::memcpy(&x, p, 8);
  const uint64_t high = EveryByte(0xF0), three = EveryByte(0x30);
  uint64_t not_digit = ((x & high) ^ three) | (((x + EveryByte(6)) & high) ^ three);
  return not_digit ? static_cast<size_t>(__builtin_ctzll(not_digit)) / 8 : 8;
}

// The digits at p[0, run), 1 <= run <= 8, all readable as 8 bytes: their
// value, by padding them with leading '0's to eight and combining pairs,
// fours and eights with three multiplications (the usual SWAR conversion).
[[gnu::always_inline]] inline uint32_t DigitsValue8(const char* p, size_t run) {
  uint64_t x;
  std::memcpy(&x, p, 8);
  if (run < 8) x = (x << (8 * (8 - run))) | (EveryByte('0') >> (8 * run));
  x -= EveryByte('0');
  x = x * 10 + (x >> 8);
  constexpr uint64_t kMask = 0x000000FF000000FFULL;
  x = ((x & kMask) * (100 + (1000000ULL << 32)) + ((x >> 16) & kMask) * (1 + (10000ULL << 32))) >> 32;
  return static_cast<uint32_t>(x);
}

#if defined(__SSE2__)
// Sixteen bytes of a token-id array at a time: which are digits, commas and
// zeros (bit k for p[k]), and how many bytes lead up to the first that is none
// of them, so every id that ends at a comma within the sixteen is known from
// the masks alone.
struct IdBlock {
  unsigned digits, commas, zeros;
  unsigned plain;  // bits of the bytes before the first that is neither digit nor comma
};
[[gnu::always_inline]] inline IdBlock ReadIdBlock(const char* p) {
  __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  // Signed compares: a byte of 0x80 or above is below '0', so not a digit.
  __m128i not_digit = _mm_or_si128(_mm_cmplt_epi8(x, _mm_set1_epi8('0')), _mm_cmpgt_epi8(x, _mm_set1_epi8('9')));
  IdBlock b;
  b.digits = ~static_cast<unsigned>(_mm_movemask_epi8(not_digit)) & 0xFFFF;
  b.commas = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(x, _mm_set1_epi8(','))));
  b.zeros = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(x, _mm_set1_epi8('0'))));
  unsigned other = ~(b.digits | b.commas) & 0xFFFF;
  b.plain = other ? (other & (0u - other)) - 1 : 0xFFFF;
  return b;
}
#endif

// The end of the run of digits from i.
size_t SkipDigits(const char* p, size_t i, size_t n) {
  while (i + 8 <= n) {
    size_t run = DigitRun8(p + i);
    i += run;
    if (run < 8) return i;
  }
  while (i < n && IsDigit(p[i])) ++i;
  return i;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Four hex digits at s[i..i+4), or -1.
int Hex4(std::string_view s, size_t i) {
  if (i + 4 > s.size()) return -1;
  int v = 0;
  for (size_t k = 0; k < 4; ++k) {
    int h = HexValue(s[i + k]);
    if (h < 0) return -1;
    v = v * 16 + h;
  }
  return v;
}

class Validator {
 public:
  Validator(std::string_view s, JsonSpans* spans, int max_depth)
      : s_(s), spans_(spans), max_depth_(max_depth > 0 ? static_cast<size_t>(max_depth) : SIZE_MAX) {}

  std::optional<std::string> Run() {
    if (s_.size() >= 3 && static_cast<unsigned char>(s_[0]) == 0xEF) {
      if (static_cast<unsigned char>(s_[1]) != 0xBB || static_cast<unsigned char>(s_[2]) != 0xBF) {
        return Fail("invalid byte-order mark");
      }
      i_ = 3;
    } else if (!s_.empty() && static_cast<unsigned char>(s_[0]) == 0xEF) {
      return Fail("invalid byte-order mark");
    }
    // Containers as a stack of '{' / '[' (no recursion: hostile nesting cannot overflow).
    std::string stack;
    SkipSpace();
    for (;;) {
      // A value is expected here.
      if (i_ >= s_.size()) return Fail("unexpected end of input; expected a value");
      char c = s_[i_];
      if ((c == '{' || c == '[') && stack.size() >= max_depth_) {
        return Fail("nested deeper than " + std::to_string(max_depth_) + " levels");
      }
      if (c == '{') {
        size_t open = i_++;
        SkipSpace();
        if (i_ < s_.size() && s_[i_] == '}') {
          ++i_;
        } else {
          if (auto e = Key()) return e;
          stack.push_back('{');
          NoteOpen(open);
          continue;
        }
      } else if (c == '[') {
        size_t open = i_++;
        SkipSpace();
        if (i_ < s_.size() && s_[i_] == ']') {
          ++i_;
        } else {
          stack.push_back('[');
          NoteOpen(open);
          continue;
        }
      } else if (c == '"') {
        if (auto e = String()) return e;
      } else if (c == '-' || IsDigit(c)) {
        if (auto e = !stack.empty() && stack.back() == '[' ? Integers() : Number()) return e;
      } else if (!Literal("true") && !Literal("false") && !Literal("null")) {
        return Fail("unexpected character; expected a value");
      }
      // After a value: close containers or go on to the next member/element.
      for (;;) {
        SkipSpace();
        if (stack.empty()) {
          // A NUL byte ends the input, as it does for nlohmann::json.
          if (i_ != s_.size() && s_[i_] != '\0') return Fail("unexpected text after the value");
          return std::nullopt;
        }
        if (i_ >= s_.size()) return Fail("unexpected end of input");
        char d = s_[i_];
        char close = stack.back() == '{' ? '}' : ']';
        if (d == close) {
          ++i_;
          stack.pop_back();
          NoteClose();
          continue;
        }
        if (d != ',') return Fail(stack.back() == '{' ? "expected ',' or '}'" : "expected ',' or ']'");
        ++i_;
        SkipSpace();
        if (stack.back() == '{') {
          if (auto e = Key()) return e;
        }
        break;
      }
    }
  }

 private:
  std::optional<std::string> Fail(const std::string& why) const {
    return why + " at byte " + std::to_string(i_);
  }

  void SkipSpace() {
    while (i_ < s_.size() && IsSpace(s_[i_])) ++i_;
  }

  void NoteOpen(size_t open) {
    if (spans_) open_spans_.push_back(spans_->Open(s_.data() + open));
  }
  void NoteClose() {
    if (!spans_) return;
    spans_->Close(open_spans_.back(), s_.data() + i_);
    open_spans_.pop_back();
  }

  bool Literal(std::string_view word) {
    if (s_.compare(i_, word.size(), word) != 0) return false;
    i_ += word.size();
    return true;
  }

  // A member's key and its colon; leaves i_ at the value.
  std::optional<std::string> Key() {
    if (i_ >= s_.size() || s_[i_] != '"') return Fail("expected a string key");
    if (auto e = String()) return e;
    SkipSpace();
    if (i_ >= s_.size() || s_[i_] != ':') return Fail("expected ':' after the key");
    ++i_;
    SkipSpace();
    return std::nullopt;
  }

  std::optional<std::string> String() {
    ++i_;  // the opening quote
    const auto* p = reinterpret_cast<const unsigned char*>(s_.data());
    size_t n = s_.size();
    for (;;) {
      i_ = SkipPlainJsonBytes(p, i_, n);
      if (i_ >= n) return Fail("unterminated string");
      unsigned char c = p[i_];
      switch (kString.cls[c]) {
        case 1:
          ++i_;
          return std::nullopt;
        case 2:
          if (auto e = Escape()) return e;
          break;
        case 3:
          return Fail("control character in a string (must be escaped)");
        default:
          if (auto e = Utf8()) return e;
      }
    }
  }

  std::optional<std::string> Escape() {
    if (i_ + 1 >= s_.size()) return Fail("unterminated string");
    char e = s_[i_ + 1];
    if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' || e == 'r' || e == 't') {
      i_ += 2;
      return std::nullopt;
    }
    if (e != 'u') return Fail("invalid escape in a string");
    int cp = Hex4(s_, i_ + 2);
    if (cp < 0) return Fail("\\u must be followed by four hex digits");
    i_ += 6;
    if (cp >= 0xDC00 && cp <= 0xDFFF) return Fail("lone low surrogate in \\u escape");
    if (cp >= 0xD800 && cp <= 0xDBFF) {
      if (i_ + 1 >= s_.size() || s_[i_] != '\\' || s_[i_ + 1] != 'u') {
        return Fail("high surrogate not followed by a low surrogate");
      }
      int low = Hex4(s_, i_ + 2);
      if (low < 0xDC00 || low > 0xDFFF) return Fail("high surrogate not followed by a low surrogate");
      i_ += 6;
    }
    return std::nullopt;
  }

  std::optional<std::string> Utf8() {
    size_t len = Utf8SequenceLength(reinterpret_cast<const unsigned char*>(s_.data()), i_, s_.size());
    if (len == 0) return Fail("invalid UTF-8 in a string");
    i_ += len;
    return std::nullopt;
  }

  // Elements of an array that are plain integers, one after another (token
  // ids: an answer carries every prompt token's, tens of thousands), read in
  // one loop instead of a trip through the value loop each. Stops at the last
  // integer before anything else, for that loop to take on; a number that is
  // not a plain integer goes to Number() from its first byte.
  std::optional<std::string> Integers() {
    const char* p = s_.data();
    const size_t n = s_.size();
    for (;;) {
#if defined(__SSE2__)
      // The ids that end at a comma in the next sixteen bytes, checked at
      // once: no element empty, none with a leading zero. i_ is at an
      // element's first byte, so bit 0 starts one.
      if (i_ + 17 <= n) {
        IdBlock b = ReadIdBlock(p + i_);
        if (unsigned commas = b.commas & b.plain) {
          unsigned last = 31 - static_cast<unsigned>(__builtin_clz(commas));
          unsigned upto = (2u << last) - 1;
          unsigned starts = ((commas << 1) | 1) & upto;
          if ((starts & b.commas) == 0 && (starts & b.zeros & (b.digits >> 1)) == 0) {
            i_ += last;  // at that comma
            if (!IsDigit(p[i_ + 1])) return std::nullopt;
            ++i_;
            continue;
          }
        }
      }
#endif
      // An id of up to seven digits and its comma, within one eight-byte read.
      if (i_ + 9 <= n) {
        size_t run = DigitRun8(p + i_);
        if (run > 0 && run < 8 && (run == 1 || p[i_] != '0') && p[i_ + run] == ',' && IsDigit(p[i_ + run + 1])) {
          i_ += run + 1;
          continue;
        }
      }
      size_t j = i_ + (p[i_] == '-' ? 1 : 0);
      const size_t digits = j;
      if (j < n && p[j] == '0') {
        ++j;
      } else {
        j = SkipDigits(p, j, n);
      }
      if (j == digits || j - i_ > 300 || (j < n && (p[j] == '.' || p[j] == 'e' || p[j] == 'E'))) return Number();
      i_ = j;
      if (j + 1 < n && p[j] == ',' && (IsDigit(p[j + 1]) || p[j + 1] == '-')) {
        i_ = j + 1;
        continue;
      }
      return std::nullopt;
    }
  }

  std::optional<std::string> Number() {
    size_t start = i_;
    if (s_[i_] == '-') ++i_;
    if (i_ >= s_.size() || !IsDigit(s_[i_])) return Fail("invalid number");
    if (s_[i_] == '0') {
      ++i_;
    } else {
      while (i_ < s_.size() && IsDigit(s_[i_])) ++i_;
    }
    if (i_ < s_.size() && s_[i_] == '.') {
      ++i_;
      if (i_ >= s_.size() || !IsDigit(s_[i_])) return Fail("invalid number: digits must follow '.'");
      while (i_ < s_.size() && IsDigit(s_[i_])) ++i_;
    }
    bool exponent = i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E');
    if (exponent) {
      ++i_;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      if (i_ >= s_.size() || !IsDigit(s_[i_])) return Fail("invalid number: digits must follow the exponent");
      while (i_ < s_.size() && IsDigit(s_[i_])) ++i_;
    }
    // A parser turns what does not fit an integer into a double, and refuses
    // one that overflows to infinity: only possible with an exponent or with
    // over 308 digits (DBL_MAX is 1.8e308), so most numbers skip the check.
    if (exponent || i_ - start > 300) {
      if (!JsonNumber(s_.substr(start, i_ - start)).has_value()) {
        size_t end = i_;
        i_ = start;
        auto e = Fail("number overflow");
        i_ = end;
        return e;
      }
    }
    return std::nullopt;
  }

  std::string_view s_;
  size_t i_ = 0;
  JsonSpans* spans_;
  size_t max_depth_;
  boost::container::small_vector<size_t, 16> open_spans_;  // spans_ indices of the open containers
};

// Index just past the string starting at s[i] == '"' (valid text). Strings
// are most of a request's bytes, so this jumps from quote to quote (memchr)
// and counts the backslashes before each.
size_t SkipString(std::string_view s, size_t i) {
  const char* p = s.data();
  size_t n = s.size();
  ++i;
  // Keys and most short values end within a few bytes: looked for by hand
  // before memchr's call is worth making.
  for (size_t near = std::min(n, i + 16); i < near; ++i) {
    if (p[i] == '\\') {
      ++i;
    } else if (p[i] == '"') {
      return i + 1;
    }
  }
  for (;;) {
    const void* q = i < n ? std::memchr(p + i, '"', n - i) : nullptr;
    if (!q) return n;
    size_t at = static_cast<size_t>(static_cast<const char*>(q) - p);
    size_t run = at;
    while (run > i && p[run - 1] == '\\') --run;
    if ((at - run) % 2 == 0) return at + 1;  // an even run of backslashes: the quote ends the string
    i = at + 1;
  }
}

// Index just past the value starting at s[i] (valid text).
size_t SkipValue(std::string_view s, size_t i, const JsonSpans* spans) {
  char c = s[i];
  if (c == '"') return SkipString(s, i);
  if (c == '{' || c == '[') {
    if (i + 1 < s.size() && s[i + 1] == (c == '{' ? '}' : ']')) return i + 2;  // empty (vLLM's "top_logprobs":[])
    if (const char* end = spans ? spans->EndOf(s.data() + i) : nullptr;
        end && end > s.data() + i && end <= s.data() + s.size()) {
      return static_cast<size_t>(end - s.data());
    }
    int depth = 0;
    while (i < s.size()) {
      char d = s[i];
      if (d == '"') {
        i = SkipString(s, i);
        continue;
      }
      if (d == '{' || d == '[') ++depth;
      if (d == '}' || d == ']') {
        if (--depth == 0) return i + 1;
      }
      ++i;
    }
    return s.size();
  }
  while (i < s.size() && !IsSpace(s[i]) && s[i] != ',' && s[i] != '}' && s[i] != ']') ++i;
  return i;
}

size_t SkipSpaces(std::string_view s, size_t i) {
  while (i < s.size() && IsSpace(s[i])) ++i;
  return i;
}

void AppendUtf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

}  // namespace

std::optional<std::string> JsonSyntaxError(std::string_view text, JsonSpans* spans, int max_depth) {
  if (spans) spans->Clear();
  return Validator(text, spans, max_depth).Run();
}

const char* JsonSpans::EndOf(const char* open) const {
  // Readers mostly ask in text order (the elements of an array, each one's
  // members), so the spans just after the last one found are tried first.
  // (Asks for an empty container, which has no span, settle there too.)
  if (next_ == 0 || (next_ <= spans_.size() && spans_[next_ - 1].first < open)) {
    for (size_t k = next_; k < spans_.size() && k < next_ + 4; ++k) {
      if (spans_[k].first == open) {
        next_ = k + 1;
        return spans_[k].second;
      }
      if (spans_[k].first > open) return nullptr;  // in text order: none starts at open
    }
  }
  auto it = std::lower_bound(spans_.begin(), spans_.end(), open,
                             [](const std::pair<const char*, const char*>& span, const char* p) { return span.first < p; });
  if (it == spans_.end() || it->first != open) return nullptr;
  next_ = static_cast<size_t>(it - spans_.begin()) + 1;
  return it->second;
}

std::string_view TrimJson(std::string_view text) {
  if (text.size() >= 3 && text.compare(0, 3, "\xEF\xBB\xBF") == 0) text.remove_prefix(3);
  while (!text.empty() && IsSpace(text.front())) text.remove_prefix(1);
  while (!text.empty() && IsSpace(text.back())) text.remove_suffix(1);
  return text;
}

JsonMembers ObjectMembers(std::string_view object, const JsonSpans* spans) {
  JsonMembers members;
  object = TrimJson(object);
  if (!IsJsonObject(object)) return members;
  size_t i = SkipSpaces(object, 1);
  while (i < object.size() && object[i] == '"') {
    size_t key_end = SkipString(object, i);
    JsonMember m;
    m.key = object.substr(i + 1, key_end - i - 2);
    i = SkipSpaces(object, key_end);
    i = SkipSpaces(object, i + 1);  // the colon
    size_t value_end = SkipValue(object, i, spans);
    m.value = object.substr(i, value_end - i);
    members.push_back(m);
    i = SkipSpaces(object, value_end);
    if (i < object.size() && object[i] == ',') i = SkipSpaces(object, i + 1);
  }
  return members;
}

JsonElements ArrayElements(std::string_view array, const JsonSpans* spans) {
  JsonElements elements;
  array = TrimJson(array);
  if (!IsJsonArray(array)) return elements;
  size_t i = SkipSpaces(array, 1);
  while (i < array.size() && array[i] != ']') {
    size_t end = SkipValue(array, i, spans);
    elements.push_back(array.substr(i, end - i));
    i = SkipSpaces(array, end);
    if (i < array.size() && array[i] == ',') i = SkipSpaces(array, i + 1);
  }
  return elements;
}

void AppendJsonInt32s(std::string_view array, std::vector<int32_t>& into) {
  array = TrimJson(array);
  if (!IsJsonArray(array)) return;
  const char* p = array.data();
  const size_t n = array.size();
  // Room for them all at once (a number and its comma take two bytes or
  // more; token ids mostly five to seven), without counting them first; at
  // least doubling, since a stream appends its ids a chunk at a time.
  if (size_t want = into.size() + n / 4 + 16; want > into.capacity()) {
    into.reserve(std::max(want, 2 * into.capacity()));
  }
  size_t i = SkipSpaces(array, 1);
  while (i < n && p[i] != ']') {
#if defined(__SSE2__)
    // The common case first: every id of up to eight digits that ends at a
    // comma in the next sixteen bytes, its length read off the comma mask
    // (24 bytes readable: an id's digits are read eight at a time).
    if (i + 24 <= n) {
      IdBlock b = ReadIdBlock(p + i);
      unsigned commas = b.commas & b.plain, start = 0;
      bool all = commas != 0;
      for (; commas; commas &= commas - 1) {
        unsigned comma = static_cast<unsigned>(__builtin_ctz(commas));
        if (comma == start || comma - start > 8) {
          all = false;
          break;
        }
        into.push_back(static_cast<int32_t>(DigitsValue8(p + i + start, comma - start)));
        start = comma + 1;
      }
      i += start;
      if (all) continue;
    }
#endif
    // Up to seven digits, then a comma or the
    // bracket, all within one eight-byte read (a compact array of ids).
    if (i + 8 <= n) {
      if (size_t run = DigitRun8(p + i); run > 0 && run < 8 && (p[i + run] == ',' || p[i + run] == ']')) {
        into.push_back(static_cast<int32_t>(DigitsValue8(p + i, run)));
        i += run + (p[i + run] == ',' ? 1 : 0);
        continue;
      }
    }
    const size_t start = i;
    const bool negative = p[i] == '-';
    size_t j = i + (negative ? 1 : 0);
    const size_t digits = j;
    uint64_t value = 0;  // (the rare case: a sign, spaces, a long number)
    for (; j < n && IsDigit(p[j]); ++j) value = value * 10 + static_cast<uint64_t>(p[j] - '0');
    size_t end = j;
    // JsonInteger's rule: digits only, at most 19 bytes with the sign.
    if (j > digits && j - start <= 19 && (j == n || p[j] == ',' || p[j] == ']' || IsSpace(p[j]))) {
      int64_t v = static_cast<int64_t>(value);
      into.push_back(static_cast<int32_t>(negative ? -v : v));
    } else {
      end = SkipValue(array, start, nullptr);
    }
    i = SkipSpaces(array, end);
    if (i < n && p[i] == ',') i = SkipSpaces(array, i + 1);
  }
}

bool JsonMember::KeyIs(std::string_view name) const {
  // An escape makes a key's text longer than the key it stands for, so a key
  // no longer than name matches only byte for byte (name has no escapes).
  if (key.size() <= name.size()) return key == name;
  return key.find('\\') != std::string_view::npos && DecodeJsonString(key) == name;
}

const JsonMember* FindMember(const JsonMembers& members, std::string_view name) {
  for (auto it = members.rbegin(); it != members.rend(); ++it) {
    if (it->KeyIs(name)) return &*it;
  }
  return nullptr;
}

size_t JsonStringEnd(std::string_view text, size_t quote) { return SkipString(text, quote); }

std::string DecodeJsonString(std::string_view raw) { return DecodeJsonStringPrefix(raw, raw.size()); }

std::string JsonStringValue(std::string_view value) {
  return IsJsonString(value) ? DecodeJsonString(value.substr(1, value.size() - 2)) : std::string();
}

std::string DecodeJsonStringPrefix(std::string_view raw, size_t max_bytes) {
  std::string out;
  out.reserve(std::min(raw.size(), max_bytes + 4));
  for (size_t i = 0; i < raw.size() && out.size() < max_bytes; ++i) {
    // The run up to the next escape, at once.
    size_t run_end = std::min(raw.find('\\', i), raw.size());
    if (run_end > i) {
      out.append(raw.data() + i, std::min(run_end - i, max_bytes - out.size()));
      i = run_end;
      if (i >= raw.size() || out.size() >= max_bytes) break;
    }
    if (i + 1 >= raw.size()) {
      out += raw[i];
      continue;
    }
    char e = raw[++i];
    switch (e) {
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'u': {
        int cp = Hex4(raw, i + 1);
        if (cp < 0) return out;  // (not valid text)
        i += 4;
        uint32_t code = static_cast<uint32_t>(cp);
        if (cp >= 0xD800 && cp <= 0xDBFF && i + 6 < raw.size() && raw[i + 1] == '\\' && raw[i + 2] == 'u') {
          int low = Hex4(raw, i + 3);
          if (low >= 0xDC00 && low <= 0xDFFF) {
            code = 0x10000 + ((static_cast<uint32_t>(cp) - 0xD800) << 10) + (static_cast<uint32_t>(low) - 0xDC00);
            i += 6;
          }
        }
        AppendUtf8(out, code);
        break;
      }
      default: out += e;  // " \ /
    }
  }
  return out;
}

std::optional<int64_t> JsonInteger(std::string_view v) {
  if (v.empty() || v.size() > 19) return std::nullopt;
  size_t i = 0;
  bool negative = v[0] == '-';
  if (negative) ++i;
  if (i >= v.size()) return std::nullopt;
  int64_t value = 0;
  for (; i < v.size(); ++i) {
    if (!IsDigit(v[i])) return std::nullopt;
    value = value * 10 + (v[i] - '0');
  }
  return negative ? -value : value;
}

namespace {
// A number without exponent (integer or decimal) whose digits fit a
// double's mantissa, as that mantissa divided by a power of ten (both exact;
// one rounding, as from_chars rounds: Clinger's fast path). A logprob is such
// a number, and an answer carries one per completion token. nullopt for
// anything else.
std::optional<double> ExactDecimal(std::string_view v) {
  static constexpr double kPowersOfTen[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                            1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
  const char* p = v.data();
  const char* const end = p + v.size();
  const bool negative = p != end && *p == '-';
  p += negative ? 1 : 0;
  const char* const first = p;
  uint64_t mantissa = 0;  // wraps past 19 digits, which are refused below
  while (p != end && IsDigit(*p)) mantissa = mantissa * 10 + static_cast<uint64_t>(*p++ - '0');
  const size_t whole = static_cast<size_t>(p - first);
  size_t fraction = 0;
  if (p != end && *p == '.' && whole > 0) {
    const char* const after_point = ++p;
    while (p != end && IsDigit(*p)) mantissa = mantissa * 10 + static_cast<uint64_t>(*p++ - '0');
    fraction = static_cast<size_t>(p - after_point);
    if (fraction == 0) return std::nullopt;
  }
  if (p != end || whole == 0 || whole + fraction > 19 || fraction > 22 || mantissa > (uint64_t{1} << 53)) {
    return std::nullopt;
  }
  if (fraction == 0) {  // an integer, as a parser holds it: "-0" is 0
    auto value = static_cast<int64_t>(mantissa);
    return static_cast<double>(negative ? -value : value);
  }
  double d = static_cast<double>(mantissa) / kPowersOfTen[fraction];
  return negative ? -d : d;
}
}  // namespace

std::optional<double> JsonNumber(std::string_view v) {
  if (auto d = ExactDecimal(v)) return d;
  if (auto i = JsonInteger(v)) return static_cast<double>(*i);
  // from_chars reads JSON's number grammar without the locale strtod consults
  // (a stream carries a logprob per token, and validation reads each one).
  double d = 0;
  auto [end, error] = std::from_chars(v.data(), v.data() + v.size(), d);
  if (error == std::errc() && end == v.data() + v.size()) {
    if (!std::isfinite(d)) return std::nullopt;  // "inf", "nan": not JSON
    return d;
  }
  if (error != std::errc::result_out_of_range) return std::nullopt;
  // Out of range (rare): an underflow reads as the nearest double, as a
  // parser takes it (0 or a subnormal); an overflow is no number.
  std::string text(v);
  char* end_of_number = nullptr;
  d = std::strtod(text.c_str(), &end_of_number);
  if (end_of_number != text.c_str() + text.size() || !std::isfinite(d)) return std::nullopt;
  return d;
}

void JsonObjectWriter::Raw(std::string_view raw_key, std::string_view value) {
  if (!first_) out_ += ',';
  first_ = false;
  out_ += '"';
  out_ += raw_key;
  out_ += "\":";
  out_ += value;
}

}  // namespace forge
