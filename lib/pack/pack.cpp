#include "pack/pack.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <span>

#include <fmt/format.h>

#include "pack/call_reader.h"
#include "pack/image_files.h"
#include "pack/pack_stats.h"
#include "pack/rl_batches.h"
#include "pack/rollout_records.h"
#include "pack/vl_messages.h"
#include "store/store.h"

namespace forge::pack {
namespace {

Status CheckOptions(const PackOptions& o) {
  if (o.format == Format::kRl && o.out_dir.empty()) return Status::InvalidArgument("--format rl needs --out-dir DIR");
  if (o.format != Format::kVerlPrompts && o.stores.empty()) return Status::InvalidArgument("give at least one --store PATH");
  if (o.token_budget < 1) return Status::InvalidArgument("--token-budget must be positive");
  return Status::Ok();
}

// One run, as its stages: every input record first (an RL group needs all
// rollouts of its task), then the stores' calls a chunk of rollouts at a
// time (a reader thread reads the next chunk's while this one assembles and
// writes the current one), then, for RL, the batches once every rollout is in.
class Packer {
 public:
  Packer(const PackOptions& o, records::JsonlWriter& out) : o_(o), out_(out) {
    stats_.untrusted_dropped = o.untrusted == Untrusted::kDrop;
  }

  Status Run() {
    Stopwatch run_watch;
    auto stores = o_.stores.empty() ? Result<Stores>(Stores{}) : Stores::Open(o_.stores);
    if (!stores.ok()) return stores.status();
    Status read = ReadInputs();
    if (!read.ok() && read.kind() != Kind::kInvalidData) return read;
    if (!o_.stores.empty()) {
      auto images = ImageFiles::Open(o_.stores, ImagesDir(), o_.processor);
      if (!images.ok()) return images.status();
      images_.emplace(std::move(*images));
    }
    FORGE_RETURN_IF_ERROR(PackChunks(*stores));
    stores->Close();
    if (images_) FORGE_RETURN_IF_ERROR(images_->WriteIndex());
    if (o_.format == Format::kRl) FORGE_RETURN_IF_ERROR(WriteRl());
    run_watch.AddTo(times_.total);
    FORGE_RETURN_IF_ERROR(Report());
    if (o_.strict && !read.ok()) return read;  // the first bad line, as the reader named it
    return SkippedInput(stats_);
  }

 private:
  bool TokenFormat() const { return o_.format == Format::kRl || o_.format == Format::kSftTokens; }
  std::string ImagesDir() const {
    if (!o_.images_dir.empty() || o_.out_dir.empty()) return o_.images_dir;
    return (std::filesystem::path(o_.out_dir) / "images").string();
  }

  // Every record of every input; a bad one is named and skipped (or, with
  // --strict, ends the read).
  Status ReadInputs() {
    Stopwatch watch;
    std::set<std::string> seen;
    records::ReaderOptions reader;
    reader.strict = o_.strict;
    size_t malformed = 0;
    Status read = records::ForEachRecord(o_.inputs, *o_.env, reader, [&](records::Record& r) -> Status {
      ++stats_.records;
      auto in = ParseRollout(r);
      if (!in.ok()) {
        if (o_.strict) return in.status();
        ++stats_.bad_records;
        o_.env->Error(in.status().message());
        return Status::Ok();
      }
      if (!seen.insert(in->rollout_id).second) {
        ++stats_.duplicate_rollouts;
        o_.env->Warn(fmt::format("{}: rollout {} seen before; this record is ignored", in->where, in->rollout_id));
        return Status::Ok();
      }
      inputs_.push_back(std::move(*in));
      return Status::Ok();
    }, &malformed);
    stats_.malformed_lines = static_cast<int64_t>(malformed);
    watch.AddTo(times_.read);
    return read;
  }

  Status PackChunks(Stores& stores) {
    std::vector<std::string> ids;
    std::vector<bool> wanted;
    for (const RolloutInput& in : inputs_) {
      ids.push_back(in.rollout_id);
      wanted.push_back(FilterOf(in, o_) == Filter::kKept);
    }
    CallReader reader(stores, std::move(ids), std::move(wanted), TokenFormat());
    for (size_t k = 0; k < reader.chunk_count(); ++k) {
      // Read stage: wall time is what this thread waited for the reader, CPU
      // time the reader's own.
      double waited = 0;
      const CallReader::Chunk& chunk = reader.Next(&waited);
      times_.read.wall += waited;
      times_.read.cpu += chunk.read_cpu_seconds;
      if (!chunk.status.ok()) return chunk.status;
      if (o_.env->stop().requested()) return Status::Cancelled("stopped");
      Stopwatch watch(CLOCK_THREAD_CPUTIME_ID);
      AssembleChunk(chunk);
      watch.AddTo(times_.assemble);
      if (o_.format == Format::kRl) continue;  // written once every rollout is in
      FORGE_RETURN_IF_ERROR(WriteChunk(chunk));
      watch.AddTo(times_.write);
    }
    return Status::Ok();
  }

