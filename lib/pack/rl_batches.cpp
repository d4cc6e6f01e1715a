#include "pack/rl_batches.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>
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
  nlohmann::json uids = nlohmann::json::array(), rollout_ids = nlohmann::json::array(),
                 sample_indices = nlohmann::json::array(), versions = nlohmann::json::array(),
                 images = nlohmann::json::array(), placeholders = nlohmann::json::array();
  size_t tokens = 0;
  bool any_images = false;
  for (const RlRow& row : rows) {
    const Sample& s = *row.sample;
    tokens += s.input_ids.size();
    uids.push_back(s.task_id);
    rollout_ids.push_back(s.rollout_id);
    sample_indices.push_back(s.index);
    versions.push_back({s.policy_version_start, s.policy_version_end});
    images.push_back(s.image_paths);  // veRL's multi_modal_data["image"], in placeholder order
    placeholders.push_back(PlaceholdersJson(s.image_placeholders));
    any_images = any_images || !s.image_paths.empty();
  }
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
  if (any_images) {
    metadata["images"] = images.dump();
    metadata["image_placeholders"] = placeholders.dump();
  }

  const int64_t t = static_cast<int64_t>(tokens), r = static_cast<int64_t>(rows.size());
  // One buffer per thread, reused across files: the tensors are copied
  // straight from the samples into the file image, which is written whole.
  thread_local std::string storage;
  auto file = SafetensorsBuffer::Layout({{"input_ids", DType::kI32, {t}},
                                         {"position_ids", DType::kI32, {t}},
                                         {"loss_mask", DType::kU8, {t}},
                                         {"rollout_log_probs", DType::kF32, {t}},
                                         {"advantages", DType::kF32, {t}},
                                         {"cu_seqlens", DType::kI32, {r + 1}},
                                         {"rewards", DType::kF32, {r}},
                                         {"row_advantages", DType::kF32, {r}}},
                                        metadata, &storage);
  if (!file.ok()) return file.status();
  // memcpy into the image: its offsets are aligned to the element size, but
  // writing through typed pointers into a std::string is best left alone.
  char* input_ids = file->Data("input_ids");
  char* position_ids = file->Data("position_ids");
  char* loss_mask = file->Data("loss_mask");
  char* logprobs = file->Data("rollout_log_probs");
  char* advantages = file->Data("advantages");
  char* cu_seqlens = file->Data("cu_seqlens");
  char* rewards = file->Data("rewards");
  char* row_advantages = file->Data("row_advantages");
  thread_local std::vector<int32_t> positions;
  thread_local std::vector<float> row_token_advantages;
  size_t at = 0;
  int32_t zero = 0;
  std::memcpy(cu_seqlens, &zero, 4);
  for (size_t i = 0; i < rows.size(); ++i) {
    const RlRow& row = rows[i];
    const Sample& s = *row.sample;
    const size_t n = s.input_ids.size();
    std::memcpy(input_ids + 4 * at, s.input_ids.data(), 4 * n);
    std::memcpy(loss_mask + at, s.loss_mask.data(), n);
    std::memcpy(logprobs + 4 * at, s.logprobs.data(), 4 * n);
    if (positions.size() < n) {
      size_t old = positions.size();
      positions.resize(n);
      std::iota(positions.begin() + static_cast<ptrdiff_t>(old), positions.end(), static_cast<int32_t>(old));
    }
    std::memcpy(position_ids + 4 * at, positions.data(), 4 * n);
    row_token_advantages.resize(n);
    for (size_t k = 0; k < n; ++k) row_token_advantages[k] = s.loss_mask[k] ? row.advantage : 0.0f;
    std::memcpy(advantages + 4 * at, row_token_advantages.data(), 4 * n);
    at += n;
    int32_t end = static_cast<int32_t>(at);
    std::memcpy(cu_seqlens + 4 * (i + 1), &end, 4);
    std::memcpy(rewards + 4 * i, &row.reward, 4);
    std::memcpy(row_advantages + 4 * i, &row.advantage, 4);
  }

  char name[64];
  std::snprintf(name, sizeof name, "%s-%06zu.safetensors", options.file_prefix.c_str(), batch_index);
  std::string path = (std::filesystem::path(options.out_dir) / name).string();
  FORGE_RETURN_IF_ERROR(file->WriteTo(path));
  nlohmann::json entry{{"file", path},
                        {"batch", batch_index},
                        {"rows", rows.size()},
                        {"tokens", tokens},
                        {"token_budget", options.token_budget},
                        {"utilisation", static_cast<double>(tokens) / static_cast<double>(options.token_budget)},
                        {"uids", std::move(uids)},
                        {"rollout_ids", std::move(rollout_ids)}};
  if (any_images) {
    entry["images"] = std::move(images);
    entry["image_placeholders"] = std::move(placeholders);
  }
  return entry;
}

Result<std::vector<nlohmann::json>> WriteRlBatches(const std::vector<std::vector<RlRow>>& batches,
                                                   const RlOptions& options, const StopToken* stop) {
  std::vector<nlohmann::json> entries(batches.size());
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex mutex;
  Status first_error = Status::Ok();
  auto work = [&] {
    for (size_t i; !failed && (i = next++) < batches.size();) {
      Status s = stop != nullptr && stop->requested() ? Status::Cancelled("stopped") : Status::Ok();
      if (s.ok()) {
        auto entry = WriteRlBatch(batches[i], i, options);
        if (entry.ok()) {
          entries[i] = std::move(*entry);
          continue;
        }
        s = entry.status();
      }
      std::lock_guard<std::mutex> lock(mutex);
      if (!failed.exchange(true)) first_error = s;
    }
  };
  // Files are independent; the writes are copies into the page cache, which
  // two threads do side by side. More would only contend on a 2-core box.
  int threads = std::clamp(options.write_threads, 1, 64);
  std::vector<std::thread> helpers;
  for (int k = 1; k < threads && static_cast<size_t>(k) < batches.size(); ++k) helpers.emplace_back(work);
  work();
  for (std::thread& h : helpers) h.join();
  if (failed) return first_error;
  return entries;
}

}  // namespace forge::pack
