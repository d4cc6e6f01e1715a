#include "pack/assemble.h"

#include <algorithm>

#include "pack/messages.h"

namespace forge::pack {
namespace {

bool HasIds(const store::CallRecord& call) {
  return !call.prompt_ids.empty() && !call.completion_ids.empty();
}

bool Failed(const store::CallRecord& call) {
  bool bad_status = call.http_status != 0 && (call.http_status < 200 || call.http_status >= 300);
  return (bad_status || !call.error.empty()) && call.completion_ids.empty();
}

// Whether conversation `earlier` is a prefix of `later` (canonical messages).
bool ExtendsConversation(const Json& earlier, const Json& later) {
  if (!earlier.is_array() || !later.is_array() || earlier.size() > later.size()) return false;
  for (size_t i = 0; i < earlier.size(); ++i) {
    if (earlier[i] != later[i]) return false;
  }
  return true;
}

void CountBoundary(Boundary b, AssemblyCounts* counts) {
  switch (b) {
    case Boundary::kClean: ++counts->clean; break;
    case Boundary::kRealign: ++counts->realign; break;
    case Boundary::kFork: ++counts->fork; break;
  }
}

}  // namespace

size_t Sample::trainable_tokens() const {
  return static_cast<size_t>(std::count(loss_mask.begin(), loss_mask.end(), uint8_t{1}));
}

void AssemblyCounts::Add(const AssemblyCounts& o) {
  rollouts += o.rollouts;
  calls += o.calls;
  side_calls += o.side_calls;
  error_calls += o.error_calls;
  samples += o.samples;
  from_messages += o.from_messages;
  clean += o.clean;
  realign += o.realign;
  fork += o.fork;
  tokens += o.tokens;
  trainable_tokens += o.trainable_tokens;
}

Boundary Classify(const std::vector<int32_t>& previous, size_t last_completion_start,
                  const std::vector<int32_t>& prompt) {
  auto [a, b] = std::mismatch(previous.begin(), previous.end(), prompt.begin(), prompt.end());
  size_t common = static_cast<size_t>(a - previous.begin());
  if (common == previous.size()) return Boundary::kClean;
  if (common >= last_completion_start) return Boundary::kRealign;
  return Boundary::kFork;
}

std::vector<Sample> Assemble(std::span<const store::CallRecord> calls, AssemblyMode mode,
                             const std::string& task_id, AssemblyCounts* counts) {
  // Stores hand calls over in seq order; anything else is put in order by
  // pointer, leaving the caller's calls (and their buffers) where they are.
  std::vector<const store::CallRecord*> in_order;
  auto by_seq = [](const store::CallRecord& x, const store::CallRecord& y) { return x.seq < y.seq; };
  if (!std::is_sorted(calls.begin(), calls.end(), by_seq)) {
    for (const store::CallRecord& c : calls) in_order.push_back(&c);
    std::stable_sort(in_order.begin(), in_order.end(), [](auto* x, auto* y) { return x->seq < y->seq; });
  }
  AssemblyCounts local;
  local.rollouts = 1;
  std::vector<Sample> samples;
  size_t last_completion_start = 0;
  bool have_previous = false;

  for (size_t k = 0; k < calls.size(); ++k) {
    const store::CallRecord& call = in_order.empty() ? calls[k] : *in_order[k];
    if (call.side_call) {
      ++local.side_calls;
      continue;
    }
    if (Failed(call)) {
      ++local.error_calls;
      continue;
    }
    ++local.calls;
    // A token-only read (CallFields::kTokens) carries no content: no messages to build.
    const bool has_content = !call.request.is_null() || !call.upstream_request.is_null();
    Json conversation = has_content ? CanonicalMessages(RequestMessages(call)) : Json();
    Sample* current = samples.empty() ? nullptr : &samples.back();
    bool extend = false;

    if (HasIds(call)) {
      if (have_previous && current && !current->from_messages) {
        Boundary b = Classify(current->input_ids, last_completion_start, call.prompt_ids);
        CountBoundary(b, &local);
        extend = mode == AssemblyMode::kMerge && b == Boundary::kClean;
      } else if (have_previous) {
        CountBoundary(Boundary::kFork, &local);
      }
      if (!extend) {
        samples.emplace_back();
        current = &samples.back();
        current->policy_version_start = call.policy_version_start;
        current->policy_version_end = call.policy_version_end;
      }
      size_t from = current->input_ids.size();  // the part of the prompt not yet in the sample
      current->input_ids.insert(current->input_ids.end(), call.prompt_ids.begin() + static_cast<ptrdiff_t>(from),
                                call.prompt_ids.end());
      current->loss_mask.resize(current->input_ids.size(), 0);
      current->logprobs.resize(current->input_ids.size(), 0.0f);
      last_completion_start = current->input_ids.size();
      current->input_ids.insert(current->input_ids.end(), call.completion_ids.begin(), call.completion_ids.end());
      current->loss_mask.resize(current->input_ids.size(), 1);
      if (call.logprobs.size() == call.completion_ids.size()) {
        current->logprobs.insert(current->logprobs.end(), call.logprobs.begin(), call.logprobs.end());
      } else {
        current->logprobs.resize(current->input_ids.size(), 0.0f);
        current->logprobs_complete = false;
      }
    } else {
      if (have_previous && current && current->from_messages &&
          ExtendsConversation(current->messages, conversation)) {
        CountBoundary(Boundary::kClean, &local);
        extend = mode == AssemblyMode::kMerge;
      } else if (have_previous) {
        CountBoundary(Boundary::kFork, &local);
      }
      if (!extend) {
        samples.emplace_back();
        current = &samples.back();
        current->from_messages = true;
        current->policy_version_start = call.policy_version_start;
        current->policy_version_end = call.policy_version_end;
      }
    }
    have_previous = true;

    if (has_content) {
      Json answer = ResponseMessage(call);
      if (!answer.is_null()) conversation.push_back(CanonicalMessage(answer));
      current->messages = std::move(conversation);
      current->tools = RequestTools(call);
    }
    current->finish_reason = call.finish_reason;
    current->images = call.images;  // a merged call's prompt holds its predecessors' images too
    current->mm_placeholders = call.mm_placeholders;
    current->call_seqs.push_back(call.seq);
    current->policy_version_start = std::min(current->policy_version_start, call.policy_version_start);
    current->policy_version_end = std::max(current->policy_version_end, call.policy_version_end);
  }

  for (size_t i = 0; i < samples.size(); ++i) {
    Sample& s = samples[i];
    s.rollout_id = calls.empty() ? "" : calls.front().rollout_id;
    s.task_id = task_id;
    s.index = static_cast<int>(i);
    if (s.from_messages) ++local.from_messages;
    local.tokens += static_cast<int64_t>(s.input_ids.size());
    local.trainable_tokens += static_cast<int64_t>(s.trainable_tokens());
  }
  local.samples = static_cast<int64_t>(samples.size());
  if (counts) counts->Add(local);
  return samples;
}

}  // namespace forge::pack
