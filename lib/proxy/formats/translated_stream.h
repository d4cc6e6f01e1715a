// The part every translated stream shares (Anthropic Messages, Responses,
// Gemini): each chat chunk goes into the accumulator (the record and the
// closing usage come from it), the format's opening is written once before
// its first event, the first choice's delta becomes the format's events, and
// a finish_reason closes what is open. Once the stream has ended, normally
// or with an error, nothing more is written. A format supplies only its own
// events.
#pragma once

#include <map>
#include <string>

#include "proxy/client_format.h"
#include "proxy/formats/wire.h"

namespace forge::proxy {

class TranslatedStream : public StreamTranslator {
 public:
  std::string OnChunk(const Json& chunk) final;
  bool OnContentDelta(const std::string& content, std::string& out) final;
  std::string OnEnd() final;
  std::string OnError(const std::string& message) final;
  std::string OnMalformed(const std::string& data) final;

 protected:
  // The format's events; each returns the bytes to send.
  virtual std::string Opening() = 0;                         // before the first event
  virtual std::string Delta(const Json& delta) = 0;          // the first choice's delta
  virtual std::string Content(const std::string& text) = 0;  // a delta of content alone
  virtual std::string CloseOpen() = 0;                       // finish_reason: close what is open
  virtual std::string Closing() = 0;                         // the end, after CloseOpen
  virtual std::string Failure(const std::string& message) = 0;
  virtual std::string Malformed(const std::string& data) = 0;  // a non-JSON event, as it came

  // Opening() the first time, nothing after.
  std::string Begin();
  const wire::ChatAccumulator& acc() const { return acc_; }

 private:
  wire::ChatAccumulator acc_;
  bool started_ = false, ended_ = false;
};

// A translated stream whose tool calls go out as they arrive, argument
// fragment by fragment (Anthropic Messages, Responses): the walk of a chat
// delta — reasoning, then content, then each tool call, opened once and
// addressed by the event index it was opened at — is this class's; a format
// says only its events.
class FragmentedToolStream : public TranslatedStream {
 protected:
  std::string Delta(const Json& delta) final;

  virtual std::string Reasoning(const std::string& text) = 0;  // non-empty
  // Opens the call at chat tool_calls index `index` and sets `at` to the
  // index its argument fragments are to be addressed by.
  virtual std::string OpenTool(const Json& call, size_t index, const std::string& name, int& at) = 0;
  virtual std::string ToolArguments(int at, const std::string& fragment) = 0;  // non-empty

 private:
  std::map<size_t, int> tools_;  // chat tool_calls index → the format's event index
};

}  // namespace forge::proxy
