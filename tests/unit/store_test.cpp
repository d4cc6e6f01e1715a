#include <doctest/doctest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/hash.h"
#include "base/json_scan.h"
#include "store/blob_codec.h"
#include "store/sqlite.h"
#include "store/content.h"
#include "store/recent_prompts.h"
#include "store/schema.h"
#include "store/store.h"
#include "support/open_store.h"
#include "support/temp_dir.h"

using forge::store::CallFields;
using forge::store::CallRecord;
using forge::store::Json;
using forge::store::OpenOptions;
using forge::store::Store;
using forge::testing::OpenOrDie;

namespace {

// Text zstd shrinks little (the store compresses content): printable ASCII
// but quote and backslash, from a linear congruential sequence; ~6.5 bits a byte.
std::string Incompressible(size_t size, uint32_t seed) {
  static const std::string kAlphabet = [] {
    std::string a;
    for (char c = '#'; c <= '~'; ++c) {
      if (c != '\\') a += c;
    }
    return a;
  }();
  std::string text;
  text.reserve(size);
  for (uint32_t x = seed * 2654435761u + 1; text.size() < size; x = x * 1103515245u + 12345u) {
    text += kAlphabet[(x >> 16) % kAlphabet.size()];
  }
  return text;
}

Json Message(const std::string& role, const std::string& text) {
  return {{"role", role}, {"content", text}};
}

CallRecord MakeCall(const std::string& rollout, const Json& messages, std::vector<int32_t> prompt) {
  CallRecord call;
  call.rollout_id = rollout;
  call.client_format = "openai-chat";
  call.model = "policy";
  call.request = {{"model", "policy"}, {"messages", messages}, {"stream", false}};
  call.response = {{"choices", Json::array({{{"message", Message("assistant", "ok")}}})}};
  call.prompt_ids = std::move(prompt);
  call.completion_ids = {7, 8, 9};
  call.logprobs = {-0.5f, -0.25f, -0.125f};
  call.finish_reason = "stop";
  call.http_status = 200;
  return call;
}

}  // namespace

TEST_CASE("a new store migrates from an empty file to the latest schema") {
  forge::testing::TempDir dir;
  auto store = OpenOrDie(dir.File("forge.db"));
  CHECK(store->schema_version() == forge::store::LatestSchemaVersion());
  CHECK(store->tasks().Put({{"id", "t1"}, {"instruction", "x"}}).ok());
}

TEST_CASE("a store at every earlier schema version migrates forward and keeps its data") {
  for (int version = 1; version < forge::store::LatestSchemaVersion(); ++version) {
    CAPTURE(version);
    forge::testing::TempDir dir;
    std::string path = dir.File("old.db");
    {
      OpenOptions old;
      old.target_version = version;
      auto store = OpenOrDie(path, old);
      CHECK(store->schema_version() == version);
      // Data that exists in every version since 1.
      REQUIRE(store->tasks().Put({{"id", "kept"}, {"instruction", "survive the migration"}}).ok());
    }
    auto store = OpenOrDie(path);
    CHECK(store->schema_version() == forge::store::LatestSchemaVersion());
    auto task = store->tasks().Get("kept");
    REQUIRE(task.ok());
    REQUIRE(task->has_value());
    CHECK((**task)["instruction"] == "survive the migration");
  }
}

TEST_CASE("a store newer than this forge is refused, not damaged") {
  forge::testing::TempDir dir;
  std::string path = dir.File("new.db");
  {
    auto store = OpenOrDie(path);
    REQUIRE(store->db().WriteTransaction([&] { return forge::Status::Ok(); }).ok());
  }
  {
    auto db = forge::store::Database::Open(path, false);
    REQUIRE(db.ok());
    REQUIRE(db->Execute("PRAGMA user_version = 999").ok());
  }
  auto store = Store::Open(path);
  REQUIRE_FALSE(store.ok());
  CHECK(store.status().message().find("newer") != std::string::npos);
}

