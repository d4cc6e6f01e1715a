// What the store's writer spends on a call, beside what SQLite itself spends
// on one: forge-proxy's writer thread runs CallsTable::AppendCalls for every
// call, on a core the harness, the proxy's io threads and the model server share,
// so its CPU per call is taken from theirs. The records are the proxy's for a
// pass-through chat call (request and response as bytes, the upstream patch
// and usage as text, ids and logprobs), committed in batches as the writer
// commits them. The baseline inserts the same texts and arrays whole into one
// table row a call, in the same transactions: the floor for a row a call.
// Both checkpoint the WAL past 1,000 pages, as the proxy does, outside the
// time counted (the proxy checkpoints on a thread of its own): a WAL never
// checkpointed grows with every call, and what a call costs with it.
//
//   bench-store_append [calls=20000] [batch=32] [forge|plain|both] [sequential|conversation|rollouts|all]
//
// (One side or workload alone is for a profiler.)
//
// Three workloads: 1 KB calls of one rollout each sending a new message (the
// benchmark's sequential calls), 50-call conversations with a 12 KB system
// prompt that each call resends with one more turn (a harness), and a
// training run's rollouts, many of them, 16 at a time (ManyRollouts).
#include <sqlite3.h>

#include <ctime>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "store/store.h"

namespace {

using forge::store::CallRecord;

std::string Words(std::mt19937& rng, size_t n) {
  static const char* const kWords[] = {"the", "model", "reads", "a", "file", "and", "writes", "its",
                                       "patch", "tests", "pass", "then", "calls", "tool", "with", "output"};
  std::string out;
  while (out.size() < n) out.append(kWords[rng() % 16]).push_back(' ');
  out.resize(n);
  return out;
}

CallRecord ProxyCall(const std::string& rollout, const std::string& messages, std::mt19937& rng, int i) {
  CallRecord call;
  call.rollout_id = rollout;
  call.started_at = call.first_token_at = call.ended_at = 1.7e9 + i;
  call.client_format = "openai-chat";
  call.upstream = "http://127.0.0.1:8000";
  call.model = "policy";
  call.request_text = R"({"model":"policy","messages":[)" + messages + "]}";
  call.response_text = R"({"id":"chatcmpl-)" + std::to_string(i) +
                       R"(","object":"chat.completion","created":1,"model":"policy","choices":[{"index":0,)"
                       R"("message":{"role":"assistant","content":")" + Words(rng, 120) +
                       R"("},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":8,)"
                       R"("completion_tokens":24,"total_tokens":32}})";
  call.upstream_response_text = call.response_text;
  call.upstream_request_patch_text = R"({"set":{"logprobs":true,"return_token_ids":true,"top_logprobs":0},"unset":[]})";
  call.usage_text = R"({"prompt_tokens":8,"completion_tokens":24,"total_tokens":32})";
  call.finish_reason = "stop";
  call.http_status = 200;
  for (size_t k = 0; k < call.request_text.size() / 4; ++k) call.prompt_ids.push_back(static_cast<int32_t>(k * 7));
  for (int k = 0; k < 24; ++k) call.completion_ids.push_back(static_cast<int32_t>(rng() % 150000));
  call.logprobs.assign(call.completion_ids.size(), -0.25f);
  return call;
}

std::vector<CallRecord> SequentialCalls(int n) {
  std::mt19937 rng(7);
  std::vector<CallRecord> calls;
  for (int i = 0; i < n; ++i) {
    std::string message = R"({"role":"user","content":")" + Words(rng, 1000) + std::to_string(i) + R"("})";
    calls.push_back(ProxyCall("bench", message, rng, i));
  }
  return calls;
}

std::vector<CallRecord> Conversations(int n) {
  std::mt19937 rng(11);
  std::vector<CallRecord> calls;
  std::string messages;
  for (int i = 0; i < n; ++i) {
    if (i % 50 == 0) messages = R"({"role":"system","content":")" + Words(rng, 12000) + R"("})";
    messages += R"(,{"role":"user","content":")" + Words(rng, 600) + R"("})";
    calls.push_back(ProxyCall("conversation-" + std::to_string(i / 50), messages, rng, i));
    messages += R"(,{"role":"assistant","content":")" + Words(rng, 200) + R"("})";
  }
  return calls;
}

