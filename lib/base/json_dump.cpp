#include "base/json_dump.h"

#include <cstdio>

#include "base/json_bytes.h"

namespace forge {
namespace {

using Json = nlohmann::json;

std::string NlohmannDump(const Json& value) { return value.dump(-1, ' ', false, Json::error_handler_t::replace); }

}  // namespace

void AppendJsonString(std::string& out, std::string_view s) {
  size_t start = out.size();
  out += '"';
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  size_t n = s.size();
  for (size_t i = 0; i < n;) {
    size_t plain_end = SkipPlainJsonBytes(p, i, n);
    out.append(s.substr(i, plain_end - i));
    i = plain_end;
    if (i >= n) break;
    unsigned char c = p[i];
    if (c >= 0x80) {
      size_t len = Utf8SequenceLength(p, i, n);
      if (len == 0) {
        // nlohmann's replacement rules are subtle; a broken string is rare.
        out.resize(start);
        out += NlohmannDump(Json(std::string(s)));
        return;
      }
      out.append(s.substr(i, len));
      i += len;
      continue;
    }
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default: {
        char escaped[8];
        std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
        out += escaped;
      }
    }
    ++i;
  }
  out += '"';
}

void AppendJson(const Json& value, std::string& out) {
  switch (value.type()) {
    case Json::value_t::object: {
      out += '{';
      bool first = true;
      for (auto it = value.begin(); it != value.end(); ++it) {
        if (!first) out += ',';
        first = false;
        AppendJsonString(out, it.key());
        out += ':';
        AppendJson(it.value(), out);
      }
      out += '}';
      return;
    }
    case Json::value_t::array: {
      out += '[';
      bool first = true;
      for (const Json& element : value) {
        if (!first) out += ',';
        first = false;
        AppendJson(element, out);
      }
      out += ']';
      return;
    }
    case Json::value_t::string:
      AppendJsonString(out, value.get_ref<const std::string&>());
      return;
    default:  // numbers, booleans, null: short, and nlohmann's number format is the one to keep
      out += NlohmannDump(value);
  }
}

std::string DumpJson(const Json& value) {
  std::string out;
  AppendJson(value, out);
  return out;
}

}  // namespace forge
