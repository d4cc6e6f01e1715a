#include "proxy/replay.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "base/hash.h"
#include "base/json_field.h"
#include "proxy/dump.h"
#include "proxy/format_registry.h"
#include "proxy/formats/wire.h"
#include "records/jsonl.h"
#include "store/store.h"

namespace forge::proxy {

using Json = nlohmann::json;

namespace {

Status FieldError(const std::string& field, const std::string& what) {
  return Status::InvalidData("field '" + field + "' " + what);
}

// An optional array of integers (token ids).
Status ReadIds(const Json& call, const char* field, std::vector<int32_t>& out) {
  auto it = call.find(field);
  if (it == call.end() || it->is_null()) return Status::Ok();
  if (!it->is_array()) return FieldError(field, "must be an array of token ids");
  out.reserve(it->size());
  for (const Json& id : *it) {
    if (!id.is_number_integer()) return FieldError(field, "must be an array of token ids");
    int64_t v = id.get<int64_t>();
    if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max()) {
      return FieldError(field, "holds a token id out of range: " + std::to_string(v));
    }
    out.push_back(static_cast<int32_t>(v));
  }
  return Status::Ok();
}

// Logprobs: numbers; null stands for a value JSON cannot hold (-inf, NaN).
Status ReadLogprobs(const Json& call, std::vector<float>& out) {
  auto it = call.find("logprobs");
  if (it == call.end() || it->is_null()) return Status::Ok();
  if (!it->is_array()) return FieldError("logprobs", "must be an array of numbers");
  out.reserve(it->size());
  for (const Json& v : *it) {
    if (v.is_number()) {
      out.push_back(v.get<float>());
    } else if (v.is_null()) {
      out.push_back(-std::numeric_limits<float>::infinity());
    } else {
      return FieldError("logprobs", "must be an array of numbers");
    }
  }
  return Status::Ok();
}

bool IsSqliteFile(const std::string& path, Status& error) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    error = Status::NotFound("--replay " + path + ": " + std::strerror(errno));
    return false;
  }
  char head[16] = {};
  size_t n = std::fread(head, 1, sizeof head, f);
  std::fclose(f);
  return n == sizeof head && std::memcmp(head, "SQLite format 3", 16) == 0;
}

}  // namespace

std::string ReplayIndex::RequestKey(const std::string& client_format, const Json& request) {
  Json copy = request;
  if (copy.is_object()) {
    copy.erase("stream");
    copy.erase("stream_options");
  }
  return Sha256Hex(client_format + "\n" + copy.dump());
}

void ReplayIndex::AddExchange(const std::string& key, RecordedExchange exchange) {
  by_request_[key].all.push_back(std::move(exchange));
  ++exchanges_;
}

Status ReplayIndex::Add(const Json& call) {
  if (!call.is_object()) return Status::InvalidData("a recorded call must be a JSON object");
  if (auto schema = call.find("schema"); schema != call.end() && *schema != kCallSchema) {
    return FieldError("schema", "is " + schema->dump() + "; this forge reads \"" + kCallSchema + "\"");
  }
  // Failed calls are part of a faithful export but have no answer to serve.
  auto status = call.find("http_status");
  if (status != call.end() && !status->is_null()) {
    if (!status->is_number_integer()) return FieldError("http_status", "must be an integer");
    if (*status != 200) return Status::Ok();
  }
  auto error = call.find("error");
  if (error != call.end() && error->is_string() && !error->get<std::string>().empty()) return Status::Ok();

  auto format = call.find("client_format");
  if (format == call.end() || !format->is_string()) return FieldError("client_format", "must be a string");
  if (!MakeClientFormat(format->get<std::string>())) {
    return FieldError("client_format", "names no format forge-proxy serves: " + format->dump());
  }
  auto request = call.find("request");
  if (request == call.end() || !request->is_object()) return FieldError("request", "must be the client's request object");
  auto response = call.find("upstream_response");
  if (response == call.end() || !response->is_object()) {
    return FieldError("upstream_response", "must be the upstream's chat-form response object");
  }
  auto choices = response->find("choices");
  if (choices == response->end() || !choices->is_array() || choices->empty() || !(*choices)[0].is_object()) {
    return FieldError("upstream_response.choices", "must be a non-empty array of choices");
  }
  RecordedExchange exchange;
  FORGE_RETURN_IF_ERROR(ReadIds(call, "prompt_ids", exchange.prompt_ids));
  FORGE_RETURN_IF_ERROR(ReadIds(call, "completion_ids", exchange.completion_ids));
  FORGE_RETURN_IF_ERROR(ReadLogprobs(call, exchange.logprobs));
  if (auto model = call.find("model"); model != call.end() && model->is_string()) exchange.model = model->get<std::string>();
  if (!exchange.model.empty() && std::find(models_.begin(), models_.end(), exchange.model) == models_.end()) {
    models_.push_back(exchange.model);
  }
  exchange.response = *response;
  AddExchange(RequestKey(format->get<std::string>(), *request), std::move(exchange));
  return Status::Ok();
}

