// forge-dedup's calibrated defaults on a small built set, the vectors a user
// brings (.npy, raw float32, a record field) and every way they can be wrong,
// and the near-miss pairs `forge-dedup calibrate` shows.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <set>

#include "dedup/calibrate.h"
#include "dedup/defaults.h"
#include "dedup/embedder.h"
#include "dedup/exact_search.h"
#include "dedup/vector_input.h"
#include "support/fake_env.h"
#include "support/temp_dir.h"

// A namespace of its own, so that its using-directive reaches no other file of
// a unity build.
namespace dedup_inputs_test {

// The searches report progress and poll the stop here.
forge::Env& TestEnv() {
  static forge::testing::FakeEnv env;
  return env;
}
using namespace forge::dedup;
using forge::Kind;
using forge::records::Json;

namespace {

// Unrelated technical paragraphs of several lengths (17-55 words).
const std::vector<std::string> kTexts = {
    // 15 words and more: the calibration's shortest texts (one edit in a
    // 10-word text changes too many shingles for MinHash at its default).
    "Kept records are written to standard output unchanged and in input order, one line each, "
    "exactly as read.",
    "The exact stage hashes the normalised text of every record, so that copies differing only "
    "in case or spacing collide, and keeps the best-ranked copy of each.",
    "Set the environment variable to the directory holding the certificates before starting the "
    "server; otherwise the client refuses every connection with a verification error and the "
    "log names the missing file.",
    "A malformed line is reported with its file name and line number and skipped, the rest of "
    "the input keeps flowing, and the exit status at the end is sixty-five so that a pipeline "
    "notices that data was left out. With the strict flag the first malformed line stops the "
    "run instead.",
    "static int parse_header(const char *buf, size_t len, struct header *out) {\n"
    "  if (len < 8) return -1;\n  memcpy(&out->magic, buf, 4);\n"
    "  out->version = buf[4];\n  out->flags = buf[5];\n  return 0;\n}",
    "user: count the lines of every C file under src and print the total\n"
    "assistant: bash({\"command\": \"find src -name '*.c' | xargs wc -l | tail -1\"})\n"
    "tool: 48213 total\nassistant: The C files under src hold 48213 lines.",
    "Threads take tiles from a shared counter while the library itself runs single threaded, so "
    "memory stays bounded by one tile per thread plus the pairs found so far, and the output "
    "never depends on the timing of the threads.",
    "Every option can also be given in the configuration file, one per line, as a name, an "
    "equals sign and a value; the command line overrides the file, and unknown names are an "
    "error that names the line.",
};

// Word edits at a rate: substitute, insert, delete or swap neighbours, in turn.
std::string EditWords(const std::string& text, double rate, unsigned seed) {
  std::vector<std::string> words;
  for (size_t i = 0; i < text.size();) {
    size_t j = text.find_first_of(" \n", i);
    if (j == std::string::npos) j = text.size();
    if (j > i) words.push_back(text.substr(i, j - i));
    i = j + 1;
  }
  std::mt19937 rng(seed);
  size_t edits = std::max<size_t>(1, static_cast<size_t>(std::lround(rate * words.size())));
  const char* fillers[] = {"quickly", "buffer", "the", "value", "returns", "network"};
  for (size_t e = 0; e < edits; ++e) {
    size_t i = rng() % words.size();
    switch (e % 4) {
      case 0: words[i] = fillers[rng() % 6]; break;
      case 1: words.insert(words.begin() + i, fillers[rng() % 6]); break;
      case 2: if (words.size() > 2) words.erase(words.begin() + i); break;
      default: if (i + 1 < words.size()) std::swap(words[i], words[i + 1]);
    }
  }
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : " ") + w;
  return out;
}

// The pairs the default threshold finds among the texts and their edits.
std::vector<SimilarPair> DefaultPairs(EmbeddingKind kind, const std::vector<std::string>& texts) {
  std::unique_ptr<Embedder> embedder;
  if (kind == EmbeddingKind::kNgram) {
    embedder = std::make_unique<NgramEmbedder>(NgramOptions{kDefaultNgramN, 1024});
  } else {
    MinHashOptions o;
    o.n = kDefaultMinHashN;
    embedder = std::make_unique<MinHashEmbedder>(o);
  }
  auto m = embedder->Embed(texts);
  REQUIRE(m.ok());
  SearchOptions search;
  search.min_threshold = *ParseThreshold("", kind, false);
  auto graph = ExactSearch(VectorSet{m->data.data(), m->rows, m->dim}, search, TestEnv());
  REQUIRE(graph.ok());
  return graph->pairs;
}

std::string NpyBytes(const std::string& dict_body, const std::vector<float>& data) {
  std::string dict = "{" + dict_body + "}";
  size_t total = 10 + dict.size() + 1;
  dict += std::string((64 - total % 64) % 64, ' ') + "\n";
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(dict.size() & 0xff);
  out += static_cast<char>(dict.size() >> 8);
  out += dict;
  out.append(reinterpret_cast<const char*>(data.data()), data.size() * 4);
  return out;
}

std::string Shape(size_t rows, size_t dim) {
  return "'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(rows) + ", " +
         std::to_string(dim) + "), ";
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

}  // namespace

TEST_CASE("dedup defaults: 10 %-edited texts are found, unrelated texts are not merged") {
  for (EmbeddingKind kind : {EmbeddingKind::kNgram, EmbeddingKind::kMinHash}) {
    CAPTURE(static_cast<int>(kind));
    std::vector<std::string> texts = kTexts;
    for (size_t i = 0; i < kTexts.size(); ++i) texts.push_back(EditWords(kTexts[i], 0.10, 7 + i));
    auto pairs = DefaultPairs(kind, texts);
    std::set<std::pair<uint32_t, uint32_t>> found;
    for (const auto& p : pairs) found.insert({p.earlier, p.later});
    const uint32_t n = static_cast<uint32_t>(kTexts.size());
    for (uint32_t i = 0; i < n; ++i) {
      CAPTURE(i);
      CHECK(found.count({i, n + i}) == 1);
    }
    // Nothing else: every pair found is a text and its own edit.
    CHECK(found.size() == n);
  }
}

TEST_CASE("dedup defaults: --threshold parsing and the default per embedding") {
  CHECK(*ParseThreshold("", EmbeddingKind::kNgram, false) == kDefaultNgramThreshold);
  CHECK(*ParseThreshold("", EmbeddingKind::kMinHash, false) == kDefaultMinHashThreshold);
  CHECK(*ParseThreshold("", EmbeddingKind::kNgram, true) == kDefaultModelThreshold);
  CHECK(*ParseThreshold("0.75", EmbeddingKind::kNgram, false) == 0.75f);
  CHECK(ParseThreshold("1.5", EmbeddingKind::kNgram, false).status().kind() == Kind::kInvalidArgument);
  CHECK(ParseThreshold("high", EmbeddingKind::kNgram, false).status().kind() == Kind::kInvalidArgument);
  CHECK(DefaultsHelp().find("10 %") != std::string::npos);
}

TEST_CASE("dedup vectors: .npy and raw float32 files read in row order") {
  forge::testing::TempDir dir;
  std::vector<float> data = {1, 0, 0, 0, 3, 4};
  WriteFile(dir.File("v.npy"), NpyBytes(Shape(3, 2), data));
  auto m = ReadVectorFile(dir.File("v.npy"), 0);
  REQUIRE(m.ok());
  CHECK(m->rows == 3);
  CHECK(m->dim == 2);
  CHECK(m->data == data);
  WriteFile(dir.File("v.f32"), std::string(reinterpret_cast<const char*>(data.data()), 24));
  auto raw = ReadVectorFile(dir.File("v.f32"), 3);
  REQUIRE(raw.ok());
  CHECK(raw->rows == 2);
  CHECK(raw->dim == 3);
  // numpy's other header forms: version 2 (4-byte length), '=f4', no trailing comma.
  std::string v2 = NpyBytes("'descr': '=f4', 'fortran_order': False, 'shape': (3, 2)", data);
  v2[6] = '\x02';
  v2.insert(10, std::string("\x00\x00", 2));
  auto parsed = ParseNpy(v2, "v2.npy");
  REQUIRE(parsed.ok());
  CHECK(parsed->data == data);
  // Rows are checked and scaled to unit length.
  float row[2] = {3, 4};
  CHECK(CheckAndNormaliseRow(row, 2) == "");
  CHECK(row[0] == doctest::Approx(0.6f));
  CHECK(row[1] == doctest::Approx(0.8f));
}

TEST_CASE("dedup vectors: every malformed vector file is a clear error naming the file") {
  forge::testing::TempDir dir;
  std::vector<float> data(6, 1.0f);
  auto error = [&](const std::string& bytes, size_t raw_dim = 0) {
    WriteFile(dir.File("bad"), bytes);
    auto m = ReadVectorFile(dir.File("bad"), raw_dim);
    REQUIRE_FALSE(m.ok());
    CHECK(m.status().message().find(dir.File("bad")) == 0);
    return m.status();
  };
  auto missing = ReadVectorFile(dir.File("nope.npy"), 0);
  CHECK(missing.status().kind() == Kind::kNotFound);
  CHECK(missing.status().message().find("nope.npy") != std::string::npos);
  auto s = error(std::string(reinterpret_cast<const char*>(data.data()), 24));
  CHECK(s.kind() == Kind::kInvalidArgument);  // raw without --dim
  CHECK(s.message().find("--dim") != std::string::npos);
  s = error(std::string(reinterpret_cast<const char*>(data.data()), 24), 5);
  CHECK(s.kind() == Kind::kInvalidData);  // not whole rows
  CHECK(s.message().find("whole number") != std::string::npos);
  s = error(NpyBytes("'descr': '<f8', 'fortran_order': False, 'shape': (3, 2), ", data));
  CHECK(s.message().find("float32") != std::string::npos);
  s = error(NpyBytes("'descr': '<f4', 'fortran_order': True, 'shape': (3, 2), ", data));
  CHECK(s.message().find("Fortran") != std::string::npos);
  s = error(NpyBytes("'descr': '<f4', 'fortran_order': False, 'shape': (6,), ", data));
  CHECK(s.message().find("(records, dimensions)") != std::string::npos);
  s = error(NpyBytes("'descr': '<f4', 'fortran_order': False, 'shape': (1, 2, 3), ", data));
  CHECK(s.message().find("(records, dimensions)") != std::string::npos);
  s = error(NpyBytes(Shape(4, 2), data));  // shape says 32 bytes, 24 follow
  CHECK(s.kind() == Kind::kInvalidData);
  CHECK(s.message().find("needs 32") != std::string::npos);
  s = error(NpyBytes(Shape(3, 2), data).substr(0, 9));  // cut inside the preamble
  CHECK(s.message().find(".npy") != std::string::npos);
  std::string future = NpyBytes(Shape(3, 2), data);
  future[6] = '\x09';
  s = error(future);
  CHECK(s.message().find("version 9") != std::string::npos);
  WriteFile(dir.File("v.npy"), NpyBytes(Shape(3, 2), data));
  auto wrong_dim = ReadVectorFile(dir.File("v.npy"), 4);  // --dim disagrees with the shape
  CHECK(wrong_dim.status().message().find("--dim says 4") != std::string::npos);
}

TEST_CASE("dedup vectors: rows and record fields that cannot be compared say why") {
  float nan_row[3] = {1, std::nanf(""), 0};
  CHECK(CheckAndNormaliseRow(nan_row, 3) == "element 1 is NaN");
  float inf_row[2] = {INFINITY, 0};
  CHECK(CheckAndNormaliseRow(inf_row, 2) == "element 0 is infinite");
  float zero_row[2] = {0, 0};
  CHECK(CheckAndNormaliseRow(zero_row, 2) == "is all zeros");
  std::vector<float> out;
  CHECK(AppendJsonVector(Json::parse("[1, 2.5, -3]"), out) == "");
  CHECK(out == std::vector<float>{1, 2.5f, -3});
  CHECK(AppendJsonVector(Json::parse("\"0.1 0.2\""), out) == "is string, not an array of numbers");
  CHECK(AppendJsonVector(Json::parse("[]"), out) == "is an empty array");
  CHECK(AppendJsonVector(Json::parse("[1, \"x\", 3]"), out) == "element 1 is string, not a number");
  CHECK(out.size() == 3);  // a rejected array leaves nothing behind
}

TEST_CASE("dedup calibrate: near misses either side of a threshold, with the texts' difference") {
  SimilarityGraph g;
  g.pairs = {{0, 1, 0.95f}, {0, 2, 0.81f}, {1, 2, 0.79f}, {2, 3, 0.6f}};
  std::vector<std::string> texts = {"a b c d e f g h one", "a b c d e f g h two", "x", "y"};
  auto view = [&](uint32_t i) { return ItemView{"t" + std::to_string(i), "f:1", texts[i]}; };
  Json near = NearMisses(g, 0.8f, 1, view);
  REQUIRE(near["above"].size() == 1);
  CHECK(near["above"][0]["score"] == 0.81);
  CHECK(near["above"][0]["a"]["id"] == "t0");
  CHECK(near["above"][0]["b"]["id"] == "t2");
  REQUIRE(near["below"].size() == 1);
  CHECK(near["below"][0]["score"] == 0.79);
  Json both = NearMisses(g, 0.8f, 5, view);
  CHECK(both["above"].size() == 2);
  CHECK(both["below"].size() == 2);
  CHECK(both["below"][1]["score"] == 0.6);
  // Snippets start a few words before the first difference.
  auto [a, b] = DiffSnippets(texts[0], texts[1]);
  CHECK(a == "…e f g h one");
  CHECK(b == "…e f g h two");
  auto [c, d] = DiffSnippets("same start\nthen more words", "same start then other", 12);
  CHECK(c == "same start t…");
  CHECK(d == "same start t…");
  CHECK(FormatCalibration(Json::array({{{"threshold", 0.8}, {"kept", 3}, {"dropped", 1},
                                        {"near_misses", near}}}))
            .find("t0 ~ t2") != std::string::npos);
}

}  // namespace dedup_inputs_test