TEST_CASE("calls round-trip with content, token ids and logprobs") {
  forge::testing::TempDir dir;
  auto store = OpenOrDie(dir.File("forge.db"));
  Json history = Json::array({Message("system", std::string(200, 's')), Message("user", "do the task")});
  std::vector<CallRecord> calls = {MakeCall("r1", history, {1, 2, 3, 4})};
  history.push_back(Message("assistant", "first answer, long enough to be a blob of its own........"));
  history.push_back(Message("user", "tool output"));
  calls.push_back(MakeCall("r1", history, {1, 2, 3, 4, 7, 8, 9, 5, 6}));
  calls.push_back(MakeCall("r2", history, {42}));
  REQUIRE(store->calls().AppendCalls(calls).ok());
  CHECK(calls[0].seq == 0);
  CHECK(calls[1].seq == 1);
  CHECK(calls[2].seq == 0);

  auto back = store->calls().CallsOfRollout("r1");
  REQUIRE(back.ok());
  REQUIRE(back->size() == 2);
  CHECK((*back)[1].request == calls[1].request);
  CHECK((*back)[1].response == calls[1].response);
  CHECK((*back)[0].prompt_ids == std::vector<int32_t>{1, 2, 3, 4});
  CHECK((*back)[1].prompt_ids == std::vector<int32_t>{1, 2, 3, 4, 7, 8, 9, 5, 6});
  CHECK((*back)[1].completion_ids == std::vector<int32_t>{7, 8, 9});
  CHECK((*back)[1].logprobs == std::vector<float>{-0.5f, -0.25f, -0.125f});
  CHECK((*back)[1].finish_reason == "stop");
}

TEST_CASE("the upstream request is stored as its exact difference from the client's request") {
  forge::testing::TempDir dir;
  auto store = OpenOrDie(dir.File("forge.db"));
  CallRecord call = MakeCall("r", Json::array({Message("user", std::string(300, 'q'))}), {1, 2});
  call.request["user"] = "u";
  call.request["stream_options"] = {{"a", 1}};
  call.upstream_request = call.request;
  call.upstream_request.erase("user");
  call.upstream_request["return_token_ids"] = true;
  call.upstream_request["stream_options"] = {{"include_usage", true}};  // replaced whole, not merged
  CallRecord translated = MakeCall("r", Json::array(), {3});
  translated.upstream_request = Json::array({"not", "an", "object"});
  std::vector<CallRecord> calls = {call, translated};
  REQUIRE(store->calls().AppendCalls(calls).ok());
  auto back = store->calls().CallsOfRollout("r");
  REQUIRE(back.ok());
  REQUIRE(back->size() == 2);
  CHECK((*back)[0].upstream_request == call.upstream_request);
  CHECK((*back)[0].request == call.request);
  CHECK((*back)[1].upstream_request == translated.upstream_request);
}

TEST_CASE("resent conversation content is stored once") {
  forge::testing::TempDir dir;
  auto store = OpenOrDie(dir.File("forge.db"));
  Json history = Json::array({Message("system", std::string(4000, 's'))});
  std::vector<int32_t> prompt(1000, 1);
  for (int i = 0; i < 20; ++i) {
    history.push_back(Message("user", "turn " + std::to_string(i) + std::string(500, 'u')));
    for (int k = 0; k < 100; ++k) prompt.push_back(i * 100 + k);
    std::vector<CallRecord> calls = {MakeCall("r", history, prompt)};
    REQUIRE(store->calls().AppendCalls(calls).ok());
  }
  auto stats = store->Stats();
  REQUIRE(stats.ok());
  // 21 distinct messages plus the shared response; not 20 copies of a growing history.
  CHECK(stats->blob_count <= 23);
  CHECK(stats->blob_bytes < 4000 + 20 * 600 + 1000);
  // Prompt ids: 1,000 shared + 20 × 100 new, each stored once (4 bytes each), plus completions.
  CHECK(stats->token_bytes < (1000 + 20 * 100) * 4 + 20 * 3 * 8 + 64);
  auto back = store->calls().CallsOfRollout("r");
  REQUIRE(back.ok());
  CHECK(back->back().prompt_ids == prompt);
  CHECK(back->back().request["messages"] == history);
}

