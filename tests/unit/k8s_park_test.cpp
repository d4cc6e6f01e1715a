// A wait parked on the run's watch (sandbox/k8s/pod_watcher.h): state kept
// by pod name, no thread blocked, decided by the pod's watch event, a watch
// outage, a stop request, its deadline, or the watcher's end. Against the
// fake API server's scale mode at the HTTP seam.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

#include "../fakes/k8s_fake_server.h"
#include "sandbox/k8s/api_client.h"
#include "sandbox/k8s/pod_watcher.h"

using forge::Kind;
using forge::Result;
using forge::testing::FakeK8s;
namespace k8s = forge::sandbox::k8s;
using Clock = std::chrono::steady_clock;

namespace {

constexpr const char* kSelector = "forge.run=park";

// What a parked wait was woken with, and on which thread.
struct Woken {
  std::mutex mu;
  std::condition_variable given;
  std::optional<Result<k8s::PodView>> answer;
  std::thread::id thread;
  int calls = 0;

  k8s::RunWatcher::Wake Wake() {
    return [this](Result<k8s::PodView> result) {
      std::lock_guard<std::mutex> lock(mu);
      answer = std::move(result);
      thread = std::this_thread::get_id();
      ++calls;
      given.notify_all();
    };
  }
  bool WaitFor(std::chrono::milliseconds limit) {
    std::unique_lock<std::mutex> lock(mu);
    return given.wait_for(lock, limit, [&] { return answer.has_value(); });
  }
};

k8s::RunWatcher::Wait Running(Clock::duration within, std::function<bool()> stop = {}) {
  return {"start", Clock::now() + within, std::move(stop),
          [](const k8s::PodView& view) -> std::optional<Result<k8s::PodView>> {
            if (view.state == k8s::PodView::kRunning) return view;
            return std::nullopt;
          }};
}

k8s::Cluster ClusterOf(const std::string& server, const std::string& token) {
  k8s::Cluster cluster;
  cluster.server = server;
  cluster.namespace_ = "forge-test";
  cluster.token = token;
  return cluster;
}

void CreatePod(k8s::ApiClient& client, const std::string& name) {
  nlohmann::json pod = {{"apiVersion", "v1"},
                        {"kind", "Pod"},
                        {"metadata", {{"name", name}, {"labels", {{"forge.run", "park"}}}}},
                        {"spec", {{"containers", {{{"name", "main"}, {"image", "busybox:1.36"}}}}}}};
  auto created = client.Call("POST", "/api/v1/namespaces/forge-test/pods", pod.dump(), "create pod");
  REQUIRE_MESSAGE(created.ok(), created.status().message());
  REQUIRE(created->status == 201);
}

}  // namespace

TEST_CASE("k8s park: a parked wait holds no thread and is woken by its pod's watch event") {
  FakeK8s fake;
  k8s::ApiClient client(ClusterOf(fake.url(), fake.token()), fake.Options());
  k8s::RunWatcher watcher(client, "forge-test", kSelector, "main", 30);
  Woken other, mine;
  watcher.Park("park-other", Running(std::chrono::seconds(30)), other.Wake());
  watcher.Park("park-1", Running(std::chrono::seconds(30)), mine.Wake());
  CHECK(watcher.parked() == 2);
  CHECK_FALSE(mine.WaitFor(std::chrono::milliseconds(300)));  // nothing to decide yet
  CreatePod(client, "park-1");
  REQUIRE(mine.WaitFor(std::chrono::seconds(20)));
  REQUIRE_MESSAGE(mine.answer->ok(), mine.answer->status().message());
  CHECK((*mine.answer)->state == k8s::PodView::kRunning);
  CHECK(mine.thread != std::this_thread::get_id());  // the watch's thread woke it
  CHECK(mine.calls == 1);
  // Only the wait on that pod was decided.
  CHECK(watcher.parked() == 1);
  CHECK_FALSE(other.answer.has_value());

  // A pod the watch has already seen running is decided at once, on the
  // caller's thread.
  Woken again;
  watcher.Park("park-1", Running(std::chrono::seconds(30)), again.Wake());
  REQUIRE(again.answer.has_value());
  CHECK(again.answer->ok());
  CHECK(again.thread == std::this_thread::get_id());
}

