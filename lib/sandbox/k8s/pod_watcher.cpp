#include "sandbox/k8s/pod_watcher.h"

#include <set>

#include "base/thread_stack.h"
#include "sandbox/k8s/api_client.h"

namespace forge::sandbox::k8s {
namespace {

using Json = nlohmann::json;

const Json& Field(const Json& obj, const char* key) {
  static const Json kNull;
  if (!obj.is_object() || !obj.contains(key)) return kNull;
  return obj[key];
}

std::string Text(const Json& obj, const char* key) {
  const Json& v = Field(obj, key);
  return v.is_string() ? v.get<std::string>() : "";
}

// Waiting reasons that will not fix themselves while a rollout waits.
const std::set<std::string>& InfraWaitingReasons() {
  static const std::set<std::string> reasons = {
      "ErrImagePull",         "ImagePullBackOff",          "InvalidImageName",
      "ErrImageNeverPull",    "RegistryUnavailable",       "SignatureValidationFailed",
      "CreateContainerConfigError", "CreateContainerError", "CrashLoopBackOff",
      "RunContainerError"};
  return reasons;
}

// A pod that will not run: BadConfig when its image will not be pulled on
// the next try either (missing, refused, invalid), else Unavailable.
Status PodWillNotRun(const std::string& pod, const PodView& view) {
  if (!PullMayPass(view.pull)) {
    return Status::BadConfig("pod " + pod + ": " + view.reason + " (" + PullFailureHint(view.pull, view.image) + ")");
  }
  return Status::Unavailable("pod " + pod + ": " + view.reason);
}

// The main container's terminated state and readiness.
void NoteContainer(const Json& statuses, const std::string& container, PodView& view) {
  if (!statuses.is_array()) return;
  for (const Json& cs : statuses) {
    if (Text(cs, "name") != container) continue;
    const Json& terminated = Field(Field(cs, "state"), "terminated");
    view.ready = Field(cs, "ready").is_boolean() && cs["ready"].get<bool>();
    if (!terminated.is_object()) return;
    view.terminated = true;
    const Json& code = Field(terminated, "exitCode");
    view.exit_code = code.is_number_integer() ? code.get<int>() : -1;
    view.message = Text(terminated, "message");
    return;
  }
}

// How often parked waits are checked for a stop request or their deadline.
constexpr std::chrono::milliseconds kTick{250};

}  // namespace

PodView ClassifyPod(const Json& pod, const std::string& container) {
  PodView view;
  const Json& status = Field(pod, "status");
  view.phase = Text(status, "phase");
  NoteContainer(Field(status, "containerStatuses"), container, view);
  const Json& metadata = Field(pod, "metadata");
  if (Field(metadata, "deletionTimestamp").is_string()) {
    view.state = PodView::kDeleted;
    view.reason = "the pod is being deleted";
    return view;
  }
  if (view.phase == "Failed" || view.phase == "Succeeded") {
    view.state = PodView::kEnded;
    std::string reason = Text(status, "reason");  // DeadlineExceeded, Evicted, ...
    std::string message = Text(status, "message");
    view.reason = "pod " + view.phase + (reason.empty() ? "" : " (" + reason + ")") +
                  (message.empty() ? "" : ": " + message);
    return view;
  }
  const Json& statuses = Field(status, "containerStatuses");
  if (statuses.is_array()) {
    for (const Json& cs : statuses) {
      if (Text(cs, "name") != container && statuses.size() > 1) continue;
      const Json& state = Field(cs, "state");
      const Json& waiting = Field(state, "waiting");
      std::string reason = Text(waiting, "reason");
      if (InfraWaitingReasons().count(reason)) {
        view.state = PodView::kInfraError;
        std::string message = Text(waiting, "message");
        view.reason = reason + (message.empty() ? "" : ": " + message);
        view.pull = ClassifyPullFailure(reason, message);
        if (view.pull != PullFailure::kNone) view.image = Text(cs, "image");
        return view;
      }
      const Json& terminated = Field(state, "terminated");
      if (terminated.is_object()) {
        view.state = PodView::kEnded;
        view.reason = "container " + Text(cs, "name") + " terminated (" +
                      Text(terminated, "reason") + ")";
        return view;
      }
      if (view.phase == "Running" && Field(state, "running").is_object()) {
        view.state = PodView::kRunning;
        return view;
      }
    }
  }
  if (view.phase == "Pending") {
    const Json& conditions = Field(status, "conditions");
    if (conditions.is_array()) {
      for (const Json& c : conditions) {
        if (Text(c, "type") == "PodScheduled" && Text(c, "status") == "False" &&
            Text(c, "reason") == "Unschedulable") {
          view.state = PodView::kInfraError;
          std::string message = Text(c, "message");
          view.reason = "Unschedulable" + (message.empty() ? "" : ": " + message);
          return view;
        }
      }
    }
  }
  // Running without container statuses yet, ContainerCreating, Unknown: wait.
  return view;
}

RunWatcher::RunWatcher(ApiClient& client, std::string namespace_, std::string label_selector,
                       std::string container, int watch_timeout_seconds, std::chrono::milliseconds watch_outage)
    : client_(client),
      namespace_(std::move(namespace_)),
      selector_(std::move(label_selector)),
      container_(std::move(container)),
      watch_timeout_(watch_timeout_seconds),
      watch_outage_(watch_outage) {
  thread_ = std::thread([this] { Loop(); });
  ticker_ = std::thread([this] { Tick(); });
}

RunWatcher::~RunWatcher() {
  stop_ = true;
  changed_.notify_all();
  thread_.join();
  ticker_.join();
  Woken woken;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [pod, parked] : parked_) {
      woken.emplace_back(std::move(parked.wake), Status::Cancelled("pod " + pod + ": the run's watch has ended"));
    }
    parked_.clear();
  }
  Call(woken);
}

