#include "proxy/replay.h"

#include <set>

#include "base/hash.h"
#include "store/sqlite.h"
#include "store/store.h"

namespace forge::proxy {

using Json = nlohmann::json;

std::string ReplayIndex::RequestKey(const std::string& client_format, const Json& request) {
  Json copy = request;
  if (copy.is_object()) {
    copy.erase("stream");
    copy.erase("stream_options");
  }
  return Sha256Hex(client_format + "\n" + copy.dump());
}

Result<std::unique_ptr<ReplayIndex>> ReplayIndex::Load(const std::string& store_path) {
  store::OpenOptions options;
  options.read_only = true;
  auto opened = store::Store::Open(store_path, options);
  if (!opened.ok()) return opened.status().Prefixed("--replay " + store_path);
  auto& st = **opened;
  // The store API lists calls per rollout; the rollout ids come from the calls table.
  auto db = store::Database::Open(store_path, true);
  if (!db.ok()) return db.status().Prefixed("--replay " + store_path);
  auto stmt = db->Prepare("SELECT DISTINCT rollout_id FROM calls");
  if (!stmt.ok()) return stmt.status();
  std::vector<std::string> rollouts;
  for (;;) {
    auto row = stmt->Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    rollouts.push_back(stmt->Text(0));
  }
  auto index = std::make_unique<ReplayIndex>();
  std::set<std::string> models;
  for (const auto& rollout : rollouts) {
    auto calls = st.CallsOfRollout(rollout);
    if (!calls.ok()) return calls.status();
    for (auto& call : *calls) {
      if (call.http_status != 200 || !call.error.empty() || call.upstream_response.is_null()) continue;
      index->responses_[RequestKey(call.client_format, call.request)] = std::move(call.upstream_response);
      if (!call.model.empty()) models.insert(call.model);
    }
  }
  index->models_.assign(models.begin(), models.end());
  return index;
}

const Json* ReplayIndex::Find(const std::string& key) const {
  auto it = responses_.find(key);
  return it == responses_.end() ? nullptr : &it->second;
}

std::vector<Json> ChatResponseToChunks(const Json& response) {
  std::vector<Json> chunks;
  bool completion = response.value("object", "") == "text_completion";
  Json head = {{"id", response.value("id", "replay")},
               {"object", completion ? "text_completion" : "chat.completion.chunk"},
               {"created", response.value("created", 0)},
               {"model", response.value("model", "")}};
  for (const auto& choice : response.value("choices", Json::array())) {
    Json c = {{"index", choice.value("index", 0)}, {"logprobs", choice.value("logprobs", Json())}};
    if (completion) {
      c["text"] = choice.value("text", "");
    } else {
      Json delta = choice.value("message", Json::object());
      if (auto calls = delta.find("tool_calls"); calls != delta.end() && calls->is_array()) {
        for (size_t i = 0; i < calls->size(); ++i) (*calls)[i]["index"] = i;
      }
      c["delta"] = std::move(delta);
    }
    c["finish_reason"] = choice.value("finish_reason", Json());
    Json chunk = head;
    chunk["choices"] = Json::array({std::move(c)});
    chunks.push_back(std::move(chunk));
  }
  if (response.contains("usage")) {
    Json chunk = head;
    chunk["choices"] = Json::array();
    chunk["usage"] = response["usage"];
    chunks.push_back(std::move(chunk));
  }
  return chunks;
}

}  // namespace forge::proxy
