#include <doctest/doctest.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <chrono>
#include <csignal>
#include <functional>
#include <map>
#include <cstring>
#include <thread>

#include "store/call_codec.h"
#include "store/call_log.h"
#include "store/sqlite.h"
#include "store/store.h"
#include "support/open_store.h"
#include "support/temp_dir.h"

using forge::store::CallLog;
using forge::store::CallRecord;
using forge::store::Json;
using forge::store::Store;
using forge::testing::OpenOrDie;

namespace {

std::unique_ptr<CallLog> CreateLog(const std::string& db_path) {
  auto log = CallLog::Create(db_path);
  REQUIRE_MESSAGE(log.ok(), log.status().message());
  return std::move(*log);
}

// A call as forge-proxy logs one: the request and answers as their bytes,
// one of them long enough to be written from where it is.
CallRecord ProxyCall(const std::string& rollout, const std::string& tag) {
  CallRecord call;
  call.rollout_id = rollout;
  call.client_format = "openai-chat";
  call.upstream = "http://127.0.0.1:1";
  call.model = "policy";
  call.started_at = 1.5;
  call.first_token_at = 1.75;
  call.ended_at = 2.25;
  call.policy_version_start = 3;
  call.policy_version_end = 4;
  call.request_text = R"({"model":"policy","messages":[{"role":"user","content":")" + tag + std::string(5000, 'x') + R"("}]})";
  call.response_text = R"({"choices":[{"message":{"role":"assistant","content":"ok )" + tag + R"("},"finish_reason":"stop"}]})";
  call.upstream_response_text = call.response_text;
  call.upstream_request_patch = {{"set", {{"logprobs", true}}}, {"unset", Json::array()}};
  call.prompt_ids = {1, 2, 3, 4};
  call.completion_ids = {7, 8};
  call.logprobs = {-0.5f, -0.25f};
  call.finish_reason = "stop";
  call.usage = {{"prompt_tokens", 4}, {"completion_tokens", 2}};
  call.http_status = 200;
  call.retry_key = "key-" + tag;
  return call;
}

std::vector<std::string> Tags(Store& store, const std::string& rollout) {
  auto calls = store.calls().CallsOfRollout(rollout);
  REQUIRE_MESSAGE(calls.ok(), calls.status().message());
  std::vector<std::string> tags;
  for (const CallRecord& c : *calls) {
    std::string content = c.response["choices"][0]["message"]["content"];
    tags.push_back(content.substr(3));
  }
  return tags;
}

int LogFiles(const std::string& dir) {
  int n = 0;
  DIR* d = opendir(dir.c_str());
  while (dirent* e = readdir(d)) n += std::strstr(e->d_name, "-calls-") != nullptr;
  closedir(d);
  return n;
}

std::string Bytes(const forge::store::EncodedCall& encoded) {
  std::string bytes;
  for (const iovec& piece : encoded.pieces()) bytes.append(static_cast<const char*>(piece.iov_base), piece.iov_len);
  return bytes;
}

// Appends calls to the log and has the database take them, with the mark,
// as the proxy's writer does; returns the mark.
forge::store::LogMark AppendTaken(Store& store, CallLog& log, std::vector<CallRecord> calls) {
  forge::store::LogPosition end;
  for (const CallRecord& call : calls) {
    auto at = log.Append(call);
    REQUIRE(at.ok());
    end = *at;
  }
  auto mark = log.MarkAt(end);
  REQUIRE(store.calls().AppendCalls(calls, &mark).ok());
  return mark;
}

// Each rollout's calls in the store are the logged ones, in order, as check says.
void CheckEachStored(Store& store, const std::vector<std::pair<std::string, std::vector<const CallRecord*>>>& rollouts,
                     const std::function<void(const CallRecord& stored, const CallRecord& logged)>& check) {
  // (Not a structured binding: CAPTURE's lambda cannot name one before clang 16.)
  for (const auto& entry : rollouts) {
    const std::string& rollout = entry.first;
    const std::vector<const CallRecord*>& logged = entry.second;
    auto calls = store.calls().CallsOfRollout(rollout);
    REQUIRE(calls.ok());
    REQUIRE(calls->size() == logged.size());
    for (size_t i = 0; i < logged.size(); ++i) {
      CAPTURE(logged[i]->retry_key);
      check((*calls)[i], *logged[i]);
    }
  }
}

// What run returns, run under a file size limit of limit bytes (the
// process gets EFBIG, not SIGXFSZ); the limit and the signal are restored.
template <typename Run>
auto UnderFileSizeLimit(uint64_t limit, Run run) {
  rlimit before {};
  REQUIRE(getrlimit(RLIMIT_FSIZE, &before) == 0);
  auto old_handler = signal(SIGXFSZ, SIG_IGN);
  rlimit lowered = before;
  lowered.rlim_cur = limit;
  REQUIRE(setrlimit(RLIMIT_FSIZE, &lowered) == 0);
  auto result = run();
  REQUIRE(setrlimit(RLIMIT_FSIZE, &before) == 0);
  signal(SIGXFSZ, old_handler);
  return result;
}

}  // namespace