void RunWatcher::Failed(const std::string& why) {
  Woken woken;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (failures_++ == 0) failing_since_ = Clock::now();
    last_error_ = why;
    Sweep(nullptr, woken);
  }
  Call(woken);
}

void RunWatcher::Apply(const std::string& type, const Json& pod) {
  std::string name = Text(Field(pod, "metadata"), "name");
  if (name.empty()) return;
  PodView view;
  if (type == "DELETED") {
    view.state = PodView::kDeleted;
    view.reason = "the pod was deleted";
  } else {
    view = ClassifyPod(pod, container_);
  }
  Woken woken;
  {
    std::lock_guard<std::mutex> lock(mu_);
    failures_ = 0;
    // A pod forgotten (its rollout is over) is not brought back by its end.
    if (type == "DELETED" && !pods_.count(name)) return;
    pods_[name] = view;
    // Only the wait on this pod is decided, not every rollout in flight.
    Sweep(&name, woken);
  }
  Call(woken);
}

Json ParsePodList(const std::string& body) {
  return Json::parse(body, [](int depth, Json::parse_event_t event, Json& parsed) {
    if (event != Json::parse_event_t::key) return true;
    // {"items": [{"spec": ..., "metadata": {"managedFields": ...}}]}
    return !((depth == 3 && parsed == "spec") || (depth == 4 && parsed == "managedFields"));
  });
}

// Page by page (kListPage pods); the watch starts from the list's
// resourceVersion, the same on every page of it. A failed page (a continue
// token expired: 410) fails the list, which Loop starts again.
bool RunWatcher::List() {
  const std::string base = "/api/v1/namespaces/" + ApiClient::Escape(namespace_) +
                           "/pods?labelSelector=" + ApiClient::Escape(selector_) +
                           "&limit=" + std::to_string(kListPage);
  std::string next;  // the continue token
  std::string version;
  do {
    const std::string path = next.empty() ? base : base + "&continue=" + ApiClient::Escape(next);
    Result<HttpResponse> response = client_.Call("GET", path, "", "list pods");
    stats_.lists++;
    if (!response.ok()) {
      Failed(response.status().message());
      return false;
    }
    if (response->status != 200) {
      Failed(ApiError(*response, "list pods").message());
      return false;
    }
    Json page;
    try {
      page = ParsePodList(response->body);
    } catch (const Json::exception& e) {
      Failed(std::string("list pods: malformed JSON: ") + e.what());
      return false;
    }
    response->body = std::string();
    const Json& items = Field(page, "items");
    if (items.is_array()) {
      for (const Json& pod : items) Apply("ADDED", pod);
    }
    const Json& metadata = Field(page, "metadata");
    version = Text(metadata, "resourceVersion");
    std::string after = Text(metadata, "continue");
    if (!after.empty() && after == next) {
      Failed("list pods: the API server gave the same continue token twice");
      return false;
    }
    next = std::move(after);
  } while (!next.empty() && !stop_);
  if (stop_) return false;
  resource_version_ = version;
  std::lock_guard<std::mutex> lock(mu_);
  failures_ = 0;
  return true;
}

