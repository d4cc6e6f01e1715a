// The byte-level JSON reader the proxy's hot path uses, and the pass-through
// request splice and response strip built on it. The reader must reject
// exactly what nlohmann::json rejects; the splice must produce a body that
// parses to the client's request plus the capture fields, whatever the
// client's spacing, escapes or duplicate keys.
#include <doctest/doctest.h>
#include <cstring>

#include <functional>
#include <random>
#include <set>

#include <nlohmann/json.hpp>

#include "base/json_scan.h"
#include "proxy/formats/wire.h"
#include "proxy/pass_through.h"
#include "proxy/token_capture.h"

using Json = nlohmann::json;
// A namespace of its own, so that its using-directive reaches no other file of
// a unity build.
namespace json_scan_test {
using namespace forge;

namespace {

bool NlohmannAccepts(std::string_view text) { return Json::accept(text); }

// The validator accepts text of ids as nlohmann does and, where it does,
// AppendJsonInt32s reads the integers nlohmann reads (those JsonInteger takes).
void CheckIdsReadAsNlohmannReads(const std::string& text) {
  bool accepted = !JsonSyntaxError(text).has_value();
  CHECK(accepted == NlohmannAccepts(text));
  if (!accepted) return;
  std::vector<int32_t> ids;
  AppendJsonInt32s(text, ids);
  std::vector<int32_t> expected;
  for (const Json& v : Json::parse(text)) {
    if (v.is_number_integer() && v.dump().size() <= 19) expected.push_back(static_cast<int32_t>(v.get<int64_t>()));
  }
  CHECK(ids == expected);
}

}  // namespace

TEST_CASE("json scan: accepts and rejects exactly what nlohmann::json does") {
  const std::vector<std::string> cases = {
      "{}", "[]", "0", "-0", "1.5e3", "-1E-2", "\"x\"", "true", "false", "null", " \n\t{\"a\" : [1, 2 ,3] }\r\n",
      "\xEF\xBB\xBF{}", "{\"a\":\"\\u00e9\\ud83d\\ude00\\n\\\"\"}", "\"\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\"",
      "123456789012345678901234567890", "1e308",
      // rejected:
      "", " ", "{", "}", "[1,]", "{\"a\":1,}", "{\"a\" 1}", "{a:1}", "01", "1.", ".5", "-", "1e", "+1", "tru",
      "nul", "[1 2]", "{} {}", "\"abc", "\"a\tb\"", "\"\\x\"", "\"\\u12\"", "\"\\ud800\"", "\"\\udc00\"",
      "\"\\ud800\\u0041\"", "\"\xC0\xAF\"", "\"\xED\xA0\x80\"", "\"\xF5\x80\x80\x80\"", "\"\xE2\x82\"", "\xEF\xBB{}",
      "1e400", "-1e999", "[1]x", "\"a\"\"b\"", std::string("{\"a\":1}\0", 8), std::string("{\"a\":1}\0x", 9),
      std::string("[1,\0]", 5), "[[[[[[[[[[[[]]]]]]]]]]]]",
      std::string(10000, '['),
      // Numbers a double cannot hold without an exponent: only past 308 digits.
      "1" + std::string(307, '0'), "1" + std::string(309, '0'), "-9" + std::string(320, '9') + ".5",
      "0." + std::string(400, '0') + "1", "[" + std::string(300, '7') + "]",
  };
  for (const std::string& text : cases) {
    CAPTURE(text);
    CHECK(!JsonSyntaxError(text).has_value() == NlohmannAccepts(text));
  }
}

TEST_CASE("json scan: a special byte anywhere in a long string is seen, as nlohmann sees it") {
  // The string scan skips sixteen bytes (SSE2) or eight at a time; each kind
  // of byte it must stop for sits at every offset of two blocks, alone and at
  // the edges of the input.
  const std::vector<std::string> specials = {"\"", "\\n", "\\", "\t", std::string(1, '\0'), "\x1f",
                                             "\xC3\xA9", "\xC3", "\xE2\x82\xAC", "\xF0\x9F\x98\x80",
                                             "\xED\xA0\x80", "\x7f", "\x80", "\xff", " ", "~"};
  for (const std::string& special : specials) {
    for (size_t before = 0; before < 40; ++before) {
      for (size_t after : {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{9}, size_t{15}, size_t{16}, size_t{23}}) {
        std::string text = "{\"k\":\"" + std::string(before, 'a') + special + std::string(after, 'b') + "\"}";
        CAPTURE(text);
        CHECK(!JsonSyntaxError(text).has_value() == NlohmannAccepts(text));
        std::string cut = text.substr(0, text.size() - 2);  // unterminated
        CHECK(!JsonSyntaxError(cut).has_value() == NlohmannAccepts(cut));
      }
    }
  }
}

TEST_CASE("json scan: arrays of integers (token ids) read eight digits at a time, as nlohmann reads them") {
  // Each number of one to twelve digits, a sign or none, then every byte
  // that may follow a number's digits, at each distance from the end of the
  // text (the reads of eight bytes stop short of it); and a random array of
  // ids with odd spacing, the way an answer carries a prompt's.
  std::vector<std::string> numbers;
  for (const char* digits : {"0", "7", "10", "123", "4096", "65535", "151642", "1234567", "12345678", "123456789",
                             "99999999999", "100000000000"}) {
    numbers.push_back(digits);
    numbers.push_back(std::string("-") + digits);
  }
  const std::vector<std::string> follows = {",", "]", " ]", ",1]", ", 2]", ".5]", "e3]", "E-1]", "x]", "0]", "-]",
                                            ",]", ",,1]", ",-]", "\n,3]", "\"a\"]", ""};
  for (const std::string& number : numbers) {
    for (const std::string& follow : follows) {
      for (size_t lead = 0; lead < 10; ++lead) {
        std::string text = "[" + std::string(lead, ' ') + "1," + number + follow;
        CAPTURE(text);
        CheckIdsReadAsNlohmannReads(text);
      }
    }
  }
  // "01" (a leading zero) and a lone sign are not numbers wherever they sit,
  // in a short array or far from the end of a long one.
  std::string ones;
  for (int i = 0; i < 12; ++i) ones += "1,";
  const std::vector<std::string> bads = {"[01]", "[1,01]", "[1,2,3,4,5,6,7,8,00]", "[-]", "[1,-]", "[1,-a]", "[--1]", "[1,+2]",
                          "[" + ones + "01," + ones + "1]", "[" + ones + "0123456," + ones + "1]",
                          "[" + ones + "00," + ones + "1]", "[" + ones + "-," + ones + "1]",
                          "[" + ones + "1,," + ones + "1]", "[" + ones + "12345678901234567890123," + ones + "]"};
  for (const std::string& bad : bads) {
    CAPTURE(bad);
    CHECK(JsonSyntaxError(bad).has_value());
    CHECK(!NlohmannAccepts(bad));
  }
  std::mt19937 rng(11);
  for (int round = 0; round < 200; ++round) {
    std::string text = "[";
    std::vector<int32_t> expected;
    int count = static_cast<int>(rng() % 300);
    for (int i = 0; i < count; ++i) {
      int32_t id = static_cast<int32_t>(rng() % (round % 2 ? 152000 : 100000000));
      if (rng() % 50 == 0) id = -id;
      if (i) text += rng() % 7 == 0 ? " , " : ",";
      text += std::to_string(id);
      expected.push_back(id);
    }
    text += rng() % 2 ? "]" : " ]\n";
    CAPTURE(text);
    CHECK(!JsonSyntaxError(text).has_value());
    std::vector<int32_t> ids{-5};
    AppendJsonInt32s(text, ids);
    expected.insert(expected.begin(), -5);  // appended after what was there
    CHECK(ids == expected);
  }
}

TEST_CASE("json scan: long arrays of ids read sixteen bytes at a time, as nlohmann reads them") {
  // The block paths (validator and reader) take sixteen bytes at once and
  // trust the masks: each thing that must stop them sits at every offset of
  // three blocks of a long array, between ids of every length.
  const std::vector<std::string> oddities = {"01", "00", "0", "-0", "-7", "", " 5", "5 ", "\n6", "1.5", "2e3",
                                             "123456789", "1234567890", "99999999", "x", "\"s\"", "[]", "[1,2]",
                                             "null", "\xC3\xA9"};
  std::mt19937 rng(5);
  for (const std::string& odd : oddities) {
    for (size_t at = 0; at < 48; ++at) {
      std::string text = "[";
      size_t ids_before = 0;
      while (text.size() < 1 + at) {
        text += std::to_string(rng() % (ids_before % 3 == 0 ? 10 : 1000000)) + ",";
        ++ids_before;
      }
      text += odd;
      for (int k = 0; k < 12; ++k) text += "," + std::to_string(rng() % 152000);
      text += "]";
      CAPTURE(text);
      CheckIdsReadAsNlohmannReads(text);
    }
  }
}

TEST_CASE("json scan: ids appended a chunk at a time grow their vector geometrically") {
  // A stream's chunks carry one id each; room reserved for exactly the next
  // few would reallocate (and copy) the whole vector on every chunk.
  std::vector<int32_t> ids;
  std::set<size_t> capacities;
  for (int i = 0; i < 4000; ++i) {
    AppendJsonInt32s("[" + std::to_string(1000 + i) + "]", ids);
    capacities.insert(ids.capacity());
  }
  REQUIRE(ids.size() == 4000);
  CHECK(ids.back() == 4999);
  CHECK(capacities.size() < 20);
}

TEST_CASE("json scan: members and elements as spans, duplicates kept, last one found") {
  std::string text = R"( { "a" : 1 , "b\u0022" : {"x": [1, "]"]}, "a": "two", "c": [ 1 , {"d": "}"} ] } )";
  REQUIRE_FALSE(JsonSyntaxError(text));
  auto members = ObjectMembers(text);
  REQUIRE(members.size() == 4);
  CHECK(members[0].key == "a");
  CHECK(members[0].value == "1");
  CHECK(members[1].KeyIs("b\""));
  CHECK(members[1].value == R"({"x": [1, "]"]})");
  CHECK(FindMember(members, "a")->value == "\"two\"");
  auto elements = ArrayElements(FindMember(members, "c")->value);
  REQUIRE(elements.size() == 2);
  CHECK(elements[0] == "1");
  CHECK(elements[1] == R"({"d": "}"})");
  CHECK(ObjectMembers("[1]").empty());
  CHECK(ArrayElements("[ ]").empty());
  CHECK(DecodeJsonString(R"(a\n\u00e9\ud83d\ude00\\)") == "a\n\xC3\xA9\xF0\x9F\x98\x80\\");
  CHECK(JsonInteger("-42") == -42);
  CHECK_FALSE(JsonInteger("4.2"));
  CHECK(JsonNumber("-0.5e1") == -5.0);
  CHECK(JsonNumber("-0.693147") == -0.693147);
  // Out of double's range: an underflow is the nearest double, as a parser reads it; an overflow is no number.
  CHECK(JsonNumber("1e-400") == 0.0);
  CHECK_FALSE(JsonNumber("1e400"));
  CHECK_FALSE(JsonNumber("-1e400"));
  CHECK_FALSE(JsonNumber("inf"));
  CHECK_FALSE(JsonNumber("nan"));
  CHECK_FALSE(JsonNumber("1.5x"));
}