TEST_CASE("k8s park: a watch outage past its limit wakes the parked wait as Unavailable") {
  // Nothing listens there: every list fails, retried with backoff.
  FakeK8s fake;
  k8s::K8sOptions options = fake.Options();
  options.max_backoff_seconds = 0;
  k8s::ApiClient client(ClusterOf("http://127.0.0.1:1", "t"), options);
  k8s::RunWatcher watcher(client, "forge-test", kSelector, "main", 30, std::chrono::milliseconds(200));
  Woken woken;
  const auto parked_at = Clock::now();
  watcher.Park("park-2", Running(std::chrono::seconds(60)), woken.Wake());
  REQUIRE(woken.WaitFor(std::chrono::seconds(30)));
  REQUIRE_FALSE(woken.answer->ok());
  CHECK(woken.answer->status().kind() == Kind::kUnavailable);
  CHECK(woken.answer->status().message().find("cannot watch pods") != std::string::npos);
  CHECK(Clock::now() - parked_at < std::chrono::seconds(30));  // long before its deadline
  CHECK(watcher.parked() == 0);
}

TEST_CASE("k8s park: a stop request and a deadline wake parked waits; the watcher's end cancels the rest") {
  FakeK8s fake;
  k8s::ApiClient client(ClusterOf(fake.url(), fake.token()), fake.Options());
  std::atomic<bool> stop{false};
  Woken cancelled, late, left;
  {
    k8s::RunWatcher watcher(client, "forge-test", kSelector, "main", 30);
    watcher.Park("park-3", Running(std::chrono::seconds(60), [&] { return stop.load(); }), cancelled.Wake());
    watcher.Park("park-4", Running(std::chrono::milliseconds(300)), late.Wake());
    watcher.Park("park-5", Running(std::chrono::seconds(60)), left.Wake());
    CHECK(watcher.parked() == 3);

    REQUIRE(late.WaitFor(std::chrono::seconds(10)));
    REQUIRE_FALSE(late.answer->ok());
    CHECK(late.answer->status().kind() == Kind::kUnavailable);
    CHECK(late.answer->status().message().find("did not start in time (phase not seen yet)") != std::string::npos);
    CHECK_FALSE(cancelled.answer.has_value());

    stop = true;
    REQUIRE(cancelled.WaitFor(std::chrono::seconds(10)));
    REQUIRE_FALSE(cancelled.answer->ok());
    CHECK(cancelled.answer->status().kind() == Kind::kCancelled);
    CHECK(cancelled.answer->status().message().find("interrupted while waiting for pod park-3") != std::string::npos);
    CHECK(watcher.parked() == 1);
    CHECK_FALSE(left.answer.has_value());
  }
  REQUIRE(left.answer.has_value());
  CHECK(left.answer->status().kind() == Kind::kCancelled);
  CHECK(left.calls == 1);
  CHECK(cancelled.calls == 1);
  CHECK(late.calls == 1);
}

TEST_CASE("k8s watch: a relist pages the run's pods (limit and continue) and keeps no pod's spec") {
  FakeK8s fake;
  k8s::ApiClient client(ClusterOf(fake.url(), fake.token()), fake.Options());
  const int pods = 2 * k8s::kListPage + 50;
  for (int i = 0; i < pods; ++i) CreatePod(client, "page-" + std::to_string(i));
  k8s::RunWatcher watcher(client, "forge-test", kSelector, "main", 30);
  // Every pod seen by the first list (its pages), none missed at a page's edge.
  bool all = false;
  for (int tries = 0; tries < 400 && !all; ++tries) {
    all = true;
    for (int i = 0; i < pods && all; ++i) all = watcher.Latest("page-" + std::to_string(i)).has_value();
    if (!all) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  CHECK(all);
  CHECK(watcher.stats().lists == 3);  // pages of kListPage, not one body of every pod
}

TEST_CASE("k8s watch: a pod list page is read without the pods' specs and managedFields") {
  const std::string body = R"({"kind":"PodList","metadata":{"resourceVersion":"7","continue":"c"},"items":[
    {"metadata":{"name":"a","labels":{"spec":"kept"},"managedFields":[{"manager":"x"}]},
     "spec":{"containers":[{"name":"main","env":[{"name":"BIG","value":"..."}]}]},
     "status":{"phase":"Running","containerStatuses":[{"name":"main","state":{"running":{}}}]}}]})";
  const nlohmann::json page = k8s::ParsePodList(body);
  const nlohmann::json& pod = page["items"][0];
  CHECK_FALSE(pod.contains("spec"));
  CHECK_FALSE(pod["metadata"].contains("managedFields"));
  CHECK(pod["metadata"]["labels"]["spec"] == "kept");  // only the pod's own spec goes
  CHECK(page["metadata"]["continue"] == "c");
  CHECK(k8s::ClassifyPod(pod, "main").state == k8s::PodView::kRunning);
  CHECK_THROWS_AS(k8s::ParsePodList("{\"items\": ["), nlohmann::json::exception);
}
