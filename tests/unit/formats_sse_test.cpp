#include <doctest/doctest.h>

#include "base/json_dump.h"
#include "proxy/sse.h"
#include "proxy/formats/wire.h"

using forge::proxy::Json;
using forge::proxy::SseEvent;
using forge::proxy::SseParser;

TEST_CASE("sse: events split across reads at every byte come out whole") {
  std::string stream =
      "\xEF\xBB\xBF: keep-alive\r\nevent: a\r\ndata: {\"x\":1}\r\n\r\n"
      "data: line1\ndata: line2\nid: 7\n\n"
      "event: b\rdata: cr\r\r"
      "retry: 10\ndata:nospace\n\n"
      "event: only-event\n\n";
  for (size_t cut = 0; cut <= stream.size(); ++cut) {
    SseParser parser;
    std::vector<SseEvent> out;
    REQUIRE(parser.Feed(stream.substr(0, cut), out));
    REQUIRE(parser.Feed(stream.substr(cut), out));
    REQUIRE(out.size() == 4);
    CHECK(out[0].event == "a");
    CHECK(out[0].data == "{\"x\":1}");
    CHECK(out[1].event.empty());
    CHECK(out[1].data == "line1\nline2");
    CHECK(out[1].id == "7");
    CHECK(out[2].event == "b");
    CHECK(out[2].data == "cr");
    CHECK(out[3].data == "nospace");
    CHECK_FALSE(parser.Finish());
  }
}

TEST_CASE("sse: an unterminated last event is reported, not delivered") {
  SseParser parser;
  std::vector<SseEvent> out;
  REQUIRE(parser.Feed("data: {\"cut\":", out));
  CHECK(out.empty());
  CHECK(parser.Finish());
}

TEST_CASE("sse: frames written by SseFrame read back") {
  Json data = {{"type", "ping"}, {"text", "a\nb"}};
  SseParser parser;
  std::vector<SseEvent> out;
  REQUIRE(parser.Feed(forge::proxy::wire::SseFrame("ping", data), out));
  REQUIRE(out.size() == 1);
  CHECK(out[0].event == "ping");
  CHECK(Json::parse(out[0].data) == data);
}

TEST_CASE("sse: AppendJsonString writes a string as nlohmann's dump does") {
  std::vector<std::string> texts = {"", "plain", "quote \" and backslash \\", "\b\f\n\r\t", "\x7f", "é ∑ 😀",
                                    "tail\\", "\"", "a\"b\\c\n"};
  for (int c = 0; c < 0x20; ++c) texts.push_back("x" + std::string(1, static_cast<char>(c)) + "y");
  for (const std::string& text : texts) {
    CAPTURE(text);
    std::string out = "prefix:";
    forge::AppendJsonString(out, text);
    CHECK(out == "prefix:" + Json(text).dump(-1, ' ', false, Json::error_handler_t::replace));
  }
}

TEST_CASE("sse: a reused event buffer carries nothing from one read to the next") {
  forge::proxy::SseParser parser;
  forge::proxy::SseEvents events;
  REQUIRE(parser.Feed("event: a\ndata: first, a longer one\n\ndata: x\n\n", events));
  REQUIRE(events.size() == 2);
  CHECK(events[0].event == "a");
  CHECK(events[0].data == "first, a longer one");
  for (int read = 0; read < 3; ++read) {
    events.clear();
    REQUIRE(parser.Feed("data: y\n", events));
    CHECK(events.empty());
    REQUIRE(parser.Feed("\nid: 9\ndata: z\r\n\r\n", events));
    REQUIRE(events.size() == 2);
    CHECK(events[0].event.empty());
    CHECK(events[0].data == "y");
    CHECK(events[1].data == "z");
    CHECK(events[1].id == "9");
  }
}

TEST_CASE("sse: a line over the cap is refused, whole or arriving in pieces") {
  const std::string piece(1 << 20, 'x');
  forge::proxy::SseParser pieces;
  forge::proxy::SseEvents events;
  bool ok = pieces.Feed("data: ", events);
  for (size_t sent = 0; ok && sent <= forge::proxy::SseParser::kMaxLine; sent += piece.size()) {
    ok = pieces.Feed(piece, events);
  }
  CHECK_FALSE(ok);
  CHECK(events.empty());
  forge::proxy::SseParser whole;
  std::string line = "data: " + std::string(forge::proxy::SseParser::kMaxLine, 'y') + "\n\n";
  CHECK_FALSE(whole.Feed(line, events));
  // At the cap exactly, a line is read.
  forge::proxy::SseParser at_cap;
  line = "data:" + std::string(forge::proxy::SseParser::kMaxLine - 5, 'z') + "\n\n";
  REQUIRE(at_cap.Feed(line, events));
  REQUIRE(events.size() == 1);
  CHECK(events[0].data.size() == forge::proxy::SseParser::kMaxLine - 5);
}