TEST_CASE("a call survives its encoding field for field, and a cut one is refused naming the field") {
  CallRecord call = ProxyCall("r1", "a");
  call.request = {{"messages", Json::array({{{"role", "user"}, {"content", std::string(3000, 'q')}}})}};
  call.upstream_request = {{"model", "policy"}};
  call.side_call = true;
  call.error = "upstream hung up";
  forge::store::EncodedCall encoded(call);
  std::string bytes = Bytes(encoded);
  CHECK(bytes.size() == encoded.size());
  CHECK(encoded.pieces().size() > 1);  // the long texts are pieces of their own
  auto back = forge::store::DecodeCall(bytes);
  REQUIRE_MESSAGE(back.ok(), back.status().message());
  CHECK(back->rollout_id == "r1");
  CHECK(back->request_text == call.request_text);
  CHECK(back->response_text == call.response_text);
  CHECK(back->upstream_response_text == call.upstream_response_text);
  CHECK(back->request == call.request);
  CHECK(back->upstream_request == call.upstream_request);
  CHECK(back->response.is_null());
  CHECK(back->upstream_request_patch == call.upstream_request_patch);
  CHECK(back->usage == call.usage);
  CHECK(back->prompt_ids == call.prompt_ids);
  CHECK(back->completion_ids == call.completion_ids);
  CHECK(back->logprobs == call.logprobs);
  CHECK(back->started_at == 1.5);
  CHECK(back->first_token_at == 1.75);
  CHECK(back->ended_at == 2.25);
  CHECK(back->policy_version_start == 3);
  CHECK(back->policy_version_end == 4);
  CHECK(back->http_status == 200);
  CHECK(back->seq == -1);
  CHECK(back->side_call);
  CHECK(back->error == "upstream hung up");
  CHECK(back->retry_key == "key-a");

  auto cut = forge::store::DecodeCall(std::string_view(bytes).substr(0, 2000));
  REQUIRE(!cut.ok());
  CHECK(cut.status().message().find("request_text") != std::string::npos);
  auto longer = forge::store::DecodeCall(bytes + "x");
  CHECK(!longer.ok());
}

TEST_CASE("usage and the upstream patch given as text are logged and stored as the documents they are") {
  // What forge-proxy's pass-through sets: the texts, the documents left null.
  CallRecord call = ProxyCall("r1", "t");
  Json usage = call.usage, patch = {{"set", {{"logprobs", true}, {"top_logprobs", 0}}}, {"unset", Json::array()}};
  call.usage = nullptr;
  call.upstream_request_patch = nullptr;
  call.usage_text = R"({ "prompt_tokens": 4, "completion_tokens": 2 })";  // spacing as an upstream may send it
  call.upstream_request_patch_text = patch.dump();
  forge::store::EncodedCall encoded(call);
  auto back = forge::store::DecodeCall(Bytes(encoded));
  REQUIRE_MESSAGE(back.ok(), back.status().message());
  CHECK(back->usage == usage);
  CHECK(back->upstream_request_patch == patch);

  forge::testing::TempDir dir;
  auto store = OpenOrDie(dir.File("forge.db"));
  std::vector<CallRecord> calls = {call};
  REQUIRE(store->calls().AppendCalls(calls, nullptr).ok());
  auto stored = store->calls().CallsOfRollout("r1");
  REQUIRE_MESSAGE(stored.ok(), stored.status().message());
  REQUIRE(stored->size() == 1);
  CHECK((*stored)[0].usage == usage);
  // The upstream request is the client's with the patch applied.
  Json expected = Json::parse(call.request_text);
  expected["logprobs"] = true;
  expected["top_logprobs"] = 0;
  CHECK((*stored)[0].upstream_request == expected);
}

TEST_CASE("a translated call's upstream request given as its text is logged and stored as its document") {
  // What forge-proxy sets for an Anthropic call: the client's bytes and the
  // upstream request's text (as sent), long enough to be written from where it is.
  CallRecord call = ProxyCall("r1", "u");
  call.client_format = "anthropic";
  call.upstream_request_patch = nullptr;  // (a pass-through call's form)
  Json upstream = {{"model", "policy"},
                   {"messages", Json::array({{{"role", "system"}, {"content", std::string(3000, 's')}},
                                             {{"role", "user"}, {"content", "hi"}}})},
                   {"return_token_ids", true}};
  call.upstream_request_text = upstream.dump();
  forge::store::EncodedCall encoded(call);
  auto back = forge::store::DecodeCall(Bytes(encoded));
  REQUIRE_MESSAGE(back.ok(), back.status().message());
  CHECK(back->upstream_request == upstream);

  forge::testing::TempDir dir;
  auto store = OpenOrDie(dir.File("forge.db"));
  // The first from the text, the second (recovery's way) from the document.
  std::vector<CallRecord> first = {call}, second = {*back};
  second[0].retry_key = "another call";  // (the same key would be taken for an SDK's retry)
  REQUIRE(store->calls().AppendCalls(first, nullptr).ok());
  auto after_first = store->Stats();
  REQUIRE(after_first.ok());
  REQUIRE(store->calls().AppendCalls(second, nullptr).ok());
  auto stored = store->calls().CallsOfRollout("r1");
  REQUIRE_MESSAGE(stored.ok(), stored.status().message());
  REQUIRE(stored->size() == 2);
  CHECK((*stored)[0].upstream_request == upstream);
  CHECK((*stored)[1].upstream_request == upstream);
  // The text's parts are the document's (same bytes, same hashes): the
  // second call stored no new content.
  auto after_second = store->Stats();
  REQUIRE(after_second.ok());
  CHECK(after_first->blob_count >= 2);
  CHECK(after_second->blob_count == after_first->blob_count);
}

