// A training sample assembled from one rollout's recorded model calls, and
// the two ways of assembling it: one sample per call, or prefix-merged
// sequences. Masks come only from the token ids the proxy recorded, never
// from re-rendering a conversation, because decode→encode is not identity
// and a template can rewrite earlier turns.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pack/vision.h"
#include "store/store.h"

namespace forge::pack {

using Json = nlohmann::json;

enum class AssemblyMode { kPerCall, kMerge };

struct Sample {
  std::string rollout_id;
  std::string task_id;
  int index = 0;  // position among the rollout's samples

  // Token view (empty when from_messages).
  std::vector<int32_t> input_ids;
  std::vector<uint8_t> loss_mask;  // 1 on sampled completion tokens, 0 elsewhere
  std::vector<float> logprobs;     // rollout logprob on completion tokens, 0 elsewhere
  bool logprobs_complete = true;   // every completion token had a recorded logprob

  // Message view: the conversation of the sample's last call plus its answer.
  Json messages = Json::array();
  Json tools;  // null when the request had none

  // The images of its last call's request, in the order of their
  // placeholders (SHA-256 in hex, CallRecord::images), and where that
  // call's server said the placeholders are (empty: it did not say).
  std::vector<std::string> images;
  std::string mm_placeholders;
  // Set by forge-pack once it has written the images: their files, and
  // where their placeholder tokens are in input_ids (with a processor).
  std::vector<std::string> image_paths;
  std::vector<Placeholder> image_placeholders;

  bool from_messages = false;  // no recorded ids: built from messages (hosted teacher)
  std::string finish_reason;   // of the sample's last call
  std::vector<int64_t> call_seqs;
  int64_t policy_version_start = 0;  // oldest policy that sampled any of its tokens
  int64_t policy_version_end = 0;

  size_t trainable_tokens() const;
};

// How the boundary between two consecutive calls of a rollout looked.
//   clean:   the call's prompt extends the previous prompt+completion exactly (merged)
//   realign: it shares everything up to the previous completion, then differs
//            (the harness's template re-tokenised the previous answer)
//   fork:    it diverges before the previous completion (history edited,
//            summarised, or a sub-agent started)
enum class Boundary { kClean, kRealign, kFork };

struct AssemblyCounts {
  int64_t rollouts = 0;
  int64_t calls = 0;        // non-side calls used
  int64_t side_calls = 0;   // excluded
  int64_t error_calls = 0;  // failed upstream calls, excluded
  int64_t samples = 0;
  int64_t from_messages = 0;
  int64_t clean = 0, realign = 0, fork = 0;
  int64_t tokens = 0, trainable_tokens = 0;

  void Add(const AssemblyCounts& other);
};

// Assembles one rollout's calls (in any order; taken in seq order here). A
// call without recorded ids turns the rollout's remaining chain into
// message-built samples flagged from_messages.
std::vector<Sample> Assemble(std::span<const store::CallRecord> calls, AssemblyMode mode,
                             const std::string& task_id, AssemblyCounts* counts);
inline std::vector<Sample> Assemble(const std::vector<store::CallRecord>& calls, AssemblyMode mode,
                                    const std::string& task_id, AssemblyCounts* counts) {
  return Assemble(std::span<const store::CallRecord>(calls), mode, task_id, counts);
}

// Classifies the boundary between a sample's tokens so far (whose last
// completion starts at last_completion_start) and the next call's prompt.
Boundary Classify(const std::vector<int32_t>& previous, size_t last_completion_start,
                  const std::vector<int32_t>& prompt);

}  // namespace forge::pack
