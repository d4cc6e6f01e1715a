#include <doctest/doctest.h>

#include <random>

#include "dedup/decision.h"
#include "dedup/exact_search.h"
#include "dedup/hnsw_search.h"
#include "dedup/ngram_embedder.h"
#include "dedup/ranking.h"
#include "dedup/text.h"

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
  const size_t n = 300, d = 32;
  std::vector<float> x = RandomUnitVectors(n, d, 1);
  // Plant near copies so that there are pairs well above chance.
  for (size_t i = 50; i < n; i += 7) {
    for (size_t k = 0; k < d; ++k) x[i * d + k] = x[(i - 50) * d + k] + 0.05f * x[(i + 1) % n * d + k];
    NormaliseL2(std::span<float>(&x[i * d], d));
  }
  const float threshold = 0.6f;
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
      CAPTURE(tile);
      CAPTURE(threads);
      SearchOptions o;
      o.min_threshold = threshold;
      o.tile = tile;
      o.threads = threads;
      auto graph = ExactSearch(VectorSet{x.data(), n, d}, o);
      REQUIRE(graph.ok());
      REQUIRE(graph->pairs.size() == expected.size());
      SortPairs(expected);
      for (size_t p = 0; p < expected.size(); ++p) {
        CHECK(graph->pairs[p].earlier == expected[p].earlier);
        CHECK(graph->pairs[p].later == expected[p].later);
        CHECK(graph->pairs[p].score == doctest::Approx(expected[p].score).epsilon(1e-4));
      }
      for (size_t i = 0; i < n; ++i) CHECK(graph->best[i] == doctest::Approx(best[i]).epsilon(1e-4));
    }
  }
  SearchOptions tight;
  tight.min_threshold = -1.0f;
  tight.max_pairs = 100;
  CHECK_FALSE(ExactSearch(VectorSet{x.data(), n, d}, tight).ok());
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
  auto graph = HnswSearch(VectorSet{x.data(), n, d}, o, h, &stats);
  REQUIRE(graph.ok());
  auto exact = ExactSearch(VectorSet{x.data(), n, d}, o);
  REQUIRE(exact.ok());
  CHECK(exact->pairs.size() == 200);
  CHECK(graph->pairs.size() >= 196);
  CHECK(stats.sample == 400);
  CHECK(stats.exact_pairs > 0);
  CHECK(stats.found_pairs * 100 >= stats.exact_pairs * 98);
  CHECK(stats.ToJson()["pair_recall"].get<double>() >= 0.98);
}

#include "dedup/remote_embedder.h"

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
    return r.ok() ? forge::ExitCode::kOk : r.status().code();
  };
  CHECK(code("{\"data\":[{\"embedding\":[0.1,", 1) == forge::ExitCode::kProtocol);
  CHECK(code(R"({"error":"x"})", 1) == forge::ExitCode::kProtocol);
  CHECK(code(R"({"data":[{"embedding":[1,0]}]})", 2) == forge::ExitCode::kProtocol);
  CHECK(code(R"({"data":[{"embedding":[0,0]}]})", 1) == forge::ExitCode::kProtocol);
  CHECK(code(R"({"data":[{"embedding":[1,"a"]}]})", 1) == forge::ExitCode::kProtocol);
  CHECK(code(R"({"data":[{"index":0,"embedding":[1]},{"index":0,"embedding":[1]}]})", 2) ==
        forge::ExitCode::kProtocol);
  CHECK(code(R"({"data":[{"embedding":[1,0]},{"embedding":[1]}]})", 2) == forge::ExitCode::kProtocol);
  auto message = ParseEmbeddingsResponse(R"({"data":[]})", 3).status().message();
  CHECK(message.find("expected 3 embeddings, got 0") != std::string::npos);
}
