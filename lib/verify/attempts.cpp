#include "verify/attempts.h"

#include <fmt/format.h>

#include "verify/commands.h"
#include "verify/rollout_fields.h"

namespace forge::verify {

using records::Json;

std::optional<std::string> FieldOf(const Json& record, const std::string& path) {
  const Json* at = &record;
  size_t start = 0;
  while (start <= path.size()) {
    size_t dot = path.find('.', start);
    if (dot == std::string::npos) dot = path.size();
    const std::string key = path.substr(start, dot - start);
    if (!at->is_object()) return std::nullopt;
    auto it = at->find(key);
    if (it == at->end()) return std::nullopt;
    at = &*it;
    start = dot + 1;
  }
  if (at->is_null()) return std::nullopt;
  if (at->is_string()) return at->get<std::string>();
  return at->dump();
}

Result<CallSource> CallSource::Open(const std::vector<std::string>& paths) {
  CallSource source;
  store::OpenOptions open;
  open.read_only = true;
  for (const auto& path : paths) {
    auto store = store::Store::Open(path, open);
    if (!store.ok()) return store.status().Prefixed(path);
    source.stores_.push_back(std::move(*store));
  }
  return source;
}

Result<std::vector<store::CallRecord>> CallSource::CallsOf(const std::string& rollout_id) {
  for (auto& store : stores_) {
    auto calls = store->calls().CallsOfRollout(rollout_id);
    if (!calls.ok()) return calls.status().Prefixed(store->path() + ": calls of " + rollout_id);
    if (!calls->empty()) return calls;
  }
  return std::vector<store::CallRecord>{};
}

namespace {

// The group of a record: its field, else (for model and policy_version) its
// first call's.
std::string GroupOf(const Json& record, const std::string& by, const RolloutBehaviour* behaviour) {
  if (by.empty()) return "all";
  if (auto value = FieldOf(record, by)) return *value;
  if (behaviour != nullptr && behaviour->turns > 0) {
    if (by == "model" && !behaviour->model.empty()) return behaviour->model;
    if (by == "policy_version" && behaviour->policy_version) return std::to_string(*behaviour->policy_version);
  }
  return kNoValue;
}

}  // namespace

Status ReadAttempts(const std::vector<std::string>& inputs, const AttemptOptions& options, Env& env,
                    std::vector<Attempt>* attempts) {
  std::vector<Trial> trials;
  std::vector<Json> records;
  Status read = ReadTrials(inputs, env, &trials, &records);
  if (!read.ok() && read.kind() != Kind::kInvalidData) return read;
  for (size_t i = 0; i < trials.size(); ++i) {
    Attempt a{std::move(trials[i]), RolloutIdOf(records[i]), "", std::nullopt};
    if (options.calls != nullptr && !options.calls->empty()) {
      auto calls = options.calls->CallsOf(a.rollout_id);
      if (!calls.ok()) return calls.status();
      a.behaviour = BehaviourOfCalls(*calls, a.trial.harness);
    }
    a.group = GroupOf(records[i], options.by, a.behaviour ? &*a.behaviour : nullptr);
    attempts->push_back(std::move(a));
  }
  return read;
}

}  // namespace forge::verify