TEST_CASE("a call whose request text is in a request record encodes the record's offset instead") {
  CallRecord call = ProxyCall("r1", "a");
  forge::store::EncodedCall whole(call);
  forge::store::EncodedCall referring(call, 4242);
  CHECK(referring.size() + call.request_text.size() == whole.size() + 8);  // the text out, an offset in
  std::string bytes = Bytes(referring);
  uint64_t at = 0;
  auto back = forge::store::DecodeCall(bytes, &at);
  REQUIRE_MESSAGE(back.ok(), back.status().message());
  CHECK(at == 4242);
  CHECK(back->request_text.empty());
  CHECK(back->response_text == call.response_text);
  CHECK(back->retry_key == "key-a");
  auto unasked = forge::store::DecodeCall(bytes);
  REQUIRE(!unasked.ok());
  CHECK(unasked.status().message().find("request record") != std::string::npos);
  uint64_t none = 7;
  REQUIRE(forge::store::DecodeCall(Bytes(whole), &none).ok());
  CHECK(none == 0);
}

TEST_CASE("a call whose prompt begins with an earlier call's encodes that call's offset and only the rest") {
  CallRecord call = ProxyCall("r1", "a");
  call.prompt_ids.clear();
  for (int32_t i = 0; i < 1000; ++i) call.prompt_ids.push_back(i * 3);
  forge::store::EncodedCall whole(call);
  forge::store::EncodedCall referring(call, 0, {4242, 900});
  CHECK(referring.size() + 900 * 4 == whole.size() + 24);  // 900 ids out; a marker, an offset and a count in
  std::string bytes = Bytes(referring);
  uint64_t request_at = 0;
  forge::store::PromptBase base;
  auto back = forge::store::DecodeCall(bytes, &request_at, &base);
  REQUIRE_MESSAGE(back.ok(), back.status().message());
  CHECK(base.at == 4242);
  CHECK(base.prefix == 900);
  CHECK(back->prompt_ids == std::vector<int32_t>(call.prompt_ids.begin() + 900, call.prompt_ids.end()));
  CHECK(back->completion_ids == call.completion_ids);
  auto unasked = forge::store::DecodeCall(bytes, &request_at);
  REQUIRE(!unasked.ok());
  CHECK(unasked.status().message().find("earlier call") != std::string::npos);
  base = {7, 7};
  REQUIRE(forge::store::DecodeCall(Bytes(whole), &request_at, &base).ok());
  CHECK(base.at == 0);
}

TEST_CASE("recovery gives a call the text of its request record, wherever the database had got to") {
  forge::testing::TempDir dir;
  std::string db = dir.File("forge.db");
  OpenOrDie(db);
  {
    auto store = OpenOrDie(db);
    auto log = CreateLog(db);
    // Call 2's request is logged first; call 1 starts and ends while call 2
    // waits for its upstream, and the database takes call 1, past call 2's
    // request record. Call 3's request record never gets its call (the
    // process dies first).
    CallRecord one = ProxyCall("r", "1"), two = ProxyCall("r", "2"), three = ProxyCall("r", "3");
    auto two_text = log->AppendRequestText(two.request_text);
    REQUIRE(two_text.ok());
    auto one_text = log->AppendRequestText(one.request_text);
    REQUIRE(one_text.ok());
    auto one_end = log->Append(one, *one_text);
    REQUIRE(one_end.ok());
    std::vector<CallRecord> taken = {one};
    auto mark = log->MarkAt(*one_end);
    REQUIRE(store->calls().AppendCalls(taken, &mark).ok());
    REQUIRE(log->Append(two, *two_text).ok());
    REQUIRE(log->AppendRequestText(three.request_text).ok());
  }
  auto store = OpenOrDie(db);
  CHECK(Tags(*store, "r") == std::vector<std::string>{"1", "2"});
  auto calls = store->calls().CallsOfRollout("r");
  REQUIRE(calls.ok());
  REQUIRE(calls->size() == 2);
  CHECK((*calls)[1].request["messages"][0]["content"].get<std::string>().substr(0, 1) == "2");
  CHECK(LogFiles(dir.path().string()) == 0);
}

TEST_CASE("a request text that begins as its rollout's last whole one is logged as the rest; recovery puts it back") {
  forge::testing::TempDir dir;
  std::string db = dir.File("forge.db");
  OpenOrDie(db);
  // A conversation resent with one more message each call; another
  // rollout's identical text is never shared.
  auto conversation = [](int turns) {
    std::string text = R"({"model":"policy","messages":[{"role":"user","content":")" + std::string(8000, 'x') + R"("})";
    for (int t = 0; t < turns; ++t) text += R"(,{"role":"user","content":"turn )" + std::to_string(t) + R"("})";
    return text + "]}";
  };
  CallRecord one = ProxyCall("r", "1"), two = ProxyCall("r", "2"), three = ProxyCall("r", "3"),
             other = ProxyCall("o", "4");
  one.request_text = conversation(0);
  two.request_text = conversation(1);
  three.request_text = conversation(2);
  other.request_text = conversation(1);
  std::map<std::string, uint64_t> grew;
  {
    auto log = CreateLog(db);
    for (CallRecord* call : {&one, &two, &three, &other}) {
      uint64_t before = log->bytes();
      auto text_at = log->AppendRequestText(call->request_text, call->rollout_id);
      REQUIRE(text_at.ok());
      grew[call->retry_key] = log->bytes() - before;
      REQUIRE(log->Append(*call, *text_at).ok());
    }
  }  // the writer dies before the database took any
  CHECK(grew["key-1"] > 8000);
  CHECK(grew["key-2"] < 200);  // a reference and the new message
  CHECK(grew["key-3"] < 200);
  CHECK(grew["key-4"] > 8000);
  auto store = OpenOrDie(db);
  CheckEachStored(*store, {{"r", {&one, &two, &three}}, {"o", {&other}}},
                  [](const CallRecord& stored, const CallRecord& logged) {
                    CHECK(stored.request == Json::parse(logged.request_text));
                  });
  CHECK(LogFiles(dir.path().string()) == 0);
}

