#include "pack/rl_batches.h"

#include <cstdio>
#include <filesystem>
#include <numeric>

#include "pack/safetensors.h"

namespace forge::pack {

std::vector<std::vector<RlRow>> PlanRlBatches(const std::vector<RlRollout>& rollouts,
                                              const RlOptions& options, RlFigures* figures) {
  // Groups in first-seen order so output is deterministic for a given input.
  std::map<std::string, size_t> group_of;
  std::vector<std::vector<size_t>> groups;
  for (size_t i = 0; i < rollouts.size(); ++i) {
    auto [it, fresh] = group_of.emplace(rollouts[i].task_id, groups.size());
    if (fresh) groups.emplace_back();
    groups[it->second].push_back(i);
  }
  figures->groups = static_cast<int64_t>(groups.size());

  std::vector<RlRow> rows;
  std::vector<int64_t> lengths;
  for (const std::vector<size_t>& group : groups) {
    std::vector<double> rewards;
    for (size_t i : group) rewards.push_back(rollouts[i].reward);
    if (ZeroVariance(rewards) && group.size() > 1) {
      ++figures->zero_variance_groups;
      if (options.drop_zero_variance) {
        figures->dropped_zero_variance_rollouts += static_cast<int64_t>(group.size());
        continue;
      }
    }
    std::vector<double> advantages = GroupAdvantages(rewards, options.estimator, options.epsilon);
    for (size_t g = 0; g < group.size(); ++g) {
      for (const Sample& s : rollouts[group[g]].samples) {
        if (static_cast<int64_t>(s.input_ids.size()) > options.token_budget) {
          ++figures->dropped_over_budget;
          continue;
        }
        rows.push_back({&s, static_cast<float>(rewards[g]), static_cast<float>(advantages[g])});
        lengths.push_back(static_cast<int64_t>(s.input_ids.size()));
      }
    }
  }
  figures->rows = static_cast<int64_t>(rows.size());

  std::vector<Bin> bins = BestFitDecreasing(lengths, options.token_budget);
  figures->packing = Figures(bins, options.token_budget);
  std::vector<std::vector<RlRow>> planned;
  planned.reserve(bins.size());
  for (const Bin& bin : bins) {
    std::vector<RlRow> batch;
    batch.reserve(bin.items.size());
    for (size_t item : bin.items) batch.push_back(rows[item]);
    planned.push_back(std::move(batch));
  }
  return planned;
}

Result<nlohmann::json> WriteRlBatch(const std::vector<RlRow>& rows, size_t batch_index,
                                    const RlOptions& options) {
  // Reused across batches: fresh buffers per file cost more in page faults
  // than the copying itself.
  thread_local std::vector<int32_t> input_ids, position_ids, cu_seqlens;
  thread_local std::vector<uint8_t> loss_mask;
  thread_local std::vector<float> logprobs, advantages, rewards, row_advantages;
  for (auto* v : {&input_ids, &position_ids, &cu_seqlens}) v->clear();
  for (auto* v : {&logprobs, &advantages, &rewards, &row_advantages}) v->clear();
  loss_mask.clear();
  cu_seqlens.push_back(0);
  nlohmann::json uids = nlohmann::json::array(), rollout_ids = nlohmann::json::array(),
                 sample_indices = nlohmann::json::array(), versions = nlohmann::json::array();
  for (const RlRow& row : rows) {
    const Sample& s = *row.sample;
    const size_t start = input_ids.size(), n = s.input_ids.size();
    input_ids.insert(input_ids.end(), s.input_ids.begin(), s.input_ids.end());
    loss_mask.insert(loss_mask.end(), s.loss_mask.begin(), s.loss_mask.end());
    logprobs.insert(logprobs.end(), s.logprobs.begin(), s.logprobs.end());
    position_ids.resize(start + n);
    std::iota(position_ids.begin() + static_cast<ptrdiff_t>(start), position_ids.end(), 0);
    advantages.resize(start + n);
    for (size_t i = 0; i < n; ++i) advantages[start + i] = s.loss_mask[i] ? row.advantage : 0.0f;
    cu_seqlens.push_back(static_cast<int32_t>(input_ids.size()));
    rewards.push_back(row.reward);
    row_advantages.push_back(row.advantage);
    uids.push_back(s.task_id);
    rollout_ids.push_back(s.rollout_id);
    sample_indices.push_back(s.index);
    versions.push_back({s.policy_version_start, s.policy_version_end});
  }

  char name[64];
  std::snprintf(name, sizeof name, "%s-%06zu.safetensors", options.file_prefix.c_str(), batch_index);
  std::string path = (std::filesystem::path(options.out_dir) / name).string();
  std::map<std::string, std::string> metadata = options.metadata;
  metadata["format"] = "forge-pack-rl/1";
  metadata["batch_index"] = std::to_string(batch_index);
  metadata["rows"] = std::to_string(rows.size());
  metadata["token_budget"] = std::to_string(options.token_budget);
  metadata["advantage"] = EstimatorName(options.estimator);
  metadata["uids"] = uids.dump();
  metadata["rollout_ids"] = rollout_ids.dump();
  metadata["sample_indices"] = sample_indices.dump();
  metadata["policy_versions"] = versions.dump();

  FORGE_RETURN_IF_ERROR(WriteSafetensors(path,
                                         {Flat("input_ids", DType::kI32, input_ids),
                                          Flat("position_ids", DType::kI32, position_ids),
                                          Flat("loss_mask", DType::kU8, loss_mask),
                                          Flat("rollout_log_probs", DType::kF32, logprobs),
                                          Flat("advantages", DType::kF32, advantages),
                                          Flat("cu_seqlens", DType::kI32, cu_seqlens),
                                          Flat("rewards", DType::kF32, rewards),
                                          Flat("row_advantages", DType::kF32, row_advantages)},
                                         metadata));
  return nlohmann::json{{"file", path},
                        {"batch", batch_index},
                        {"rows", rows.size()},
                        {"tokens", input_ids.size()},
                        {"token_budget", options.token_budget},
                        {"utilisation", static_cast<double>(input_ids.size()) / static_cast<double>(options.token_budget)},
                        {"uids", uids},
                        {"rollout_ids", rollout_ids}};
}

}  // namespace forge::pack
