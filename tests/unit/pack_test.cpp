#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <span>

#include "pack/advantage.h"
#include "pack/assemble.h"
#include "pack/bin_packing.h"
#include "pack/messages.h"
#include "pack/pack.h"
#include "pack/rl_batches.h"
#include "pack/safetensors.h"
#include "pack/validate.h"
#include "store/store.h"
#include "support/fake_env.h"
#include "support/temp_dir.h"

using forge::pack::AssemblyCounts;
using forge::pack::AssemblyMode;
using forge::pack::Json;
using forge::store::CallRecord;

namespace {

constexpr int32_t kEnd = 99;  // the "sampled stop token" of these constructed calls

CallRecord IdCall(const std::string& rollout, int64_t seq, std::vector<int32_t> prompt,
                  std::vector<int32_t> completion, const std::string& finish = "stop") {
  CallRecord c;
  c.rollout_id = rollout;
  c.seq = seq;
  c.client_format = "openai-chat";
  c.model = "policy";
  c.request = {{"model", "policy"},
               {"messages", Json::array({{{"role", "user"}, {"content", "turn " + std::to_string(seq)}}})}};
  c.response = {{"choices", Json::array({{{"message", {{"role", "assistant"}, {"content", "ok"}}},
                                          {"finish_reason", finish}}})}};
  c.prompt_ids = std::move(prompt);
  c.completion_ids = std::move(completion);
  for (size_t i = 0; i < c.completion_ids.size(); ++i) c.logprobs.push_back(-0.125f * static_cast<float>(i + 1));
  c.finish_reason = finish;
  c.http_status = 200;
  c.policy_version_start = c.policy_version_end = 3;
  return c;
}

// A hosted teacher: messages only, no token ids; the answer calls a tool
// with arguments given as an object (must become a JSON string).
CallRecord TeacherCall(const std::string& rollout, int64_t seq, Json messages) {
  CallRecord c;
  c.rollout_id = rollout;
  c.seq = seq;
  c.client_format = "openai-chat";
  c.model = "teacher";
  c.request = {{"model", "teacher"}, {"messages", messages},
               {"tools", Json::array({{{"type", "function"}, {"function", {{"name", "ls"}}}}})}};
  Json answer = {{"role", "assistant"},
                 {"content", nullptr},
                 {"tool_calls", Json::array({{{"id", "c1"}, {"type", "function"},
                                              {"function", {{"name", "ls"}, {"arguments", {{"path", "/"}}}}}}})}};
  c.response = {{"choices", Json::array({{{"message", answer}, {"finish_reason", "tool_calls"}}})}};
  c.finish_reason = "tool_calls";
  c.http_status = 200;
  return c;
}

std::vector<int32_t> Concat(std::initializer_list<std::vector<int32_t>> parts) {
  std::vector<int32_t> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

}  // namespace

TEST_CASE("pack: a clean chain of calls merges into one sample masked on the sampled tokens only") {
  std::vector<int32_t> p0{1, 2, 3}, a0{10, 11, kEnd}, o1{4, 5}, a1{12, kEnd}, o2{6}, a2{13, kEnd};
  std::vector<CallRecord> calls{IdCall("r", 0, p0, a0), IdCall("r", 1, Concat({p0, a0, o1}), a1),
                                IdCall("r", 2, Concat({p0, a0, o1, a1, o2}), a2)};
  AssemblyCounts counts;
  auto samples = forge::pack::Assemble(calls, AssemblyMode::kMerge, "t", &counts);
  REQUIRE(samples.size() == 1);
  const auto& s = samples[0];
  CHECK(s.input_ids == Concat({p0, a0, o1, a1, o2, a2}));
  CHECK(s.loss_mask == std::vector<uint8_t>{0, 0, 0, 1, 1, 1, 0, 0, 1, 1, 0, 1, 1});
  CHECK(s.logprobs[3] == doctest::Approx(-0.125));
  CHECK(s.logprobs[5] == doctest::Approx(-0.375));
  CHECK(s.logprobs[6] == 0.0f);
  CHECK(s.logprobs[9] == doctest::Approx(-0.25));
  CHECK(s.call_seqs == std::vector<int64_t>{0, 1, 2});
  CHECK_FALSE(s.from_messages);
  CHECK(counts.clean == 2);
  CHECK(counts.realign + counts.fork == 0);
  CHECK(counts.trainable_tokens == 7);
  CHECK(forge::pack::InvalidReason(s, {}) == "");

  SUBCASE("per-call mode keeps one sample per call, each masked on its own completion") {
    AssemblyCounts per;
    auto each = forge::pack::Assemble(calls, AssemblyMode::kPerCall, "t", &per);
    REQUIRE(each.size() == 3);
    CHECK(each[1].input_ids == Concat({p0, a0, o1, a1}));
    CHECK(each[1].loss_mask == std::vector<uint8_t>{0, 0, 0, 0, 0, 0, 0, 0, 1, 1});
    CHECK(per.clean == 2);  // boundaries are classified in both modes
  }
}

TEST_CASE("pack: a broken chain starts new samples, classified realign or fork") {
  std::vector<int32_t> p0{1, 2, 3}, a0{10, 11, kEnd};
  // The template re-tokenised the previous answer (11 → 11, 12): shares up to the completion start.
  auto realign = IdCall("r", 1, Concat({p0, {10, 21, 22, kEnd}, {4}}), {12, kEnd});
  // The history was edited before the previous answer (a summary replaced turn 0).
  auto fork = IdCall("r", 2, Concat({{1, 7}, {4}}), {14, kEnd});
  std::vector<CallRecord> calls{IdCall("r", 0, p0, a0), realign, fork};
  AssemblyCounts counts;
  auto samples = forge::pack::Assemble(calls, AssemblyMode::kMerge, "t", &counts);
  REQUIRE(samples.size() == 3);
  CHECK(counts.clean == 0);
  CHECK(counts.realign == 1);
  CHECK(counts.fork == 1);
  CHECK(samples[1].input_ids == Concat({p0, {10, 21, 22, kEnd}, {4}, {12, kEnd}}));
  CHECK(samples[1].trainable_tokens() == 2);
  CHECK(samples[2].input_ids.front() == 1);
  CHECK(samples[2].index == 2);
}

TEST_CASE("pack: side calls and failed calls are excluded and do not break a chain") {
  std::vector<int32_t> p0{1, 2}, a0{10, kEnd};
  auto side = IdCall("r", 1, {50, 51}, {52, kEnd});
  side.side_call = true;
  auto failed = IdCall("r", 2, {60}, {});
  failed.http_status = 500;
  failed.error = "upstream 500";
  std::vector<CallRecord> calls{IdCall("r", 0, p0, a0), side, failed, IdCall("r", 3, Concat({p0, a0, {5}}), {11, kEnd})};
  AssemblyCounts counts;
  auto samples = forge::pack::Assemble(calls, AssemblyMode::kMerge, "t", &counts);
  CHECK(samples.size() == 1);
  CHECK(counts.side_calls == 1);
  CHECK(counts.error_calls == 1);
  CHECK(counts.calls == 2);
}

TEST_CASE("pack: calls without token ids fall back to messages and are flagged") {
  Json m0 = Json::array({{{"role", "system"}, {"content", "be brief"}}, {{"role", "user"}, {"content", "list /"}}});
  auto c0 = TeacherCall("r", 0, m0);
  Json m1 = m0;
  m1.push_back(forge::pack::CanonicalMessage(forge::pack::ResponseMessage(c0)));
  m1.push_back({{"role", "tool"}, {"tool_call_id", "c1"}, {"content", "bin etc"}});
  auto c1 = TeacherCall("r", 1, m1);
  AssemblyCounts counts;
  auto samples = forge::pack::Assemble({c0, c1}, AssemblyMode::kMerge, "t", &counts);
  REQUIRE(samples.size() == 1);
  const auto& s = samples[0];
  CHECK(s.from_messages);
  CHECK(s.input_ids.empty());
  CHECK(counts.from_messages == 1);
  CHECK(counts.clean == 1);
  REQUIRE(s.messages.size() == 5);
  CHECK(s.messages[4]["role"] == "assistant");
  CHECK(s.messages[4]["content"] == "");
  CHECK(s.messages[4]["tool_calls"][0]["function"]["arguments"] == "{\"path\":\"/\"}");
  CHECK(s.tools.is_array());
  CHECK(forge::pack::InvalidReason(s, {}) == "");
}

TEST_CASE("pack: advantages match hand-computed values") {
  using forge::pack::Estimator;
  using forge::pack::GroupAdvantages;
  std::vector<double> r{1, 0, 0, 1};
  // mean 0.5; sample std sqrt(1/3) = 0.5773503
  auto grpo = GroupAdvantages(r, Estimator::kGrpo);
  CHECK(grpo[0] == doctest::Approx(0.5 / (0.5773503 + 1e-6)).epsilon(1e-6));
  CHECK(grpo[0] == doctest::Approx(0.8660239).epsilon(1e-5));
  CHECK(grpo[1] == doctest::Approx(-0.8660239).epsilon(1e-5));
  auto dr = GroupAdvantages(r, Estimator::kDrGrpo);
  CHECK(dr == std::vector<double>{0.5, -0.5, -0.5, 0.5});
  auto rloo = GroupAdvantages({1, 0, 0}, Estimator::kRloo);
  CHECK(rloo[0] == doctest::Approx(1.0));   // 1 - mean(0, 0)
  CHECK(rloo[1] == doctest::Approx(-0.5));  // 0 - mean(1, 0)
  auto rloo2 = GroupAdvantages({0.2, 0.6, 1.0}, Estimator::kRloo);
  CHECK(rloo2[2] == doctest::Approx(1.0 - 0.4));
  // n/(n-1)·(r - mean) is the same thing.
  CHECK(rloo2[0] == doctest::Approx(3.0 / 2.0 * (0.2 - 0.6)));
  // A group of one: veRL takes mean 0, std 1.
  CHECK(GroupAdvantages({0.7}, Estimator::kDrGrpo)[0] == doctest::Approx(0.7));
  CHECK(forge::pack::ZeroVariance({1, 1, 1}));
  CHECK_FALSE(forge::pack::ZeroVariance({1, 0}));
  auto flat = GroupAdvantages({1, 1}, Estimator::kGrpo);
  CHECK(flat == std::vector<double>{0, 0});
}

TEST_CASE("pack: validation drops bad samples with the reason") {
  using forge::pack::InvalidReason;
  forge::pack::Sample good;
  good.input_ids = {1, 2, 10, kEnd};
  good.loss_mask = {0, 0, 1, 1};
  good.logprobs = {0, 0, -1, -1};
  good.finish_reason = "stop";
  CHECK(InvalidReason(good, {}) == "");

  auto none = good;
  none.loss_mask = {0, 0, 0, 0};
  CHECK(InvalidReason(none, {}) == "no_trainable_tokens");

  auto truncated = good;
  truncated.finish_reason = "length";
  CHECK(InvalidReason(truncated, {}) == "not_stopped");

  auto trailing = good;
  trailing.input_ids.push_back(5);
  trailing.loss_mask.push_back(0);
  CHECK(InvalidReason(trailing, {}) == "last_token_not_trainable");

  forge::pack::ValidationOptions bounds;
  bounds.max_tokens = 3;
  CHECK(InvalidReason(good, bounds) == "too_long");
  bounds = {};
  bounds.min_tokens = 5;
  CHECK(InvalidReason(good, bounds) == "too_short");
  bounds = {};
  bounds.stop_ids = {kEnd};
  CHECK(InvalidReason(good, bounds) == "");
  bounds.stop_ids = {151645};
  CHECK(InvalidReason(good, bounds) == "not_stop_token");

  auto teacher = good;
  teacher.from_messages = true;
  teacher.messages = Json::array({{{"role", "user"}, {"content", "hi"}}});
  CHECK(InvalidReason(teacher, {}) == "no_assistant_message");
}

TEST_CASE("pack: best-fit decreasing places every sequence once within the budget") {
  std::vector<int64_t> lengths{3, 9, 2, 5, 5, 4, 1, 7, 6, 8};  // 50 tokens
  auto bins = forge::pack::BestFitDecreasing(lengths, 10);
  std::multiset<size_t> placed;
  for (const auto& b : bins) {
    int64_t used = 0;
    for (size_t i : b.items) {
      placed.insert(i);
      used += lengths[i];
    }
    CHECK(used == b.used);
    CHECK(used <= 10);
  }
  CHECK(placed.size() == lengths.size());
  CHECK(std::set<size_t>(placed.begin(), placed.end()).size() == lengths.size());
  CHECK(bins.size() == 5);  // 9+1, 8+2, 7+3, 6+4, 5+5: the ideal
  auto f = forge::pack::Figures(bins, 10);
  CHECK(f.utilisation == doctest::Approx(1.0));
  CHECK(f.padding_waste == 0);
  CHECK(f.vs_ideal == doctest::Approx(1.0));
  // Best fit, not first fit: 8 | 6+3, then the 1 goes to the tighter second
  // bin (room 1), where first fit would put it in the first (room 2).
  auto bf = forge::pack::BestFitDecreasing({8, 6, 3, 1}, 10);
  REQUIRE(bf.size() == 2);
  CHECK(bf[0].used == 8);
  CHECK(bf[1].used == 10);
}

TEST_CASE("pack: safetensors files round-trip through the reader with aligned data") {
  forge::testing::TempDir dir;
  std::vector<int32_t> ids{5, -6, 7};
  std::vector<uint8_t> mask{0, 1, 1};
  std::vector<float> adv{0.0f, 0.5f, -1.25f};
  std::string path = dir.File("x.safetensors");
  REQUIRE(forge::pack::WriteSafetensors(path,
                                        {forge::pack::Flat("input_ids", forge::pack::DType::kI32, ids),
                                         forge::pack::Flat("loss_mask", forge::pack::DType::kU8, mask),
                                         forge::pack::Flat("advantages", forge::pack::DType::kF32, adv)},
                                        {{"format", "test"}})
              .ok());
  auto file = forge::pack::ReadSafetensors(path);
  REQUIRE(file.ok());
  CHECK(file->header["__metadata__"]["format"] == "test");
  CHECK(file->header["input_ids"]["dtype"] == "I32");
  CHECK(file->header["input_ids"]["shape"] == Json::array({3}));
  CHECK(file->header["loss_mask"]["dtype"] == "U8");
  REQUIRE(file->bytes["input_ids"].size() == 12);
  CHECK(std::memcmp(file->bytes["input_ids"].data(), ids.data(), 12) == 0);
  CHECK(std::memcmp(file->bytes["advantages"].data(), adv.data(), 12) == 0);
  CHECK(file->bytes["loss_mask"] == std::string("\0\1\1", 3));
  // The 4-byte tensors come before the 1-byte one and the buffer starts 8-aligned.
  CHECK(file->header["loss_mask"]["data_offsets"][0] == 24);
  std::ifstream in(path, std::ios::binary);
  uint64_t n = 0;
  in.read(reinterpret_cast<char*>(&n), 8);
  CHECK((8 + n) % 8 == 0);
  CHECK(std::filesystem::file_size(path) == 8 + n + 27);
}

TEST_CASE("pack: rl batches carry per-token advantages on trainable tokens and cu_seqlens") {
  forge::testing::TempDir dir;
  std::vector<forge::pack::RlRollout> rollouts;
  for (int i = 0; i < 4; ++i) {
    std::vector<int32_t> p{1, 2, 3}, a{static_cast<int32_t>(10 + i), kEnd};
    auto samples = forge::pack::Assemble({IdCall("r" + std::to_string(i), 0, p, a)}, AssemblyMode::kMerge,
                                         i < 2 ? "A" : "B", nullptr);
    rollouts.push_back({"r" + std::to_string(i), i < 2 ? "A" : "B", i == 0 ? 1.0 : 0.0, samples});
  }
  forge::pack::RlOptions o;
  o.estimator = forge::pack::Estimator::kDrGrpo;
  o.token_budget = 10;
  o.out_dir = dir.path().string();
  forge::pack::RlFigures figures;
  auto batches = forge::pack::PlanRlBatches(rollouts, o, &figures);
  CHECK(figures.groups == 2);
  CHECK(figures.zero_variance_groups == 1);
  CHECK(figures.rows == 4);
  REQUIRE(batches.size() == 2);  // 4 rows of 5 tokens, budget 10
  std::map<std::string, float> advantage;
  for (const auto& b : batches) for (const auto& row : b) advantage[row.sample->rollout_id] = row.advantage;
  CHECK(advantage["r0"] == doctest::Approx(0.5));
  CHECK(advantage["r1"] == doctest::Approx(-0.5));
  CHECK(advantage["r2"] == 0.0f);

  auto entry = forge::pack::WriteRlBatch(batches[0], 0, o);
  REQUIRE(entry.ok());
  auto file = forge::pack::ReadSafetensors((*entry)["file"].get<std::string>());
  REQUIRE(file.ok());
  std::vector<int32_t> cu(3);
  std::memcpy(cu.data(), file->bytes["cu_seqlens"].data(), 12);
  CHECK(cu == std::vector<int32_t>{0, 5, 10});
  std::vector<int32_t> pos(10);
  std::memcpy(pos.data(), file->bytes["position_ids"].data(), 40);
  CHECK(pos == std::vector<int32_t>{0, 1, 2, 3, 4, 0, 1, 2, 3, 4});
  std::vector<float> adv(10);
  std::memcpy(adv.data(), file->bytes["advantages"].data(), 40);
  float row0 = batches[0][0].advantage;
  CHECK(adv[0] == 0.0f);
  CHECK(adv[3] == row0);
  CHECK(adv[4] == row0);

  SUBCASE("zero-variance groups can be dropped") {
    o.drop_zero_variance = true;
    forge::pack::RlFigures f2;
    auto kept = forge::pack::PlanRlBatches(rollouts, o, &f2);
    CHECK(f2.rows == 2);
    CHECK(f2.dropped_zero_variance_rollouts == 2);
  }
}

TEST_CASE("pack: safetensors header text is the reference layout, byte for byte") {
  forge::testing::TempDir dir;
  std::vector<int32_t> ids{1, 2};
  std::vector<uint8_t> mask{1};
  std::string path = dir.File("h.safetensors");
  REQUIRE(forge::pack::WriteSafetensors(path,
                                        {forge::pack::Flat("loss_mask", forge::pack::DType::kU8, mask),
                                         forge::pack::Flat("input_ids", forge::pack::DType::kI32, ids)},
                                        {{"z", "a \"quoted\" value"}, {"a", "1"}})
              .ok());
  std::ifstream in(path, std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  uint64_t n = 0;
  std::memcpy(&n, all.data(), 8);
  std::string header = all.substr(8, n);
  std::string want =
      R"({"__metadata__":{"a":"1","z":"a \"quoted\" value"},)"
      R"("input_ids":{"dtype":"I32","shape":[2],"data_offsets":[0,8]},)"
      R"("loss_mask":{"dtype":"U8","shape":[1],"data_offsets":[8,9]}})";
  CHECK(header.substr(0, want.size()) == want);
  CHECK(header.find_first_not_of(' ', want.size()) == std::string::npos);  // only padding after it
  CHECK((8 + n) % 8 == 0);
  CHECK(all.size() == 8 + n + 9);
  CHECK(!std::filesystem::exists(path + ".tmp"));
}