Result<std::unique_ptr<ReplayIndex>> ReplayIndex::Load(const std::string& path, Env& env) {
  Status error;
  bool store = IsSqliteFile(path, error);
  if (!error.ok()) return error;
  return store ? LoadStore(path) : LoadFile(path, env);
}

Result<std::unique_ptr<ReplayIndex>> ReplayIndex::LoadStore(const std::string& store_path) {
  store::OpenOptions options;
  options.read_only = true;
  auto opened = store::Store::Open(store_path, options);
  if (!opened.ok()) return opened.status().Prefixed("--replay " + store_path);
  auto rollouts = RolloutsWithCalls(store_path);
  if (!rollouts.ok()) return rollouts.status().Prefixed("--replay " + store_path);
  auto index = std::make_unique<ReplayIndex>();
  for (const auto& rollout : *rollouts) {
    auto calls = (*opened)->calls().CallsOfRollout(rollout);
    if (!calls.ok()) return calls.status();
    for (auto& call : *calls) {
      if (call.http_status != 200 || !call.error.empty() || !call.upstream_response.is_object()) continue;
      RecordedExchange exchange;
      exchange.model = call.model;
      exchange.prompt_ids = std::move(call.prompt_ids);
      exchange.completion_ids = std::move(call.completion_ids);
      exchange.logprobs = std::move(call.logprobs);
      exchange.response = std::move(call.upstream_response);
      if (!call.model.empty() && std::find(index->models_.begin(), index->models_.end(), call.model) == index->models_.end()) {
        index->models_.push_back(call.model);
      }
      index->AddExchange(RequestKey(call.client_format, call.request), std::move(exchange));
    }
  }
  return index;
}

Result<std::unique_ptr<ReplayIndex>> ReplayIndex::LoadFile(const std::string& path, Env& env) {
  auto reader = records::JsonlReader::Open(path, env);
  if (!reader.ok()) return reader.status().Prefixed("--replay");
  auto index = std::make_unique<ReplayIndex>();
  for (;;) {
    auto next = (*reader)->Next();
    if (!next.ok()) return next.status();
    if (!next->has_value()) break;
    Status added = index->Add((*next)->json);
    if (!added.ok()) {
      env.Warn((*next)->where() + ": " + added.message() + " (line skipped)");
      ++index->bad_lines_;
    }
  }
  index->bad_lines_ += (*reader)->bad_lines();
  if (index->size() == 0) {
    return Status::InvalidData("--replay " + path + ": no recorded call in it can be served" +
                           (index->bad_lines_ ? " (" + std::to_string(index->bad_lines_) + " bad lines)" : ""));
  }
  return index;
}

const RecordedExchange* ReplayIndex::Next(const std::string& key) {
  auto it = by_request_.find(key);
  if (it == by_request_.end() || it->second.all.empty()) return nullptr;
  Recordings& r = it->second;
  return &r.all[r.next.fetch_add(1) % r.all.size()];
}

std::vector<Json> ChatResponseToChunks(const Json& response) {
  std::vector<Json> chunks;
  // A recording holds what an upstream sent: read without trusting its types.
  bool completion = JsonText(response, "object") == "text_completion";
  const Json* created = wire::Find(response, "created");
  Json head = {{"id", JsonText(response, "id", "replay")},
               {"object", completion ? "text_completion" : "chat.completion.chunk"},
               {"created", created && created->is_number_integer() ? *created : Json(0)},
               {"model", JsonText(response, "model")}};
  const Json* choices = wire::Find(response, "choices");
  for (const auto& choice : choices && choices->is_array() ? *choices : Json::array()) {
    if (!choice.is_object()) continue;
    Json c = {{"index", JsonIndex(choice).value_or(0)}, {"logprobs", choice.value("logprobs", Json())}};
    if (completion) {
      c["text"] = JsonText(choice, "text");
    } else {
      Json delta = choice.value("message", Json::object());
      if (auto calls = delta.find("tool_calls"); calls != delta.end() && calls->is_array()) {
        for (size_t i = 0; i < calls->size(); ++i) {
          if ((*calls)[i].is_object()) (*calls)[i]["index"] = i;
        }
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
