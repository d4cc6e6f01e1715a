// forge-proxy benchmark driver (bench/proxy_bench.sh runs it):
//   upstream --port P       a fast fake OpenAI/vLLM upstream (C++, so it is never the bottleneck)
//   stream-upstream PORT    the same, but a streamed answer is vLLM-shaped (its ids, created and
//                           model as vLLM writes them) and goes out whole, made once, in one
//                           write: an unpaced upstream that costs next to nothing a call, for a
//                           fast client (proxy_bench.sh's (e))
//   seq URL N BYTES         N sequential non-streaming calls with a BYTES-sized request; prints
//                           median and p99 latency in ms (BENCH_RAW=1: each latency;
//                           BENCH_REAL_IDS=1: the upstream answers a request that asks for token
//                           ids with a prompt id for every ~4 bytes of it, as vLLM would)
//   load URL CLIENTS EVENTS CLIENTS concurrent streaming calls of EVENTS SSE events each; prints
//                           events/s, p50/p99 per-stream completion time, failures, wall
//                           seconds, and p50/p99 time to the first event
//   storesize STORE ROLLOUT  store bytes for a rollout against its largest request
//   formats BASE FORMAT STREAMS CONCURRENCY  STREAMS streamed calls in client format FORMAT (chat,
//                           anthropic, responses) against BASE (http://127.0.0.1:PORT), CONCURRENCY
//                           at a time on kept-alive connections; prints the streams completed,
//                           the failures and the wall time (proxy_formats_bench.sh takes the
//                           proxy's CPU time around it)
// Talks to 127.0.0.1 only; every loop is bounded by its count.
#include <utility>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "store/store.h"

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

auto Into(beast::error_code& ec) { return net::redirect_error(net::use_awaitable, ec); }

int IntField(const std::string& body, const std::string& name, int fallback) {
  size_t at = body.find("\"" + name + "\":");
  if (at == std::string::npos) return fallback;
  return std::atoi(body.c_str() + at + name.size() + 3);
}

std::string Chunk(int i, bool ids) {
  std::string s = fmt::format(
      R"({{"id":"chatcmpl-b","object":"chat.completion.chunk","created":1,"model":"m","choices":[{{"index":0,"delta":{{"content":"tok{} "}},"logprobs":{},"finish_reason":null{}}}]}})",
      i, ids ? R"({"content":[{"token":"tok","logprob":-0.5,"bytes":[116],"top_logprobs":[]}]})" : "null",
      ids ? fmt::format(R"(,"token_ids":[{}])", 1000 + i) : "");
  return "data: " + s + "\n\n";
}

// A chunk as vLLM streams it: with return_token_ids, each choice carries
// token_ids and (the proxy asks for logprobs) the chosen token's logprob.
std::string VllmChunk(int i, bool ids) {
  std::string token = fmt::format(" tok{}", i);
  std::string logprobs = ids ? fmt::format(R"({{"content":[{{"token":"{}","logprob":-0.{},"bytes":[32,116,111,107],"top_logprobs":[]}}]}})",
                                           token, 1234567 + i * 7)
                             : "null";
  return fmt::format(
      R"(data: {{"id":"chatcmpl-7f3a9c2e41d84b0fa6c1e2d3b4a59687","object":"chat.completion.chunk","created":1764892800,)"
      R"("model":"Qwen/Qwen3-8B","choices":[{{"index":0,"delta":{{"content":"{}"}},"logprobs":{},"finish_reason":null{}}}]}})"
      "\n\n",
      token, logprobs, ids ? fmt::format(R"(,"token_ids":[{}])", 1000 + i) : "");
}