TEST_CASE("pack: micro-batches written on two threads equal those written one by one") {
  forge::testing::TempDir dir;
  std::vector<forge::pack::RlRollout> rollouts;
  for (int i = 0; i < 24; ++i) {
    std::vector<int32_t> p(static_cast<size_t>(3 + i % 5), 1), a{static_cast<int32_t>(10 + i), kEnd};
    std::string id = "r" + std::to_string(i), task = "t" + std::to_string(i / 4);
    rollouts.push_back({id, task, static_cast<double>(i % 3), forge::pack::Assemble({IdCall(id, 0, p, a)},
                                                                                  AssemblyMode::kMerge, task, nullptr)});
  }
  forge::pack::RlOptions o;
  o.token_budget = 16;
  forge::pack::RlFigures figures;
  auto batches = forge::pack::PlanRlBatches(rollouts, o, &figures);
  REQUIRE(batches.size() > 4);
  std::filesystem::create_directories(dir.path() / "one");
  std::filesystem::create_directories(dir.path() / "two");
  o.out_dir = (dir.path() / "one").string();
  std::vector<Json> serial;
  for (size_t i = 0; i < batches.size(); ++i) {
    auto e = forge::pack::WriteRlBatch(batches[i], i, o);
    REQUIRE(e.ok());
    serial.push_back(*e);
  }
  o.out_dir = (dir.path() / "two").string();
  o.write_threads = 2;
  auto parallel = forge::pack::WriteRlBatches(batches, o);
  REQUIRE(parallel.ok());
  REQUIRE(parallel->size() == serial.size());
  auto bytes = [](const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  for (size_t i = 0; i < serial.size(); ++i) {
    Json a = serial[i], b = (*parallel)[i];
    CHECK(b["batch"] == i);  // index entries come back in batch order
    CHECK(bytes(a["file"]) == bytes(b["file"]));
    a.erase("file");
    b.erase("file");
    CHECK(a == b);
  }

  SUBCASE("a directory that cannot be written to is an error naming the file, not a crash") {
    o.out_dir = (dir.path() / "missing" / "deeper").string();
    auto failed = forge::pack::WriteRlBatches(batches, o);
    REQUIRE(!failed.ok());
    CHECK(failed.status().kind() == forge::Kind::kCannotCreate);
    CHECK(failed.status().message().find("batch-00000") != std::string::npos);
  }
  SUBCASE("a stop request ends the writing with Cancelled") {
    forge::StopToken stop;
    stop.Request();
    auto stopped = forge::pack::WriteRlBatches(batches, o, &stop);
    REQUIRE(!stopped.ok());
    CHECK(stopped.status().kind() == forge::Kind::kCancelled);
  }
}

TEST_CASE("store: token-only reads give the same ids as full reads, with no content, query reused") {
  forge::testing::TempDir dir;
  auto store = forge::store::Store::Open(dir.File("s.db"));
  REQUIRE(store.ok());
  std::vector<CallRecord> calls{IdCall("x", 0, {1, 2, 3}, {4, kEnd}), IdCall("x", 1, {1, 2, 3, 4, kEnd, 6}, {7, kEnd}),
                                IdCall("y", 0, {1, 2}, {8, kEnd}), IdCall("x", 2, {1, 2, 3, 9}, {5, kEnd}, "length")};
  REQUIRE(store.value()->calls().AppendCalls(calls).ok());
  for (const char* rollout : {"x", "y", "x"}) {  // the second "x" reuses the prepared query
    auto full = store.value()->calls().CallsOfRollout(rollout);
    auto tokens = store.value()->calls().CallsOfRollout(rollout, forge::store::CallFields::kTokens);
    REQUIRE(full.ok());
    REQUIRE(tokens.ok());
    REQUIRE(full->size() == tokens->size());
    for (size_t i = 0; i < full->size(); ++i) {
      const CallRecord &f = (*full)[i], &t = (*tokens)[i];
      CHECK(t.seq == f.seq);
      CHECK(t.prompt_ids == f.prompt_ids);  // delta-decoded the same way
      CHECK(t.completion_ids == f.completion_ids);
      CHECK(t.logprobs == f.logprobs);
      CHECK(t.finish_reason == f.finish_reason);
      CHECK(t.policy_version_end == f.policy_version_end);
      CHECK(t.request.is_null());
      CHECK(t.response.is_null());
      CHECK(!f.request.is_null());
    }
  }
  auto x = store.value()->calls().CallsOfRollout("x", forge::store::CallFields::kTokens);
  REQUIRE(x.ok());
  REQUIRE(x->size() == 3);
  CHECK((*x)[1].prompt_ids == std::vector<int32_t>{1, 2, 3, 4, kEnd, 6});
  CHECK((*x)[2].prompt_ids == std::vector<int32_t>{1, 2, 3, 9});
  CHECK((*x)[2].finish_reason == "length");
  auto none = store.value()->calls().CallsOfRollout("nobody", forge::store::CallFields::kTokens);
  REQUIRE(none.ok());
  CHECK(none->empty());
}

TEST_CASE("store: ReadTokenCalls over many rollouts, one reused vector, equals each rollout's full read") {
  forge::testing::TempDir dir;
  auto store = forge::store::Store::Open(dir.File("s.db"));
  REQUIRE(store.ok());
  // Interleaved rollouts (as concurrent rollouts are recorded), a side call,
  // a failed call, a rollout of one call and calls whose seq was given out
  // of append order, so a delta's base call comes later in seq order.
  CallRecord side = IdCall("a", 2, {1, 2}, {kEnd});
  side.side_call = true;
  CallRecord failed = IdCall("b", 1, {5, 6, 7}, {});
  failed.http_status = 500;
  failed.error = "upstream died";
  failed.logprobs.clear();
  std::vector<CallRecord> calls{IdCall("a", 0, {1, 2, 3}, {4, kEnd}),
                                IdCall("b", 0, {5, 6}, {7, kEnd}),
                                IdCall("a", 1, {1, 2, 3, 4, kEnd, 8}, {9, 10, kEnd}, "length"),
                                side,
                                failed,
                                IdCall("a", 3, {1, 2, 3, 4, kEnd, 8, 9, 10, kEnd, 11}, {12, kEnd}),
                                IdCall("one", 0, {42}, {kEnd}),
                                IdCall("late", 7, {20, 21, 22}, {23, kEnd}),
                                IdCall("late", 3, {20, 21, 22, 23, kEnd, 24}, {25, kEnd})};
  REQUIRE(store.value()->calls().AppendCalls(calls).ok());

  std::vector<CallRecord> reused;
  // "late" twice (the statement is reused), rollouts without calls between.
  for (const char* rollout : {"a", "nobody", "b", "late", "one", "", "a", "late"}) {
    CAPTURE(rollout);
    auto n = store.value()->calls().ReadTokenCalls(rollout, &reused);
    auto full = store.value()->calls().CallsOfRollout(rollout);
    REQUIRE(n.ok());
    REQUIRE(full.ok());
    REQUIRE(*n == full->size());
    for (size_t i = 0; i < *n; ++i) {
      const CallRecord &t = reused[i], &f = (*full)[i];
      CAPTURE(i);
      CHECK(t.id == f.id);
      CHECK(t.rollout_id == f.rollout_id);
      CHECK(t.seq == f.seq);
      CHECK(t.prompt_ids == f.prompt_ids);
      CHECK(t.completion_ids == f.completion_ids);
      CHECK(t.logprobs == f.logprobs);
      CHECK(t.finish_reason == f.finish_reason);
      CHECK(t.http_status == f.http_status);
      CHECK(t.error == f.error);
      CHECK(t.side_call == f.side_call);
      CHECK(t.policy_version_start == f.policy_version_start);
      CHECK(t.policy_version_end == f.policy_version_end);
      CHECK(t.request.is_null());  // no content, even in an element that held some before
      CHECK(t.model.empty());
    }
    if (std::string(rollout) == "a") {
      REQUIRE(*n == 4);
      CHECK(reused[3].prompt_ids == std::vector<int32_t>{1, 2, 3, 4, kEnd, 8, 9, 10, kEnd, 11});
      CHECK(reused[2].side_call);
    }
    if (std::string(rollout) == "late") {
      REQUIRE(*n == 2);
      CHECK(reused[0].seq == 3);  // seq order, though appended second
      CHECK(reused[0].prompt_ids == std::vector<int32_t>{20, 21, 22, 23, kEnd, 24});
      CHECK(reused[1].prompt_ids == std::vector<int32_t>{20, 21, 22});
    }
  }
  // The elements past N keep what the longer rollout left, as documented.
  CHECK(reused.size() >= 4);

  // Token reads through Assemble give the samples a full read gives.
  for (const char* rollout : {"a", "b", "late", "one"}) {
    CAPTURE(rollout);
    auto n = store.value()->calls().ReadTokenCalls(rollout, &reused);
    auto full = store.value()->calls().CallsOfRollout(rollout);
    REQUIRE(n.ok());
    REQUIRE(full.ok());
    AssemblyCounts from_tokens, from_full;
    auto a = forge::pack::Assemble(std::span<const CallRecord>(reused.data(), *n), AssemblyMode::kMerge, "t",
                                   &from_tokens);
    auto b = forge::pack::Assemble(*full, AssemblyMode::kMerge, "t", &from_full);
    REQUIRE(a.size() == b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      CHECK(a[i].input_ids == b[i].input_ids);
      CHECK(a[i].loss_mask == b[i].loss_mask);
      CHECK(a[i].logprobs == b[i].logprobs);
      CHECK(a[i].call_seqs == b[i].call_seqs);
    }
    CHECK(from_tokens.clean == from_full.clean);
    CHECK(from_tokens.fork == from_full.fork);
    CHECK(from_tokens.side_calls == from_full.side_calls);
    CHECK(from_tokens.error_calls == from_full.error_calls);
  }
}

TEST_CASE("store: a token read of a call whose delta base is gone is an error naming the call") {
  forge::testing::TempDir dir;
  std::string path = dir.File("s.db");
  int64_t second_id = 0;
  {
    auto store = forge::store::Store::Open(path);
    REQUIRE(store.ok());
    std::vector<CallRecord> calls{IdCall("x", 0, {1, 2, 3}, {4, kEnd}), IdCall("x", 1, {1, 2, 3, 4, kEnd, 6}, {kEnd})};
    REQUIRE(store.value()->calls().AppendCalls(calls).ok());
    second_id = calls[1].id;
  }
  {
    auto db = forge::store::Database::Open(path, false);
    REQUIRE(db.ok());
    REQUIRE(db->Execute("DELETE FROM calls WHERE seq = 0").ok());
  }
  auto store = forge::store::Store::Open(path);
  REQUIRE(store.ok());
  std::vector<CallRecord> reused;
  auto n = store.value()->calls().ReadTokenCalls("x", &reused);
  REQUIRE(!n.ok());
  CHECK(n.status().kind() == forge::Kind::kInvalidData);
  CHECK(n.status().message().find("call " + std::to_string(second_id)) != std::string::npos);
  CHECK(n.status().message().find("broken prompt delta") != std::string::npos);
}

// Writes the store and records the end-to-end test (tests/e2e/pack.sh) runs
// forge-pack on, plus the tensors it must find. Also checks the fixture
// through the library when run as an ordinary unit test.
TEST_CASE("pack fixture: recorded calls in a store, packed through RunPack") {
  forge::testing::TempDir scratch;
  const char* env = std::getenv("FORGE_PACK_FIXTURE_DIR");
  std::filesystem::path dir = env ? std::filesystem::path(env) : scratch.path();
  std::filesystem::create_directories(dir);
  auto store = forge::store::Store::Open((dir / "forge.db").string());
  REQUIRE(store.ok());

  std::vector<CallRecord> calls;
  std::vector<int32_t> sys{1, 2, 3, 4};
  // Task A: three policy rollouts with clean chains (rewards 1, 0, 0); one of them also has a side call.
  for (int i = 0; i < 3; ++i) {
    std::string r = "a" + std::to_string(i);
    std::vector<int32_t> a0{static_cast<int32_t>(20 + i), kEnd}, obs{7, 8}, a1{30, static_cast<int32_t>(31 + i), kEnd};
    calls.push_back(IdCall(r, 0, sys, a0));
    if (i == 0) {
      auto side = IdCall(r, 1, {90}, {91, kEnd});
      side.side_call = true;
      calls.push_back(side);
    }
    calls.push_back(IdCall(r, i == 0 ? 2 : 1, Concat({sys, a0, obs}), a1, "tool_calls"));
  }
  // Task B: one rollout whose history was summarised (a fork), one truncated by length.
  calls.push_back(IdCall("b0", 0, sys, {40, kEnd}));
  calls.push_back(IdCall("b0", 1, {1, 2, 9}, {41, kEnd}));
  calls.push_back(IdCall("b1", 0, sys, {42, 43}, "length"));
  // Task C: a hosted teacher without ids.
  Json m0 = Json::array({{{"role", "user"}, {"content", "list /"}}});
  calls.push_back(TeacherCall("c0", 0, m0));
  for (auto& c : calls) c.seq = -1;  // the store numbers them in order
  REQUIRE(store.value()->calls().AppendCalls(calls).ok());
  store.value().reset();

  std::ofstream records(dir / "rollouts.jsonl");
  auto line = [&](const std::string& id, const std::string& task, double reward, bool passed) {
    records << Json{{"rollout_id", id}, {"task_id", task}, {"instruction", "do " + task},
                    {"verdict", {{"outcome", passed ? "pass" : "fail"}, {"reward", reward}, {"passed", passed}}}}
                   .dump()
            << "\n";
  };
  line("a0", "A", 1, true);
  line("a1", "A", 0, false);
  line("a2", "A", 0, false);
  line("b0", "B", 1, true);
  line("b1", "B", 0, false);
  line("c0", "C", 1, true);
  records.close();

  // Expected RL rows (drgrpo keeps the numbers readable): task A mean 1/3; B mean 1/2.
  Json expected = Json::object();
  auto expect = [&](const std::string& key, std::vector<int32_t> ids, std::vector<int> mask, double adv) {
    expected[key] = {{"input_ids", ids}, {"loss_mask", mask}, {"advantage", adv}};
  };
  for (int i = 0; i < 3; ++i) {
    expect("a" + std::to_string(i) + "/0",
           Concat({sys, {20 + i, kEnd}, {7, 8}, {30, 31 + i, kEnd}}), {0, 0, 0, 0, 1, 1, 0, 0, 1, 1, 1},
           (i == 0 ? 1.0 : 0.0) - 1.0 / 3.0);
  }
  expect("b0/0", Concat({sys, {40, kEnd}}), {0, 0, 0, 0, 1, 1}, 0.5);
  expect("b0/1", {1, 2, 9, 41, kEnd}, {0, 0, 0, 1, 1}, 0.5);
  std::ofstream(dir / "expected.json") << expected.dump(1) << "\n";

  forge::testing::FakeEnv fake_env;
  forge::pack::PackOptions o;
  o.env = &fake_env;
  o.inputs = {(dir / "rollouts.jsonl").string()};
  o.stores = {(dir / "forge.db").string()};
  o.format = forge::pack::Format::kSftMessages;
  o.quiet = true;
  o.stats_path = (scratch.path() / "stats.json").string();
  auto out = forge::records::JsonlWriter::Create((scratch.path() / "sft.jsonl").string());
  REQUIRE(out.ok());
  auto status = forge::pack::RunPack(o, **out);
  REQUIRE_MESSAGE(status.ok(), status.message());
  out.value().reset();
  Json stats = Json::parse(std::ifstream(o.stats_path));
  CHECK(stats["samples"] == 7);  // a0..a2, b0 ×2, b1, c0
  CHECK(stats["written"] == 6);  // b1 dropped
  CHECK(stats["dropped"]["not_stopped"] == 1);
  CHECK(stats["boundaries"]["clean"] == 3);
  CHECK(stats["boundaries"]["fork"] == 1);
  CHECK(stats["side_calls_excluded"] == 1);
  CHECK(stats["samples_from_messages"] == 1);
  // Per-run metrics: 10 policy calls (the side call excluded) in 7 samples
  // over 6 rollouts; 50 tokens, 21 of them sampled (a*: 5/11, b0: 2/6 + 2/5,
  // b1: 2/6, c0: no ids).
  CHECK(stats["calls"] == 10);
  CHECK(stats["rollouts"] == 6);
  CHECK(stats["samples_per_rollout"].get<double>() == doctest::Approx(7.0 / 6.0));
  CHECK(stats["merge_ratio"].get<double>() == doctest::Approx(10.0 / 7.0));
  CHECK(stats["tokens"] == 50);
  CHECK(stats["trainable_tokens"] == 21);
  CHECK(stats["trainable_token_ratio"].get<double>() == doctest::Approx(21.0 / 50.0));
  CHECK(stats["seconds"].contains("total"));

  SUBCASE("rl reads only the token columns, yet counts the same boundaries and the teacher's missing ids") {
    o.format = forge::pack::Format::kRl;
    o.estimator = forge::pack::Estimator::kDrGrpo;
    o.out_dir = (scratch.path() / "rl").string();
    o.token_budget = 16;
    auto index = forge::records::JsonlWriter::Create((scratch.path() / "index.jsonl").string());
    REQUIRE(index.ok());
    auto rl = forge::pack::RunPack(o, **index);
    REQUIRE_MESSAGE(rl.ok(), rl.message());
    index.value().reset();
    Json s = Json::parse(std::ifstream(o.stats_path));
    CHECK(s["boundaries"] == stats["boundaries"]);
    CHECK(s["samples"] == 7);
    CHECK(s["samples_from_messages"] == 1);  // c0 re-read with its content to build it
    CHECK(s["dropped"] == Json{{"no_token_ids", 1}, {"not_stopped", 1}});
    CHECK(s["rl"]["rows"] == 5);  // a0..a2, b0 ×2
    CHECK(s["seconds"]["write"].get<double>() >= 0);
  }
}

// RunPack reads the next chunk of rollouts on a second thread while it
// assembles the current one: many chunks' worth of rollouts must come out
// whole, in input order, with filters counted once, and a store error in a
// late chunk must end the run with that error (not hang, not be lost).
TEST_CASE("pack: rollouts read ahead on a second thread come out whole, and a late store error ends the run") {
  forge::testing::TempDir dir;
  const std::string db = dir.File("forge.db");
  constexpr int kRollouts = 300;  // several chunks
  {
    auto store = forge::store::Store::Open(db);
    REQUIRE(store.ok());
    std::vector<CallRecord> calls;
    for (int r = 0; r < kRollouts; ++r) {
      std::string id = "r" + std::to_string(r);
      std::vector<int32_t> prompt{1, 2, r};
      calls.push_back(IdCall(id, 0, prompt, {5, kEnd}));
      calls.push_back(IdCall(id, 1, Concat({prompt, {5, kEnd}, {7}}), {8, kEnd}));
    }
    REQUIRE(store.value()->calls().AppendCalls(calls).ok());
  }
  std::ofstream records(dir.File("verdicts.jsonl"));
  for (int r = 0; r < kRollouts; ++r) {
    records << Json{{"rollout_id", "r" + std::to_string(r)}, {"task_id", "t" + std::to_string(r / 4)},
                    {"verdict", {{"passed", r % 2 == 0}, {"reward", r % 2 == 0 ? 1.0 : 0.0}}}}
                   .dump()
            << "\n";
  }
  records.close();

  forge::testing::FakeEnv env;
  forge::pack::PackOptions o;
  o.env = &env;
  o.inputs = {dir.File("verdicts.jsonl")};
  o.stores = {db};
  o.format = forge::pack::Format::kSftTokens;
  o.passed_only = true;
  o.quiet = true;
  o.stats_path = dir.File("stats.json");
  auto run = [&](const std::string& out_name) {
    auto out = forge::records::JsonlWriter::Create(dir.File(out_name));
    REQUIRE(out.ok());
    return forge::pack::RunPack(o, **out);
  };

  SUBCASE("every kept rollout, in input order, filters counted once") {
    auto status = run("tokens.jsonl");
    REQUIRE_MESSAGE(status.ok(), status.message());
    Json stats = Json::parse(std::ifstream(o.stats_path));
    CHECK(stats["filtered"]["not_passed"] == kRollouts / 2);
    CHECK(stats["written"] == kRollouts / 2);
    CHECK(stats["boundaries"]["clean"] == kRollouts / 2);
    std::ifstream in(dir.File("tokens.jsonl"));
    std::string line;
    int expected = 0;
    while (std::getline(in, line)) {
      Json row = Json::parse(line);
      CHECK(row["rollout_id"] == "r" + std::to_string(expected));
      CHECK(row["input_ids"] == std::vector<int32_t>{1, 2, expected, 5, kEnd, 7, 8, kEnd});
      expected += 2;
    }
    CHECK(expected == kRollouts);
  }

  SUBCASE("a broken prompt delta in a late chunk is the run's error") {
    {
      auto database = forge::store::Database::Open(db, false);
      REQUIRE(database.ok());
      REQUIRE(database->Execute("DELETE FROM calls WHERE rollout_id = 'r250' AND seq = 0").ok());
    }
    auto status = run("broken.jsonl");
    REQUIRE(!status.ok());
    CHECK(status.kind() == forge::Kind::kInvalidData);
    CHECK(status.message().find("broken prompt delta") != std::string::npos);
    CHECK(status.message().find(db) != std::string::npos);
  }
}