TEST_CASE("json scan: decimals read by division are the doubles nlohmann reads, bit for bit") {
  // JsonNumber reads a short decimal as mantissa / 10^k (exact operands, one
  // rounding); every digit count and point position up to and past where
  // that stops being exact, against nlohmann's double.
  std::mt19937_64 rng(3);
  auto same_bits = [](double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; };
  for (int digits = 1; digits <= 20; ++digits) {
    for (int round = 0; round < 300; ++round) {
      std::string text;
      for (int d = 0; d < digits; ++d) text += static_cast<char>('0' + rng() % 10);
      size_t point = rng() % (text.size() + 1);
      if (point > 0 && point < text.size()) text.insert(point, ".");
      else if (point == 0) text = "0." + text;
      if (text.size() > 1 && text[0] == '0' && text[1] != '.') text[0] = '1';  // JSON: no leading zero
      if (rng() % 2) text = "-" + text;
      CAPTURE(text);
      auto got = JsonNumber(text);
      REQUIRE(got.has_value());
      CHECK(same_bits(*got, Json::parse(text).get<double>()));
    }
  }
  for (const char* text : {"-0.0", "0.0000000000000000000001", "0.00000000000000000000001", "999999999999999.9",
                           "9007199254740993.0", "-0.693147", "1.5", "0.1", "0.3"}) {
    CAPTURE(text);
    CHECK(same_bits(*JsonNumber(text), Json::parse(text).get<double>()));
  }
  CHECK_FALSE(JsonNumber("-"));
  CHECK_FALSE(JsonNumber("1.2.3"));
  CHECK_FALSE(JsonNumber("--1.5"));
}