// A whole vLLM-shaped streamed answer as chunked HTTP/1.1 bytes, header
// included: one HTTP chunk per event, as uvicorn writes them.
std::string VllmStreamAnswer(int events, bool ids) {
  std::string head = R"(data: {"id":"chatcmpl-7f3a9c2e41d84b0fa6c1e2d3b4a59687","object":"chat.completion.chunk",)"
                     R"("created":1764892800,"model":"Qwen/Qwen3-8B",)";
  std::vector<std::string> pieces;
  pieces.push_back(head + (ids ? R"("prompt_token_ids":[151644,8948,198,2610,525,264,10950,17847],)" : "") +
                   R"("choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]})"
                   "\n\n");
  for (int i = 0; i < events; ++i) pieces.push_back(VllmChunk(i, ids));
  pieces.push_back(head + R"("choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop","stop_reason":null}]})"
                   "\n\n");
  pieces.push_back(head + fmt::format(R"("choices":[],"usage":{{"prompt_tokens":8,"total_tokens":{},"completion_tokens":{}}}}})",
                                      8 + events, events) +
                   "\n\n");
  pieces.push_back("data: [DONE]\n\n");
  std::string out =
      "HTTP/1.1 200 OK\r\ndate: Fri, 05 Dec 2026 00:00:00 GMT\r\nserver: uvicorn\r\n"
      "content-type: text/event-stream; charset=utf-8\r\ntransfer-encoding: chunked\r\n\r\n";
  for (const std::string& p : pieces) out += fmt::format("{:x}\r\n{}\r\n", p.size(), p);
  return out + "0\r\n\r\n";
}

bool g_whole_streams = false;  // stream-upstream: VllmStreamAnswer, in one write

// ---- the fake upstream ----
net::awaitable<void> Serve(tcp::socket socket) {
  beast::tcp_stream stream(std::move(socket));
  beast::flat_buffer buffer;
  beast::error_code ec;
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.body_limit(256u << 20);
    co_await http::async_read(stream, buffer, parser, Into(ec));
    if (ec) break;
    auto req = parser.release();
    const std::string& body = req.body();
    bool ids = body.find("\"return_token_ids\":true") != std::string::npos;
    if (req.target() == "/health" || req.method() == http::verb::get) {
      http::response<http::string_body> res{http::status::ok, 11};
      res.body() = R"({"object":"list","data":[{"id":"m"}]})";
      res.prepare_payload();
      co_await http::async_write(stream, res, Into(ec));
      if (ec) break;
      continue;
    }
    if (body.find("\"stream\":true") == std::string::npos) {
      http::response<http::string_body> res{http::status::ok, 11};
      res.set(http::field::content_type, "application/json");
      // vLLM sends every prompt token's id; a request asking for
      // bench_real_ids gets that many (a token for every ~4 bytes), the
      // others eight.
      // (Made once per size: the fake's own work is not what is measured.)
      thread_local std::map<size_t, std::string> real_ids_by_size;
      std::string prompt_ids = R"("prompt_token_ids":[1,2,3,4,5,6,7,8],)";
      if (ids && body.find("\"bench_real_ids\":true") != std::string::npos) {
        std::string& text = real_ids_by_size[body.size() / 4];
        if (text.empty()) {
          text = R"("prompt_token_ids":[)";
          for (size_t t = 0; t < body.size() / 4; ++t) text += (t ? "," : "") + std::to_string(100000 + t % 50000);
          text += "],";
        }
        prompt_ids = text;
      }
      res.body() = std::string(R"({"id":"chatcmpl-b","object":"chat.completion","created":1,"model":"m",)") +
                   (ids ? prompt_ids : "") +
                   R"("choices":[{"index":0,"message":{"role":"assistant","content":"hello from the bench"},)" +
                   (ids ? R"("token_ids":[1000,1001,1002,1003],"logprobs":{"content":[{"token":"a","logprob":-0.5,"bytes":[97],"top_logprobs":[]}]},)"
                        : R"("logprobs":null,)") +
                   R"("finish_reason":"stop"}],"usage":{"prompt_tokens":8,"completion_tokens":4,"total_tokens":12}})";
      res.prepare_payload();
      co_await http::async_write(stream, res, Into(ec));
      if (ec) break;
      continue;
    }
    int events = IntField(body, "bench_events", 200);
    if (g_whole_streams) {
      thread_local std::map<std::pair<int, bool>, std::string> answers;
      std::string& answer = answers[{events, ids}];
      if (answer.empty()) answer = VllmStreamAnswer(events, ids);
      co_await net::async_write(stream, net::buffer(answer), Into(ec));
      if (ec) break;
      continue;
    }
    http::response<http::empty_body> res{http::status::ok, 11};
    res.set(http::field::content_type, "text/event-stream");
    res.chunked(true);
    http::response_serializer<http::empty_body> sr(res);
    co_await http::async_write_header(stream, sr, Into(ec));
    std::string first = std::string("data: ") + R"({"id":"chatcmpl-b","object":"chat.completion.chunk","created":1,"model":"m",)" +
                        (ids ? R"("prompt_token_ids":[1,2,3,4,5,6,7,8],)" : "") +
                        R"("choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]})" + "\n\n";
    co_await net::async_write(stream, http::make_chunk(net::buffer(first)), Into(ec));
    for (int i = 0; i < events && !ec; ++i) {
      std::string e = Chunk(i, ids);
      co_await net::async_write(stream, http::make_chunk(net::buffer(e)), Into(ec));
    }
    std::string tail =
        R"(data: {"id":"chatcmpl-b","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]})"
        "\n\n"
        R"(data: {"id":"chatcmpl-b","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":8,"completion_tokens":200,"total_tokens":208}})"
        "\n\ndata: [DONE]\n\n";
    if (!ec) co_await net::async_write(stream, http::make_chunk(net::buffer(tail)), Into(ec));
    if (!ec) co_await net::async_write(stream, http::make_chunk_last(), Into(ec));
    if (ec) break;
  }
  stream.socket().shutdown(tcp::socket::shutdown_both, ec);
}

