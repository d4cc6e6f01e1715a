// What a client sees of an upstream's failure, and which failures the proxy
// may retry itself (--upstream-retries). A harness decides whether and when
// to retry from the status and a few headers (Codex CLI retries a 429 only
// with Retry-After; the OpenAI and Anthropic SDKs read retry-after-ms and
// retry-after; Anthropic sends 529 overloaded_error), so those go to the
// client as the upstream sent them; the upstream's address never does.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "proxy/outcome.h"

namespace forge::proxy {

// Whether a field of an upstream's answer is retry-relevant: Retry-After,
// retry-after-ms, x-ratelimit-* and anthropic-ratelimit-*. Those fields, as
// sent, are an answer's retry headers (RetryHeaders in upstream_answer_asio.h
// takes them from Beast's fields); the functions below read them.
bool IsRetryHeader(std::string_view name);

// Seconds the upstream asked to wait (retry-after-ms, else Retry-After as
// seconds; an HTTP date counts as unknown), if it said.
std::optional<double> RetryAfterSeconds(const Headers& retry_headers);

// Whether an answer before its first byte is worth another attempt: a 502
// or 503, or a 429 asking to wait no more than max_wait seconds.
bool RetryableStatus(int status, const Headers& retry_headers, double max_wait);

// The pause before attempt n (1, 2, ...): the upstream's Retry-After if it
// gave one, else 0.25 s doubling, at most 4 s.
double RetryDelay(int attempt, const Headers& retry_headers);

// message with each of the URLs (and "upstream <url>") replaced by "the
// upstream": what a client is told of a failure that names an upstream.
std::string WithoutAddresses(std::string message, const std::vector<std::string>& urls);

}  // namespace forge::proxy