// A training run: rollouts of 6-call conversations (a 4 KB system prompt),
// 16 running at a time as forge-launch -j16 runs them, their calls
// interleaved. One proxy serves rollout after rollout; what the store keeps
// per rollout must not make a call cost more the more rollouts came before.
std::vector<CallRecord> ManyRollouts(int n) {
  std::mt19937 rng(13);
  constexpr int kRunning = 16, kCallsEach = 6;
  struct Running {
    std::string id;
    std::string messages;
    int calls = 0;
  };
  std::vector<Running> running(kRunning);
  int started = 0;
  auto start = [&](Running& r) {
    r = {"rollout-" + std::to_string(started++), R"({"role":"system","content":")" + Words(rng, 4000) + R"("})", 0};
  };
  for (Running& r : running) start(r);
  std::vector<CallRecord> calls;
  while (static_cast<int>(calls.size()) < n) {
    for (Running& r : running) {
      r.messages += R"(,{"role":"user","content":")" + Words(rng, 800) + R"("})";
      calls.push_back(ProxyCall(r.id, r.messages, rng, static_cast<int>(calls.size())));
      r.messages += R"(,{"role":"assistant","content":")" + Words(rng, 200) + R"("})";
      if (++r.calls == kCallsEach) start(r);
    }
  }
  calls.resize(static_cast<size_t>(n));
  return calls;
}

const char* const kForgePath = "forge-bench-store-append.db";
const char* const kPlainPath = "forge-bench-store-append-plain.db";

// The path of a database by that name in the temporary directory, with any
// earlier one removed.
std::string RemovedDatabase(const char* name) {
  std::string path = (std::filesystem::temp_directory_path() / name).string();
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
  return path;
}

// The thread's CPU time, user and system: what the writer takes from the
// cores, unlike wall time, which this host's neighbours stretch.
double ThreadSeconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// Returns seconds for all calls, or a negative number after printing why.
double ForgeStore(std::vector<CallRecord> calls, size_t batch, bool report) {
  std::string path = RemovedDatabase(kForgePath);
  auto store = forge::store::Store::Open(path);
  if (!store.ok()) {
    std::fprintf(stderr, "bench-store_append: %s\n", store.status().message().c_str());
    return -1;
  }
  bool checkpoint_due = false;
  (*store)->db().HandOffCheckpoints(1000, [&] { checkpoint_due = true; });
  forge::store::LogMark mark{"call-log:bench", "0"};
  double seconds = 0;
  for (size_t at = 0; at < calls.size(); at += batch) {
    if (checkpoint_due) {
      checkpoint_due = false;
      (void)(*store)->db().Checkpoint();
    }
    double start = ThreadSeconds();
    std::vector<CallRecord> some(std::make_move_iterator(calls.begin() + static_cast<ptrdiff_t>(at)),
                                 std::make_move_iterator(calls.begin() + static_cast<ptrdiff_t>(std::min(at + batch, calls.size()))));
    mark.value = std::to_string(at);
    if (auto s = (*store)->calls().AppendCalls(some, &mark); !s.ok()) {
      std::fprintf(stderr, "bench-store_append: %s\n", s.message().c_str());
      return -1;
    }
    seconds += ThreadSeconds() - start;
  }
  auto stats = (*store)->Stats();
  if (report && stats.ok()) std::printf("      forge store: %.1f MB\n", stats->file_bytes / 1e6);
  return seconds;
}

template <typename T>
int Bytes(const std::vector<T>& v) { return static_cast<int>(v.size() * sizeof(T)); }