TEST_CASE("json scan: with the validator's spans, members and elements are the same, nested values stepped over") {
  std::mt19937 rng(11);
  // Strings full of brackets, quotes and backslashes: a scan that lost its
  // place in one would split the container wrongly.
  const std::vector<std::string> strings = {"", "a", "{", "}]", "[\"x\"]", "\\", "\\\"{", "tok \u00e9 ]"};
  std::function<Json(int)> random_value = [&](int depth) -> Json {
    switch (depth > 3 ? rng() % 4 : rng() % 6) {
      case 0: return strings[rng() % strings.size()];
      case 1: return static_cast<int64_t>(rng() % 100000) - 50000;
      case 2: return -0.5 * static_cast<double>(rng() % 7);
      case 3: return rng() % 2 ? Json(nullptr) : Json(true);
      case 4: {
        Json object = Json::object();
        for (int k = static_cast<int>(rng() % 4); k > 0; --k) object[strings[rng() % strings.size()]] = random_value(depth + 1);
        return object;
      }
      default: {
        Json array = Json::array();
        for (int k = static_cast<int>(rng() % 4); k > 0; --k) array.push_back(random_value(depth + 1));
        return array;
      }
    }
  };
  size_t compared = 0;
  JsonSpans spans;
  std::function<void(std::string_view)> same = [&](std::string_view value) {
    if (IsJsonObject(value)) {
      JsonMembers scanned = ObjectMembers(value), stepped = ObjectMembers(value, &spans);
      REQUIRE(scanned.size() == stepped.size());
      // The validator noted where this object ends (empty ones are not noted).
      CHECK(spans.EndOf(value.data()) == (scanned.empty() ? nullptr : value.data() + value.size()));
      for (size_t k = 0; k < scanned.size(); ++k) {
        CHECK(scanned[k].key.data() == stepped[k].key.data());
        CHECK(scanned[k].value.data() == stepped[k].value.data());
        CHECK(scanned[k].value.size() == stepped[k].value.size());
        ++compared;
        same(stepped[k].value);
      }
    } else if (IsJsonArray(value)) {
      JsonElements scanned = ArrayElements(value), stepped = ArrayElements(value, &spans);
      REQUIRE(scanned.size() == stepped.size());
      CHECK(spans.EndOf(value.data()) == (scanned.empty() ? nullptr : value.data() + value.size()));
      for (size_t k = 0; k < scanned.size(); ++k) {
        CHECK(scanned[k].data() == stepped[k].data());
        CHECK(scanned[k].size() == stepped[k].size());
        ++compared;
        same(stepped[k]);
      }
    }
  };
  for (int round = 0; round < 400; ++round) {
    Json doc = {{"choices", Json::array({random_value(1), random_value(1)})}, {"x", random_value(0)}};
    std::string text = doc.dump(round % 2 ? 1 : -1);  // with whitespace and without
    REQUIRE_FALSE(JsonSyntaxError(text, &spans).has_value());
    same(TrimJson(text));
  }
  CHECK(compared > 2000);
  // Spans of another text are not used: the scan reads the value itself.
  std::string other = R"({"a":[1,{"b":"]"}],"c":{}})";
  REQUIRE_FALSE(JsonSyntaxError(R"([[1],[2]])", &spans).has_value());
  JsonMembers members = ObjectMembers(other, &spans);
  REQUIRE(members.size() == 2);
  CHECK(members[0].value == R"([1,{"b":"]"}])");
  CHECK(members[1].value == "{}");
}

