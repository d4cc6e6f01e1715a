// The chat-completions pass-through format, on request shapes the real
// Chat Completions harnesses send (Qwen Code 0.24.4, opencode 1.18.33,
// OpenClaw 2026.9.6; see docs/harnesses-chat.md).
#include <doctest/doctest.h>

#include "proxy/format_registry.h"
#include "proxy/retry_keys.h"

using forge::proxy::Json;

namespace {

Json ChatToolsOffered() {
  return Json::array({{{"type", "function"},
                       {"function", {{"name", "write"}, {"parameters", {{"type", "object"}}}}}}});
}

}  // namespace

TEST_CASE("chat: opencode's title call is a side call, its agent turn is not") {
  auto format = forge::proxy::MakeClientFormat("openai-chat");
  REQUIRE(format);
  // As opencode sends it: small_model, streamed, no tools, the prompt quoted.
  Json title = {{"model", "policy"},
                {"max_tokens", 32000},
                {"stream", true},
                {"stream_options", {{"include_usage", true}}},
                {"messages",
                 {{{"role", "system"},
                   {"content", "You are a title generator. You output ONLY a thread title. Nothing else.\n\n<task>"}},
                  {{"role", "user"}, {"content", "Generate a title for this conversation:\n"}},
                  {{"role", "user"}, {"content", "\"Create hello.txt containing forge\""}}}}};
  auto chat = format->ToChat(title);
  REQUIRE(chat.ok());
  CHECK(chat->side_call);
  CHECK(chat->stream);
  CHECK(chat->body == title);  // still passed through unchanged

  Json agent = title;
  agent["messages"][0]["content"] = "You are opencode, an interactive CLI tool that helps users";
  agent["messages"].erase(1);
  agent["tools"] = ChatToolsOffered();
  agent["tool_choice"] = "auto";
  CHECK_FALSE(format->ToChat(agent)->side_call);
  // Tools decide: even a title-like system text with tools is an agent turn.
  Json with_tools = title;
  with_tools["tools"] = ChatToolsOffered();
  CHECK_FALSE(format->ToChat(with_tools)->side_call);
  // A plain tool-less chat (the ReACT harness) stays in the trajectory.
  Json plain = {{"model", "m"}, {"messages", {{{"role", "user"}, {"content", "Create hello.txt"}}}}};
  CHECK_FALSE(format->ToChat(plain)->side_call);
}

TEST_CASE("chat: Qwen Code and OpenClaw request fields pass through untouched") {
  auto format = forge::proxy::MakeClientFormat("openai-chat");
  // Qwen: tool results with array content, array user content, max_tokens;
  // OpenClaw: max_completion_tokens and a trailing internal-context message.
  Json request = {
      {"model", "policy"},
      {"stream", true},
      {"stream_options", {{"include_usage", true}}},
      {"max_completion_tokens", 8192},
      {"tools", ChatToolsOffered()},
      {"messages",
       {{{"role", "system"}, {"content", "You are Qwen Code"}},
        {{"role", "user"}, {"content", {{{"type", "text"}, {"text", "Create hello.txt"}}}}},
        {{"role", "assistant"},
         {"content", ""},
         {"tool_calls",
          {{{"id", "call_0"},
            {"type", "function"},
            {"function", {{"name", "write_file"}, {"arguments", "{\"file_path\":\"/w/hello.txt\"}"}}}}}}},
        {{"role", "tool"},
         {"tool_call_id", "call_0"},
         {"content", {{{"type", "text"}, {"text", "Successfully created and wrote to new file"}}}}},
        {{"role", "user"}, {"content", {{{"type", "text"}, {"text", "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>"}}}}}}}};
  auto chat = format->ToChat(request);
  REQUIRE(chat.ok());
  CHECK(chat->body == request);
  CHECK(chat->stream);
  CHECK_FALSE(chat->side_call);
  // A malformed message is still named.
  Json bad = request;
  bad["messages"][3].erase("role");
  auto rejected = format->ToChat(bad);
  REQUIRE_FALSE(rejected.ok());
  CHECK(rejected.status().message().find("messages[3].role") != std::string::npos);
}

TEST_CASE("retry keys: OpenClaw's rewritten retry is a new call, not an SDK retry") {
  // OpenClaw retries a failed turn with the user message rewritten as
  // "[Queued user message ...]", and the OpenAI SDK may mark it with
  // x-stainless-retry-count > 0: the body differs, so it must get its own
  // key and be recorded, not skipped as a duplicate of the first try.
  forge::proxy::RetryKeys keys;
  std::string first = keys.KeyFor("r", "hash-original", 0);
  std::string rewritten = keys.KeyFor("r", "hash-rewritten", 1);
  CHECK(rewritten != first);
  std::string rewritten_plain = keys.KeyFor("r", "hash-rewritten-again", 0);
  CHECK(rewritten_plain != rewritten);
  CHECK(rewritten_plain != first);
  // The SDK's own retry of the same body (Qwen Code, OpenClaw's transport)
  // still reuses the key, so the store records it once.
  CHECK(keys.KeyFor("r", "hash-original", 1) == first);
}
