// Prints the store's size for a synthetic 50-call rollout against the sum of
// its raw requests: a harness resends the whole conversation on every call,
// so raw storage grows with calls × history while forge's store should grow
// with the rollout's unique content. The content is harness-like: a 12 KB
// system prompt and 12 tools resent every call, and tool results that are
// this repository's source files (real text, not random letters).
//
//   bench-store_size [calls=50] [tool_output_bytes=2000]
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <random>
#include <string>

#include "store/store.h"
#include "forge_paths.h"

using forge::store::Json;

int main(int argc, char** argv) {
  int calls = argc > 1 ? std::atoi(argv[1]) : 50;
  size_t tool_output = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 2000;
  std::string path = (std::filesystem::temp_directory_path() / "forge-bench-store.db").string();
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
  auto store = forge::store::Store::Open(path);
  if (!store.ok()) {
    std::fprintf(stderr, "bench-store_size: %s\n", store.status().message().c_str());
    return 1;
  }

  std::mt19937 rng(42);
  std::string corpus;  // the repository's sources, concatenated
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(std::string(FORGE_SOURCE_DIR) + "/lib")) {
    if (entry.is_regular_file()) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    std::ifstream in(f);
    std::stringstream buffer;
    buffer << in.rdbuf();
    corpus += buffer.str();
  }
  if (corpus.size() < 100000) {
    std::fprintf(stderr, "bench-store_size: cannot read the sources under %s/lib\n", FORGE_SOURCE_DIR);
    return 1;
  }
  // About n bytes of real text from a random place in the sources, cut at
  // character boundaries (the sources hold some UTF-8; a cut sequence is not JSON text).
  auto continuation = [&](size_t at) { return at < corpus.size() && (corpus[at] & 0xC0) == 0x80; };
  auto text = [&](size_t n) {
    size_t begin = rng() % (corpus.size() - n), end = begin + n;
    while (continuation(begin)) ++begin;
    while (end > begin && continuation(end)) --end;
    return corpus.substr(begin, end - begin);
  };
  Json tools = Json::array();
  for (int i = 0; i < 12; ++i) {
    tools.push_back({{"type", "function"},
                     {"function", {{"name", "tool" + std::to_string(i)}, {"description", text(400)},
                                   {"parameters", {{"type", "object"}}}}}});
  }
  Json messages = Json::array({{{"role", "system"}, {"content", text(12000)}},
                               {{"role", "user"}, {"content", text(800)}}});
  std::vector<int32_t> prompt(4000);
  for (auto& t : prompt) t = static_cast<int32_t>(rng() % 150000);

  size_t raw_bytes = 0, largest = 0;
  for (int i = 0; i < calls; ++i) {
    forge::store::CallRecord call;
    call.rollout_id = "bench-rollout";
    call.client_format = "openai-chat";
    call.model = "policy";
    call.request = {{"model", "policy"}, {"messages", messages}, {"tools", tools}, {"stream", true}};
    std::string answer = text(300);
    Json assistant = {{"role", "assistant"},
                      {"content", answer},
                      {"tool_calls", Json::array({{{"id", "call_" + std::to_string(i)}, {"type", "function"},
                                                   {"function", {{"name", "tool1"}, {"arguments", "{}"}}}}})}};
    call.response = {{"choices", Json::array({{{"index", 0}, {"message", assistant}, {"finish_reason", "tool_calls"}}})}};
    call.upstream_request = call.request;
    call.prompt_ids = prompt;
    for (int k = 0; k < 80; ++k) call.completion_ids.push_back(static_cast<int32_t>(rng() % 150000));
    call.logprobs.assign(call.completion_ids.size(), -0.5f);
    size_t request_bytes = call.request.dump().size();
    raw_bytes += request_bytes + call.response.dump().size() + call.upstream_request.dump().size() +
                 (call.prompt_ids.size() + call.completion_ids.size() * 2) * 4;
    largest = std::max(largest, request_bytes);
    std::vector<forge::store::CallRecord> batch = {call};
    if (auto s = (*store)->calls().AppendCalls(batch); !s.ok()) {
      std::fprintf(stderr, "bench-store_size: %s\n", s.message().c_str());
      return 1;
    }
    messages.push_back(assistant);
    messages.push_back({{"role", "tool"}, {"tool_call_id", "call_" + std::to_string(i)}, {"content", text(tool_output)}});
    prompt.insert(prompt.end(), call.completion_ids.begin(), call.completion_ids.end());
    for (size_t k = 0; k < tool_output / 4; ++k) prompt.push_back(static_cast<int32_t>(rng() % 150000));
  }
  auto stats = (*store)->Stats();
  if (!stats.ok()) return 1;
  std::printf("store size, %d-call synthetic rollout (%zu-byte tool outputs)\n", calls, tool_output);
  std::printf("  raw requests+responses+ids, summed:   %12zu bytes\n", raw_bytes);
  std::printf("  largest single request:              %12zu bytes\n", largest);
  std::printf("  forge store file (db + wal):         %12lld bytes\n", static_cast<long long>(stats->file_bytes));
  std::printf("    blobs: %lld (%lld bytes), token arrays: %lld bytes\n", static_cast<long long>(stats->blob_count),
              static_cast<long long>(stats->blob_bytes), static_cast<long long>(stats->token_bytes));
  std::printf("  store / raw:                         %12.3f\n", double(stats->file_bytes) / raw_bytes);
  std::printf("  store / largest request:             %12.2f\n", double(stats->file_bytes) / largest);
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
  return 0;
}