TEST_CASE("pass-through request: the capture fields spliced into the client's bytes") {
  // Odd spacing, escaped strings that look like keys, a duplicate key.
  std::string body = "\xEF\xBB\xBF {\n  \"model\" : \"m\\u00e9\",\n  \"messages\" : [ {\"role\":\"user\", "
                     "\"content\":\"say \\\"logprobs\\\": false, \\\"return_token_ids\\\": 1\"} ],\n"
                     "  \"logprobs\": false, \"stream\": true, \"logprobs\": false, \"temperature\": 0.5 }  ";
  auto r = proxy::ReadPassThroughRequest(body, false);
  REQUIRE(r.ok());
  CHECK(r->stream);
  CHECK(r->model == "m\xC3\xA9");
  CHECK_FALSE(r->wants.logprobs);
  CHECK_FALSE(r->wants.token_ids);
  CHECK_FALSE(r->client_wants_usage);
  Json sent = Json::parse(r->UpstreamBody(body));
  Json client = Json::parse(body);
  // What the document path would have sent.
  Json expected = client;
  proxy::AddCaptureFields(expected, false);
  expected["stream_options"] = {{"include_usage", true}};
  CHECK(sent == expected);
  CHECK(sent["messages"][0]["content"] == "say \"logprobs\": false, \"return_token_ids\": 1");
  // The patch the store keeps gives the same upstream request back.
  Json patched = client;
  Json patch = Json::parse(r->upstream_patch);
  CHECK(patch["unset"] == Json::array());
  for (auto& [k, v] : patch["set"].items()) patched[k] = v;
  CHECK(patched == sent);
  CHECK(r->upstream_patch == patch.dump());  // compact, keys sorted: the bytes a dump of the document gives
  // Each field the proxy sets appears once in the bytes.
  size_t count = 0;
  std::string upstream = r->UpstreamBody(body);
  for (size_t at = upstream.find("\"logprobs\":"); at != std::string::npos;
       at = upstream.find("\"logprobs\":", at + 1)) {
    ++count;
  }
  CHECK(count == 1);
}