TEST_CASE("a reader does not wait for request records of calls still in flight") {
  forge::testing::TempDir dir;
  std::string db = dir.File("forge.db");
  auto store = OpenOrDie(db);
  auto log = CreateLog(db);
  AppendTaken(*store, *log, {ProxyCall("r", "1")});
  REQUIRE(log->AppendRequestText(ProxyCall("r", "2").request_text).ok());  // its call is running
  auto start = std::chrono::steady_clock::now();
  REQUIRE(forge::store::WaitForLiveCallLogs(*store, 30).ok());
  // Waiting for the file's whole size would have lasted the 30 s timeout.
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));
}

TEST_CASE("calls logged by a writer that died are moved into the database by the next open, once") {
  forge::testing::TempDir dir;
  std::string db = dir.File("forge.db");
  OpenOrDie(db);  // the schema
  {
    auto store = OpenOrDie(db);
    auto log = CreateLog(db);
    CHECK(LogFiles(dir.path().string()) == 1);
    std::vector<CallRecord> taken = {ProxyCall("r", "1"), ProxyCall("r", "2")};
    REQUIRE(log->Append(taken[0]).ok());
    auto second = log->Append(taken[1]);
    REQUIRE(second.ok());
    REQUIRE(log->Append(ProxyCall("r", "3")).ok());
    REQUIRE(log->Append(ProxyCall("r", "4")).ok());
    // The database takes the first two, with the mark, as the proxy's writer does.
    auto mark = log->MarkAt(*second);
    REQUIRE(store->calls().AppendCalls(taken, &mark).ok());
    // While the writer lives, nobody else touches its log.
    auto other = OpenOrDie(db);
    CHECK(Tags(*other, "r") == std::vector<std::string>{"1", "2"});
    CHECK(LogFiles(dir.path().string()) == 1);
    // The writer dies: its descriptor (and lock) go, the file stays.
  }
  CHECK(LogFiles(dir.path().string()) == 1);
  auto reader = OpenOrDie(db, {.read_only = true});  // a reader recovers through a connection of its own
  CHECK(Tags(*reader, "r") == std::vector<std::string>{"1", "2", "3", "4"});
  CHECK(LogFiles(dir.path().string()) == 0);
  auto calls = reader->calls().CallsOfRollout("r");
  REQUIRE(calls.ok());
  const CallRecord& third = (*calls)[2];
  CHECK(third.seq == 2);
  CHECK(third.prompt_ids == std::vector<int32_t>{1, 2, 3, 4});
  CHECK(third.completion_ids == std::vector<int32_t>{7, 8});
  CHECK(third.logprobs == std::vector<float>{-0.5f, -0.25f});
  CHECK(third.request["messages"][0]["content"].get<std::string>().substr(0, 1) == "3");
  CHECK(third.usage["completion_tokens"] == 2);
  // No mark is left behind for the deleted log.
  auto db_handle = forge::store::Database::Open(db, true);
  REQUIRE(db_handle.ok());
  auto marks = db_handle->Prepare("SELECT count(*) FROM meta WHERE key LIKE 'call-log:%'");
  REQUIRE(marks.ok());
  REQUIRE(*marks->Step());
  CHECK(marks->Int(0) == 0);
}

TEST_CASE("a record cut short by the crash is dropped; the ones before it are kept") {
  forge::testing::TempDir dir;
  std::string db = dir.File("forge.db");
  OpenOrDie(db);
  std::string log_path;
  uint64_t end = 0;
  {
    auto log = CreateLog(db);
    log_path = log->path();
    REQUIRE(log->Append(ProxyCall("r", "1")).ok());
    REQUIRE(log->Append(ProxyCall("r", "2")).ok());
    end = log->bytes();
  }
  // A third record whose copy the kill cut: its header promises more than
  // follows (zeros, the rest of the file).
  std::string whole = Bytes(forge::store::EncodedCall(ProxyCall("r", "3")));
  int fd = open(log_path.c_str(), O_WRONLY);
  REQUIRE(fd >= 0);
  uint64_t header[2] = {whole.size(), 12345};
  REQUIRE(pwrite(fd, header, sizeof header, static_cast<off_t>(end)) == sizeof header);
  REQUIRE(pwrite(fd, whole.data(), 300, static_cast<off_t>(end + sizeof header)) == 300);
  close(fd);
  // The check calls it cut short, not damaged: the proxy was killed while it copied the record in.
  auto scans = forge::store::ScanCallLogs(db);
  REQUIRE(scans.ok());
  REQUIRE(scans->size() == 1);
  CHECK((*scans)[0].calls == 2);
  CHECK((*scans)[0].bad.empty());
  CHECK((*scans)[0].cut_short);
  CHECK((*scans)[0].end == end);
  auto store = OpenOrDie(db);
  CHECK(Tags(*store, "r") == std::vector<std::string>{"1", "2"});
  CHECK(LogFiles(dir.path().string()) == 0);
}