TEST_CASE("content blobs are stored compressed where that saves, and read back as they were") {
  using forge::store::PackBlob;
  using forge::store::UnpackBlob;
  // A part of prose or code shrinks; a short one and one that will not shrink stay as they are.
  std::string prose;
  for (int i = 0; prose.size() < 20000; ++i) prose += "tool output line " + std::to_string(i) + ": ok\n";
  std::string text = Json(prose).dump();
  std::string packed = PackBlob(text);
  CHECK(packed.size() < text.size() / 3);
  CHECK(UnpackBlob(packed).value() == text);
  std::string small = R"({"role":"user","content":"hi"})";
  CHECK(PackBlob(small) == small);
  std::string noise = Json(Incompressible(4000, 1)).dump();
  std::string noise_packed = PackBlob(noise);
  CHECK(UnpackBlob(noise_packed).value() == noise);
  // A stored blob that is plain text (every store before compression) reads as itself.
  CHECK(UnpackBlob(text).value() == text);
  // A frame cut short is an error naming what it is, not a wrong text.
  auto cut = UnpackBlob(std::string_view(packed).substr(0, packed.size() / 2));
  REQUIRE_FALSE(cut.ok());
  CHECK(cut.status().message().find("compressed content blob") != std::string::npos);

  // Through the store: the blob table holds the compressed bytes, the call its text.
  forge::testing::TempDir dir;
  std::string db = dir.File("forge.db");
  {
    auto store = OpenOrDie(db);
    std::vector<CallRecord> calls = {MakeCall("r", Json::array({Message("tool", prose)}), {1, 2, 3})};
    REQUIRE(store->calls().AppendCalls(calls).ok());
    auto stats = store->Stats();
    REQUIRE(stats.ok());
    CHECK(stats->blob_bytes < static_cast<int64_t>(prose.size()) / 3);
    auto back = store->calls().CallsOfRollout("r");
    REQUIRE(back.ok());
    CHECK(back->front().request["messages"][0]["content"] == prose);
  }
  // A corrupt compressed blob fails the read, naming the store and the blob.
  {
    auto raw = forge::store::Database::Open(db, /*read_only=*/false);
    REQUIRE(raw.ok());
    auto damage = raw->Prepare("UPDATE blobs SET data = substr(data, 1, length(data) / 2) WHERE length(data) > 100");
    REQUIRE(damage.ok());
    REQUIRE(damage->Run().ok());
  }
  auto store = OpenOrDie(db);
  auto back = store->calls().CallsOfRollout("r");
  REQUIRE_FALSE(back.ok());
  CHECK(back.status().message().find("blob") != std::string::npos);
  CHECK(back.status().message().find("compressed content blob") != std::string::npos);
}

TEST_CASE("parts are keyed by their digest's 32 bytes, and a store keyed in hex still reads") {
  forge::testing::TempDir dir;
  std::string db = dir.File("forge.db");
  Json old_message = Message("user", "from an older forge " + std::string(200, 'o'));
  {
    auto store = OpenOrDie(db);
    std::vector<CallRecord> calls = {MakeCall("r", Json::array({old_message}), {1, 2})};
    REQUIRE(store->calls().AppendCalls(calls).ok());
  }
  {  // as an older forge wrote it: the key in hex
    auto raw = forge::store::Database::Open(db, /*read_only=*/false);
    REQUIRE(raw.ok());
    auto check = raw->Prepare("SELECT COUNT(*) FROM blobs WHERE typeof(hash) = 'blob' AND length(hash) = 32");
    REQUIRE(check.ok());
    REQUIRE(check->Step().value());
    CHECK(check->Int(0) >= 1);
    auto to_hex = raw->Prepare("UPDATE blobs SET hash = lower(hex(hash))");
    REQUIRE(to_hex.ok());
    REQUIRE(to_hex->Run().ok());
  }
  auto store = OpenOrDie(db);
  Json next = Message("assistant", "a newer part " + std::string(200, 'n'));
  std::vector<CallRecord> calls = {MakeCall("r", Json::array({old_message, next}), {1, 2, 3})};
  REQUIRE(store->calls().AppendCalls(calls).ok());
  auto back = store->calls().CallsOfRollout("r");
  REQUIRE(back.ok());
  REQUIRE(back->size() == 2);
  CHECK((*back)[0].request["messages"][0] == old_message);
  CHECK((*back)[1].request["messages"][0] == old_message);  // stored again under its new key: still whole
  CHECK((*back)[1].request["messages"][1] == next);
}

TEST_CASE("a blob interned by a transaction that rolled back is stored again, not referred to") {
  forge::testing::TempDir dir;
  auto store = OpenOrDie(dir.File("forge.db"));
  Json abandoned = Json::array({Message("user", "abandoned " + std::string(200, 'a'))});
  Json other = Json::array({Message("user", "other " + std::string(200, 'o'))});
  forge::Status failed = store->db().WriteTransaction([&]() -> forge::Status {
    auto skeleton = store->blobs().PutContentText(Json{{"messages", abandoned}}.dump());
    REQUIRE(skeleton.ok());
    return forge::Status::InvalidData("abandoned");
  });
  REQUIRE_FALSE(failed.ok());
  // The next blob takes the row id the rolled-back one had; a remembered id
  // for the abandoned message would now point at this one.
  std::vector<CallRecord> first = {MakeCall("r", other, {1})};
  REQUIRE(store->calls().AppendCalls(first).ok());
  std::vector<CallRecord> second = {MakeCall("r", abandoned, {2})};
  REQUIRE(store->calls().AppendCalls(second).ok());
  auto back = store->calls().CallsOfRollout("r");
  REQUIRE(back.ok());
  REQUIRE(back->size() == 2);
  CHECK((*back)[0].request["messages"] == other);
  CHECK((*back)[1].request["messages"] == abandoned);
}