TEST_CASE("pass-through request: a body without capture fields goes upstream from where it is") {
  std::string body = "\xEF\xBB\xBF {\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"" +
                     std::string(100000, 'x') + "\"}], \"stream\": false }\n";
  auto r = proxy::ReadPassThroughRequest(body, false);
  REQUIRE(r.ok());
  // The client's object from its opening brace (no byte-order mark) to
  // before its closing one, then only what the proxy adds.
  std::string_view object = forge::TrimJson(body);
  CHECK(std::string_view(body).substr(r->kept_from, r->kept) == object.substr(0, object.size() - 1));
  CHECK(r->added == R"(,"logprobs":true,"top_logprobs":0,"return_token_ids":true})");
  Json expected = Json::parse(body);
  proxy::AddCaptureFields(expected, false);
  CHECK(Json::parse(r->UpstreamBody(body)) == expected);
  // A NUL byte ends the input for a parser, so what follows it is not sent.
  std::string cut = R"({"messages":[{"role":"user","content":"x"}] } )" + std::string(1, '\0') + "}]junk";
  auto c = proxy::ReadPassThroughRequest(cut, false);
  REQUIRE(c.ok());
  std::string upstream = c->UpstreamBody(cut);
  CHECK(upstream.find('\0') == std::string::npos);
  CHECK(upstream.find("junk") == std::string::npos);
  Json sent = Json::parse(upstream);
  CHECK(sent["messages"][0]["content"] == "x");
  CHECK(sent["return_token_ids"] == true);
}

TEST_CASE("pass-through request: what the client asked for itself is kept") {
  std::string body =
      R"({"messages":[{"role":"user","content":"x"}],"logprobs":true,"top_logprobs":3,"return_token_ids":true,)"
      R"("stream":true,"stream_options":{"include_usage":true}})";
  auto r = proxy::ReadPassThroughRequest(body, false);
  REQUIRE(r.ok());
  CHECK(r->wants.logprobs);
  CHECK(r->wants.top_logprobs);
  CHECK(r->wants.token_ids);
  CHECK(r->client_wants_usage);
  Json sent = Json::parse(r->UpstreamBody(body));
  CHECK(sent["top_logprobs"] == 3);
  CHECK(sent["stream_options"] == Json{{"include_usage", true}});
  std::string completion = R"({"prompt":"x","logprobs":2})";
  auto c = proxy::ReadPassThroughRequest(completion, true);
  REQUIRE(c.ok());
  CHECK(c->wants.logprobs);
  CHECK(c->wants.top_logprobs);
  CHECK(Json::parse(c->UpstreamBody(completion))["logprobs"] == 2);
  std::string ids = R"({"prompt":[1,2]})";
  auto d = proxy::ReadPassThroughRequest(ids, true);
  REQUIRE(d.ok());
  CHECK(Json::parse(d->UpstreamBody(ids))["logprobs"] == 0);
}

TEST_CASE("pass-through request: bad input named as the document path names it") {
  auto error = [](std::string_view body, bool completions = false) {
    auto r = proxy::ReadPassThroughRequest(body, completions);
    return r.ok() ? std::string("ok") : r.status().message();
  };
  CHECK(error("{\"messages\": [}").rfind("request body is not valid JSON: ", 0) == 0);
  CHECK(error("[1]") == "request body: must be a JSON object");
  CHECK(error("{}") == "messages: must be an array of messages");
  CHECK(error(R"({"messages": {"role": "user"}})") == "messages: must be an array of messages");
  CHECK(error(R"({"messages": [{"role": "user"}, {"content": "x"}]})") == "messages[1].role: missing or not a string");
  CHECK(error(R"({"messages": [{"role": "user"}, 3]})") == "messages[1].role: missing or not a string");
  CHECK(error(R"({"messages": [{"role": 1, "role": "user"}]})") == "ok");  // the last duplicate counts
  CHECK(error(R"({"messages": [], "stream": "yes"})") == "stream: must be a boolean");
  CHECK(error(R"({"prompt": 3})", true) == "prompt: must be a string, a list of strings or a list of token ids");
}

