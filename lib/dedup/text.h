// What forge-dedup compares: the text taken from chosen fields of a record,
// its normalised form for the exact-duplicate stage, and a content hash that
// names a text in caches.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "records/jsonl.h"

namespace forge::dedup {

// Follows a dotted path ("a.b.c"; a numeric part indexes an array). nullptr
// when any part is missing.
const records::Json* FindPath(const records::Json& record, std::string_view path);

// The text of the given fields, joined by newlines: strings as they are, other
// values as compact JSON. With no fields, the whole record without id_field.
// std::nullopt when none of the fields is present.
std::optional<std::string> ExtractText(const records::Json& record,
                                       const std::vector<std::string>& fields,
                                       const std::string& id_field);

// The record's id as text: the id field (strings as is, other values as JSON),
// or std::nullopt when the record has none.
std::optional<std::string> ExtractId(const records::Json& record, const std::string& id_field);

// Lower-cases ASCII letters, turns every run of whitespace (ASCII, and
// Unicode's spaces in UTF-8: a no-break space from HTML's &nbsp; among them)
// into one space and trims the ends, so that copies differing only in case or
// spacing collide.
std::string Normalise(std::string_view text);

// SHA-256 of the bytes, as 64 lower-case hex digits.
std::string ContentHash(std::string_view bytes);

}  // namespace forge::dedup