TEST_CASE("a prompt of a call whose transaction rolled back is never another call's base") {
  forge::testing::TempDir dir;
  auto store = OpenOrDie(dir.File("forge.db"));
  std::vector<int32_t> conversation(600);
  for (size_t i = 0; i < conversation.size(); ++i) conversation[i] = static_cast<int32_t>(i * 3 + 1);
  std::vector<CallRecord> first = {MakeCall("r", Json::array({Message("user", "first")}), {5, 6})};
  REQUIRE(store->calls().AppendCalls(first).ok());
  // The second call of the batch takes a seq the rollout has: the batch fails
  // and its first call's id is handed out again by the next insert.
  std::vector<CallRecord> failing = {MakeCall("r", Json::array({Message("user", "gone")}), conversation),
                                     MakeCall("r", Json::array({Message("user", "clash")}), {9})};
  failing[1].seq = 0;
  REQUIRE_FALSE(store->calls().AppendCalls(failing).ok());
  std::vector<int32_t> unrelated(600, 42);
  std::vector<int32_t> extended = conversation;
  extended.insert(extended.end(), {7, 7, 7});
  std::vector<CallRecord> next = {MakeCall("r", Json::array({Message("user", "unrelated")}), unrelated),
                                  MakeCall("r", Json::array({Message("user", "extended")}), extended)};
  REQUIRE(store->calls().AppendCalls(next).ok());
  auto back = store->calls().CallsOfRollout("r");
  REQUIRE(back.ok());
  REQUIRE(back->size() == 3);
  CHECK((*back)[1].prompt_ids == unrelated);
  CHECK((*back)[2].prompt_ids == extended);
}

TEST_CASE("a prompt is stored against the last one of its rollout it extends, in a batch or across batches") {
  forge::testing::TempDir dir;
  auto store = OpenOrDie(dir.File("forge.db"));
  std::vector<int32_t> prompt(300);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>(i);
  std::vector<CallRecord> batch;
  for (int turn = 0; turn < 3; ++turn) {
    batch.push_back(MakeCall("r", Json::array({Message("user", "turn " + std::to_string(turn))}), prompt));
    prompt.insert(prompt.end(), {1000, 1001});
  }
  REQUIRE(store->calls().AppendCalls(batch).ok());
  std::vector<CallRecord> later = {MakeCall("r", Json::array({Message("user", "later")}), prompt)};
  REQUIRE(store->calls().AppendCalls(later).ok());
  auto db = forge::store::Database::Open(dir.File("forge.db"), true);
  REQUIRE(db.ok());
  auto rows = db->Prepare("SELECT prompt_prefix_len, length(prompt_suffix) FROM calls ORDER BY seq");
  REQUIRE(rows.ok());
  std::vector<std::pair<int64_t, int64_t>> stored;
  while (*rows->Step()) stored.emplace_back(rows->Int(0), rows->Int(1));
  // Each prompt after the first is its base's ids and two more (8 bytes).
  CHECK(stored == std::vector<std::pair<int64_t, int64_t>>{{0, 1200}, {300, 8}, {302, 8}, {304, 8}});
  auto back = store->calls().CallsOfRollout("r");
  REQUIRE(back.ok());
  CHECK(back->back().prompt_ids == prompt);
}