net::awaitable<void> Accept(tcp::acceptor& acceptor) {
  auto serve = [](tcp::socket socket) {
    beast::error_code ec;
    socket.set_option(tcp::no_delay(true), ec);
    auto ex = socket.get_executor();
    net::co_spawn(ex, Serve(std::move(socket)), net::detached);
  };
  acceptor.non_blocking(true);
  for (;;) {
    beast::error_code ec;
    tcp::socket socket(net::make_strand(acceptor.get_executor()));
    co_await acceptor.async_accept(socket, Into(ec));
    if (ec) continue;
    serve(std::move(socket));
    // Then every client already waiting, not one per pass of the scheduler
    // (under a burst of 1,000 streams the last would wait for 1,000 passes).
    for (;;) {
      tcp::socket waiting(net::make_strand(acceptor.get_executor()));
      acceptor.accept(waiting, ec);
      if (ec) break;
      serve(std::move(waiting));
    }
  }
}

int RunUpstream(int port) {
  net::io_context io(2);
  tcp::acceptor acceptor(io, tcp::endpoint(net::ip::make_address("127.0.0.1"), static_cast<uint16_t>(port)));
  acceptor.listen(4096);
  net::co_spawn(io, Accept(acceptor), net::detached);
  std::thread other([&] { io.run(); });
  io.run();
  other.join();
  return 0;
}

// ---- clients ----
struct Target {
  std::string host, port, path, key;
};

Target ParseUrl(const std::string& url) {  // http://127.0.0.1:PORT/path
  Target t;
  std::string rest = url.substr(7);
  size_t slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  t.path = slash == std::string::npos ? "/v1/chat/completions" : rest.substr(slash);
  t.host = authority.substr(0, authority.find(':'));
  t.port = authority.substr(authority.find(':') + 1);
  if (const char* k = std::getenv("BENCH_KEY")) t.key = k;
  return t;
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5));
  return v[i];
}

int RunSeq(const std::string& url, int n, int bytes) {
  Target t = ParseUrl(url);
  net::io_context io;
  tcp::resolver resolver(io);
  beast::tcp_stream stream(io);
  stream.connect(resolver.resolve(t.host, t.port));
  stream.socket().set_option(tcp::no_delay(true));
  beast::flat_buffer buffer;
  std::string pad(static_cast<size_t>(std::max(0, bytes - 120)), 'x');
  const char* real_ids_env = std::getenv("BENCH_REAL_IDS");
  const bool real_ids = real_ids_env && std::string_view(real_ids_env) == "1";
  std::vector<double> ms;
  for (int i = 0; i < n + 10; ++i) {
    http::request<http::string_body> req{http::verb::post, t.path, 11};
    req.set(http::field::host, t.host);
    req.set(http::field::content_type, "application/json");
    if (!t.key.empty()) req.set(http::field::authorization, "Bearer " + t.key);
    req.body() = std::string(real_ids ? R"({"bench_real_ids":true,)" : "{") +
                 R"("model":"m","messages":[{"role":"user","content":")" + std::to_string(i) + pad + R"("}]})";
    req.prepare_payload();
    double t0 = Now();
    http::write(stream, req);
    http::response<http::string_body> res;
    http::read(stream, buffer, res);
    double dt = (Now() - t0) * 1000;
    if (res.result_int() != 200) {
      std::fprintf(stderr, "seq: HTTP %d: %s\n", res.result_int(), res.body().c_str());
      return 1;
    }
    if (i >= 10) ms.push_back(dt);  // first 10 warm up
  }
  if (std::getenv("BENCH_RAW")) {  // every latency, one a line (the script pools rounds)
    for (double v : ms) std::printf("%.3f\n", v);
  } else {
    std::printf("%.3f %.3f\n", Percentile(ms, 0.5), Percentile(ms, 0.99));
  }
  return 0;
}