TEST_CASE("pass-through response: tokens harvested, fields the client did not ask for cut") {
  std::string body = R"({"id":"c","prompt_token_ids":[1,2,3],"choices":[{"index":0,"message":{"content":"token_ids"},)"
                     R"("token_ids":[7,8],"logprobs":{"content":[{"token":"a","logprob":-0.5},{"token":"b","logprob":-1.5}]},)"
                     R"("finish_reason":"stop"}],"usage":{"prompt_tokens":3}})";
  proxy::CapturedTokens tokens;
  auto r = proxy::CaptureAndStrip(body, proxy::CaptureWants{}, false, tokens);
  REQUIRE(r.ok());
  CHECK(tokens.prompt_ids == std::vector<int32_t>{1, 2, 3});
  CHECK(tokens.completion_ids == std::vector<int32_t>{7, 8});
  CHECK(tokens.logprobs == std::vector<float>{-0.5f, -1.5f});
  CHECK(r->final);
  CHECK(r->finish_reason == "stop");
  CHECK(Json::parse(r->usage) == Json{{"prompt_tokens", 3}});
  // The same as stripping the parsed document.
  Json expected = Json::parse(body);
  proxy::StripCaptureFields(expected, proxy::CaptureWants{});
  CHECK(Json::parse(r->text) == expected);

  // The token_id:N form, a chunk that is not final, usage dropped.
  proxy::CapturedTokens t2;
  std::string chunk = R"({"choices":[{"index":0,"delta":{"content":"x"},"logprobs":{"content":[{"token":"token_id:42","logprob":-0.25}]},"finish_reason":null}],"usage":null})";
  auto c = proxy::CaptureAndStrip(chunk, proxy::CaptureWants{}, true, t2);
  REQUIRE(c.ok());
  CHECK_FALSE(c->final);
  CHECK(t2.completion_ids == std::vector<int32_t>{42});
  CHECK(t2.logprobs == std::vector<float>{-0.25f});
  CHECK(Json::parse(c->text) == Json::parse(R"({"choices":[{"index":0,"delta":{"content":"x"},"logprobs":null,"finish_reason":null}]})"));

  // Nothing to cut: the bytes go through untouched.
  proxy::CaptureWants all;
  all.logprobs = all.token_ids = true;
  proxy::CapturedTokens t3;
  auto same = proxy::CaptureAndStrip(body, all, false, t3);
  REQUIRE(same.ok());
  CHECK(same->text == body);

  // The usage chunk, an error event, invalid JSON.
  proxy::CapturedTokens t4;
  auto usage = proxy::CaptureAndStrip(R"({"choices":[],"usage":{"completion_tokens":2}})", proxy::CaptureWants{}, false, t4);
  REQUIRE(usage.ok());
  CHECK(usage->usage_only);
  CHECK(usage->final);
  auto error = proxy::CaptureAndStrip(R"({"error":{"message":"boom"}})", proxy::CaptureWants{}, false, t4);
  REQUIRE(error.ok());
  CHECK(error->is_error);
  CHECK_FALSE(proxy::CaptureAndStrip("{\"choices\":[", proxy::CaptureWants{}, false, t4).ok());
}

