// Starts tests/fakes/k8s_api_server.py (a test double of a Kubernetes API
// server) on 127.0.0.1 (a random port) for one test or benchmark, and talks
// to its /_fake control endpoints. The unit tests and the benchmark use its
// scale mode (pods are not processes; exec runs host processes); e2e tests
// that want pods as Docker containers start it with --mode real themselves
// (tests/support/k8s_fake.sh).
#pragma once

#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdexcept>
#include <string>
#include <vector>

#include <curl/curl.h>
#include <nlohmann/json.hpp>

#include "sandbox/k8s/options.h"
#include "forge_paths.h"

extern char** environ;

namespace forge::testing {

class FakeK8s {
 public:
  // With a certificate and key (PEM files) it serves HTTPS. extra_args go to
  // the server as they are (e.g. {"--nodes", "100"}).
  explicit FakeK8s(std::string token = "test-token", double start_delay = 0.05,
                   const std::string& tls_cert = "", const std::string& tls_key = "",
                   const std::string& tls_client_ca = "",
                   const std::vector<std::string>& extra_args = {})
      : token_(std::move(token)), tls_(!tls_cert.empty()) {
    int fds[2];
    if (pipe(fds) != 0) throw std::runtime_error("pipe");
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
    posix_spawn_file_actions_addclose(&actions, fds[0]);
    posix_spawn_file_actions_addclose(&actions, fds[1]);
    std::string script = std::string(FORGE_SOURCE_DIR) + "/tests/fakes/k8s_api_server.py";
    // The namespaces the tests' options and kubeconfigs name must exist, as
    // in a real cluster.
    std::vector<std::string> args = {"python3", script, "--mode", "scale", "--token", token_,
                                     "--start-delay", std::to_string(start_delay),
                                     "--namespace", "forge-test", "--namespace", "from-kubeconfig",
                                     "--nodes", "3"};
    args.insert(args.end(), extra_args.begin(), extra_args.end());
    if (tls_) {
      args.insert(args.end(), {"--tls-cert", tls_cert, "--tls-key", tls_key});
    }
    if (!tls_client_ca.empty()) args.insert(args.end(), {"--tls-client-ca", tls_client_ca});
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    int rc = posix_spawnp(&pid_, "python3", &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    close(fds[1]);
    if (rc != 0) throw std::runtime_error("cannot start python3");
    std::string line;
    pollfd fd{fds[0], POLLIN, 0};
    while (line.find('\n') == std::string::npos) {
      if (poll(&fd, 1, 15000) <= 0) break;
      char buffer[256];
      ssize_t n = read(fds[0], buffer, sizeof buffer);
      if (n <= 0) break;
      line.append(buffer, n);
    }
    close(fds[0]);
    if (line.rfind("PORT ", 0) != 0) {
      Stop();
      throw std::runtime_error("fake API server did not start: " + line);
    }
    port_ = std::stoi(line.substr(5));
  }
  ~FakeK8s() { Stop(); }
  FakeK8s(const FakeK8s&) = delete;
  FakeK8s& operator=(const FakeK8s&) = delete;

  std::string url() const {
    return (tls_ ? "https://127.0.0.1:" : "http://127.0.0.1:") + std::to_string(port_);
  }
  const std::string& token() const { return token_; }

  sandbox::k8s::K8sOptions Options() const {
    sandbox::k8s::K8sOptions options;
    options.server = url();
    options.token = token_;
    options.namespace_ = "forge-test";
    options.qps = 200;
    options.burst = 50;
    options.start_timeout_seconds = 10;
    options.watch_timeout_seconds = 30;
    options.max_backoff_seconds = 2;
    return options;
  }

  nlohmann::json Configure(const nlohmann::json& config) { return Control("POST", "config", config.dump()); }
  nlohmann::json Expire() { return Control("POST", "expire", "{}"); }
  nlohmann::json Stats() { return Control("GET", "stats", ""); }
  nlohmann::json Pods() { return Control("GET", "pods", "")["items"]; }
  // Node-pressure evictions ("fail") or Eviction API deletions ("delete").
  nlohmann::json Evict(const nlohmann::json& request) { return Control("POST", "evict", request.dump()); }
  // Connections dropped and the port closed for `downtime` seconds; state kept.
  nlohmann::json Restart(double downtime) {
    return Control("POST", "restart", nlohmann::json{{"downtime", downtime}}.dump());
  }

 private:
  static size_t Append(char* data, size_t size, size_t n, void* user) {
    static_cast<std::string*>(user)->append(data, size * n);
    return size * n;
  }

  nlohmann::json Control(const std::string& method, const std::string& what,
                         const std::string& body) {
    CURL* curl = curl_easy_init();
    std::string out;
    std::string target = url() + "/_fake/" + what;
    curl_easy_setopt(curl, CURLOPT_URL, target.c_str());
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method.c_str());
    if (method == "POST") curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, Append);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &out);
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 0L);  // control only, on loopback
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 0L);
    CURLcode rc = curl_easy_perform(curl);
    curl_easy_cleanup(curl);
    if (rc != CURLE_OK) throw std::runtime_error("fake control " + what + " failed");
    return nlohmann::json::parse(out);
  }

  void Stop() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      int status;
      waitpid(pid_, &status, 0);
      pid_ = -1;
    }
  }

  std::string token_;
  bool tls_ = false;
  pid_t pid_ = -1;
  int port_ = 0;
};

}  // namespace forge::testing