  // The chunk's samples that pass validation, per slot (RL: into rollouts_).
  void AssembleChunk(const CallReader::Chunk& chunk) {
    good_.resize(chunk.end - chunk.begin);
    for (size_t i = chunk.begin; i < chunk.end; ++i) {
      const RolloutInput& in = inputs_[i];
      switch (FilterOf(in, o_)) {
        case Filter::kKept: break;
        case Filter::kNotPassed: ++stats_.filtered_not_passed; break;
        case Filter::kBelowMinReward: ++stats_.filtered_below_min_reward; break;
        case Filter::kUntrusted: break;
      }
      if (!in.untrusted.empty()) ++stats_.untrusted[in.untrusted];
      const CallReader::Slot& slot = chunk.slots[i - chunk.begin];
      std::vector<Sample>& good = good_[i - chunk.begin];
      good.clear();
      if (!slot.wanted || o_.format == Format::kVerlPrompts) continue;
      if (slot.n == 0) {
        ++stats_.rollouts_without_calls;
        o_.env->Warn(fmt::format("{}: no recorded calls for rollout {} in any store", in.where, in.rollout_id));
        continue;
      }
      KeepValid(slot.Calls(), in, good);
      if (o_.format != Format::kRl) continue;
      if (!in.reward) {
        ++stats_.rollouts_without_reward;
        stats_.dropped["no_reward"] += static_cast<int64_t>(good.size());
        continue;
      }
      // Kept even without a good sample: its reward still belongs to the
      // group's baseline (a truncated attempt is an outcome too).
      rl_rollouts_.push_back({in.rollout_id, in.task_id, *in.reward, std::move(good)});
      good.clear();
    }
  }

  void KeepValid(std::span<const store::CallRecord> calls, const RolloutInput& in, std::vector<Sample>& good) {
    for (const auto& c : calls) newest_policy_ = std::max(newest_policy_, c.policy_version_end);
    for (Sample& s : Assemble(calls, o_.mode, in.task_id, &stats_.assembly)) {
      std::string reason = s.from_messages && TokenFormat() ? "no_token_ids" : InvalidReason(s, o_.validation);
      if (reason.empty() && (o_.format == Format::kSftMessages || o_.format == Format::kSftImageTags) &&
          (s.messages.empty() || s.messages.back().value("role", "") != "assistant")) {
        reason = "no_assistant_message";  // ids were recorded but no readable conversation
      }
      if (reason.empty() && !s.images.empty()) reason = PlaceImages(s, in);
      if (!reason.empty()) {
        ++stats_.dropped[reason];
        continue;
      }
      good.push_back(std::move(s));
    }
  }

  // Writes a sample's images (once a run each) and checks its placeholders;
  // returns a drop reason, or empty.
  std::string PlaceImages(Sample& s, const RolloutInput& in) {
    if (ImagesDir().empty()) {
      if (!warned_images_dir_) o_.env->Warn("samples carry images: give --images-dir DIR (or --out-dir) to keep them");
      warned_images_dir_ = true;
      return "no_images_dir";
    }
    auto files = images_->Files(s.images);
    if (!files.ok()) {
      o_.env->Warn(fmt::format("{}: rollout {}: {}", in.where, in.rollout_id, files.status().message()));
      return "image_missing";
    }
    if (!s.from_messages) {
      auto ranges = images_->Placeholders(*files, s.input_ids, s.mm_placeholders);
      if (!ranges.ok()) {
        o_.env->Warn(fmt::format("{}: rollout {} sample {}: {}", in.where, in.rollout_id, s.index,
                                 ranges.status().message()));
        return "image_tokens_mismatch";
      }
      s.image_placeholders = std::move(*ranges);
    }
    if (!TokenFormat() && CountImageParts(s.messages) != s.images.size()) return "image_parts_mismatch";
    for (const ImageFile* f : *files) s.image_paths.push_back(f->path);
    return "";
  }

  Status WriteChunk(const CallReader::Chunk& chunk) {
    for (size_t i = chunk.begin; i < chunk.end; ++i) {
      const RolloutInput& in = inputs_[i];
      const CallReader::Slot& slot = chunk.slots[i - chunk.begin];
      if (!slot.wanted) continue;
      if (o_.format == Format::kVerlPrompts) {
        FORGE_RETURN_IF_ERROR(WritePrompt(in, slot.Calls()));
        continue;
      }
      const std::vector<Sample>& good = good_[i - chunk.begin];
      if (good.empty()) continue;
      for (const Sample& s : good) {
        FORGE_RETURN_IF_ERROR(out_.Write(o_.format == Format::kSftTokens
                                             ? SftTokensRecord(s)
                                             : SftMessagesRecord(s, in, o_.format == Format::kSftImageTags)));
        ++stats_.written;
      }
      ++stats_.written_rollouts;
    }
    return Status::Ok();
  }

