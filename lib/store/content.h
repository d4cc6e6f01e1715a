// Splits a JSON request or response into content-addressed parts: each
// element of a top-level array (a message, a tool, an input item) and each
// large top-level value becomes a blob stored once under its SHA-256; what is
// left is a small skeleton that names the blobs by their integer ids.
// Harnesses resend the whole conversation on every call, so successive calls
// share almost all parts and each call adds only a few bytes per message.
//
// Skeleton: an object mapping each top-level key to ["v", value] (inline),
// ["b", ref] (one part) or ["l", [item...]] (an array whose items are a part's
// ref or [value] inline). A part's ref is its blob id; a part that carries
// images as base64 strings (inline_images.h) is stored without them, each
// image's bytes a blob of their own (so an image sent in many requests, in
// any wire format, is stored once), and its ref is
// {"t": id of the part's text without them, "i": [[offset, image id]...]}
// (offsets into that text, ascending; the image's base64 goes there).
// A non-object value is stored under the key "".
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace forge::store {

// Stores one blob (a part's text, or an image's bytes) and returns its id;
// the store keys it by its SHA-256.
using InternFn = std::function<Result<int64_t>(std::string_view data)>;
using FetchFn = std::function<Result<std::string>(int64_t id)>;
// Stores one part and returns its ref's JSON text (see above).
using PartFn = std::function<Result<std::string>(std::string_view part)>;

// A part stored through intern: its images first, each a blob, then its text
// without them; returns its ref's text.
Result<std::string> StorePart(std::string_view part, const InternFn& intern);
// The image blob ids a skeleton's text refers to, in the document's order.
std::vector<int64_t> SkeletonImages(std::string_view skeleton);

Result<nlohmann::json> Split(const nlohmann::json& value, const PartFn& part);
Result<nlohmann::json> Split(const nlohmann::json& value, const InternFn& intern);
// The same for JSON text, without parsing it, and the skeleton as its text:
// parts are slices of the text (so a part keeps the text's spacing and key
// order; its hash is of those bytes), and so are small values kept inline.
// A duplicate key stays in the skeleton, whose reader keeps the last, as a
// reader of the text would. Invalid JSON is InvalidData.
Result<std::string> SplitText(std::string_view text, const PartFn& part);
Result<std::string> SplitText(std::string_view text, const InternFn& intern);

// The chat request a proxy sends upstream is the client's request plus a few
// fields; it is stored as the exact top-level difference from the client's
// request: {"set": {key: value...}, "unset": [key...]}. Both must be objects.
nlohmann::json TopLevelDiff(const nlohmann::json& base, const nlohmann::json& target);
nlohmann::json ApplyTopLevelDiff(const nlohmann::json& base, const nlohmann::json& diff);
// A diff as one flat object, stored like a request (each set key's value
// split into parts, an array's elements each a part): "=" + key for each set
// key, "-" for the unset keys. Stored as {"set": ...} the whole set is one
// part, so a translated request's messages (every image among them) would
// be stored again on every call.
nlohmann::json FlatDiff(const nlohmann::json& diff);
nlohmann::json UnflattenDiff(const nlohmann::json& flat);
Result<nlohmann::json> Join(const nlohmann::json& skeleton, const FetchFn& fetch);

// A stored JSON text as a document, for a reader. Objects and arrays nested
// deeper than kMaxJsonDepthCeiling (deeper than any proxy accepts now)
// come back as one string holding the text, so no reader crashes on what an
// older proxy recorded; text that is not JSON is InvalidData naming what.
Result<nlohmann::json> ReadStoredJson(std::string_view text, const std::string& what);

}  // namespace forge::store