TEST_CASE("pass-through request: a helper call without tools is a side call, a policy turn is not") {
  using forge::proxy::ReadPassThroughRequest;
  // opencode's title generator: no tools, its system prompt says what it is.
  auto title = ReadPassThroughRequest(
      R"({"model":"m","stream":true,"messages":[{"role":"system","content":"You are a title generator. Output a short title."},{"role":"user","content":"make hello.txt"}]})",
      false);
  REQUIRE(title.ok());
  CHECK(title->side_call);
  // The same prompt offering tools is the agent loop itself.
  auto turn = ReadPassThroughRequest(
      R"({"model":"m","tools":[{"type":"function","function":{"name":"write"}}],"messages":[{"role":"system","content":"You are a title generator."},{"role":"user","content":"x"}]})",
      false);
  REQUIRE(turn.ok());
  CHECK_FALSE(turn->side_call);
  auto plain = ReadPassThroughRequest(R"({"model":"m","messages":[{"role":"user","content":"hello"}]})", false);
  REQUIRE(plain.ok());
  CHECK_FALSE(plain->side_call);
  // The marker in capitals at every offset: its letters are folded both
  // sixteen bytes at a time and in the tail, next to UTF-8 and to the ASCII
  // neighbours of the letters ('@' and '[' are 'A' - 1 and 'Z' + 1).
  for (size_t pad = 0; pad < 40; ++pad) {
    std::string text = std::string(pad, '@') + "\u00c0[`{ GENERATE A CONCISE";
    auto folded = ReadPassThroughRequest(R"({"messages":[{"role":"system","content":")" + text + R"("}]})", false);
    REQUIRE(folded.ok());
    CHECK_MESSAGE(folded->side_call, "pad " << pad);
  }
  // Every marker at every offset of a 16-byte step, at the probe's end and
  // before more text; one byte off is not a marker.
  for (std::string marker : {"you are a title generator", "new conversation topic", "generate a concise",
                             "conversation title", "write a 5-10 word title", "summarize this coding conversation",
                             "isnewtopic"}) {
    for (size_t pad = 0; pad < 34; ++pad) {
      for (std::string tail : {"", " and then some more words."}) {
        std::string near = marker;
        near.back() = near.back() == 'x' ? 'y' : 'x';
        for (bool exact : {true, false}) {
          std::string text = std::string(pad, 'g') + (exact ? marker : near) + tail;
          auto read = ReadPassThroughRequest(R"({"messages":[{"role":"user","content":")" + text + R"("}]})", false);
          REQUIRE(read.ok());
          CHECK_MESSAGE(read->side_call == exact, marker << " pad " << pad << " tail " << tail.size());
        }
      }
    }
  }
}

TEST_CASE("side-call rule: the skipping marker search finds what a plain search of the lowered text finds") {
  // Texts made of pieces of the markers, their near misses, capitals and
  // other bytes, so markers start, overlap and break off everywhere; the
  // search moves by up to a marker's length, so a miss would be a skip too far.
  const std::vector<std::string> markers = {"you are a title generator", "new conversation topic",
                                            "generate a concise", "conversation title", "write a 5-10 word title",
                                            "summarize this coding conversation", "isnewtopic"};
  const std::vector<std::string> pieces = {"you are a ", "title ", "generator", "new ", "conversation ", "topic",
                                           "generate a ", "concise", "write a 5-10 ", "word ", "summarize this ",
                                           "coding ", "isnew", "topic", "TITLE", "Generate", "IsNewTopic", "x", " ",
                                           "\xC3\xA9", "ge", "on", "ti", "a ", "-", "5", "is", "new"};
  auto plain = [&](std::string text) {
    for (char& c : text) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    return std::any_of(markers.begin(), markers.end(), [&](const std::string& m) { return text.find(m) != std::string::npos; });
  };
  std::mt19937 rng(5);
  int found = 0;
  for (int round = 0; round < 4000; ++round) {
    std::string text;
    int count = 1 + static_cast<int>(rng() % 12);
    for (int i = 0; i < count; ++i) text += pieces[rng() % pieces.size()];
    forge::proxy::wire::SideCallSigns signs;
    signs.probe = text;
    CAPTURE(text);
    CHECK(forge::proxy::wire::IsSideCall(signs) == plain(text));
    found += plain(text) ? 1 : 0;
  }
  CHECK(found > 100);  // the texts do hold markers, not only near misses
  CHECK(found < 3900);
}

