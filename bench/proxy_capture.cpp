// What forge-proxy's io thread spends reading a model call's JSON, at the
// sizes real harnesses produce: an agent's prompt is 10K-100K tokens, and
// vLLM answers every call with all of them (prompt_token_ids), so the
// answer a proxy must read and cut is larger than the request. Measured for
// the byte path the proxy takes (pass_through.h: validate, harvest, cut)
// against the document path it replaces (nlohmann parse, HarvestTokens,
// StripCaptureFields, dump), in one run on the same inputs:
//   (a) a whole chat answer with N prompt ids, 400 completion ids and logprobs
//   (b) the bench's 1 KB call: its request (ReadPassThroughRequest) and its answer
//   bench-proxy_capture [PROMPT_TOKENS=50000] [REPEAT=200]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <random>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "proxy/pass_through.h"
#include "proxy/token_capture.h"

namespace {

using Clock = std::chrono::steady_clock;
using forge::proxy::CaptureWants;
using forge::proxy::CapturedTokens;

// A vLLM chat answer with return_token_ids and logprobs, as it arrives.
std::string ChatAnswer(int prompt_tokens, int completion_tokens) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> id(0, 151000);
  std::string out = R"({"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"policy","prompt_token_ids":[)";
  for (int i = 0; i < prompt_tokens; ++i) out += (i ? "," : "") + std::to_string(id(rng));
  out += R"(],"choices":[{"index":0,"message":{"role":"assistant","content":")";
  for (int i = 0; i < completion_tokens; ++i) out += "tok ";
  out += R"("},"logprobs":{"content":[)";
  for (int i = 0; i < completion_tokens; ++i) {
    out += fmt::format(R"({}{{"token":"tok","logprob":-{:.6f},"bytes":[116,111,107],"top_logprobs":[]}})", i ? "," : "",
                       0.001 * (i % 997));
  }
  out += R"(]},"token_ids":[)";
  for (int i = 0; i < completion_tokens; ++i) out += (i ? "," : "") + std::to_string(id(rng));
  out += R"(],"finish_reason":"stop"}],"usage":{"prompt_tokens":)" + std::to_string(prompt_tokens) +
         R"(,"completion_tokens":)" + std::to_string(completion_tokens) + "}}";
  return out;
}

// Microseconds a call: the best of five batches of repeat calls (a shared
// machine's noise only ever adds time).
template <typename F>
double MicrosEach(int repeat, F&& f) {
  f();  // warm
  double best = 0;
  for (int batch = 0; batch < 5; ++batch) {
    auto t0 = Clock::now();
    for (int i = 0; i < repeat; ++i) f();
    double each = std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / repeat;
    best = batch == 0 ? each : std::min(best, each);
  }
  return best;
}

// Both paths on one answer; prints their times and checks they agree.
bool CompareAnswer(const char* name, const std::string& answer, int repeat) {
  CaptureWants wants;  // the client asked for neither ids nor logprobs
  size_t byte_prompt = 0, doc_prompt = 0, byte_completion = 0, doc_completion = 0, out_bytes = 0;
  double bytes_us = MicrosEach(repeat, [&] {
    CapturedTokens tokens;
    auto chunk = forge::proxy::CaptureAndStrip(answer, wants, false, tokens);
    if (!chunk.ok()) std::abort();
    byte_prompt = tokens.prompt_ids.size();
    byte_completion = tokens.completion_ids.size();
    out_bytes = chunk->text.size();
  });
  double doc_us = MicrosEach(repeat, [&] {
    CapturedTokens tokens;
    auto doc = nlohmann::json::parse(answer);
    forge::proxy::HarvestTokens(doc, tokens);
    forge::proxy::StripCaptureFields(doc, wants);
    std::string text = doc.dump();
    doc_prompt = tokens.prompt_ids.size();
    doc_completion = tokens.completion_ids.size();
  });
  std::printf("  %-34s %9zu bytes -> %7zu   byte path %9.1f us   document path %9.1f us   (%.1fx)\n", name,
              answer.size(), out_bytes, bytes_us, doc_us, doc_us / bytes_us);
  if (byte_prompt != doc_prompt || byte_completion != doc_completion) {
    std::printf("  MISMATCH: prompt ids %zu vs %zu, completion ids %zu vs %zu\n", byte_prompt, doc_prompt,
                byte_completion, doc_completion);
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  int prompt_tokens = argc > 1 ? std::atoi(argv[1]) : 50000;
  int repeat = argc > 2 ? std::atoi(argv[2]) : 200;
  std::printf("forge-proxy's JSON work per call: byte path vs nlohmann document path (same inputs, one run)\n");
  std::printf("(a) whole chat answers with every prompt token id (vLLM return_token_ids)\n");
  bool same = true;
  for (int n : {1000, 10000, prompt_tokens}) {
    same &= CompareAnswer(fmt::format("{} prompt ids, 400 completion", n).c_str(), ChatAnswer(n, 400),
                          std::max(10, repeat * 100 / std::max(n / 10, 100)));
  }

  std::printf("(b) bench/proxy_bench.sh's 1 KB call\n");
  std::string request = R"({"model":"m","messages":[{"role":"user","content":"0)" + std::string(1024 - 120, 'x') + R"("}]})";
  double request_us = MicrosEach(repeat * 100, [&] {
    auto read = forge::proxy::ReadPassThroughRequest(request, false);
    if (!read.ok()) std::abort();
  });
  double request_doc_us = MicrosEach(repeat * 100, [&] {
    auto doc = nlohmann::json::parse(request);
    forge::proxy::AddCaptureFields(doc, false);
    std::string text = doc.dump();
  });
  std::printf("  %-34s %9zu bytes             byte path %9.2f us   document path %9.2f us   (%.1fx)\n",
              "request (ReadPassThroughRequest)", request.size(), request_us, request_doc_us,
              request_doc_us / request_us);
  same &= CompareAnswer("answer (8 prompt ids, 4 completion)", ChatAnswer(8, 4), repeat * 100);
  return same ? 0 : 1;
}