bool RunWatcher::Watch() {
  std::string path = "/api/v1/namespaces/" + ApiClient::Escape(namespace_) +
                     "/pods?labelSelector=" + ApiClient::Escape(selector_) +
                     "&watch=true&allowWatchBookmarks=true&resourceVersion=" +
                     ApiClient::Escape(resource_version_) +
                     "&timeoutSeconds=" + std::to_string(watch_timeout_);
  stats_.watches++;
  bool gone = false;
  std::string error_event;
  std::string body;  // of a non-200 answer
  Result<long> status = client_.Stream(
      path,
      [&](std::string_view line) {
        Json event;
        try {
          event = Json::parse(line);
        } catch (const Json::exception&) {
          body.append(line);  // an error body, or garbage: reported below
          return body.size() < 4096;
        }
        std::string type = Text(event, "type");
        const Json& object = Field(event, "object");
        if (type.empty() && Text(event, "kind") == "Status") {  // a plain error answer
          body = std::string(line);
          return false;
        }
        stats_.events++;
        if (type == "ERROR") {
          if (Field(object, "code").is_number() && object["code"].get<int>() == 410) {
            gone = true;
          } else {
            error_event = Text(object, "message");
          }
          return false;
        }
        std::string rv = Text(Field(object, "metadata"), "resourceVersion");
        if (!rv.empty()) resource_version_ = rv;
        if (type != "BOOKMARK") Apply(type, object);
        return true;
      },
      stop_);
  if (stop_) return true;
  if (!status.ok()) {
    Failed(status.status().message());
    return false;
  }
  if (*status == 410) gone = true;
  if (gone) {
    stats_.gone++;
    resource_version_.clear();  // the history is gone: list again
    return true;
  }
  if (*status != 200) {
    Failed(ApiError(HttpResponse{*status, body}, "watch pods").message());
    resource_version_.clear();
    return false;
  }
  if (!error_event.empty()) {
    Failed("watch pods: " + error_event);
    resource_version_.clear();
    return false;
  }
  return true;  // a clean end (timeoutSeconds): reopen from resource_version_
}

void RunWatcher::Loop() {
  int backoff_ms = 100;
  while (!stop_) {
    bool ok = true;
    if (resource_version_.empty()) ok = List();
    if (ok) ok = Watch();
    if (ok) {
      backoff_ms = 100;
      continue;
    }
    std::unique_lock<std::mutex> lock(mu_);
    changed_.wait_for(lock, std::chrono::milliseconds(backoff_ms), [this] { return stop_.load(); });
    backoff_ms = std::min(backoff_ms * 2, 5000);
  }
}

std::optional<PodView> RunWatcher::Latest(const std::string& pod) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pods_.find(pod);
  if (it == pods_.end()) return std::nullopt;
  return it->second;
}

RunWatcher::Wait RunWatcher::Running(const std::string& pod, Clock::time_point deadline,
                                     std::function<bool()> stop_requested) {
  return {"start", deadline, std::move(stop_requested), [pod](const PodView& view) -> std::optional<Result<PodView>> {
    switch (view.state) {
      case PodView::kRunning:
        return view;
      case PodView::kInfraError:
        return PodWillNotRun(pod, view);
      case PodView::kEnded:
      case PodView::kDeleted:
        return Status::Unavailable("pod " + pod + " will not run: " + view.reason);
      case PodView::kWaiting:
        break;
    }
    return std::nullopt;
  }};
}

