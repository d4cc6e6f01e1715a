#include "proxy/dump.h"

#include "proxy/replay.h"
#include "proxy/token_capture.h"
#include "records/jsonl.h"
#include "store/call_log.h"
#include "store/sqlite.h"

namespace forge::proxy {

using Json = nlohmann::json;

Json CallToJson(const store::CallRecord& c) {
  Json j;
  j["schema"] = kCallSchema;
  j["id"] = c.id;
  j["rollout_id"] = c.rollout_id;
  j["seq"] = c.seq;
  j["started_at"] = c.started_at;
  j["first_token_at"] = c.first_token_at;
  j["ended_at"] = c.ended_at;
  j["client_format"] = c.client_format;
  j["upstream"] = c.upstream;
  j["model"] = c.model;
  j["policy_version_start"] = c.policy_version_start;
  j["policy_version_end"] = c.policy_version_end;
  j["request"] = c.request;
  j["response"] = c.response;
  j["upstream_request"] = c.upstream_request;
  j["upstream_response"] = c.upstream_response;
  j["prompt_ids"] = c.prompt_ids;
  j["completion_ids"] = c.completion_ids;
  j["logprobs"] = c.logprobs;
  j["finish_reason"] = c.finish_reason;
  j["usage"] = c.usage;
  j["http_status"] = c.http_status;
  j["error"] = c.error;
  j["side_call"] = c.side_call;
  j["retry_key"] = c.retry_key;
  return j;
}

Status DumpRolloutCalls(const std::string& store_path, const std::string& rollout_id) {
  store::OpenOptions options;
  options.read_only = true;
  auto st = store::Store::Open(store_path, options);
  if (!st.ok()) return st.status().Prefixed("--store " + store_path);
  auto calls = (*st)->calls().CallsOfRollout(rollout_id);
  if (!calls.ok()) return calls.status();
  records::JsonlWriter out;
  for (const auto& call : *calls) FORGE_RETURN_IF_ERROR(out.Write(CallToJson(call)));
  return Status::Ok();
}

Result<std::vector<std::string>> RolloutsWithCalls(const std::string& store_path) {
  auto db = store::Database::Open(store_path, true);
  if (!db.ok()) return db.status();
  auto stmt = db->Prepare("SELECT rollout_id FROM calls GROUP BY rollout_id ORDER BY MIN(id)");
  if (!stmt.ok()) return stmt.status();
  std::vector<std::string> rollouts;
  for (;;) {
    auto row = stmt->Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    rollouts.push_back(stmt->Text(0));
  }
  return rollouts;
}

Status ExportCalls(const std::string& store_path) {
  store::OpenOptions options;
  options.read_only = true;
  auto st = store::Store::Open(store_path, options);
  if (!st.ok()) return st.status().Prefixed("--store " + store_path);
  auto rollouts = RolloutsWithCalls(store_path);
  if (!rollouts.ok()) return rollouts.status().Prefixed("--store " + store_path);
  records::JsonlWriter out;
  for (const auto& rollout : *rollouts) {
    auto calls = (*st)->calls().CallsOfRollout(rollout);
    if (!calls.ok()) return calls.status();
    for (const auto& call : *calls) FORGE_RETURN_IF_ERROR(out.Write(CallToJson(call)));
  }
  return Status::Ok();
}

Status CheckCallLogs(const std::string& store_path) {
  auto scans = store::ScanCallLogs(store_path);
  if (!scans.ok()) return scans.status();
  size_t bad = 0;
  std::string first_bad;
  records::JsonlWriter out;
  for (const store::CallLogScan& scan : *scans) {
    Json line = {{"log", scan.path},        {"calls", scan.calls}, {"request_records", scan.request_records},
                 {"bad_records", scan.bad}, {"end", scan.end},     {"cut_short", scan.cut_short}};
    FORGE_RETURN_IF_ERROR(out.Write(line));
    if (!scan.bad.empty() && first_bad.empty()) first_bad = scan.path + " at byte " + std::to_string(scan.bad.front());
    bad += scan.bad.size();
  }
  if (bad > 0) {
    return Status::InvalidData(std::to_string(bad) + " call log record(s) fail their checksum; the first: " + first_bad +
                           " (recovery stops there: the calls after it would be lost)");
  }
  return Status::Ok();
}

}  // namespace forge::proxy
