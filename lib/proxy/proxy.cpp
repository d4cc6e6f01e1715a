#include "proxy/proxy.h"

#include <pthread.h>

#include <thread>

#include "proxy/asio.h"
#include "proxy/server_asio.h"

namespace forge::proxy {

Result<UpstreamApiKind> ParseUpstreamApi(const std::string& name) {
  if (name == "openai") return UpstreamApiKind::kOpenAI;
  if (name == "anthropic") return UpstreamApiKind::kAnthropic;
  return Status::InvalidArgument("--upstream-api " + name + ": openai or anthropic");
}

Status RunProxy(const ProxyConfig& config) {
  if (config.store_path.empty()) return Status::InvalidArgument("--store is required");
  if (config.upstreams.empty() && config.replay_path.empty()) {
    return Status::InvalidArgument("give at least one --upstream URL, or --replay FILE");
  }
  auto upstream_api = ParseUpstreamApi(config.upstream_api);
  if (!upstream_api.ok()) return upstream_api.status();
  std::string api_key;
  if (!config.upstream_key_env.empty()) {
    api_key = config.env->VarOr(config.upstream_key_env, "");
    if (api_key.empty()) return Status::BadConfig("--upstream-key-env " + config.upstream_key_env + ": not set");
  }
  // One connection for the writer thread, one for lookups on the io threads,
  // so a group commit never blocks a secret lookup behind the same mutex.
  auto writer = store::Store::Open(config.store_path);
  if (!writer.ok()) return writer.status().Prefixed("--store " + config.store_path);
  auto reader = store::Store::Open(config.store_path);
  if (!reader.ok()) return reader.status().Prefixed("--store " + config.store_path);

  std::unique_ptr<ReplayIndex> replay;
  if (!config.replay_path.empty()) {
    auto loaded = ReplayIndex::Load(config.replay_path, *config.env);
    if (!loaded.ok()) return loaded.status();
    replay = std::move(*loaded);
    config.env->Note("replaying " + std::to_string(replay->size()) + " recorded responses from " + config.replay_path +
                     (replay->bad_lines() ? " (" + std::to_string(replay->bad_lines()) + " bad lines skipped)" : ""));
  }

  int threads = std::max(1, config.threads);
  // The io_context, the pool and the server are deliberately never destroyed:
  // connections still parked in the io_context when we return (idle keep-alive
  // clients) hold coroutine frames that refer to all three, and the process is
  // about to exit anyway.
  // One io_context per thread (see server_asio.h).
  std::vector<asio::io_context*> contexts;
  for (int i = 0; i < threads; ++i) contexts.push_back(new asio::io_context(1));
  asio::io_context& io = *contexts.front();
  auto pool = UpstreamPool::Create(io, config.upstreams, api_key, config.upstream_ca_file);
  if (!pool.ok()) return pool.status();
  UpstreamPool* upstreams = pool->release();

  auto* server_owner = new Server(config, *upstream_api, contexts, **writer, **reader, *upstreams, replay.get());
  Server& server = *server_owner;
  FORGE_RETURN_IF_ERROR(server.Open());
  server.Start();
  config.env->Note("listening on http://" + config.listen_host + ":" + std::to_string(config.port) +
                   ", recording to " + config.store_path);
  std::vector<std::thread> workers;
  for (int i = 1; i < threads; ++i) {
    asio::io_context* context = contexts[static_cast<size_t>(i)];
    // Kept running while idle: connections arrive from the acceptor's context.
    workers.emplace_back([context, i] {
      // Named, so top -H, perf and gdb tell the io threads from the writer.
      pthread_setname_np(pthread_self(), ("forge-io-" + std::to_string(i)).c_str());
      auto guard = asio::make_work_guard(*context);
      context->run();
    });
  }
  io.run();
  for (auto& t : workers) t.join();
  server.Finish();  // commits whatever is still queued
  writer->release();  // used by the (never destroyed) server
  reader->release();
  replay.release();
  return Status::Ok();
}

}  // namespace forge::proxy