RunWatcher::Wait RunWatcher::Done(const std::string& pod, bool held, Clock::time_point deadline,
                                  std::function<bool()> stop_requested) {
  return {"end its command", deadline, std::move(stop_requested),
          [pod, held](const PodView& view) -> std::optional<Result<PodView>> {
            if (view.state == PodView::kDeleted) return Status::Unavailable("pod " + pod + ": " + view.reason);
            if (view.terminated) return view;
            if (held && view.ready && view.state == PodView::kRunning) return view;
            if (view.state == PodView::kInfraError) return PodWillNotRun(pod, view);
            if (view.state == PodView::kEnded) return Status::Unavailable("pod " + pod + ": " + view.reason);
            return std::nullopt;
          }};
}

Result<PodView> RunWatcher::WaitRunning(const std::string& pod, Clock::time_point deadline,
                                        const std::function<bool()>& stop_requested) {
  return WaitFor(pod, Running(pod, deadline, stop_requested));
}

void RunWatcher::Forget(const std::string& pod) {
  std::lock_guard<std::mutex> lock(mu_);
  pods_.erase(pod);
}

std::optional<Result<PodView>> RunWatcher::Decided(const std::string& pod, const Wait& wait, Clock::time_point now) {
  auto it = pods_.find(pod);
  if (it != pods_.end()) {
    if (auto answer = wait.decide(it->second)) return answer;
  }
  // The watch thread reconnects by itself: an API server that throttles or
  // restarts for a while fails no rollout; one that stays away does.
  if (failures_ >= 5 && now - failing_since_ >= watch_outage_) {
    return Status::Unavailable("pod " + pod + ": cannot watch pods: " + last_error_);
  }
  if (wait.stop_requested && wait.stop_requested()) {
    return Status::Cancelled("interrupted while waiting for pod " + pod + " to " + wait.what);
  }
  if (now >= wait.deadline) {
    std::string phase = it != pods_.end() ? it->second.phase : "not seen yet";
    return Status::Unavailable("pod " + pod + " did not " + wait.what + " in time (phase " +
                               (phase.empty() ? "unknown" : phase) + ")");
  }
  return std::nullopt;
}

void RunWatcher::Sweep(const std::string* pod, Woken& woken) {
  const auto now = Clock::now();
  auto decide = [&](std::map<std::string, Parked>::iterator it) {
    auto answer = Decided(it->first, it->second.wait, now);
    if (!answer) return std::next(it);
    woken.emplace_back(std::move(it->second.wake), std::move(*answer));
    return parked_.erase(it);
  };
  if (pod != nullptr) {
    if (auto it = parked_.find(*pod); it != parked_.end()) decide(it);
    return;
  }
  for (auto it = parked_.begin(); it != parked_.end();) it = decide(it);
}

void RunWatcher::Call(Woken& woken) {
  for (auto& [wake, answer] : woken) wake(std::move(answer));
}

void RunWatcher::Tick() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!changed_.wait_for(lock, kTick, [this] { return stop_.load(); })) {
    Woken woken;
    Sweep(nullptr, woken);
    if (woken.empty()) continue;
    lock.unlock();
    Call(woken);
    lock.lock();
  }
}

void RunWatcher::Park(const std::string& pod, Wait wait, Wake wake) {
  std::unique_lock<std::mutex> lock(mu_);
  if (auto answer = Decided(pod, wait, Clock::now())) {
    lock.unlock();
    wake(std::move(*answer));
    return;
  }
  parked_.insert_or_assign(pod, Parked{std::move(wait), std::move(wake)});
}

size_t RunWatcher::parked() {
  std::lock_guard<std::mutex> lock(mu_);
  return parked_.size();
}

Result<PodView> RunWatcher::WaitFor(const std::string& pod, Wait wait) {
  // A rollout waits here for most of its life (its pod to start, then its
  // harness to end): its thread keeps only the stack this wait uses.
  ReleaseStackBelow();
  struct Answer {
    std::mutex mu;
    std::condition_variable given;
    std::optional<Result<PodView>> result;
  } answer;
  Park(pod, std::move(wait), [&answer](Result<PodView> result) {
    std::lock_guard<std::mutex> lock(answer.mu);
    answer.result = std::move(result);
    answer.given.notify_one();
  });
  std::unique_lock<std::mutex> lock(answer.mu);
  answer.given.wait(lock, [&] { return answer.result.has_value(); });
  return std::move(*answer.result);
}

}  // namespace forge::sandbox::k8s