TEST_CASE("a record whose bytes changed is not taken for a call") {
  forge::testing::TempDir dir;
  std::string db = dir.File("forge.db");
  OpenOrDie(db);
  std::string log_path;
  uint64_t first_end = 0;
  {
    auto log = CreateLog(db);
    log_path = log->path();
    auto first = log->Append(ProxyCall("r", "1"));
    REQUIRE(first.ok());
    first_end = first->end;
    REQUIRE(log->Append(ProxyCall("r", "2")).ok());
  }
  // Flip one byte inside the second record's request (what a torn page would do).
  int fd = open(log_path.c_str(), O_RDWR);
  REQUIRE(fd >= 0);
  char byte;
  off_t at = static_cast<off_t>(first_end + 16 + 200);
  REQUIRE(pread(fd, &byte, 1, at) == 1);
  byte ^= 0x20;
  REQUIRE(pwrite(fd, &byte, 1, at) == 1);
  close(fd);
  auto store = OpenOrDie(db);
  CHECK(Tags(*store, "r") == std::vector<std::string>{"1"});
}

// A prompt of n ids as a harness's long conversation makes one: begins
// with `base`'s ids, then new ones.
std::vector<int32_t> GrownPrompt(const std::vector<int32_t>& base, size_t more, int32_t seed) {
  std::vector<int32_t> ids = base;
  for (size_t i = 0; i < more; ++i) ids.push_back(static_cast<int32_t>((seed * 7919 + i * 104729) % 151000));
  return ids;
}

TEST_CASE("a call whose prompt begins with its rollout's last whole one logs only the rest; recovery puts it back") {
  forge::testing::TempDir dir;
  std::string db = dir.File("forge.db");
  OpenOrDie(db);
  CallRecord a = ProxyCall("r", "a"), b = ProxyCall("r", "b"), other = ProxyCall("o", "c"), g = ProxyCall("r", "g"),
             d = ProxyCall("r", "d"), e = ProxyCall("r", "e"), f = ProxyCall("r", "f");
  a.prompt_ids = GrownPrompt({}, 5000, 1);
  b.prompt_ids = GrownPrompt(a.prompt_ids, 300, 2);      // the conversation went on
  other.prompt_ids = a.prompt_ids;                        // another rollout's: never shared
  g.prompt_ids = GrownPrompt(a.prompt_ids, 200, 7);       // begins with a's, which the database took already
  d.prompt_ids = GrownPrompt(a.prompt_ids, 6000, 3);     // mostly new: whole, and d's is remembered
  e.prompt_ids = GrownPrompt(d.prompt_ids, 10, 4);        // begins with d's
  f.prompt_ids = GrownPrompt({a.prompt_ids.begin(), a.prompt_ids.begin() + 100}, 50, 5);  // too little shared
  std::map<std::string, uint64_t> grew;
  {
    auto writer_store = OpenOrDie(db);
    auto log = CreateLog(db);
    for (const CallRecord* call : {&a, &b, &other, &g, &d, &e, &f}) {
      uint64_t before = log->bytes();
      auto end = log->Append(*call);
      REQUIRE(end.ok());
      grew[call->retry_key] = log->bytes() - before;
      if (call == &b) {  // the database takes a and b, with the mark, as the proxy's writer does
        auto mark = log->MarkAt(*end);
        std::vector<CallRecord> taken = {a, b};
        REQUIRE(writer_store->calls().AppendCalls(taken, &mark).ok());
      }
    }
  }  // the writer dies before the database took the rest
  const uint64_t whole_a = grew["key-a"];
  CHECK(whole_a > 5000 * 4);
  CHECK(grew["key-b"] < whole_a - 5000 * 4 + 300 * 4 + 64);  // only the 300 new ids
  CHECK(grew["key-c"] > 5000 * 4);
  CHECK(grew["key-g"] < whole_a - 5000 * 4 + 200 * 4 + 64);
  CHECK(grew["key-d"] > 11000 * 4);
  CHECK(grew["key-e"] < whole_a - 5000 * 4 + 10 * 4 + 64);
  CHECK(grew["key-f"] > 150 * 4);
  auto store = OpenOrDie(db);
  CheckEachStored(*store, {{"r", {&a, &b, &g, &d, &e, &f}}, {"o", {&other}}},
                  [](const CallRecord& stored, const CallRecord& logged) {
                    CHECK(stored.prompt_ids == logged.prompt_ids);
                    CHECK(stored.completion_ids == logged.completion_ids);
                  });
  CHECK(LogFiles(dir.path().string()) == 0);
}

TEST_CASE("a call whose prompt refers to a record that is not a whole call fails recovery, after the calls before it") {
  forge::testing::TempDir dir;
  std::string db = dir.File("forge.db");
  OpenOrDie(db);
  std::string log_path;
  uint64_t request_at = 0, end = 0;
  {
    auto log = CreateLog(db);
    log_path = log->path();
    REQUIRE(log->Append(ProxyCall("r", "1")).ok());
    auto request = log->AppendRequestText("{}");
    REQUIRE(request.ok());
    request_at = *request;
    end = log->bytes();
  }
  // A record as a writer with a wrong memory would write: its prompt begins
  // with ids of the request record.
  CallRecord bad = ProxyCall("r", "2");
  bad.prompt_ids = GrownPrompt({}, 400, 6);
  std::string body = Bytes(forge::store::EncodedCall(bad, 0, {request_at, 300}));
  uint64_t header[2] = {body.size(), XXH3_64bits_withSeed(body.data(), body.size(), body.size())};
  int fd = open(log_path.c_str(), O_WRONLY);
  REQUIRE(fd >= 0);
  REQUIRE(pwrite(fd, header, sizeof header, static_cast<off_t>(end)) == static_cast<ssize_t>(sizeof header));
  REQUIRE(pwrite(fd, body.data(), body.size(), static_cast<off_t>(end + sizeof header)) ==
          static_cast<ssize_t>(body.size()));
  close(fd);
  // The check names it without moving anything (forge-proxy --check-call-log).
  auto scans = forge::store::ScanCallLogs(db);
  REQUIRE(scans.ok());
  REQUIRE(scans->size() == 1);
  CHECK((*scans)[0].calls == 2);
  REQUIRE((*scans)[0].bad.size() == 1);
  CHECK((*scans)[0].bad[0] > request_at);
  auto opened = Store::Open(db, {});
  REQUIRE_FALSE(opened.ok());
  CHECK(opened.status().message().find("begins its prompt with 300 ids of the call at byte " +
                                       std::to_string(request_at)) != std::string::npos);
  // The call before it is in the database; the log stays for a look (--check-call-log).
  auto db_handle = forge::store::Database::Open(db, true);
  REQUIRE(db_handle.ok());
  auto count = db_handle->Prepare("SELECT count(*) FROM calls");
  REQUIRE(count.ok());
  REQUIRE(*count->Step());
  CHECK(count->Int(0) == 1);
  CHECK(LogFiles(dir.path().string()) == 1);
}