double PlainSqlite(const std::vector<CallRecord>& calls, size_t batch, bool report) {
  std::string path = RemovedDatabase(kPlainPath);
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) return -1;
  sqlite3_exec(db,
               "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA wal_autocheckpoint=0;"
               "CREATE TABLE calls (id INTEGER PRIMARY KEY, rollout_id TEXT, seq INTEGER, started_at REAL,"
               " client_format TEXT, upstream TEXT, model TEXT, request TEXT, response TEXT, upstream_patch TEXT,"
               " upstream_response TEXT, prompt_ids BLOB, completion_ids BLOB, logprobs BLOB, finish_reason TEXT,"
               " usage TEXT, http_status INTEGER, UNIQUE (rollout_id, seq));"
               "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);",
               nullptr, nullptr, nullptr);
  sqlite3_stmt *insert = nullptr, *mark = nullptr;
  sqlite3_prepare_v2(db, "INSERT INTO calls VALUES (NULL,?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16)", -1,
                     &insert, nullptr);
  sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO meta VALUES ('call-log:bench', ?1)", -1, &mark, nullptr);
  auto text = [&](int i, const std::string& s) { sqlite3_bind_text(insert, i, s.data(), static_cast<int>(s.size()), SQLITE_STATIC); };
  bool checkpoint_due = false;
  sqlite3_wal_hook(
      db,
      [](void* due, sqlite3*, const char*, int pages) {
        if (pages >= 1000) *static_cast<bool*>(due) = true;
        return SQLITE_OK;
      },
      &checkpoint_due);
  double seconds = 0;
  for (size_t at = 0; at < calls.size(); at += batch) {
    if (checkpoint_due) {
      checkpoint_due = false;
      sqlite3_wal_checkpoint_v2(db, nullptr, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
    }
    double start = ThreadSeconds();
    sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr);
    for (size_t i = at; i < std::min(at + batch, calls.size()); ++i) {
      const CallRecord& c = calls[i];
      text(1, c.rollout_id);
      sqlite3_bind_int64(insert, 2, static_cast<int64_t>(i));
      sqlite3_bind_double(insert, 3, c.started_at);
      text(4, c.client_format), text(5, c.upstream), text(6, c.model), text(7, c.request_text);
      text(8, c.response_text), text(9, c.upstream_request_patch_text), text(10, c.upstream_response_text);
      sqlite3_bind_blob(insert, 11, c.prompt_ids.data(), Bytes(c.prompt_ids), SQLITE_STATIC);
      sqlite3_bind_blob(insert, 12, c.completion_ids.data(), Bytes(c.completion_ids), SQLITE_STATIC);
      sqlite3_bind_blob(insert, 13, c.logprobs.data(), Bytes(c.logprobs), SQLITE_STATIC);
      text(14, c.finish_reason), text(15, c.usage_text);
      sqlite3_bind_int(insert, 16, c.http_status);
      if (sqlite3_step(insert) != SQLITE_DONE) {
        std::fprintf(stderr, "bench-store_append: plain insert: %s\n", sqlite3_errmsg(db));
        return -1;
      }
      sqlite3_reset(insert);
    }
    std::string value = std::to_string(at);
    sqlite3_bind_text(mark, 1, value.data(), static_cast<int>(value.size()), SQLITE_STATIC);
    sqlite3_step(mark);
    sqlite3_reset(mark);
    sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr);
    seconds += ThreadSeconds() - start;
  }
  // Sized as Store::Stats sizes the store: after a checkpoint into the database.
  sqlite3_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)", nullptr, nullptr, nullptr);
  std::error_code ignored;
  auto bytes = std::filesystem::file_size(path, ignored) + std::filesystem::file_size(path + "-wal", ignored);
  if (report) std::printf("      plain SQLite: %.1f MB\n", static_cast<double>(bytes) / 1e6);
  sqlite3_finalize(insert);
  sqlite3_finalize(mark);
  sqlite3_close(db);
  return seconds;
}

}  // namespace

int main(int argc, char** argv) {
  int n = argc > 1 ? std::atoi(argv[1]) : 20000;
  size_t batch = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 32;
  std::string sides = argc > 3 ? argv[3] : "both";
  std::string workloads = argc > 4 ? argv[4] : "all";
  std::printf("store writer, CPU µs per call, user + system (%d calls, committed %zu a transaction; best of 5)\n", n, batch);
  struct Workload {
    const char* name;
    std::vector<CallRecord> calls;
  };
  auto wanted = [&](const char* name, auto make) {
    return workloads == "all" || workloads == name ? make() : std::vector<CallRecord>();
  };
  for (const Workload& w : {Workload{"1 KB calls, a new message each", wanted("sequential", [&] { return SequentialCalls(n); })},
                            Workload{"50-call conversations, 12 KB system prompt",
                                     wanted("conversation", [&] { return Conversations(n / 4); })},
                            Workload{"rollouts of 6-call conversations, 16 at a time (a training run)",
                                     wanted("rollouts", [&] { return ManyRollouts(n / 2); })}}) {
    if (w.calls.empty()) continue;
    size_t request_bytes = 0;
    for (const CallRecord& c : w.calls) request_bytes += c.request_text.size();
    std::printf("  %s (%zu calls, mean request %zu bytes)\n", w.name, w.calls.size(), request_bytes / w.calls.size());
    double forge = 1e9, plain = 1e9;
    for (int round = 0; round < 5; ++round) {  // alternating, so a burst of load hits both
      double f = sides == "plain" ? 0 : ForgeStore(w.calls, batch, round == 0);
      double p = sides == "forge" ? 0 : PlainSqlite(w.calls, batch, round == 0);
      if (f < 0 || p < 0) return 1;
      forge = std::min(forge, f), plain = std::min(plain, p);
    }
    double per = 1e6 / static_cast<double>(w.calls.size());
    if (sides != "plain") std::printf("    forge store   %8.2f µs/call\n", forge * per);
    if (sides != "forge") std::printf("    plain SQLite  %8.2f µs/call (a row a call, texts whole)\n", plain * per);
  }
  for (const char* name : {kForgePath, kPlainPath}) RemovedDatabase(name);
  return 0;
}
