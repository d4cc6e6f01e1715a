// How a model call ends. Refused before it reached an upstream: a Refusal,
// answered in the client's format, and nothing recorded. Otherwise an
// Outcome, which each upstream API's relay (upstream_api_asio.h) returns: the
// status and error the call's record is committed with (once:
// call_record.h), and what the client is sent after that commit
// (client_reply_asio.h), so a call's final bytes never go out before its record.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "proxy/client_format.h"

namespace forge::proxy {

// Fields a reply carries besides its own (an upstream's retry headers, Retry-After).
using Headers = std::vector<std::pair<std::string, std::string>>;

// Why a call is refused before it goes upstream; answered in the client's
// format's error shape.
struct Refusal {
  int status = 400;
  std::string message;
  Headers headers;
};

// What a call whose client hung up before its answer was done is recorded
// with (nginx's status for it); nothing is sent.
constexpr int kClientHungUpStatus = 499;
constexpr const char* kClientHungUpMessage = "the client hung up before the answer was done";

struct Outcome {
  // What the client is sent once the record is committed.
  enum class Reply {
    kError,        // error in the client's format: a JSON body with status and headers, or, when a
                   // stream has begun (keepalive comments), an error event ending it
    kWhole,        // body, with status, content_type and headers (the commit failing: a 500)
    kStreamEnd,    // body (the events held back) and the stream's end (the commit failing: an error event)
    kStreamError,  // body (the events held back and an error event); the connection closes
    kBreak,        // body (the events held back); the connection closes with no end, as the upstream's did
    kNothing,      // no one to tell: the client has gone
  };

  int status = 200;   // recorded
  std::string error;  // recorded; empty: the call succeeded (and keeps its retry key)
  Reply reply = Reply::kWhole;
  std::string body;
  std::string content_type = "application/json";
  Headers headers;
  // kStreamEnd: the translator whose OnEnd follows the held events, and
  // whose OnError replaces them when the record fails; null: the held events
  // end the stream (an upstream's own events, passed through).
  std::unique_ptr<StreamTranslator> stream;
  // The chat-form answer the client's format remembers (ClientFormat::Finished)
  // once the call is recorded; none for a format that keeps no state.
  std::optional<Json> finished;

  // A call that failed before its answer began: recorded with status and
  // error, the client told in its own format (499: not told).
  static Outcome Failed(int status, std::string error, Headers headers = {}) {
    Outcome o;
    o.status = status;
    o.error = std::move(error);
    o.reply = status == kClientHungUpStatus ? Reply::kNothing : Reply::kError;
    o.headers = std::move(headers);
    return o;
  }
  // An answer sent whole.
  static Outcome Whole(int status, std::string body, std::optional<Json> finished = std::nullopt) {
    Outcome o;
    o.status = status;
    o.body = std::move(body);
    o.finished = std::move(finished);
    return o;
  }
  // A stream that ran to its end: held, the events held back until the commit.
  static Outcome StreamEnd(std::string held, std::unique_ptr<StreamTranslator> stream) {
    Outcome o;
    o.reply = Reply::kStreamEnd;
    o.body = std::move(held);
    o.stream = std::move(stream);
    return o;
  }
};

// A failed attempt the exchange tries again: a call of its own to record.
struct FailedAttempt {
  std::string upstream;  // its URL, when one was reached
  int status;
  std::string error;
};

}  // namespace forge::proxy