  // verl-prompts: a row for a task's first rollout.
  Status WritePrompt(const RolloutInput& in, std::span<const store::CallRecord> calls) {
    if (!prompted_tasks_.insert(in.task_id).second) return Status::Ok();
    Json row = VerlPromptRecord(in, calls, prompted_tasks_.size() - 1, o_);
    if (row["prompt"].empty()) {
      ++stats_.dropped["no_prompt"];
      o_.env->Warn(fmt::format("{}: task {} has no prompt, instruction or recorded call", in.where, in.task_id));
      return Status::Ok();
    }
    FORGE_RETURN_IF_ERROR(out_.Write(row));
    ++stats_.written;
    return Status::Ok();
  }

  Status WriteRl() {
    // Staleness is judged against the newest policy, which is only known now.
    int64_t current = o_.policy_version.value_or(newest_policy_);
    if (o_.max_staleness) DropStale(current);
    std::error_code ec;
    std::filesystem::create_directories(o_.out_dir, ec);
    if (ec) return Status::CannotCreate(o_.out_dir + ": " + ec.message());
    RlOptions rl;
    rl.estimator = o_.estimator;
    rl.drop_zero_variance = o_.drop_zero_variance;
    rl.token_budget = o_.token_budget;
    rl.write_threads = o_.write_threads;
    rl.out_dir = o_.out_dir;
    rl.metadata = {{"forge_version", FORGE_VERSION},
                   {"assembly", o_.mode == AssemblyMode::kMerge ? "merge" : "per-call"},
                   {"policy_version", std::to_string(current)}};
    if (o_.processor) rl.metadata["processor"] = o_.processor->ToJson().dump();
    RlFigures figures;
    Stopwatch watch;
    auto batches = PlanRlBatches(rl_rollouts_, rl, &figures);
    watch.AddTo(times_.plan);
    if (figures.dropped_over_budget) stats_.dropped["longer_than_token_budget"] += figures.dropped_over_budget;
    if (figures.dropped_zero_variance_rollouts) {
      stats_.dropped["zero_variance_group_rollouts"] += figures.dropped_zero_variance_rollouts;
    }
    auto entries = WriteRlBatches(batches, rl, &o_.env->stop());
    if (!entries.ok()) return entries.status();
    for (const Json& entry : *entries) FORGE_RETURN_IF_ERROR(out_.Write(entry));
    watch.AddTo(times_.write);
    stats_.written = figures.rows;
    stats_.rl = figures;
    return Status::Ok();
  }

  void DropStale(int64_t current) {
    for (RlRollout& r : rl_rollouts_) {
      auto stale = [&](const Sample& s) { return current - s.policy_version_start > *o_.max_staleness; };
      int64_t n = std::count_if(r.samples.begin(), r.samples.end(), stale);
      if (n) stats_.dropped["stale"] += n;
      r.samples.erase(std::remove_if(r.samples.begin(), r.samples.end(), stale), r.samples.end());
    }
  }

  // The summary on stderr and in --stats.
  Status Report() {
    Json summary = stats_.ToJson();
    summary["seconds"] = times_.ToJson(&StageTime::wall);
    summary["cpu_seconds"] = times_.ToJson(&StageTime::cpu);
    if (!o_.quiet) PrintSummary(summary, *o_.env);
    if (o_.stats_path.empty()) return Status::Ok();
    std::ofstream f(o_.stats_path);
    if (!(f << summary.dump(2) << "\n")) return Status::CannotCreate(o_.stats_path + ": cannot write stats");
    return Status::Ok();
  }

  const PackOptions& o_;
  records::JsonlWriter& out_;
  PackStats stats_;
  StageTimes times_;
  std::vector<RolloutInput> inputs_;
  std::vector<std::vector<Sample>> good_;  // per slot of the current chunk
  std::vector<RlRollout> rl_rollouts_;
  std::set<std::string> prompted_tasks_;
  std::optional<ImageFiles> images_;
  bool warned_images_dir_ = false;
  int64_t newest_policy_ = 0;
};

}  // namespace

Status RunPack(const PackOptions& o, records::JsonlWriter& out) {
  FORGE_RETURN_IF_ERROR(CheckOptions(o));
  return Packer(o, out).Run();
}

}  // namespace forge::pack
