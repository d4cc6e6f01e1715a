#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

#include "dedup/decision.h"
#include "dedup/embedder.h"
#include "dedup/exact_search.h"
#include "dedup/hnsw_search.h"
#include "dedup/inner_product_kernel.h"
#include "dedup/minhash_embedder.h"
#include "dedup/ngram_embedder.h"
#include "dedup/ranking.h"
#include "dedup/remote_embedder.h"
#include "dedup/text.h"
#include "dedup/trajectory.h"
#include "store/store.h"
#include "support/fake_env.h"
#include "support/temp_dir.h"

// A namespace of its own, so that its using-directive reaches no other file of
// a unity build.
namespace dedup_test {

// The searches report progress and poll the stop here.
forge::Env& TestEnv() {
  static forge::testing::FakeEnv env;
  return env;
}
using namespace forge::dedup;
using forge::records::Json;

static float Cosine(const std::string& a, const std::string& b, NgramOptions o = {}) {
  std::vector<float> x(o.dim), y(o.dim);
  EmbedNgrams(a, o, x);
  EmbedNgrams(b, o, y);
  float s = 0;
  for (int i = 0; i < o.dim; ++i) s += x[i] * y[i];
  return s;
}

TEST_CASE("dedup: dotted paths, text extraction and normalisation") {
  Json r = Json::parse(R"({"id":7,"task":{"prompt":"Hi"},"msgs":[{"c":"a"},{"c":"b"}]})");
  CHECK(FindPath(r, "task.prompt")->get<std::string>() == "Hi");
  CHECK(FindPath(r, "msgs.1.c")->get<std::string>() == "b");
  CHECK(FindPath(r, "msgs.2.c") == nullptr);
  CHECK(FindPath(r, "task.nope") == nullptr);
  CHECK(*ExtractText(r, {"task.prompt", "msgs.0.c"}, "id") == "Hi\na");
  CHECK_FALSE(ExtractText(r, {"missing"}, "id").has_value());
  CHECK(*ExtractText(r, {}, "id") == R"({"msgs":[{"c":"a"},{"c":"b"}],"task":{"prompt":"Hi"}})");
  CHECK(*ExtractId(r, "id") == "7");
  CHECK(Normalise("  Hello\t\tWORLD \n") == "hello world");
  CHECK(ContentHash("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST_CASE("dedup: n-gram embeddings are unit vectors, deterministic, and close for small edits") {
  const std::string base =
      "Implement a command-line tool that counts the words in every file of a directory tree "
      "and prints the ten most frequent ones with their counts.";
  std::string edited = base;
  edited.replace(edited.find("ten"), 3, "five");
  CHECK(Cosine(base, base) == doctest::Approx(1.0f).epsilon(1e-5));
  CHECK(Cosine(base, edited) > 0.9f);
  CHECK(Cosine(base, "Write a SQL query returning the second highest salary per department.") <
        0.3f);
  std::vector<float> a(64), b(64);
  EmbedNgrams("same text", {5, 64}, a);
  EmbedNgrams("same text", {5, 64}, b);
  CHECK(a == b);
  std::vector<float> empty(16, 3.0f);
  EmbedNgrams("", {5, 16}, empty);
  for (float v : empty) CHECK(v == 0.0f);
}

TEST_CASE("dedup: ranking by an ordered key list, missing values last, input order on ties") {
  std::vector<Json> rows = {
      Json::parse(R"({"id":"a","success":false,"reward":0.9})"),
      Json::parse(R"({"id":"b","success":true,"reward":0.5,"tokens":300})"),
      Json::parse(R"({"id":"c","success":true,"reward":0.5,"tokens":100})"),
      Json::parse(R"({"id":"d","success":true})"),
      Json::parse(R"({"id":"e","success":true,"reward":0.5,"tokens":100})"),
  };
  std::vector<const Json*> ptrs;
  for (auto& r : rows) ptrs.push_back(&r);
  auto keys = ParseRankKeys("success desc, reward desc,tokens asc");
  REQUIRE(keys.ok());
  CHECK(RankOrder(ptrs, *keys) == std::vector<size_t>{2, 4, 1, 3, 0});
  CHECK_FALSE(ParseRankKeys("reward sideways").ok());
  CHECK_FALSE(ParseRankKeys("reward desc extra").ok());
}

static std::vector<float> RandomUnitVectors(size_t n, size_t d, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> x(n * d);
  for (auto& v : x) v = normal(rng);
  for (size_t i = 0; i < n; ++i) NormaliseL2(std::span<float>(&x[i * d], d));
  return x;
}

TEST_CASE("dedup: blocked exact search finds exactly the brute-force pairs, any tile or thread count") {
  // d = 96 can use the prefix bound (a prefix of the dimensions, then the rest
  // for the cells that can still reach the threshold); d = 32 is too small.
  for (size_t d : {32, 96}) {
  CAPTURE(d);
  const size_t n = 300;
  std::vector<float> x = RandomUnitVectors(n, d, 1);
  // Plant near copies so that there are pairs well above chance.
  for (size_t i = 50; i < n; i += 7) {
    for (size_t k = 0; k < d; ++k) x[i * d + k] = x[(i - 50) * d + k] + 0.05f * x[(i + 1) % n * d + k];
    NormaliseL2(std::span<float>(&x[i * d], d));
  }
  // At 0.6 no prefix of 96 random dimensions bounds well enough, and the
  // search takes the full product; at 0.9 it chooses a prefix.
  for (float threshold : {0.6f, 0.9f}) {
  CAPTURE(threshold);
  std::vector<SimilarPair> expected;
  std::vector<float> best(n, -1.0f);
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = i + 1; j < n; ++j) {
      float s = 0;
      for (size_t k = 0; k < d; ++k) s += x[i * d + k] * x[j * d + k];
      best[i] = std::max(best[i], s);
      best[j] = std::max(best[j], s);
      if (s >= threshold) expected.push_back({uint32_t(i), uint32_t(j), s});
    }
  }
  REQUIRE(expected.size() >= 30);
  for (size_t tile : {16, 37, 128, 1024}) {
    for (int threads : {1, 3}) {
    for (bool bound : {true, false}) {
      CAPTURE(tile);
      CAPTURE(threads);
      CAPTURE(bound);
      SearchOptions o;
      o.min_threshold = threshold;
      o.tile = tile;
      o.threads = threads;
      o.prefix_bound = bound;
      auto graph = ExactSearch(VectorSet{x.data(), n, d}, o, TestEnv());
      REQUIRE(graph.ok());
      REQUIRE(graph->pairs.size() == expected.size());
      SortPairs(expected);
      for (size_t p = 0; p < expected.size(); ++p) {
        CHECK(graph->pairs[p].earlier == expected[p].earlier);
        CHECK(graph->pairs[p].later == expected[p].later);
        CHECK(graph->pairs[p].score == doctest::Approx(expected[p].score).epsilon(1e-4));
      }
      const bool bounded = graph->best_resolved_from > -1.0f;
      const bool tried = bound && d >= 64 && n > 2 * tile;
      CHECK(bounded == (tried && graph->prefix_dims < d));
      if (tried && threshold > 0.8f) CHECK(bounded);
      if (bounded && tile == 16) CHECK(graph->pruned_tiles > 0);
      for (size_t i = 0; i < n; ++i) {
        if (!bounded || best[i] >= threshold) {
          CHECK(graph->best[i] == doctest::Approx(best[i]).epsilon(1e-4));
        } else {
          CHECK(graph->best[i] < threshold);  // only "below" is known
        }
      }
    }
    }
  }
  }
  SearchOptions tight;
  tight.min_threshold = -1.0f;
  tight.max_pairs = 100;
  CHECK_FALSE(ExactSearch(VectorSet{x.data(), n, d}, tight, TestEnv()).ok());
  }
}

TEST_CASE("dedup: SemDeDup keeps an item whose only close neighbour was dropped; components chain") {
  // 0~1 (0.95), 1~2 (0.95), 0~2 (0.80): a chain.
  SimilarityGraph g;
  g.pairs = {{0, 1, 0.95f}, {0, 2, 0.80f}, {1, 2, 0.95f}};
  SortPairs(g.pairs);
  g.best = {0.95f, 0.95f, 0.95f};
  Decision sem = Decide(g, 3, 0.9f, DecisionMode::kSemDeDup);
  CHECK(sem.matched[0] == Decision::kKept);
  CHECK(sem.matched[1] == 0);
  CHECK(sem.matched[2] == Decision::kKept);  // its neighbour 1 was dropped; 0 is too far
  CHECK(sem.dropped == 1);
  Decision comp = Decide(g, 3, 0.9f, DecisionMode::kComponents);
  CHECK(comp.matched[1] == 0);
  CHECK(comp.matched[2] == 0);
  CHECK(comp.score[2] == doctest::Approx(0.95f));  // the edge that tied it in (0~2 is below)
  CHECK(comp.dropped == 2);
  Decision low = Decide(g, 3, 0.75f, DecisionMode::kSemDeDup);
  CHECK(low.matched[2] == 0);
  CHECK(low.score[2] == doctest::Approx(0.80f));
}

TEST_CASE("dedup: the wide HNSW distance kernel agrees with a double-precision dot product at every length") {
  if (!forge::dedup::WideKernelAvailable()) {
    MESSAGE("no AVX2/FMA on this CPU; the wide kernel is never chosen");
    return;
  }
  std::mt19937 rng(3);
  std::normal_distribution<float> normal;
  for (size_t dim : {1, 7, 8, 9, 31, 32, 33, 63, 100, 384, 1000}) {
    std::vector<float> a(dim), b(dim);
    double dot = 0;
    for (size_t i = 0; i < dim; ++i) {
      a[i] = normal(rng);
      b[i] = normal(rng);
      dot += double(a[i]) * b[i];
    }
    float got = forge::dedup::InnerProductDistanceAvx2(a.data(), b.data(), &dim);
    CHECK_MESSAGE(got == doctest::Approx(1.0 - dot).epsilon(1e-4), "dim " << dim);
  }
}

TEST_CASE("dedup: HNSW finds the planted pairs and reports its recall") {
  const size_t n = 2000, d = 48;
  std::vector<float> x = RandomUnitVectors(n, d, 3);
  for (size_t i = 1000; i < n; i += 5) {
    for (size_t k = 0; k < d; ++k) x[i * d + k] = x[(i - 1000) * d + k] + 0.02f * x[(i + 1) * d % (n * d) + k];
    NormaliseL2(std::span<float>(&x[i * d], d));
  }
  SearchOptions o;
  o.min_threshold = 0.9f;
  o.threads = 2;
  HnswOptions h;
  h.recall_sample = 400;
  HnswStats stats;
  auto graph = HnswSearch(VectorSet{x.data(), n, d}, o, h, &stats, TestEnv());
  REQUIRE(graph.ok());
  auto exact = ExactSearch(VectorSet{x.data(), n, d}, o, TestEnv());
  REQUIRE(exact.ok());
  CHECK(exact->pairs.size() == 200);
  CHECK(graph->pairs.size() >= 196);
  CHECK(stats.sample == 400);
  CHECK(stats.exact_pairs > 0);
  CHECK(stats.found_pairs * 100 >= stats.exact_pairs * 98);
  CHECK(stats.ToJson()["pair_recall"].get<double>() >= 0.98);
  CHECK(stats.kernel == (forge::dedup::WideKernelAvailable() ? "avx2+fma" : "hnswlib"));
}


TEST_CASE("dedup: embeddings endpoint URL and response parsing") {
  CHECK(EmbeddingsEndpoint("http://127.0.0.1:8080") == "http://127.0.0.1:8080/v1/embeddings");
  CHECK(EmbeddingsEndpoint("http://127.0.0.1:8080/v1/") == "http://127.0.0.1:8080/v1/embeddings");
  CHECK(EmbeddingsEndpoint("http://h/x/embeddings") == "http://h/x/embeddings");

  // Out of order by index, unnormalised: put back in order and scaled to unit length.
  auto ok = ParseEmbeddingsResponse(
      R"({"data":[{"index":1,"embedding":[0,2]},{"index":0,"embedding":[3,4]}]})", 2);
  REQUIRE(ok.ok());
  CHECK((*ok)[0][0] == doctest::Approx(0.6f));
  CHECK((*ok)[0][1] == doctest::Approx(0.8f));
  CHECK((*ok)[1][1] == doctest::Approx(1.0f));

  auto code = [](const std::string& body, size_t n) {
    auto r = ParseEmbeddingsResponse(body, n);
    return r.ok() ? forge::Kind::kOk : r.status().kind();
  };
  CHECK(code("{\"data\":[{\"embedding\":[0.1,", 1) == forge::Kind::kProtocol);
  CHECK(code(R"({"error":"x"})", 1) == forge::Kind::kProtocol);
  CHECK(code(R"({"data":[{"embedding":[1,0]}]})", 2) == forge::Kind::kProtocol);
  CHECK(code(R"({"data":[{"embedding":[0,0]}]})", 1) == forge::Kind::kProtocol);
  CHECK(code(R"({"data":[{"embedding":[1,"a"]}]})", 1) == forge::Kind::kProtocol);
  CHECK(code(R"({"data":[{"index":0,"embedding":[1]},{"index":0,"embedding":[1]}]})", 2) ==
        forge::Kind::kProtocol);
  CHECK(code(R"({"data":[{"embedding":[1,0]},{"embedding":[1]}]})", 2) == forge::Kind::kProtocol);
  auto message = ParseEmbeddingsResponse(R"({"data":[]})", 3).status().message();
  CHECK(message.find("expected 3 embeddings, got 0") != std::string::npos);
}

static float MinHashCosine(const std::string& a, const std::string& b, MinHashOptions o = {}) {
  std::vector<float> x(o.dim()), y(o.dim());
  EmbedMinHash(a, o, x);
  EmbedMinHash(b, o, y);
  float s = 0;
  for (int i = 0; i < o.dim(); ++i) s += x[i] * y[i];
  return s;
}

TEST_CASE("dedup: MinHash vectors' cosine estimates the Jaccard similarity of their shingles") {
  const std::string base =
      "Implement a command-line tool that counts the words in every file of a directory tree "
      "and prints the ten most frequent ones with their counts.";
  std::string edited = base;
  edited.replace(edited.find("ten"), 3, "five");
  std::string half = base.substr(0, base.size() / 2) + " then sorts the result by name and exits.";
  const std::string other = "Write a SQL query returning the second highest salary per department.";
  MinHashOptions o;
  CHECK(o.dim() == 1024);
  CHECK(MinHashCosine(base, base) == doctest::Approx(1.0f).epsilon(1e-4));
  // Case and spacing are normalised away, as in the exact stage.
  CHECK(MinHashCosine(base, "  IMPLEMENT a command-line\t" + base.substr(base.find("tool"))) ==
        doctest::Approx(1.0f).epsilon(1e-4));
  for (const std::string* b : std::initializer_list<const std::string*>{&edited, &half, &other}) {
    double jaccard = ShingleJaccard(base, *b, o.n);
    CAPTURE(jaccard);
    // 128 hashes: the estimator's standard deviation is below 0.05.
    CHECK(std::fabs(MinHashCosine(base, *b) - jaccard) < 0.15);
  }
  CHECK(ShingleJaccard(base, edited, 5) > 0.8);
  CHECK(ShingleJaccard(base, other, 5) < 0.05);
  CHECK(MinHashCosine(base, edited) > 0.7f);
  CHECK(MinHashCosine(base, other) < 0.2f);

  // Unit length, deterministic, and the empty text gives the zero vector.
  std::vector<float> a(o.dim()), b(o.dim());
  EmbedMinHash(base, o, a);
  EmbedMinHash(base, o, b);
  CHECK(a == b);
  double norm = 0;
  for (float v : a) norm += double(v) * v;
  CHECK(norm == doctest::Approx(1.0).epsilon(1e-4));
  std::vector<float> empty(o.dim(), 3.0f);
  EmbedMinHash("", o, empty);
  for (float v : empty) CHECK(v == 0.0f);
}

TEST_CASE("dedup: MinHash embedding with the exact search finds the built duplicates") {
  // Ten distinct texts; 3 and 7 get near copies (one word changed), 5 a copy
  // in upper case: exactly those three pairs reach Jaccard 0.6.
  std::vector<std::string> texts = {
      "Compute the SHA-256 checksum of a file and print it in hexadecimal.",
      "Write a SQL query returning the second highest salary per department.",
      "Parse an ISO-8601 timestamp with a time zone and convert it to UTC.",
      "Implement a token bucket rate limiter for an HTTP API, one bucket per client.",
      "Find the longest palindromic substring of a string in quadratic time.",
      "Resize every JPEG image in a folder to at most 800 pixels wide, keeping aspect.",
      "Merge two sorted linked lists into one sorted list without allocating nodes.",
      "Report the ten most frequent words across all text files under a directory.",
      "Serve static files over HTTP from the current directory on port 8000.",
      "Detect a cycle in a directed graph given as an adjacency list and print it."};
  std::string near3 = texts[3];
  near3.replace(near3.find("HTTP"), 4, "REST");
  std::string near7 = texts[7];
  near7.replace(near7.find("ten"), 3, "five");
  std::string upper5 = texts[5];
  for (char& c : upper5) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  texts.push_back(near3);
  texts.push_back(near7);
  texts.push_back(upper5);
  MinHashEmbedder embedder(MinHashOptions{});
  auto m = embedder.Embed(texts);
  REQUIRE(m.ok());
  SearchOptions o;
  o.min_threshold = 0.6f;  // the edits' exact Jaccard is 0.79 and 0.81, the rest below 0.1
  auto graph = ExactSearch(VectorSet{m->data.data(), m->rows, m->dim}, o, TestEnv());
  REQUIRE(graph.ok());
  REQUIRE(graph->pairs.size() == 3);
  CHECK(graph->pairs[0].earlier == 3);
  CHECK(graph->pairs[0].later == 10);
  CHECK(graph->pairs[1].earlier == 7);
  CHECK(graph->pairs[1].later == 11);
  CHECK(graph->pairs[2].earlier == 5);
  CHECK(graph->pairs[2].later == 12);
  CHECK(graph->pairs[2].score == doctest::Approx(1.0f).epsilon(1e-4));
  // Same input, same vectors.
  auto again = embedder.Embed(texts);
  REQUIRE(again.ok());
  CHECK(again->data == m->data);
  CHECK(embedder.Provenance()["kind"] == "minhash");
}

namespace {

using forge::store::CallRecord;

CallRecord ChatCall(const std::string& rollout, Json messages, Json reply, bool side = false) {
  CallRecord c;
  c.rollout_id = rollout;
  c.client_format = "openai-chat";
  c.model = "policy";
  c.request = {{"model", "policy"}, {"messages", std::move(messages)}};
  c.response = {{"choices", Json::array({{{"message", std::move(reply)}, {"finish_reason", "stop"}}})}};
  c.http_status = 200;
  c.side_call = side;
  return c;
}

// Two turns of an agent: the second call resends the first call's messages and
// reply (with an extra null field, as harnesses do) and adds a tool result.
std::vector<CallRecord> AgentRollout(const std::string& rollout, const std::string& task,
                                     const std::string& command) {
  Json system = {{"role", "system"}, {"content", "You are a careful coding agent."}};
  Json user = {{"role", "user"}, {"content", Json::array({{{"type", "text"}, {"text", task}}})}};
  Json call = {{"role", "assistant"},
               {"content", nullptr},
               {"tool_calls", Json::array({{{"id", "c1"}, {"type", "function"},
                                            {"function", {{"name", "bash"},
                                                          {"arguments", Json{{"cmd", command}}.dump()}}}}})}};
  Json resent = call;
  resent["refusal"] = nullptr;
  Json result = {{"role", "tool"}, {"tool_call_id", "c1"}, {"content", "exit 0"}};
  Json done = {{"role", "assistant"}, {"content", "Done: the command succeeded."}};
  return {ChatCall(rollout, Json::array({system, user}), call),
          ChatCall(rollout, Json::array({{{"role", "user"}, {"content", "title?"}}}),
                   {{"role", "assistant"}, {"content", "A title"}}, /*side=*/true),
          ChatCall(rollout, Json::array({system, user, resent, result}), done)};
}

}  // namespace

TEST_CASE("dedup trajectory fixture: rollouts' trajectories rendered from the store") {
  forge::testing::TempDir scratch;
  const char* env = std::getenv("FORGE_DEDUP_FIXTURE_DIR");
  std::filesystem::path dir = env ? std::filesystem::path(env) : scratch.path();
  std::filesystem::create_directories(dir);
  auto store = forge::store::Store::Open((dir / "forge.db").string());
  REQUIRE(store.ok());
  const std::string task = "Count the lines of every .cpp file under src/ and print the total.";
  std::vector<CallRecord> calls;
  for (auto& c : AgentRollout("r1", task, "find src -name '*.cpp' | xargs wc -l | tail -1")) calls.push_back(c);
  // r2 did the same thing with a trivially different command: a near duplicate.
  for (auto& c : AgentRollout("r2", task, "find src -name '*.cpp' | xargs wc -l | tail -n 1")) calls.push_back(c);
  // r3 took a different route to the same task.
  for (auto& c : AgentRollout("r3", task, "python3 -c 'import pathlib; print(sum(len(p.read_text().splitlines()) for p in pathlib.Path(\"src\").rglob(\"*.cpp\")))'")) {
    calls.push_back(c);
  }
  for (auto& c : calls) c.seq = -1;
  REQUIRE((*store)->calls().AppendCalls(calls).ok());

  auto text = TrajectoryText(**store, "r1");
  REQUIRE(text.ok());
  CHECK(*text ==
        "system: You are a careful coding agent.\n"
        "user: " + task + "\n"
        "assistant: \n"
        "bash({\"cmd\":\"find src -name '*.cpp' | xargs wc -l | tail -1\"})\n"
        "tool: exit 0\n"
        "assistant: Done: the command succeeded.");
  auto none = TrajectoryText(**store, "nope");
  REQUIRE(none.ok());
  CHECK(none->empty());

  std::vector<std::string> texts;
  for (const char* r : {"r1", "r2", "r3"}) texts.push_back(*TrajectoryText(**store, r));
  NgramEmbedder embedder(NgramOptions{});
  auto m = embedder.Embed(texts);
  REQUIRE(m.ok());
  SearchOptions o;
  o.min_threshold = 0.9f;
  auto graph = ExactSearch(VectorSet{m->data.data(), m->rows, m->dim}, o, TestEnv());
  REQUIRE(graph.ok());
  REQUIRE(graph->pairs.size() == 1);
  CHECK(graph->pairs[0].earlier == 0);
  CHECK(graph->pairs[0].later == 1);
  store->reset();

  // Records for the end-to-end test: r2 has the better reward, r4 no calls.
  std::ofstream records(dir / "rollouts.jsonl");
  records << R"({"rollout_id":"r1","task_id":"t","reward":0.5})" << "\n"
          << R"({"rollout_id":"r2","task_id":"t","reward":1.0})" << "\n"
          << R"({"rollout_id":"r3","task_id":"t","reward":0.0})" << "\n"
          << R"({"rollout_id":"r4","task_id":"t","reward":1.0})" << "\n";
}

TEST_CASE("dedup: HNSW grows the beam until every pair of a large cluster is found") {
  // 150 copies of one vector (plus noise) among 1000 random ones: every copy has
  // 149 pairs, more than the first beam holds, so queries must regrow.
  const size_t n = 1000, d = 32;
  std::vector<float> x = RandomUnitVectors(n, d, 11);
  for (size_t i = 850; i < n; ++i) {
    for (size_t k = 0; k < d; ++k) x[i * d + k] = x[k] + 0.01f * x[(i - 800) * d + k];
    NormaliseL2(std::span<float>(&x[i * d], d));
  }
  for (size_t k = 0; k < d; ++k) x[k] = x[850 * d + k];
  SearchOptions o;
  o.min_threshold = 0.95f;
  o.threads = 2;
  HnswOptions h;
  h.ef_search = 16;
  h.k = 8;
  h.recall_sample = 0;
  HnswStats stats;
  auto graph = HnswSearch(VectorSet{x.data(), n, d}, o, h, &stats, TestEnv());
  REQUIRE(graph.ok());
  auto exact = ExactSearch(VectorSet{x.data(), n, d}, o, TestEnv());
  REQUIRE(exact.ok());
  CHECK(exact->pairs.size() >= 150 * 149 / 2);
  CHECK(stats.regrown > 0);
  CHECK(stats.beam_capped == 0);
  CHECK(graph->pairs.size() * 100 >= exact->pairs.size() * 99);
}

}  // namespace dedup_test