TEST_CASE("calls set aside from an earlier try: moved under a new id, still bases for the new try's prompts") {
  forge::testing::TempDir dir;
  auto store = OpenOrDie(dir.File("forge.db"));
  std::vector<int32_t> prompt(400);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>(i + 1);
  auto none = store->calls().SetAside("x");
  REQUIRE(none.ok());
  CHECK(none->calls == 0);
  std::vector<CallRecord> dead_try = {MakeCall("x", Json::array({Message("user", "try 1")}), prompt),
                                      MakeCall("x", Json::array({Message("user", "try 1, turn 2")}), prompt)};
  REQUIRE(store->calls().AppendCalls(dead_try).ok());
  auto moved = store->calls().SetAside("x");
  REQUIRE(moved.ok());
  CHECK(moved->rollout_id == "x~1");
  CHECK(moved->calls == 2);
  CHECK(store->calls().CallsOfRollout("x")->empty());
  CHECK(store->calls().CallsOfRollout("x~1")->size() == 2);
  // This store still remembers the dead try's prompts: the new try's first
  // call is stored against one of them, which the rollout no longer holds.
  std::vector<int32_t> extended = prompt;
  extended.push_back(999);
  std::vector<CallRecord> new_try = {MakeCall("x", Json::array({Message("user", "try 2")}), extended)};
  REQUIRE(store->calls().AppendCalls(new_try).ok());
  for (auto fields : {CallFields::kAll, CallFields::kTokens}) {
    auto back = store->calls().CallsOfRollout("x", fields);
    REQUIRE_MESSAGE(back.ok(), back.status().message());
    REQUIRE(back->size() == 1);
    CHECK((*back)[0].seq == 0);
    CHECK((*back)[0].prompt_ids == extended);
  }
  std::vector<CallRecord> reused;
  REQUIRE(store->calls().ReadTokenCalls("x", &reused).ok());
  CHECK(reused[0].prompt_ids == extended);
  auto again = store->calls().SetAside("x");
  REQUIRE(again.ok());
  CHECK(again->rollout_id == "x~2");
  CHECK(again->calls == 1);
  auto kept = store->calls().CallsOfRollout("x~2");
  REQUIRE(kept.ok());
  CHECK((*kept)[0].prompt_ids == extended);
}

TEST_CASE("a dead try's call recorded after its calls were set aside joins them, numbered after them") {
  forge::testing::TempDir dir;
  auto store = OpenOrDie(dir.File("forge.db"));
  auto call_at = [](const std::string& text, double started_at) {
    CallRecord c = MakeCall("x", Json::array({Message("user", text)}), {1, 2, 3});
    c.started_at = started_at;
    return c;
  };
  std::vector<CallRecord> dead_try = {call_at("dead 1", 100), call_at("dead 2", 101)};
  REQUIRE(store->calls().AppendCalls(dead_try).ok());
  auto first = store->calls().SetAside("x");  // the new try registers at 200
  REQUIRE(first.ok());
  REQUIRE(first->rollout_id == "x~1");
  // The new try's calls, and the dead try's last call, in flight since 102.
  std::vector<CallRecord> after = {call_at("new 1", 201), call_at("dead 3, late", 102), call_at("new 2", 203)};
  REQUIRE(store->calls().AppendCalls(after).ok());
  auto late = store->calls().SetAside("x", 200.0, "x~1");
  REQUIRE(late.ok());
  CHECK(late->rollout_id == "x~1");
  CHECK(late->calls == 1);
  auto kept = store->calls().CallsOfRollout("x");
  REQUIRE(kept.ok());
  REQUIRE(kept->size() == 2);
  CHECK((*kept)[0].request["messages"][0]["content"] == "new 1");
  CHECK((*kept)[1].request["messages"][0]["content"] == "new 2");
  auto dead = store->calls().CallsOfRollout("x~1");
  REQUIRE(dead.ok());
  REQUIRE(dead->size() == 3);
  CHECK((*dead)[2].request["messages"][0]["content"] == "dead 3, late");
  CHECK((*dead)[2].seq > (*dead)[1].seq);
  auto nothing = store->calls().SetAside("x", 200.0, "x~1");
  REQUIRE(nothing.ok());
  CHECK(nothing->calls == 0);
  // Without a place to go, calls before the time get one of their own.
  std::vector<CallRecord> older = {call_at("older, late", 50)};
  REQUIRE(store->calls().AppendCalls(older).ok());
  auto own = store->calls().SetAside("x", 200.0);
  REQUIRE(own.ok());
  CHECK(own->rollout_id == "x~2");
  CHECK(store->calls().CallsOfRollout("x")->size() == 2);
}