struct LoadStats {
  std::mutex mutex;
  std::vector<double> done_s;
  std::vector<double> first_event_s;
  std::atomic<int64_t> events{0};
  std::atomic<int> failures{0};
};

net::awaitable<void> Stream(Target t, tcp::resolver::results_type endpoints, int events, LoadStats& stats) {
  beast::tcp_stream stream(co_await net::this_coro::executor);
  beast::error_code ec;
  stream.expires_after(std::chrono::seconds(120));
  co_await stream.async_connect(endpoints, Into(ec));
  if (ec) {
    stats.failures++;
    co_return;
  }
  http::request<http::string_body> req{http::verb::post, t.path, 11};
  req.set(http::field::host, t.host);
  req.set(http::field::content_type, "application/json");
  if (!t.key.empty()) req.set(http::field::authorization, "Bearer " + t.key);
  req.body() = R"({"model":"m","stream":true,"bench_events":)" + std::to_string(events) +
               R"(,"messages":[{"role":"user","content":"stream please"}]})";
  req.prepare_payload();
  double t0 = Now();
  co_await http::async_write(stream, req, Into(ec));
  http::response_parser<http::buffer_body> parser;
  beast::flat_buffer buffer;
  if (!ec) co_await http::async_read_header(stream, buffer, parser, Into(ec));
  int64_t seen = 0;
  double first_event = 0;
  std::vector<char> buf(8192);
  char prev = 0;
  while (!ec && !parser.is_done()) {
    parser.get().body().data = buf.data();
    parser.get().body().size = buf.size();
    // Some at a time, as they come: async_read would wait for the buffer to fill.
    co_await http::async_read_some(stream, buffer, parser, Into(ec));
    if (ec == http::error::need_buffer) ec = {};
    size_t n = buf.size() - parser.get().body().size;
    for (size_t i = 0; i < n; ++i) {
      if (buf[i] == '\n' && prev == '\n' && ++seen == 1) first_event = Now() - t0;
      prev = buf[i];
    }
  }
  if (ec || seen < events) {
    stats.failures++;
    co_return;
  }
  stats.events += seen;
  std::lock_guard<std::mutex> lock(stats.mutex);
  stats.done_s.push_back(Now() - t0);
  stats.first_event_s.push_back(first_event);
}

int RunLoad(const std::string& url, int clients, int events) {
  Target t = ParseUrl(url);
  net::io_context io;
  tcp::resolver resolver(io);
  auto endpoints = resolver.resolve(t.host, t.port);
  LoadStats stats;
  for (int i = 0; i < clients; ++i) net::co_spawn(io, Stream(t, endpoints, events, stats), net::detached);
  double t0 = Now();
  io.run();
  double wall = Now() - t0;
  std::printf("%.0f %.1f %.1f %d %.3f %.1f %.1f\n", static_cast<double>(stats.events.load()) / wall,
              Percentile(stats.done_s, 0.5) * 1000, Percentile(stats.done_s, 0.99) * 1000, stats.failures.load(), wall,
              Percentile(stats.first_event_s, 0.5) * 1000, Percentile(stats.first_event_s, 0.99) * 1000);
  return stats.failures.load() == 0 ? 0 : 1;
}

// ---- one streamed load per client wire format ----
struct FormatLoad {
  std::string path, body;
};

FormatLoad LoadFor(const std::string& format) {
  if (format == "anthropic") {
    return {"/v1/messages",
            R"({"model":"m","max_tokens":4096,"stream":true,"messages":[{"role":"user","content":"stream please"}]})"};
  }
  if (format == "responses") {
    return {"/v1/responses", R"({"model":"m","stream":true,"store":false,"input":"stream please"})"};
  }
  return {"/v1/chat/completions", R"({"model":"m","stream":true,"messages":[{"role":"user","content":"stream please"}]})"};
}

struct FormatStats {
  std::atomic<int> next{0}, done{0}, failures{0};
};

