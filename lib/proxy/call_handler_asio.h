// Asio implementation header (*_asio.h, see asio.h): included by .cpp files and other *_asio.h only.
// A model call, from its request to its record. The server makes a
// CallHandler for each call and runs it; Run reads as the call's stages, in
// their order, each in a file of its own below this one:
//
//   attribute  who calls: the rollout its secret belongs to     attribute.h
//   decode     what is asked, read by the client's format        decode.h (cut_through_asio.h)
//   admit      whether it may go on now: caps, a pause           admission.h
//   exchange   the upstream API chosen from the decoded request,
//              its request sent until an upstream answers        upstream_api_asio.h, upstream_exchange_asio.h
//   relay      the answer to the client as it comes, and into
//              the record                                        openai_upstream.cpp, anthropic_upstream.cpp
//                                                                (replay: replay_answer.h)
//   commit     the record written, once, then the final bytes    call_record.h, client_reply_asio.h
//
// Each stage takes what the ones before it made and returns what the next
// needs (a refusal, a decoded request, an exchange, an Outcome); none calls
// back into an earlier one.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>

#include "proxy/admission.h"
#include "proxy/asio.h"
#include "proxy/auth.h"
#include "proxy/call_record.h"
#include "proxy/client_reply_asio.h"
#include "proxy/cut_through_asio.h"
#include "proxy/decode.h"
#include "proxy/metrics.h"
#include "proxy/proxy.h"
#include "proxy/recorder.h"
#include "proxy/replay.h"
#include "proxy/replay_answer.h"
#include "proxy/retry_keys.h"
#include "proxy/upstream_api_asio.h"
#include "proxy/upstream_exchange_asio.h"

namespace forge::proxy {

// What the calls share: the server's, made once.
struct CallServices {
  const ProxyConfig& config;
  UpstreamApiKind upstream_api;  // --upstream-api
  const std::atomic<bool>& stopping;
  SecretResolver& secrets;
  Admission& admission;
  ReplayIndex* replay;  // --replay: answers come from it, not from an upstream
  RetryKeys& retry_keys;
  Metrics& metrics;
  ExchangeServices exchange;
  UpstreamServices upstream;
  CallRecording::Services recording;
};

class CallHandler {
 public:
  // req: the call's request (route: what serves its path), from client.
  CallHandler(const CallServices& services, tcp::socket& client, Request& req, const Route& route);

  // Runs the call to its end. path_rollout: the /r/<...>/ part of the path;
  // arriving: its body, still arriving (only a chat or completions call
  // starts before it is all there). False: the connection closes.
  Task<bool> Run(std::string path_rollout, ArrivingBody* arriving);

 private:
  std::optional<Refusal> Attribute(std::string path_rollout);
  // A pause for a weight update waited out; false: the client gave up meanwhile.
  Task<bool> WaitOutPause();
  // The upstream API (or, with --replay, the recording) the call goes to.
  std::optional<Refusal> Choose(bool cut_through);
  // The body, arriving, sent upstream as it comes and read (cut_through_asio.h).
  Task<void> Forward(ArrivingBody& arriving, CutThrough& forwarded);
  // The key the call keeps if it succeeds (RetryKeys), for SDKs that mark their retries.
  std::string RetryKey();
  // Exchange and relay: the outcome of a call that goes upstream.
  Task<Outcome> ExchangeAndRelay(CallRecording& recording, CutThrough& forwarded);
  // Commit, and the client's last bytes.
  Task<bool> Commit(CallRecording& recording, Outcome outcome);

  const CallServices& services_;
  tcp::socket& client_;
  Request& req_;
  const double t0_;  // for the latency metric
  const DecodeLimits limits_;
  std::string rollout_;
  DecodedCall call_;
  ClientReply reply_;
  std::unique_ptr<UpstreamApi> upstream_;
  std::optional<ReplayAnswer> replayed_;
  std::optional<LoggedRequest> logged_;  // the request text, logged as a forwarded body went upstream
};

}  // namespace forge::proxy