TEST_CASE("recent prompts: bounded in bytes, the rollouts used least recently forgotten first") {
  // Prompts of 1,000 ids (4,000 bytes): the active rollout's four and two more.
  forge::store::RecentPrompts recent(4, 24'000);
  std::vector<int32_t> prompt(1000, 3);
  int64_t call = 0;
  for (int i = 0; i < 200; ++i) {
    recent.AddPending("finished-" + std::to_string(i), ++call, prompt);
    recent.AddPending("active", ++call, prompt);  // a long rollout, used all along
    recent.Commit();
    CHECK(recent.bytes() <= 24'000);
  }
  CHECK(recent.rollouts() == 3);
  CHECK(recent.bytes() == 24'000);
  CHECK(recent.LongestShared("active", prompt).call == call);
  CHECK(recent.LongestShared("finished-199", prompt).call == call - 1);
  CHECK(recent.LongestShared("finished-0", prompt).call == 0);
  // A rollout keeps its last four prompts.
  for (int i = 0; i < 6; ++i) recent.AddPending("active", ++call, std::vector<int32_t>(10, i));
  recent.Commit();
  CHECK(recent.LongestShared("active", std::vector<int32_t>(10, 1)).call == 0);
  CHECK(recent.LongestShared("active", std::vector<int32_t>(10, 2)).call == call - 3);
}

TEST_CASE("recent prompts: a transaction's own calls are bases within it, and gone if it rolls back") {
  forge::store::RecentPrompts recent(4, 1 << 20);
  recent.AddPending("r", 1, {1, 2, 3});
  CHECK(recent.LongestShared("r", {1, 2, 3, 4}).call == 1);
  CHECK(recent.LongestShared("r", {1, 2, 3, 4}).prefix == 3);
  CHECK(recent.LongestShared("other", {1, 2, 3, 4}).call == 0);
  recent.DiscardPending();
  CHECK(recent.LongestShared("r", {1, 2, 3, 4}).call == 0);
  recent.AddPending("r", 1, {1, 2});
  recent.Commit();
  recent.AddPending("r", 2, {1, 2, 3});
  CHECK(recent.LongestShared("r", {1, 2, 3, 4}).call == 2);  // the longer share wins
  recent.DiscardPending();
  CHECK(recent.LongestShared("r", {1, 2, 3, 4}).call == 1);
  CHECK(recent.bytes() == 2 * sizeof(int32_t));
  // A batch of hundreds of calls of one rollout: only its last four are
  // bases (each call is compared with a few prompts, not with the batch).
  for (int i = 0; i < 300; ++i) recent.AddPending("r", 100 + i, {9, i});
  CHECK(recent.LongestShared("r", {9, 295}).call == 399);  // call 395 is no longer a base: one id shared
  CHECK(recent.LongestShared("r", {9, 295}).prefix == 1);
  CHECK(recent.LongestShared("r", {9, 296}).call == 396);
  recent.Commit();
  CHECK(recent.LongestShared("r", {9, 296}).call == 396);
  CHECK(recent.LongestShared("r", {1, 2}).call == 0);  // pushed out by the batch's last four
}

TEST_CASE("checkpoints handed off: commits never run one, another connection does") {
  forge::testing::TempDir dir;
  std::string path = dir.File("forge.db");
  auto writer = OpenOrDie(path);
  auto other = OpenOrDie(path);
  auto bytes = [](const std::string& file) {
    struct stat st {};
    return ::stat(file.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : int64_t{-1};
  };
  int due = 0;
  writer->db().HandOffCheckpoints(50, [&] { ++due; });
  // About 1,500 WAL pages: past SQLite's own threshold of 1,000, which would
  // have checkpointed (and so rewound the WAL) inside a commit.
  for (int i = 0; i < 300; ++i) {
    Json history = Json::array({Message("user", Incompressible(16000, static_cast<uint32_t>(i)))});
    std::vector<CallRecord> calls = {MakeCall("r", history, {i})};
    REQUIRE(writer->calls().AppendCalls(calls).ok());
  }
  CHECK(due > 0);
  int64_t wal = bytes(path + "-wal"), db = bytes(path);
  CHECK(wal > 1000 * 4096);
  REQUIRE(other->db().Checkpoint().ok());
  CHECK(bytes(path) > db + 300 * 12000);  // the calls' pages copied into the database
  // The next commit rewinds the WAL instead of growing it.
  std::vector<CallRecord> more = {MakeCall("r", Json::array({Message("user", "after")}), {1})};
  REQUIRE(writer->calls().AppendCalls(more).ok());
  CHECK(bytes(path + "-wal") == wal);
  writer->db().HandOffCheckpoints(0, nullptr);
}

TEST_CASE("an SDK retry of the same call is recorded once") {
  forge::testing::TempDir dir;
  auto store = OpenOrDie(dir.File("forge.db"));
  std::vector<CallRecord> first = {MakeCall("r", Json::array({Message("user", "hi")}), {1})};
  first[0].retry_key = "req-abc";
  REQUIRE(store->calls().AppendCalls(first).ok());
  std::vector<CallRecord> retry = first;
  REQUIRE(store->calls().AppendCalls(retry).ok());
  CHECK(retry[0].id == 0);
  auto back = store->calls().CallsOfRollout("r");
  REQUIRE(back.ok());
  CHECK(back->size() == 1);
}

TEST_CASE("rollouts are found by the hash of their secret, never by the secret") {
  forge::testing::TempDir dir;
  auto store = OpenOrDie(dir.File("forge.db"));
  std::string secret = forge::RandomHex(16);
  forge::store::RolloutRow row;
  row.id = "run-a/t1/0";
  row.run_id = "run-a";
  row.task_id = "t1";
  row.secret_hash = forge::Sha256Hex(secret);
  REQUIRE(store->rollouts().Register(row).ok());
  auto found = store->rollouts().BySecretHash(forge::Sha256Hex(secret));
  REQUIRE(found.ok());
  REQUIRE(found->has_value());
  CHECK((*found)->id == "run-a/t1/0");
  auto not_found = store->rollouts().BySecretHash(secret);
  REQUIRE(not_found.ok());
  CHECK_FALSE(not_found->has_value());
  CHECK(store->rollouts().Update("run-a/t1/0", "finished", "ok", {{"outcome", "ok"}}).ok());
  CHECK_FALSE(store->rollouts().Update("nope", "finished", "ok", nullptr).ok());
}

TEST_CASE("content shaped like a skeleton survives a round trip") {
  Json tricky = {{"messages", Json::array({Json::array({"b", 1}), "short", std::string(100, 'x')})},
                 {"$whole", true},
                 {"", Json::array({"v", 1})}};
  std::vector<std::string> blobs;
  auto skeleton = forge::store::Split(tricky, [&](std::string_view data) {
    blobs.emplace_back(data);
    return forge::Result<int64_t>(static_cast<int64_t>(blobs.size() - 1));
  });
  REQUIRE(skeleton.ok());
  auto joined = forge::store::Join(*skeleton, [&](int64_t id) { return forge::Result<std::string>(blobs.at(id)); });
  REQUIRE(joined.ok());
  CHECK(*joined == tricky);
  for (Json whole : {Json("just a string that is long enough to be stored as a blob"), Json(nullptr), Json(3)}) {
    auto s = forge::store::Split(whole, [&](std::string_view data) {
      blobs.emplace_back(data);
      return forge::Result<int64_t>(static_cast<int64_t>(blobs.size() - 1));
    });
    REQUIRE(s.ok());
    auto j = forge::store::Join(*s, [&](int64_t id) { return forge::Result<std::string>(blobs.at(id)); });
    REQUIRE(j.ok());
    CHECK(*j == whole);
  }
}

TEST_CASE("content split from its text reads back as a parse of that text reads it") {
  const std::string long_text(60, 'y');
  const std::vector<std::string> texts = {
      R"({"messages":[["b",1],"short",")" + long_text + R"("],"$whole":true,"":["v",1]})",
      R"(  {"model" : "m", "messages" : [ {"role":"user","content":")" + long_text + R"("} , 7 , null ] }  )",
      R"({"a":1,"a":{"kept":"the last of duplicate keys, as a parser keeps it, long enough"},"b":2})",
      R"({"a\u0062":1.0,"e\n":[-0,1e2,1E-2,true,false,{}],"\u00e9":"caf\u00e9 \ud83d\ude00"})",
      R"({"nested":{"x":[1,[2,[3]],{"y":")" + long_text + R"("}]},"tail":[]})",
      R"({})",
      R"([1,2,")" + long_text + R"("])",
      R"(")" + long_text + R"(")",
      "12345678901234567890123",
      "null",
  };
  for (const std::string& text : texts) {
    CAPTURE(text);
    std::vector<std::string> blobs;
    auto skeleton = forge::store::SplitText(text, [&](std::string_view data) {
      CHECK(data.size() >= 48);
      blobs.emplace_back(data);
      return forge::Result<int64_t>(static_cast<int64_t>(blobs.size() - 1));
    });
    REQUIRE(skeleton.ok());
    Json parsed_skeleton = Json::parse(*skeleton);  // the skeleton is JSON text itself
    auto joined = forge::store::Join(parsed_skeleton, [&](int64_t id) { return forge::Result<std::string>(blobs.at(id)); });
    REQUIRE(joined.ok());
    CHECK(joined->dump() == Json::parse(text).dump());
  }
  auto invalid = forge::store::SplitText(R"({"a":})", [](std::string_view) {
    return forge::Result<int64_t>(0);
  });
  CHECK_FALSE(invalid.ok());
}

TEST_CASE("two processes writing at once lose nothing") {
  forge::testing::TempDir dir;
  std::string path = dir.File("shared.db");
  { OpenOrDie(path); }
  constexpr int kWriters = 4;
  constexpr int kCallsEach = 200;
  std::vector<pid_t> children;
  for (int w = 0; w < kWriters; ++w) {
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      auto store = Store::Open(path);
      if (!store.ok()) _exit(2);
      for (int i = 0; i < kCallsEach; ++i) {
        std::vector<CallRecord> calls = {
            MakeCall("writer-" + std::to_string(w), Json::array({Message("user", std::to_string(i))}),
                     {w, i})};
        if (!(*store)->calls().AppendCalls(calls).ok()) _exit(3);
        if (i % 50 == 0 && !(*store)->meta().Set("w" + std::to_string(w), std::to_string(i)).ok()) _exit(4);
      }
      _exit(0);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
  auto store = OpenOrDie(path);
  for (int w = 0; w < kWriters; ++w) {
    auto calls = store->calls().CallsOfRollout("writer-" + std::to_string(w));
    REQUIRE(calls.ok());
    REQUIRE(calls->size() == kCallsEach);
    for (int i = 0; i < kCallsEach; ++i) {
      CHECK((*calls)[i].seq == i);
      CHECK((*calls)[i].prompt_ids == std::vector<int32_t>{w, i});
    }
  }
}

TEST_CASE("a request nested deeper than any proxy accepts is read back as its text, and never crashes a reader") {
  // An older proxy took any depth: such a request, 100,000 deep, was stored
  // from its text (no recursion). Copying or printing it as a document would
  // overflow the stack; a reader gets it as one string instead.
  forge::testing::TempDir dir;
  auto store = OpenOrDie(dir.File("forge.db"));
  const int depth = 100000;
  std::string deep = std::string(depth, '[') + "1" + std::string(depth, ']');
  CallRecord call = MakeCall("r", Json::array({Message("user", "hi")}), {1, 2});
  call.request = nullptr;
  call.request_text = R"({"model":"policy","messages":[{"role":"user","content":"hi"}],"metadata":)" + deep + "}";
  call.upstream_request_patch_text = R"({"set":{"return_token_ids":true},"unset":[]})";
  CallRecord shallow = MakeCall("r", Json::array({Message("user", "next")}), {1, 2, 3});
  shallow.request["metadata"] = Json::parse(std::string(500, '[') + std::string(500, ']'));
  std::vector<CallRecord> calls = {call, shallow};
  REQUIRE(store->calls().AppendCalls(calls).ok());
  auto back = store->calls().CallsOfRollout("r");
  REQUIRE_MESSAGE(back.ok(), back.status().message());
  REQUIRE(back->size() == 2);
  const CallRecord& read = (*back)[0];
  CHECK(read.request["messages"][0]["content"] == "hi");
  REQUIRE(read.request["metadata"].is_string());
  CHECK(read.request["metadata"].get<std::string>() == deep);  // nothing lost
  CHECK(read.upstream_request["return_token_ids"] == true);     // the diff applied to a copy, without a crash
  CHECK(read.upstream_request["metadata"].is_string());
  CHECK(read.request.dump().size() > 2 * depth);
  // Within the ceiling, a document stays a document.
  CHECK((*back)[1].request["metadata"].is_array());
  CHECK((*back)[1].request == shallow.request);
}

TEST_CASE("ReadStoredJson: a document up to the depth ceiling, a string beyond, an error for what is not JSON") {
  using forge::store::ReadStoredJson;
  const int ceiling = forge::kMaxJsonDepthCeiling;
  auto at = ReadStoredJson(std::string(ceiling, '[') + std::string(ceiling, ']'), "x");
  REQUIRE(at.ok());
  CHECK(at->is_array());
  std::string over = std::string(ceiling + 1, '[') + std::string(ceiling + 1, ']');
  auto beyond = ReadStoredJson(over, "x");
  REQUIRE(beyond.ok());
  CHECK(*beyond == Json(over));
  auto bad = ReadStoredJson("{\"a\":", "blob 7");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("blob 7 is not valid JSON") != std::string::npos);
}
