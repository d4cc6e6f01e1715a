// The conversation view of a recorded call, in OpenAI chat form, shaped the
// way SFT loaders (TRL, axolotl, LLaMA-Factory, veRL after parquet) read it.
#pragma once

#include <nlohmann/json.hpp>

#include "store/store.h"

namespace forge::pack {

using Json = nlohmann::json;

// The chat-form messages the call sent: the upstream request (always chat
// completions form) when recorded, else the harness's own request.
Json RequestMessages(const store::CallRecord& call);
// The tools the call offered, or null.
Json RequestTools(const store::CallRecord& call);
// The assistant message the call got back, or null when there is none.
Json ResponseMessage(const store::CallRecord& call);

// One message in the canonical SFT shape: role, content, and where present
// tool_calls (arguments always a JSON string: Arrow/parquet cannot hold
// objects whose keys vary), tool_call_id, name, reasoning_content.
Json CanonicalMessage(const Json& message);
Json CanonicalMessages(const Json& messages);

}  // namespace forge::pack
