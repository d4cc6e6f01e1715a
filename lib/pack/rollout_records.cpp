#include "pack/rollout_records.h"

#include "pack/messages.h"
#include "pack/vl_messages.h"

namespace forge::pack {
namespace {

const Json* Find(const Json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

// The task's starting conversation: the record's own prompt or instruction,
// else the first call's messages up to its first assistant turn.
Json PromptOf(const RolloutInput& in, std::span<const store::CallRecord> calls) {
  if (const Json* p = Find(in.record, "prompt"); p && p->is_array()) return CanonicalMessages(*p);
  if (const Json* i = Find(in.record, "instruction"); i && i->is_string()) {
    return Json::array({{{"role", "user"}, {"content", *i}}});
  }
  for (const auto& call : calls) {
    if (call.side_call) continue;
    Json prompt = Json::array();
    for (const Json& m : CanonicalMessages(RequestMessages(call))) {
      if (m.value("role", "") == "assistant") break;
      prompt.push_back(m);
    }
    if (!prompt.empty()) return prompt;
  }
  return Json::array();
}

}  // namespace

Filter FilterOf(const RolloutInput& in, const PackOptions& o) {
  if (!in.untrusted.empty() && o.untrusted == Untrusted::kDrop) return Filter::kUntrusted;
  if (o.passed_only && !in.passed.value_or(false)) return Filter::kNotPassed;
  if (o.min_reward && (!in.reward || *in.reward < *o.min_reward)) return Filter::kBelowMinReward;
  return Filter::kKept;
}

Result<RolloutInput> ParseRollout(records::Record& r) {
  RolloutInput in;
  in.where = r.where();
  const Json* id = Find(r.json, "rollout_id");
  if (!id) id = Find(r.json, "id");
  if (!id || !id->is_string() || id->get<std::string>().empty()) {
    return Status::InvalidData(in.where + ": record has no rollout_id string");
  }
  in.rollout_id = id->get<std::string>();
  const Json* task = Find(r.json, "task_id");
  in.task_id = task && task->is_string() ? task->get<std::string>() : in.rollout_id;
  const Json* verdict = Find(r.json, "verdict");
  for (const Json* source : {verdict, static_cast<const Json*>(&r.json)}) {
    if (!source) continue;
    if (const Json* reward = Find(*source, "reward"); reward && !in.reward) {
      if (!reward->is_number()) return Status::InvalidData(in.where + ": reward is not a number");
      in.reward = reward->get<double>();
    }
    if (const Json* passed = Find(*source, "passed"); passed && !in.passed) {
      if (!passed->is_boolean()) return Status::InvalidData(in.where + ": passed is not a boolean");
      in.passed = passed->get<bool>();
    }
  }
  // Only a verifier that ran to its end on a sandbox nobody tampered with
  // gives a reward (verify/verdict.h): whatever an older or edited record
  // says, any other outcome is a failure with reward 0.
  if (verdict != nullptr) {
    if (const Json* outcome = Find(*verdict, "outcome"); outcome && outcome->is_string()) {
      const std::string name = outcome->get<std::string>();
      if (name != "passed" && name != "failed") {
        in.untrusted = name;
        in.reward = 0.0;
        in.passed = false;
      }
    }
  }
  in.record = std::move(r.json);
  return in;
}

Json SftMessagesRecord(const Sample& s, const RolloutInput& in, bool tagged) {
  Json j = {{"messages", s.image_paths.empty() ? s.messages
                         : tagged             ? ImageTagMessages(s.messages)
                                              : TrlMessages(s.messages)}};
  if (!s.image_paths.empty()) j["images"] = s.image_paths;
  if (!s.tools.is_null()) j["tools"] = s.tools;
  j["rollout_id"] = s.rollout_id;
  j["task_id"] = s.task_id;
  j["sample_index"] = s.index;
  j["from_messages"] = s.from_messages;
  if (in.reward) j["reward"] = *in.reward;
  if (in.passed) j["passed"] = *in.passed;
  return j;
}

Json SftTokensRecord(const Sample& s) {
  std::vector<int32_t> labels(s.input_ids.size());
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = s.loss_mask[i] ? s.input_ids[i] : -100;
  Json j = {{"input_ids", s.input_ids}, {"labels", labels}, {"loss_mask", s.loss_mask},
            {"rollout_id", s.rollout_id}, {"task_id", s.task_id}, {"sample_index", s.index}};
  if (!s.image_paths.empty()) j["images"] = s.image_paths;
  if (!s.image_placeholders.empty()) j["image_placeholders"] = PlaceholdersJson(s.image_placeholders);
  return j;
}

Json VerlPromptRecord(const RolloutInput& in, std::span<const store::CallRecord> calls, size_t index,
                      const PackOptions& o) {
  Json ground_truth = in.task_id;
  if (const Json* g = Find(in.record, "ground_truth")) ground_truth = *g;
  Json tools;
  for (const auto& call : calls) {
    if (!call.side_call && !(tools = RequestTools(call)).is_null()) break;
  }
  Json extra = {{"index", index}, {"task_id", in.task_id}, {"split", "train"}};
  if (!tools.is_null()) extra["tools"] = tools.dump();  // a string: tool schemas vary in shape
  return {{"data_source", o.data_source},
          {"prompt", PromptOf(in, calls)},
          {"ability", in.record.value("ability", "agent")},
          {"reward_model", {{"style", "rule"}, {"ground_truth", ground_truth}}},
          {"extra_info", extra},
          {"agent_name", tools.is_null() ? "single_turn_agent" : "tool_agent"}};
}

}  // namespace forge::pack