// Streams calls one after another on one kept-alive connection until the
// shared count is used up.
net::awaitable<void> FormatWorker(Target t, tcp::resolver::results_type endpoints, FormatLoad load, int streams,
                                  FormatStats& stats) {
  beast::tcp_stream stream(co_await net::this_coro::executor);
  beast::flat_buffer buffer;
  bool connected = false;
  std::vector<char> buf(16384);
  while (stats.next.fetch_add(1) < streams) {
    beast::error_code ec;
    if (!connected) {
      stream.expires_after(std::chrono::seconds(120));
      co_await stream.async_connect(endpoints, Into(ec));
      if (ec) {
        stats.failures++;
        continue;
      }
      connected = true;
    }
    stream.expires_after(std::chrono::seconds(120));
    http::request<http::string_body> req{http::verb::post, load.path, 11};
    req.set(http::field::host, t.host);
    req.set(http::field::content_type, "application/json");
    if (!t.key.empty()) req.set(http::field::authorization, "Bearer " + t.key);
    req.keep_alive(true);
    req.body() = load.body;
    req.prepare_payload();
    co_await http::async_write(stream, req, Into(ec));
    http::response_parser<http::buffer_body> parser;
    if (!ec) co_await http::async_read_header(stream, buffer, parser, Into(ec));
    while (!ec && !parser.is_done()) {
      parser.get().body().data = buf.data();
      parser.get().body().size = buf.size();
      co_await http::async_read(stream, buffer, parser, Into(ec));
      if (ec == http::error::need_buffer) ec = {};
    }
    if (ec || parser.get().result_int() != 200) {
      stats.failures++;
      beast::error_code ignored;
      stream.socket().close(ignored);
      connected = false;
      continue;
    }
    stats.done++;
    if (!parser.get().keep_alive()) {
      beast::error_code ignored;
      stream.socket().close(ignored);
      connected = false;
    }
  }
}

int RunFormats(const std::string& base, const std::string& format, int streams, int concurrency) {
  Target t = ParseUrl(base);
  FormatLoad load = LoadFor(format);
  net::io_context io;
  tcp::resolver resolver(io);
  auto endpoints = resolver.resolve(t.host, t.port);
  FormatStats stats;
  for (int i = 0; i < concurrency; ++i) {
    net::co_spawn(io, FormatWorker(t, endpoints, load, streams, stats), net::detached);
  }
  double t0 = Now();
  io.run();
  std::printf("%d %d %.3f\n", stats.done.load(), stats.failures.load(), Now() - t0);
  return stats.failures.load() == 0 ? 0 : 1;
}

int RunStoreSize(const std::string& path, const std::string& rollout) {
  auto st = forge::store::Store::Open(path);
  if (!st.ok()) {
    std::fprintf(stderr, "%s\n", st.status().message().c_str());
    return 1;
  }
  auto calls = (*st)->calls().CallsOfRollout(rollout);
  auto stats = (*st)->Stats();
  if (!calls.ok() || !stats.ok()) return 1;
  size_t largest = 0;
  for (const auto& c : *calls) largest = std::max(largest, c.request.dump().size());
  std::printf("%zu %zu %lld %lld %lld\n", calls->size(), largest, static_cast<long long>(stats->file_bytes),
              static_cast<long long>(stats->blob_bytes), static_cast<long long>(stats->token_bytes));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "upstream" && argc == 3) return RunUpstream(std::atoi(argv[2]));
  if (mode == "stream-upstream" && argc == 3) {
    g_whole_streams = true;
    return RunUpstream(std::atoi(argv[2]));
  }
  if (mode == "seq" && argc == 5) return RunSeq(argv[2], std::atoi(argv[3]), std::atoi(argv[4]));
  if (mode == "load" && argc == 5) return RunLoad(argv[2], std::atoi(argv[3]), std::atoi(argv[4]));
  if (mode == "storesize" && argc == 4) return RunStoreSize(argv[2], argv[3]);
  if (mode == "formats" && argc == 6) return RunFormats(argv[2], argv[3], std::atoi(argv[4]), std::atoi(argv[5]));
  std::fprintf(stderr,
               "usage: bench-proxy_bench upstream PORT | stream-upstream PORT | seq URL N BYTES | load URL CLIENTS EVENTS | "
               "storesize STORE ROLLOUT | formats BASE FORMAT STREAMS CONCURRENCY\n");
  return 64;
}