TEST_CASE("pass-through request: the side-call test on bytes agrees with the one on a document") {
  // The pass-through judges a request from its text without parsing the
  // conversation; it must decide exactly as wire::LooksLikeSideCall does.
  std::string long_text(200 * 1024, 'x');
  std::string escaped_marker = R"(Y\u006fu are a title generator)";  // "You are a title generator"
  const std::vector<std::string> bodies = {
      R"({"messages":[{"role":"system","content":"You are a TITLE generator."},{"role":"user","content":"x"}]})",
      R"({"messages":[{"role":"system","content":")" + escaped_marker + R"("},{"role":"user","content":"x"}]})",
      R"({"messages":[{"role":"developer","content":[{"type":"text","text":"Write a 5-10 word title"}]}]})",
      R"({"messages":[{"role":"user","content":[{"type":"image_url","text":"conversation title"},{"type":"text","text":"hi"}]}]})",
      R"({"messages":[{"role":"user","content":"hello"},{"role":"user","content":"conversation title"}]})",
      R"({"messages":[{"role":"assistant","content":"conversation title"},{"role":"user","content":"hi"}]})",
      R"({"messages":[{"role":"user","content":")" + long_text + R"(conversation title"}]})",
      R"({"messages":[{"role":"system","content":")" + std::string(4090, 'y') + R"(conversation title"}]})",
      R"({"messages":[{"role":"system","content":")" + std::string(4070, 'y') + R"(\n conversation title"}]})",
      R"({"messages":[{"role":"system","content":"a"},{"role":"system","content":"new conversation topic"}]})",
      R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":1})",
      R"({"messages":[{"role":"user","content":"hi"}],"max_completion_tokens":0})",
      R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":1.0})",
      R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":64})",
      R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":1,"max_tokens":64})",
      R"({"messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_object"}})",
      R"({"messages":[{"role":"user","content":"hi"}],"response_format":{"type":"text"}})",
      R"({"messages":[{"role":"user","content":"hi"}],"response_format":{}})",
      R"({"messages":[{"role":"user","content":"hi"}],"response_format":"json"})",
      R"({"messages":[{"role":"user","content":"title generator"}],"tools":[],"max_tokens":1})",
      R"({"messages":[{"role":"user","content":"hi"}],"tools":[ {"type":"function"} ],"max_tokens":1})",
      R"({"messages":[{"role":"user","content":null}]})",
      R"({"messages":[]})",
  };
  for (const std::string& body : bodies) {
    CAPTURE(body.substr(0, 160));
    auto read = proxy::ReadPassThroughRequest(body, false);
    REQUIRE(read.ok());
    CHECK(read->side_call == proxy::wire::LooksLikeSideCall(Json::parse(body)));
    // And the bytes sent upstream are what the document path would send.
    Json expected = Json::parse(body);
    proxy::AddCaptureFields(expected, false);
    CHECK(Json::parse(read->UpstreamBody(body)) == expected);
  }
  // The cases above exercise both answers.
  CHECK(proxy::ReadPassThroughRequest(bodies[0], false)->side_call);
  CHECK_FALSE(proxy::ReadPassThroughRequest(bodies[6], false)->side_call);
}

TEST_CASE("json scan: a decoded prefix stops early and matches the whole decode") {
  std::string raw = R"(ab\n\u00e9\ud83d\ude00cd)";
  std::string whole = DecodeJsonString(raw);
  for (size_t n = 0; n <= whole.size(); ++n) {
    std::string prefix = DecodeJsonStringPrefix(raw, n);
    CHECK(prefix.size() >= n);
    CHECK(whole.compare(0, prefix.size(), prefix) == 0);
  }
  CHECK(DecodeJsonStringPrefix(std::string(100000, 'z'), 10).size() == 10);
}

TEST_CASE("json scan: a nesting limit refuses deeper objects and arrays, at any depth without recursion") {
  auto nested = [](int depth, char open, char close) {
    return std::string(static_cast<size_t>(depth), open) + std::string(static_cast<size_t>(depth), close);
  };
  CHECK_FALSE(forge::JsonSyntaxError(nested(512, '[', ']'), nullptr, 512));
  auto over = forge::JsonSyntaxError(nested(513, '[', ']'), nullptr, 512);
  REQUIRE(over);
  CHECK(over->rfind("nested deeper than 512 levels at byte 512", 0) == 0);
  // Empty containers count as a level; objects as arrays do.
  CHECK(forge::JsonSyntaxError("[[[]]]", nullptr, 2));
  CHECK_FALSE(forge::JsonSyntaxError("[[],[]]", nullptr, 2));
  std::string objects;
  for (int i = 0; i < 600; ++i) objects += "{\"k\":";
  objects += "1" + std::string(600, '}');
  CHECK(forge::JsonSyntaxError(objects, nullptr, 512));
  CHECK_FALSE(forge::JsonSyntaxError(objects));  // no limit given: any depth
  // A million levels: refused at the limit, checked without a deep stack.
  CHECK(forge::JsonSyntaxError(nested(1000000, '[', ']'), nullptr, 512));
  CHECK_FALSE(forge::JsonSyntaxError(nested(1000000, '[', ']')));
}

TEST_CASE("pass-through requests: nesting past the limit is refused, saying so and naming the flag") {
  std::string body = R"({"model":"m","messages":[{"role":"user","content":"hi"}],"x":)" + std::string(30000, '[') +
                     std::string(30000, ']') + "}";
  auto r = forge::proxy::ReadPassThroughRequest(body, false, 512);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find("nested deeper than 512 levels") != std::string::npos);
  CHECK(r.status().message().find("--max-json-depth") != std::string::npos);
  CHECK(forge::proxy::ReadPassThroughRequest(body, false, 40000).ok());
  CHECK(forge::proxy::RequestJsonError("unexpected end of input at byte 3") ==
        "request body is not valid JSON: unexpected end of input at byte 3");
}

}  // namespace json_scan_test