// The file's bytes up to `length`.
std::string FileBytes(const std::string& path, size_t length) {
  std::string bytes(length, '\0');
  int fd = open(path.c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  REQUIRE(pread(fd, bytes.data(), length, 0) == static_cast<ssize_t>(length));
  close(fd);
  return bytes;
}

TEST_CASE("a log's file is allocated past its records, zeros there, and readers stop at them") {
  forge::testing::TempDir dir;
  std::string db = dir.File("forge.db");
  auto store = OpenOrDie(db);
  auto log = CreateLog(db);
  REQUIRE(log->Append(ProxyCall("r", "1")).ok());
  struct stat st {};
  REQUIRE(stat(log->path().c_str(), &st) == 0);
  CHECK(static_cast<uint64_t>(st.st_size) >= (16u << 20));
  CHECK(static_cast<uint64_t>(st.st_blocks) * 512 >= (16u << 20));
  std::string past = FileBytes(log->path(), log->bytes() + 64).substr(log->bytes());
  CHECK(past == std::string(64, '\0'));
  auto scans = forge::store::ScanCallLogs(db);
  REQUIRE(scans.ok());
  REQUIRE(scans->size() == 1);
  CHECK((*scans)[0].calls == 1);
  CHECK((*scans)[0].end == log->bytes());
  CHECK_FALSE((*scans)[0].cut_short);
  log.reset();  // its writer gone: the next open recovers it
  auto again = OpenOrDie(db);
  CHECK(Tags(*again, "r") == std::vector<std::string>{"1"});
}

TEST_CASE("a log written (no mapping) holds the same bytes as a mapped one, and grows past its first step") {
  forge::testing::TempDir dir;
  std::string db = dir.File("forge.db"), db2 = dir.File("other.db");
  OpenOrDie(db);
  OpenOrDie(db2);
  auto mapped = CallLog::Create(db, true);
  auto written = CallLog::Create(db2, false);
  REQUIRE(mapped.ok());
  REQUIRE(written.ok());
  // Past 16 MiB: both files grow (the mapped one allocated, the written one sparse).
  const std::string big(3 << 20, 'y');
  for (CallLog* log : {mapped->get(), written->get()}) {
    for (int i = 0; i < 6; ++i) REQUIRE(log->AppendRequestText(big + std::to_string(i)).ok());
    REQUIRE(log->Append(ProxyCall("r", "1")).ok());
  }
  REQUIRE((*mapped)->bytes() == (*written)->bytes());
  CHECK((*mapped)->bytes() > (16u << 20));
  // The files differ only in their names' digits (which name nothing inside).
  CHECK(FileBytes((*mapped)->path(), (*mapped)->bytes()) == FileBytes((*written)->path(), (*written)->bytes()));
  struct stat st {};
  REQUIRE(stat((*written)->path().c_str(), &st) == 0);
  CHECK(static_cast<uint64_t>(st.st_size) > (*written)->bytes());  // zeros after the records there too
  mapped->reset();
  written->reset();
  CHECK(Tags(*OpenOrDie(db), "r") == std::vector<std::string>{"1"});
  CHECK(Tags(*OpenOrDie(db2), "r") == std::vector<std::string>{"1"});
}

TEST_CASE("an append the file cannot grow for fails naming the log, and the calls around it are kept") {
  for (bool mapped : {true, false}) {
    CAPTURE(mapped);
    forge::testing::TempDir dir;
    std::string db = dir.File("forge.db");
    OpenOrDie(db);
    auto log = CallLog::Create(db, mapped);
    REQUIRE(log.ok());
    REQUIRE((*log)->Append(ProxyCall("r", "1")).ok());
    // A file size limit just past the first 16 MiB.
    auto failed = UnderFileSizeLimit((16u << 20) + (1u << 20),
                                     [&] { return (*log)->AppendRequestText(std::string(17u << 20, 'q')); });
    REQUIRE_FALSE(failed.ok());
    CHECK(failed.status().message().find((*log)->path()) != std::string::npos);
    CHECK(failed.status().message().find("cannot grow") != std::string::npos);
    REQUIRE((*log)->Append(ProxyCall("r", "2")).ok());
    log->reset();
    CHECK(Tags(*OpenOrDie(db), "r") == std::vector<std::string>{"1", "2"});
  }
}

TEST_CASE("a long record the file takes only part of is erased, and the calls around it are kept") {
  // Long records are pwritev'd, mapped log or not. A file size limit partway
  // into one lets the first pwritev write part of it and fails the next; the
  // part written goes back to zeros, or recovery would stop at a torn record.
  for (bool mapped : {true, false}) {
    CAPTURE(mapped);
    forge::testing::TempDir dir;
    std::string db = dir.File("forge.db");
    OpenOrDie(db);
    auto log = CallLog::Create(db, mapped);
    REQUIRE(log.ok());
    REQUIRE((*log)->Append(ProxyCall("r", "1")).ok());
    CallRecord longer = ProxyCall("r", "long");
    longer.request_text.insert(longer.request_text.find("xxx"), std::string(40000, 'y'));
    auto failed = UnderFileSizeLimit((*log)->bytes() + 20000, [&] { return (*log)->Append(longer); });
    REQUIRE_FALSE(failed.ok());
    CHECK(failed.status().message().find((*log)->path()) != std::string::npos);
    auto scans = forge::store::ScanCallLogs(db);  // as a writer that died now leaves it
    REQUIRE(scans.ok());
    REQUIRE(scans->size() == 1);
    CHECK((*scans)[0].calls == 1);
    CHECK((*scans)[0].bad.empty());
    CHECK(!(*scans)[0].cut_short);
    REQUIRE((*log)->Append(ProxyCall("r", "2")).ok());
    log->reset();
    CHECK(Tags(*OpenOrDie(db), "r") == std::vector<std::string>{"1", "2"});
  }
}

TEST_CASE("the pages appends copy into next are handed out once, twice as many as were copied") {
  forge::testing::TempDir dir;
  std::string db = dir.File("forge.db");
  auto store = OpenOrDie(db);
  auto log = CreateLog(db);
  CHECK(log->TakeAhead().bytes == 0);  // Create wrote the first 64 KiB's pages
  uint64_t before = log->bytes();
  for (int i = 0; i < 150; ++i) REQUIRE(log->Append(ProxyCall("r", std::to_string(i))).ok());  // ~5 KB each: short
  uint64_t copied = log->bytes() - before;
  REQUIRE(copied > (256u << 10));
  CallLog::Ahead ahead = log->TakeAhead();
  CHECK(reinterpret_cast<uintptr_t>(ahead.at) % 4096 == 0);
  CHECK(ahead.bytes > 0);
  CHECK(ahead.bytes <= 2 * copied);
  CallLog::Prefault(ahead);
  CHECK(log->TakeAhead().bytes == 0);  // handed out once
  // A long record is pwritev'd: it asks for no pages ahead, only the least.
  REQUIRE(log->AppendRequestText(std::string(1 << 20, 'z')).ok());
  ahead = log->TakeAhead();
  CHECK(ahead.bytes <= (64u << 10));
  CallLog::Prefault(ahead);
  log.reset();
  CHECK(Tags(*OpenOrDie(db), "r").size() == 150);
  CallLog::Ahead none = CallLog::Create(db, false).value()->TakeAhead();
  CHECK(none.bytes == 0);  // a written log maps nothing
}

TEST_CASE("a log removed after its calls are in the database leaves nothing behind") {
  forge::testing::TempDir dir;
  std::string db = dir.File("forge.db");
  auto store = OpenOrDie(db);
  auto log = CreateLog(db);
  auto mark = AppendTaken(*store, *log, {ProxyCall("r", "1")});
  auto stored_mark = store->meta().Get(mark.key);
  REQUIRE(stored_mark.ok());
  CHECK(stored_mark->value_or("") == mark.value);
  REQUIRE(log->Remove(*store).ok());
  CHECK(LogFiles(dir.path().string()) == 0);
  auto gone = store->meta().Get(mark.key);
  REQUIRE(gone.ok());
  CHECK(!gone->has_value());
  auto again = OpenOrDie(db);
  CHECK(Tags(*again, "r") == std::vector<std::string>{"1"});
}

TEST_CASE("a recycled log is empty under a new name; its calls are recovered once, from its start") {
  forge::testing::TempDir dir;
  std::string db = dir.File("forge.db");
  OpenOrDie(db);
  CallRecord first = ProxyCall("r", "1"), second = ProxyCall("r", "2"), third = ProxyCall("r", "3");
  first.prompt_ids = GrownPrompt({}, 5000, 1);
  second.prompt_ids = GrownPrompt(first.prompt_ids, 100, 2);  // would refer to first's record
  third.prompt_ids = GrownPrompt(second.prompt_ids, 100, 3);
  std::string old_path;
  {
    auto store = OpenOrDie(db);
    auto log = CreateLog(db);
    old_path = log->path();
    auto mark = AppendTaken(*store, *log, {first});
    REQUIRE(log->Recycle(*store).ok());
    CHECK(log->path() != old_path);
    CHECK(log->bytes() == 8);  // its header only
    CHECK(LogFiles(dir.path().string()) == 1);
    auto gone = store->meta().Get(mark.key);  // the old name's mark
    REQUIRE(gone.ok());
    CHECK(!gone->has_value());
    auto scans = forge::store::ScanCallLogs(db);
    REQUIRE(scans.ok());
    REQUIRE(scans->size() == 1);
    CHECK((*scans)[0].calls == 0);
    CHECK((*scans)[0].end == 8);
    // Written whole: the record first's prompt was in is gone.
    uint64_t before = log->bytes();
    REQUIRE(log->Append(second).ok());
    uint64_t whole_second = log->bytes() - before;
    CHECK(whole_second > 5100 * 4);
    before = log->bytes();
    REQUIRE(log->Append(third).ok());
    CHECK(log->bytes() - before < whole_second - 4000 * 4);  // refers to second's, in this log
  }  // the writer dies before the database took second and third
  auto store = OpenOrDie(db);
  CheckEachStored(*store, {{"r", {&first, &second, &third}}}, [](const CallRecord& stored, const CallRecord& logged) {
    CHECK(stored.prompt_ids == logged.prompt_ids);
  });
  CHECK(LogFiles(dir.path().string()) == 0);
}

TEST_CASE("a recycled log's new records end where they end, not where the old ones did") {
  // Calls of one length: each new record ends where an old one began, whose
  // header and checksum still hold there. Short records are copied into the
  // mapping, long ones (40 KB) pwritev'd, and so is the zero header after them.
  for (size_t padding : {size_t{0}, size_t{40000}}) {
    CAPTURE(padding);
    forge::testing::TempDir dir;
    std::string db = dir.File("forge.db");
    OpenOrDie(db);
    auto call = [padding](const std::string& tag) {
      CallRecord c = ProxyCall("r", tag);
      c.request_text.insert(c.request_text.find("xxx"), std::string(padding, 'y'));
      return c;
    };
    {
      auto store = OpenOrDie(db);
      auto log = CreateLog(db);
      AppendTaken(*store, *log, {call("old0"), call("old1"), call("old2"), call("old3"), call("old4")});
      uint64_t old_end = log->bytes();
      REQUIRE(log->Recycle(*store).ok());
      REQUIRE(log->Append(call("new0")).ok());
      REQUIRE(log->Append(call("new1")).ok());
      CHECK(log->bytes() < old_end);
      auto scans = forge::store::ScanCallLogs(db);
      REQUIRE(scans.ok());
      REQUIRE(scans->size() == 1);
      CHECK((*scans)[0].calls == 2);
      CHECK((*scans)[0].bad.empty());
      CHECK(!(*scans)[0].cut_short);
      CHECK((*scans)[0].end == log->bytes());
    }  // the writer dies before the database took new0 and new1
    auto store = OpenOrDie(db);
    CHECK(Tags(*store, "r") == std::vector<std::string>{"old0", "old1", "old2", "old3", "old4", "new0", "new1"});
  }
}

TEST_CASE("a writer that died between swapping logs and committing the old one's last calls: the old log's calls come first") {
  // Log names are random, so the directory's order is too: eight rounds.
  for (int round = 0; round < 8; ++round) {
    forge::testing::TempDir dir;
    std::string db = dir.File("forge.db");
    OpenOrDie(db);
    {
      auto store = OpenOrDie(db);
      auto old_log = CreateLog(db);
      AppendTaken(*store, *old_log, {ProxyCall("r", "1")});  // the old log has a mark
      REQUIRE(old_log->Append(ProxyCall("r", "2")).ok());      // its last batch, not committed
      auto new_log = CreateLog(db);
      REQUIRE(new_log->Append(ProxyCall("r", "3")).ok());      // calls after the swap
      REQUIRE(new_log->Append(ProxyCall("r", "4")).ok());
    }  // the writer dies
    auto store = OpenOrDie(db);
    REQUIRE(Tags(*store, "r") == std::vector<std::string>{"1", "2", "3", "4"});
    CHECK(LogFiles(dir.path().string()) == 0);
  }
}

TEST_CASE("a log written, not mapped, is not recycled and stays as it was") {
  forge::testing::TempDir dir;
  std::string db = dir.File("forge.db");
  auto store = OpenOrDie(db);
  auto written = CallLog::Create(db, /*mapped=*/false);
  REQUIRE(written.ok());
  auto mark = AppendTaken(*store, **written, {ProxyCall("r", "1")});
  uint64_t end = (*written)->bytes();
  CHECK(!(*written)->Recycle(*store).ok());
  CHECK((*written)->bytes() == end);
  auto kept = store->meta().Get(mark.key);
  REQUIRE(kept.ok());
  CHECK(kept->has_value());
  REQUIRE((*written)->Remove(*store).ok());
}

TEST_CASE("opening the store waits for a live writer to move what it has logged") {
  forge::testing::TempDir dir;
  std::string db = dir.File("forge.db");
  auto writer = OpenOrDie(db);
  auto log = CreateLog(db);
  std::vector<CallRecord> calls = {ProxyCall("r", "1")};
  auto at = log->Append(calls[0]);
  REQUIRE(at.ok());
  // The writer takes its time; a reader that opens meanwhile must still see the call.
  std::thread ingest([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    auto mark = log->MarkAt(*at);
    REQUIRE(writer->calls().AppendCalls(calls, &mark).ok());
  });
  auto started = std::chrono::steady_clock::now();
  auto reader = OpenOrDie(db, {.read_only = true});
  double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  ingest.join();
  CHECK(waited > 0.1);
  CHECK(Tags(*reader, "r") == std::vector<std::string>{"1"});
  CHECK(LogFiles(dir.path().string()) == 1);  // still the live writer's
}

TEST_CASE("a reader does not wait for a log its writer removed on the way out") {
  forge::testing::TempDir dir;
  std::string db = dir.File("forge.db");
  auto writer = OpenOrDie(db);
  auto log = CreateLog(db);
  std::vector<CallRecord> calls = {ProxyCall("r", "1")};
  REQUIRE(log->Append(calls[0]).ok());
  std::thread stop([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    REQUIRE(writer->calls().AppendCalls(calls).ok());
    REQUIRE(log->Remove(*writer).ok());  // its mark goes with it
  });
  auto started = std::chrono::steady_clock::now();
  auto reader = OpenOrDie(db, {.read_only = true});
  double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  stop.join();
  CHECK(waited < 2.0);  // the catch-up wait gives up only after 5 s
  CHECK(Tags(*reader, "r") == std::vector<std::string>{"1"});
}
