// The Kubernetes backend against a fake API server at the HTTP seam
// (tests/fakes/k8s_api_server.py, real HTTP and WebSocket over loopback),
// plus the pure parts: kubeconfig, pod classification, exec status, framing.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "../fakes/k8s_fake_server.h"
#include "sandbox/k8s/exec_channel.h"
#include "sandbox/k8s/k8s_backend.h"
#include "sandbox/k8s/pod_spec.h"
#include "sandbox/k8s/pod_watcher.h"
#include "sandbox/k8s/pull_secret.h"
#include "base/base64.h"
#include "sandbox/k8s/rate_limiter.h"
#include "sandbox/k8s/websocket.h"
#include "verify/backends.h"
#include "support/fake_env.h"
#include "support/temp_dir.h"

namespace fs = std::filesystem;
using forge::Kind;
using forge::sandbox::ExecRequest;
using forge::sandbox::Spec;
using forge::testing::FakeK8s;
using nlohmann::json;
namespace k8s = forge::sandbox::k8s;

namespace {

Spec TestSpec(const std::string& run, const std::string& rollout,
              const std::string& image = "busybox:1.36") {
  Spec spec;
  spec.run_id = run;
  spec.rollout_id = rollout;
  spec.image = image;
  spec.lifetime_seconds = 600;
  spec.workdir = "/work";
  return spec;
}

// The variables and the stop the backends get, unless a test gives its own.
forge::Env& TestEnv() {
  static forge::testing::FakeEnv env;
  return env;
}

std::unique_ptr<k8s::K8sBackend> Backend(const k8s::K8sOptions& options, const forge::Env& env = TestEnv()) {
  auto backend = k8s::MakeK8sBackend(options, env);
  REQUIRE(backend.ok());
  return std::move(*backend);
}

ExecRequest Command(std::vector<std::string> argv) {
  ExecRequest request;
  request.argv = std::move(argv);
  request.timeout_seconds = 20;
  return request;
}

void WriteFile(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

int CountCode(const json& stats, const std::string& kind, int code) {
  int n = 0;
  for (const json& entry : stats["log"]) {
    if (entry[2] == kind && entry[3] == code) ++n;
  }
  return n;
}

}  // namespace

// --- pure parts --------------------------------------------------------

TEST_CASE("kubeconfig: current context, token, CA data, relative paths") {
  const char* text = R"(apiVersion: v1
kind: Config
clusters:
- cluster:
    certificate-authority-data: LS0tLS1CRUdJTiBDRVJU  # "-----BEGIN CERT"
    server: https://10.1.2.3:6443/
  name: prod
- name: dev
  cluster:
    server: "https://dev.example:443"
    certificate-authority: certs/ca.pem
contexts:
- context: {cluster: prod}
  name: broken
- context:
    cluster: dev
    user: dev-user
    namespace: rl
  name: dev
current-context: dev
preferences: {}
users:
- name: dev-user
  user:
    token: 'abc''def'
)";
  // Flow mappings other than {} are outside the subset and say so.
  auto bad = k8s::ClusterFromKubeconfig(text, "broken", "/home/u/.kube");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("line 13: YAML feature not supported") != std::string::npos);

  std::string good = text;
  good.replace(good.find("{cluster: prod}"), 15, "\n    cluster: prod");
  auto dev = k8s::ClusterFromKubeconfig(good, "", "/home/u/.kube");
  REQUIRE(dev.ok());
  CHECK(dev->server == "https://dev.example:443");
  CHECK(dev->namespace_ == "rl");
  CHECK(dev->token == "abc'def");
  CHECK(dev->ca_file == "/home/u/.kube/certs/ca.pem");

  auto prod = k8s::ClusterFromKubeconfig(good, "broken", "/x");
  REQUIRE(prod.ok());
  CHECK(prod->server == "https://10.1.2.3:6443");
  CHECK(prod->ca_data == "-----BEGIN CERT");
  CHECK(prod->namespace_ == "default");

  auto missing = k8s::ClusterFromKubeconfig(good, "staging", "/x");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().kind() == Kind::kBadConfig);
  CHECK(missing.status().message().find("no context 'staging'") != std::string::npos);
}

TEST_CASE("kubeconfig: exec plugins are refused with a clear message") {
  const char* text = R"(clusters:
- name: gke
  cluster:
    server: https://1.2.3.4
contexts:
- name: gke
  context:
    cluster: gke
    user: gke
current-context: gke
users:
- name: gke
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: gke-gcloud-auth-plugin
)";
  auto cluster = k8s::ClusterFromKubeconfig(text, "", "/x");
  REQUIRE_FALSE(cluster.ok());
  CHECK(cluster.status().message().find("exec/auth-provider plugin") != std::string::npos);
}

TEST_CASE("in-cluster config: service account token, CA and namespace") {
  forge::testing::TempDir dir;
  WriteFile(dir.path() / "token", "sa-token\n");
  WriteFile(dir.path() / "ca.crt", "PEM");
  WriteFile(dir.path() / "namespace", "rollouts\n");
  // A pod's environment: no KUBECONFIG, no ~/.kube/config.
  forge::testing::FakeEnv env({{"KUBERNETES_SERVICE_HOST", "10.96.0.1"},
                               {"KUBERNETES_SERVICE_PORT", "443"},
                               {"HOME", dir.path().string()}});

  k8s::K8sOptions options;
  options.service_account_dir = dir.path().string();
  auto cluster = k8s::ResolveCluster(options, env);

  REQUIRE(cluster.ok());
  CHECK(cluster->server == "https://10.96.0.1:443");
  CHECK(cluster->token == "sa-token");
  CHECK(cluster->ca_file == (dir.path() / "ca.crt").string());
  CHECK(cluster->namespace_ == "rollouts");
}

TEST_CASE("pod spec: requests equal limits, deadline, labels, locked-down security") {
  Spec spec = TestSpec("run 7/a", "Task:42#3");
  spec.limits.cpus = 0.5;
  spec.limits.memory_bytes = int64_t{512} << 20;
  spec.user = "1000:1000";
  spec.env["OPENAI_BASE_URL"] = "http://127.0.0.1:8080";
  k8s::K8sOptions options;
  auto pod = k8s::BuildPod(spec, options, "ns1");
  REQUIRE(pod.ok());
  const json& c = (*pod)["spec"]["containers"][0];
  CHECK(c["resources"]["requests"] == c["resources"]["limits"]);
  CHECK(c["resources"]["limits"]["cpu"] == "500m");
  CHECK(c["resources"]["limits"]["memory"] == "512Mi");
  CHECK((*pod)["spec"]["restartPolicy"] == "Never");
  CHECK((*pod)["spec"]["activeDeadlineSeconds"] == 600);
  CHECK((*pod)["metadata"]["labels"]["forge.run"] == "run_7_a");
  CHECK((*pod)["metadata"]["labels"]["forge.rollout"] == "Task_42_3");
  CHECK((*pod)["metadata"]["annotations"]["forge/run-id"] == "run 7/a");
  CHECK((*pod)["metadata"]["generateName"] == "forge-task-42-3-");
  // The keep-alive is the container's args: the image's ENTRYPOINT still runs, as on Docker.
  CHECK_FALSE(c.contains("command"));
  CHECK(c["args"][0] == "sh");
  // The runtime's default capabilities, as docker run gives; --cap-drop-all drops them.
  CHECK_FALSE(c["securityContext"].contains("capabilities"));
  CHECK(c["securityContext"]["allowPrivilegeEscalation"] == false);
  spec.drop_all_capabilities = true;
  spec.gpus = 2;
  auto locked = k8s::BuildPod(spec, options, "ns1");
  REQUIRE(locked.ok());
  const json& lc = (*locked)["spec"]["containers"][0];
  CHECK(lc["securityContext"]["capabilities"]["drop"] == json::array({"ALL"}));
  CHECK(lc["resources"]["limits"]["nvidia.com/gpu"] == "2");
  spec.drop_all_capabilities = false;
  spec.gpus = 0;
  CHECK(c["securityContext"]["runAsNonRoot"] == true);
  CHECK(c["securityContext"]["runAsUser"] == 1000);
  CHECK(c["env"][0]["name"] == "OPENAI_BASE_URL");

  spec.user = "agent";
  CHECK(k8s::BuildPod(spec, options, "ns1").status().kind() == Kind::kInvalidArgument);
  spec.user.clear();
  spec.build_context = "/tasks/x/environment";
  CHECK(k8s::BuildPod(spec, options, "ns1").status().kind() == Kind::kInvalidArgument);
  CHECK(k8s::LabelValue(std::string(100, 'a')).size() == 63);
  CHECK(k8s::CpuQuantity(4) == "4");
  CHECK(k8s::MemoryQuantity(int64_t{4} << 30) == "4Gi");
}

TEST_CASE("pod classification: running, unschedulable, image pull, deadline") {
  auto view = [](const char* text) { return k8s::ClassifyPod(json::parse(text), "main"); };
  CHECK(view(R"({"status":{"phase":"Pending"}})").state == k8s::PodView::kWaiting);
  CHECK(view(R"({"status":{"phase":"Running","containerStatuses":[{"name":"main",
      "state":{"running":{}}}]}})").state == k8s::PodView::kRunning);
  auto unschedulable = view(R"({"status":{"phase":"Pending","conditions":[{"type":"PodScheduled",
      "status":"False","reason":"Unschedulable","message":"0/3 nodes"}]}})");
  CHECK(unschedulable.state == k8s::PodView::kInfraError);
  CHECK(unschedulable.reason == "Unschedulable: 0/3 nodes");
  auto pull = view(R"({"status":{"phase":"Pending","containerStatuses":[{"name":"main",
      "state":{"waiting":{"reason":"ImagePullBackOff","message":"Back-off"}}}]}})");
  CHECK(pull.state == k8s::PodView::kInfraError);
  CHECK(pull.reason == "ImagePullBackOff: Back-off");
  CHECK(view(R"({"status":{"phase":"Pending","containerStatuses":[{"name":"main",
      "state":{"waiting":{"reason":"ContainerCreating"}}}]}})").state == k8s::PodView::kWaiting);
  auto deadline = view(R"({"status":{"phase":"Failed","reason":"DeadlineExceeded"}})");
  CHECK(deadline.state == k8s::PodView::kEnded);
  CHECK(deadline.reason.find("DeadlineExceeded") != std::string::npos);
}

TEST_CASE("exec status: success, exit code cause, infrastructure failure") {
  CHECK(*k8s::ExitCodeFromStatus(json::parse(R"({"metadata":{},"status":"Success"})")) == 0);
  CHECK(*k8s::ExitCodeFromStatus(json::parse(
            R"({"status":"Failure","reason":"NonZeroExitCode",
                "details":{"causes":[{"reason":"ExitCode","message":"42"}]}})")) == 42);
  auto garbage = k8s::ExitCodeFromStatus(json::parse(
      R"({"status":"Failure","reason":"NonZeroExitCode",
          "details":{"causes":[{"reason":"ExitCode","message":"forty"}]}})"));
  CHECK(garbage.status().kind() == Kind::kProtocol);
  auto internal = k8s::ExitCodeFromStatus(json::parse(
      R"({"status":"Failure","reason":"InternalError","message":"container not found"})"));
  CHECK(internal.status().kind() == Kind::kUnavailable);
  CHECK(internal.status().message().find("container not found") != std::string::npos);
}

TEST_CASE("websocket: RFC 6455 accept key and client frame masking") {
  // The example handshake of RFC 6455 section 1.3.
  CHECK(k8s::WebSocket::AcceptFor("dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
  const uint8_t mask[4] = {0x37, 0xfa, 0x21, 0x3d};
  // Section 5.7: a masked "Hello" text frame.
  std::string frame = k8s::WebSocket::EncodeFrame(1, "Hello", mask);
  CHECK(frame == std::string("\x81\x85\x37\xfa\x21\x3d\x7f\x9f\x4d\x51\x58", 11));
  std::string big = k8s::WebSocket::EncodeFrame(2, std::string(70000, 'x'), mask);
  CHECK(static_cast<uint8_t>(big[1]) == (0x80 | 127));
  CHECK(big.size() == 2 + 8 + 4 + 70000);
}

TEST_CASE("rate limiter: burst first, then qps") {
  k8s::RateLimiter limiter(50, 5);
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 5; ++i) limiter.Acquire();
  double burst = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (int i = 0; i < 10; ++i) limiter.Acquire();
  double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(burst < 0.1);
  CHECK(total >= 10 / 50.0 * 0.9);  // ten more tokens at 50/s take at least ~0.2 s
}

// --- against the fake API server ----------------------------------------

TEST_CASE("k8s lifecycle: create, Pending to Running by watch, exec, copy, read, logs, delete") {
  FakeK8s fake;
  auto backend = Backend(fake.Options());
  auto sandbox = backend->Create(TestSpec("run-a", "rollout-1"));
  REQUIRE_MESSAGE(sandbox.ok(), sandbox.status().message());
  CHECK((*sandbox)->handle().backend == "k8s");
  CHECK((*sandbox)->handle().id.rfind("forge-test/forge-rollout-1-", 0) == 0);

  // The pod the server got: Guaranteed QoS, deadline, labels.
  json pods = fake.Pods();
  REQUIRE(pods.size() == 1);
  CHECK(pods[0]["status"]["qosClass"] == "Guaranteed");
  CHECK(pods[0]["spec"]["activeDeadlineSeconds"] == 600);
  CHECK(pods[0]["metadata"]["labels"]["forge.run"] == "run-a");
  CHECK(pods[0]["status"]["phase"] == "Running");

  // Running was learned from the run's watch, not by polling the pod.
  json stats = fake.Stats();
  CHECK(stats["watches"].get<int>() >= 1);
  CHECK(stats["gets"] == 0);

  auto result = (*sandbox)->Exec(Command({"sh", "-c", "echo out; echo err >&2; exit 3"}));
  REQUIRE_MESSAGE(result.ok(), result.status().message());
  CHECK(result->exit_code == 3);
  CHECK(result->stdout_data == "out\n");
  CHECK(result->stderr_data == "err\n");
  CHECK(backend->exec_protocol() == k8s::kProtocolV5);

  forge::testing::TempDir dir;
  WriteFile(dir.path() / "task" / "tests" / "test.sh", "echo pass\n");
  WriteFile(dir.path() / "task" / "instruction.md", std::string(100000, 'i'));
  fs::path dest = dir.path() / "pod-root" / "work";
  REQUIRE((*sandbox)->CopyIn((dir.path() / "task").string(), dest.string()).ok());
  auto read = (*sandbox)->ReadFile((dest / "tests" / "test.sh").string(), 1024);
  REQUIRE_MESSAGE(read.ok(), read.status().message());
  CHECK(*read == "echo pass\n");
  auto big = (*sandbox)->ReadFile((dest / "instruction.md").string(), 1000000);
  REQUIRE(big.ok());
  CHECK(big->size() == 100000);
  CHECK((*sandbox)->ReadFile((dest / "instruction.md").string(), 10).status().kind() ==
        Kind::kInvalidData);
  auto missing = (*sandbox)->ReadFile((dest / "nope.txt").string(), 100);
  CHECK(missing.status().kind() == Kind::kNotFound);

  // stdin, workdir and env travel through the wrapper.
  ExecRequest with_stdin = Command({"sh", "-c", "pwd; echo $GREETING; cat"});
  with_stdin.workdir = dest.string();
  with_stdin.env["GREETING"] = "hi";
  with_stdin.stdin_data = "from stdin";
  auto piped = (*sandbox)->Exec(with_stdin);
  REQUIRE_MESSAGE(piped.ok(), piped.status().message());
  CHECK(piped->exit_code == 0);
  CHECK(piped->stdout_data == dest.string() + "\nhi\nfrom stdin");

  std::string pod = (*sandbox)->handle().id.substr((*sandbox)->handle().id.find('/') + 1);
  auto logs = backend->Logs(pod, 2, 0);
  REQUIRE(logs.ok());
  CHECK(*logs == "line 2\nline 3\n");

  REQUIRE((*sandbox)->Release().ok());
  CHECK(fake.Pods().empty());
  CHECK((*sandbox)->Release().ok());  // releasing twice is harmless
}

TEST_CASE("k8s: output past max_output_bytes is dropped and flagged") {
  FakeK8s fake;
  auto backend = Backend(fake.Options());
  auto sandbox = backend->Create(TestSpec("run-b", "r"));
  REQUIRE(sandbox.ok());
  ExecRequest request = Command({"sh", "-c", "head -c 300000 /dev/zero"});
  request.max_output_bytes = 1000;
  auto result = (*sandbox)->Exec(request);
  REQUIRE(result.ok());
  CHECK(result->truncated);
  CHECK(result->stdout_data.size() == 1000);
  CHECK(result->exit_code == 0);
}

TEST_CASE("k8s: Pending with Unschedulable is an infrastructure error and the pod is removed") {
  FakeK8s fake;
  auto backend = Backend(fake.Options());
  auto sandbox = backend->Create(TestSpec("run-c", "r", "registry.local/unschedulable:1"));
  REQUIRE_FALSE(sandbox.ok());
  CHECK(sandbox.status().kind() == Kind::kUnavailable);
  CHECK(sandbox.status().message().find("Unschedulable: 0/3 nodes are available") !=
        std::string::npos);
  CHECK(fake.Pods().empty());
}

TEST_CASE("k8s: a missing image is BadConfig naming it; an unreachable registry stays Unavailable") {
  FakeK8s fake;
  auto backend = Backend(fake.Options());
  auto missing = backend->Create(TestSpec("run-d", "r", "registry.local/no-such-image:1"));
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().kind() == Kind::kBadConfig);
  CHECK(missing.status().message().find("ErrImagePull: rpc error: code = NotFound") != std::string::npos);
  CHECK(missing.status().message().find("image registry.local/no-such-image:1 is not in its registry") !=
        std::string::npos);
  auto down = backend->Create(TestSpec("run-d", "r", "registry.local/registry-down:1"));
  REQUIRE_FALSE(down.ok());
  CHECK(down.status().kind() == Kind::kUnavailable);
  CHECK(down.status().message().find("connection refused") != std::string::npos);
  auto invalid = backend->Create(TestSpec("run-d", "r", "registry.local/NotLowerCase:1"));
  REQUIRE_FALSE(invalid.ok());
  CHECK(invalid.status().kind() == Kind::kBadConfig);
  CHECK(invalid.status().message().find("InvalidImageName") != std::string::npos);
  CHECK(fake.Pods().empty());
}

TEST_CASE("image pull failures: what the kubelet's words say of the next try") {
  using k8s::PullFailure;
  auto classify = k8s::ClassifyPullFailure;
  // containerd (CRI gRPC NotFound; its resolver's "REF: not found" when every host answered 404)
  CHECK(classify("ErrImagePull", "rpc error: code = NotFound desc = failed to pull and unpack image "
                 "\"docker.io/library/busybox:nope\": failed to resolve reference \"docker.io/library/busybox:nope\": "
                 "docker.io/library/busybox:nope: not found") == PullFailure::kMissing);
  // a kubelet since 1.31: the back-off carries the pull's error
  CHECK(classify("ImagePullBackOff", "Back-off pulling image \"r/x:1\": ErrImagePull: rpc error: code = NotFound "
                 "desc = failed to pull and unpack image \"r/x:1\": failed to resolve reference \"r/x:1\": r/x:1: not found") ==
        PullFailure::kMissing);
  // CRI-O (containers/image): distribution's MANIFEST_UNKNOWN and NAME_UNKNOWN
  CHECK(classify("ErrImagePull", "reading manifest nope in quay.io/team/x: manifest unknown") == PullFailure::kMissing);
  CHECK(classify("ErrImagePull", "initializing source docker://r.example/nosuch:1: reading manifest 1 in "
                 "r.example/nosuch: name unknown: repository name not known to registry") == PullFailure::kMissing);
  CHECK(classify("ErrImageNeverPull", "Container image \"x:1\" is not present with pull policy of Never") ==
        PullFailure::kMissing);
  // refused credentials
  CHECK(classify("ErrImagePull", "rpc error: code = Unknown desc = failed to pull and unpack image \"r/x:1\": "
                 "failed to resolve reference \"r/x:1\": unexpected status from HEAD request to "
                 "https://r/v2/x/manifests/1: 401 Unauthorized") == PullFailure::kRefused);
  CHECK(classify("ErrImagePull", "no basic auth credentials") == PullFailure::kRefused);
  CHECK(classify("SignatureValidationFailed", "image pull failed for x because the signature validation failed") ==
        PullFailure::kRefused);
  CHECK(classify("InvalidImageName", "Failed to apply default image tag \"A B\": couldn't parse image reference "
                 "\"A B\": invalid reference format") == PullFailure::kInvalid);
  // the registry down, slow or failing: may pass later
  CHECK(classify("ErrImagePull", "rpc error: code = Unknown desc = failed to pull and unpack image \"r/x:1\": "
                 "failed to resolve reference \"r/x:1\": failed to do request: Head \"https://r/v2/x/manifests/1\": "
                 "dial tcp 10.0.0.1:443: connect: connection refused") == PullFailure::kTransient);
  CHECK(classify("ErrImagePull", "rpc error: code = Unknown desc = failed to pull and unpack image \"r/x:1\": "
                 "failed to resolve reference \"r/x:1\": unexpected status from HEAD request to "
                 "https://r/v2/x/manifests/1: 503 Service Unavailable") == PullFailure::kTransient);
  CHECK(classify("ErrImagePull", "rpc error: code = DeadlineExceeded desc = context deadline exceeded") ==
        PullFailure::kTransient);
  CHECK(classify("RegistryUnavailable", "image pull failed for r/x:1 because the registry is unavailable") ==
        PullFailure::kTransient);
  CHECK(classify("ImagePullBackOff", "Back-off pulling image \"r/x:1\"") == PullFailure::kTransient);
  CHECK(classify("CrashLoopBackOff", "not found") == PullFailure::kNone);
}

TEST_CASE("k8s: 429 Retry-After is honoured, 5xx retried, then given up with a clear error") {
  FakeK8s fake;
  fake.Configure({{"throttle", 2}, {"retry_after", 1}});
  auto backend = Backend(fake.Options());
  auto sandbox = backend->Create(TestSpec("run-e", "r"));
  REQUIRE_MESSAGE(sandbox.ok(), sandbox.status().message());
  json stats = fake.Stats();
  CHECK(stats["throttled"] == 2);
  CHECK(backend->client().stats().throttled.load() >= 1);
  // No request reached the server within Retry-After of the last 429.
  double last_429 = 0, next = 0;
  for (const json& entry : stats["log"]) {
    if (entry[3] == 429) last_429 = entry[0].get<double>();
  }
  for (const json& entry : stats["log"]) {
    double t = entry[0].get<double>();
    if (t > last_429 && entry[3] != 429 && (next == 0 || t < next)) next = t;
  }
  REQUIRE(next > 0);
  CHECK(next - last_429 >= 0.95);

  fake.Configure({{"fail5xx", 2}});
  auto second = backend->Create(TestSpec("run-e", "r2"));
  CHECK(second.ok());

  k8s::K8sOptions impatient = fake.Options();
  impatient.max_retries = 2;
  impatient.max_backoff_seconds = 0.2;
  auto backend2 = Backend(impatient);
  fake.Configure({{"fail5xx", 100}});
  auto failed = backend2->Create(TestSpec("run-e2", "r"));
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.status().kind() == Kind::kUnavailable);
  CHECK(failed.status().message().find("gave up after 3 attempts") != std::string::npos);
  fake.Configure({{"fail5xx", 0}});
}

TEST_CASE("k8s: a watch ending with 410 Gone re-lists and watches again") {
  FakeK8s fake;
  k8s::K8sOptions options = fake.Options();
  options.watch_timeout_seconds = 1;  // watches also end and reopen on their own
  auto backend = Backend(options);
  auto first = backend->Create(TestSpec("run-f", "r1"));
  REQUIRE(first.ok());
  auto before = backend->watch_stats();
  fake.Expire();  // the open watch gets ERROR 410, its resourceVersion is gone
  auto second = backend->Create(TestSpec("run-f", "r2"));
  REQUIRE_MESSAGE(second.ok(), second.status().message());
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  auto after = backend->watch_stats();
  CHECK(after.gone >= 1);
  CHECK(after.lists > before.lists);
  CHECK(after.watches >= before.watches + 2);
  json stats = fake.Stats();
  CHECK(stats["gone_sent"].get<int>() >= 1);
  CHECK(stats["gets"] == 0);
}

TEST_CASE("k8s exec: v4.channel.k8s.io fallback with stdin, stderr and exit status") {
  FakeK8s fake;
  fake.Configure({{"exec_protocols", {"v4.channel.k8s.io"}}});
  auto backend = Backend(fake.Options());
  auto sandbox = backend->Create(TestSpec("run-g", "r"));
  REQUIRE(sandbox.ok());
  ExecRequest request = Command({"sh", "-c", "cat; echo oops >&2; exit 7"});
  request.stdin_data = std::string(200000, 'z');  // several frames; v4 cannot send EOF
  auto result = (*sandbox)->Exec(request);
  REQUIRE_MESSAGE(result.ok(), result.status().message());
  CHECK(backend->exec_protocol() == k8s::kProtocolV4);
  CHECK(result->exit_code == 7);
  CHECK(result->stdout_data == request.stdin_data);
  CHECK(result->stderr_data == "oops\n");
  forge::testing::TempDir dir;
  WriteFile(dir.path() / "skills" / "SKILL.md", "# skill\n");
  REQUIRE((*sandbox)->CopyIn((dir.path() / "skills").string(), (dir.path() / "in").string()).ok());
  CHECK(*(*sandbox)->ReadFile((dir.path() / "in" / "SKILL.md").string(), 100) ==
        "# skill\n");
}

TEST_CASE("k8s exec: a connection that dies without a status is an infrastructure error") {
  FakeK8s fake;
  auto backend = Backend(fake.Options());
  auto sandbox = backend->Create(TestSpec("run-h", "r"));
  REQUIRE(sandbox.ok());
  fake.Configure({{"exec_drop", true}});
  auto result = (*sandbox)->Exec(Command({"sh", "-c", "echo partial; exit 0"}));
  REQUIRE_FALSE(result.ok());
  CHECK(result.status().kind() == Kind::kUnavailable);
  CHECK(result.status().message().find("without an exit status") != std::string::npos);
  fake.Configure({{"exec_drop", false}});
  // The sandbox is still usable, and a timeout is reported as such.
  ExecRequest slow = Command({"sleep", "5"});
  slow.timeout_seconds = 0.5;
  auto timed = (*sandbox)->Exec(slow);
  REQUIRE(timed.ok());
  CHECK(timed->timed_out);
  CHECK(timed->seconds < 3);
}

TEST_CASE("k8s: delete by label removes exactly the run's pods") {
  FakeK8s fake;
  auto backend = Backend(fake.Options());
  for (int i = 0; i < 3; ++i) REQUIRE(backend->Create(TestSpec("run-x", "r" + std::to_string(i))).ok());
  REQUIRE(backend->Create(TestSpec("run-y", "keep")).ok());
  auto removed = backend->Collect("run-x", 0);
  REQUIRE(removed.ok());
  CHECK(*removed == 3);
  json pods = fake.Pods();
  REQUIRE(pods.size() == 1);
  CHECK(pods[0]["metadata"]["labels"]["forge.run"] == "run-y");
  CHECK(fake.Stats()["deletecollections"] == 1);
  auto young = backend->Collect("", 3600);  // nothing is an hour old
  REQUIRE(young.ok());
  CHECK(*young == 0);
  auto all = backend->Collect("", 0);
  REQUIRE(all.ok());
  CHECK(*all == 1);
}

TEST_CASE("k8s: attach by handle, and errors for missing pods and bad tokens") {
  FakeK8s fake;
  auto backend = Backend(fake.Options());
  auto sandbox = backend->Create(TestSpec("run-i", "r"));
  REQUIRE(sandbox.ok());
  auto other = Backend(fake.Options());  // another process, as forge-verify
  auto attached = other->Attach((*sandbox)->handle());
  REQUIRE_MESSAGE(attached.ok(), attached.status().message());
  CHECK((*attached)->Exec(Command({"true"}))->exit_code == 0);
  CHECK(other->Attach({"k8s", "forge-test/forge-gone-xxxxx"}).status().kind() ==
        Kind::kNotFound);
  CHECK(other->Attach({"docker", "abc"}).status().kind() == Kind::kInvalidArgument);

  k8s::K8sOptions wrong = fake.Options();
  wrong.token = "not-the-token";
  auto denied = Backend(wrong)->Create(TestSpec("run-i", "r2"));
  REQUIRE_FALSE(denied.ok());
  CHECK(denied.status().kind() == Kind::kBadConfig);
  CHECK(denied.status().message().find("401") != std::string::npos);
}

TEST_CASE("k8s: forge-verify's backends reach the cluster its flags name") {
  FakeK8s fake;
  auto sandbox = Backend(fake.Options())->Create(TestSpec("run-v", "r"));
  REQUIRE(sandbox.ok());
  forge::verify::Backends named(fake.Options(), TestEnv());  // as from --k8s-server, --k8s-token, ...
  auto backend = named.Get("k8s");
  REQUIRE_MESSAGE(backend.ok(), backend.status().message());
  auto attached = (*backend)->Attach((*sandbox)->handle());
  REQUIRE_MESSAGE(attached.ok(), attached.status().message());
  CHECK((*attached)->Exec(Command({"true"}))->exit_code == 0);

  k8s::K8sOptions missing;
  missing.kubeconfig = "/nonexistent/forge-kubeconfig";
  forge::verify::Backends misdirected(missing, TestEnv());
  auto none = misdirected.Get("k8s");
  REQUIRE_FALSE(none.ok());
  CHECK(none.status().message().find("/nonexistent/forge-kubeconfig") != std::string::npos);
}

TEST_CASE("k8s: a kubeconfig file leads to the fake server") {
  FakeK8s fake;
  forge::testing::TempDir dir;
  WriteFile(dir.path() / "config",
            "apiVersion: v1\nkind: Config\ncurrent-context: fake\nclusters:\n- name: fake\n"
            "  cluster:\n    server: " + fake.url() + "\ncontexts:\n- name: fake\n  context:\n"
            "    cluster: fake\n    user: u\n    namespace: from-kubeconfig\nusers:\n- name: u\n"
            "  user:\n    token: " + fake.token() + "\n");
  k8s::K8sOptions options;
  options.kubeconfig = (dir.path() / "config").string();
  auto backend = Backend(options);
  CHECK(backend->cluster().namespace_ == "from-kubeconfig");
  auto sandbox = backend->Create(TestSpec("run-j", "r"));
  REQUIRE_MESSAGE(sandbox.ok(), sandbox.status().message());
  CHECK(fake.Pods()[0]["metadata"]["namespace"] == "from-kubeconfig");

  k8s::K8sOptions broken;
  broken.kubeconfig = (dir.path() / "missing").string();
  auto none = k8s::MakeK8sBackend(broken, TestEnv());
  CHECK(none.status().kind() == Kind::kBadConfig);
}

TEST_CASE("k8s over TLS: CA bundle checked, exec through curl's TLS on a connect-only socket") {
  forge::testing::TempDir dir;
  std::string cert = (dir.path() / "cert.pem").string(), key = (dir.path() / "key.pem").string();
  std::string make = "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 "
                     "-addext subjectAltName=IP:127.0.0.1 -keyout " + key + " -out " + cert +
                     " >/dev/null 2>&1";
  REQUIRE_MESSAGE(std::system(make.c_str()) == 0, "openssl could not make a test certificate");
  FakeK8s fake("tls-token", 0.05, cert, key);
  k8s::K8sOptions options = fake.Options();
  options.ca_file = cert;
  auto backend = Backend(options);
  auto sandbox = backend->Create(TestSpec("run-tls", "r"));
  REQUIRE_MESSAGE(sandbox.ok(), sandbox.status().message());
  ExecRequest request = Command({"sh", "-c", "cat; echo done >&2; exit 4"});
  request.stdin_data = std::string(100000, 's');
  auto result = (*sandbox)->Exec(request);
  REQUIRE_MESSAGE(result.ok(), result.status().message());
  CHECK(result->exit_code == 4);
  CHECK(result->stdout_data.size() == 100000);
  CHECK(result->stderr_data == "done\n");
  REQUIRE((*sandbox)->Release().ok());

  // A server whose certificate the CA bundle does not sign is refused.
  k8s::K8sOptions untrusted = fake.Options();
  untrusted.ca_file = "/etc/ssl/certs/ca-certificates.crt";
  untrusted.max_retries = 0;
  auto refused = Backend(untrusted)->Create(TestSpec("run-tls", "r2"));
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().kind() == Kind::kUnavailable);
  CHECK(refused.status().message().find("certificate") != std::string::npos);
}

TEST_CASE("k8s over TLS: kubeconfig with CA and client certificate data (x509 auth)") {
  forge::testing::TempDir dir;
  auto path = [&](const char* name) { return (dir.path() / name).string(); };
  auto make = [&](const std::string& stem) {
    std::string command = "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=" + stem +
                          " -addext subjectAltName=IP:127.0.0.1 -keyout " + path("x") + stem +
                          ".key -out " + path("x") + stem + ".crt >/dev/null 2>&1";
    return std::system(command.c_str()) == 0;
  };
  REQUIRE(make("server"));
  REQUIRE(make("client"));
  auto base64 = [&](const std::string& file) {
    std::string command = "base64 -w0 " + file + " > " + file + ".b64";
    REQUIRE(std::system(command.c_str()) == 0);
    std::ifstream in(file + ".b64");
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  FakeK8s fake("unused-token", 0.05, path("xserver.crt"), path("xserver.key"),
               path("xclient.crt"));
  WriteFile(dir.path() / "kubeconfig",
            "current-context: c\nclusters:\n- name: k\n  cluster:\n    server: " + fake.url() +
                "\n    certificate-authority-data: " + base64(path("xserver.crt")) +
                "\ncontexts:\n- name: c\n  context:\n    cluster: k\n    user: u\nusers:\n"
                "- name: u\n  user:\n    client-certificate-data: " +
                base64(path("xclient.crt")) +
                "\n    client-key-data: " + base64(path("xclient.key")) + "\n");
  k8s::K8sOptions options;
  options.kubeconfig = path("kubeconfig");
  options.max_backoff_seconds = 0.5;
  auto backend = Backend(options);
  auto sandbox = backend->Create(TestSpec("run-x509", "r"));
  REQUIRE_MESSAGE(sandbox.ok(), sandbox.status().message());
  // The kubeconfig has no token: only the client certificate got us in.
  CHECK(backend->cluster().token.empty());
  CHECK((*sandbox)->Exec(Command({"true"}))->exit_code == 0);
}

TEST_CASE("k8s: a stop request ends a pod start and an exec, and the pod is not left behind") {
  FakeK8s fake;
  fake.Configure({{"start_delay", 30}});  // pods stay Pending
  // The stop token of the backend's Env, as SIGINT requests it in a tool.
  forge::testing::FakeEnv env;
  k8s::K8sOptions options = fake.Options();
  options.start_timeout_seconds = 60;
  auto backend = Backend(options, env);
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    env.stop().Request();
  });
  auto start = std::chrono::steady_clock::now();
  auto sandbox = backend->Create(TestSpec("run-stop", "r"));
  stopper.join();
  double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  REQUIRE_FALSE(sandbox.ok());
  CHECK(sandbox.status().kind() == Kind::kCancelled);
  CHECK(waited < 5);
  CHECK(fake.Pods().empty());

  env.stop().ResetForTesting();
  fake.Configure({{"start_delay", 0.05}});
  auto running = backend->Create(TestSpec("run-stop", "r2"));
  REQUIRE(running.ok());
  std::thread stopper2([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    env.stop().Request();
  });
  auto exec = (*running)->Exec(Command({"sleep", "10"}));
  stopper2.join();
  REQUIRE_FALSE(exec.ok());
  CHECK(exec.status().kind() == Kind::kCancelled);
}

TEST_CASE("k8s: a pod past its activeDeadlineSeconds refuses exec as an infrastructure error") {
  FakeK8s fake;
  auto backend = Backend(fake.Options());
  Spec spec = TestSpec("run-dead", "r");
  spec.lifetime_seconds = 1;
  auto sandbox = backend->Create(spec);
  REQUIRE(sandbox.ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  CHECK(fake.Pods()[0]["status"]["reason"] == "DeadlineExceeded");
  auto result = (*sandbox)->Exec(Command({"true"}));
  REQUIRE_FALSE(result.ok());
  CHECK(result.status().kind() == Kind::kUnavailable);
  CHECK(result.status().message().find("not running") != std::string::npos);
  CHECK(backend->Attach((*sandbox)->handle()).status().kind() == Kind::kUnavailable);
}

TEST_CASE("image pull Secret: made (409: replaced), named by every pod, checked when the user names one, deleted") {
  FakeK8s fake;
  auto backend = Backend(fake.Options());
  const std::string ns = backend->cluster().namespace_;
  const std::string secrets = "/api/v1/namespaces/" + ns + "/secrets";
  auto get = [&](const std::string& name) {
    auto got = backend->client().Call("GET", secrets + "/" + name, "", "get secret");
    REQUIRE(got.ok());
    return got->status == 200 ? json::parse(got->body) : json();
  };
  const std::string name = k8s::PullSecretName("Run 9/x");
  CHECK(name.rfind("forge-pull-run-9-x-", 0) == 0);
  CHECK(name.size() <= 63);
  CHECK(k8s::PullSecretName("Run 9/y") != k8s::PullSecretName("Run 9/x"));

  const std::string config = R"({"auths":{"127.0.0.1:5000":{"username":"u","password":"p","auth":"dTpw"}}})";
  REQUIRE(backend->ApplyPullSecret("Run 9/x", R"({"auths":{}})").ok());
  REQUIRE(backend->ApplyPullSecret("Run 9/x", config).ok());  // a resume: 409, then replaced
  json secret = get(name);
  CHECK(secret["type"] == "kubernetes.io/dockerconfigjson");
  CHECK(*forge::Base64Decode(secret["data"][".dockerconfigjson"].get<std::string>()) == config);
  CHECK(secret["metadata"]["labels"]["forge.run"] == "Run_9_x");
  CHECK(fake.Stats()["requests"]["update secrets"] == 1);

  auto sandbox = backend->Create(TestSpec("Run 9/x", "r"));
  REQUIRE_MESSAGE(sandbox.ok(), sandbox.status().message());
  auto pods = fake.Pods();
  REQUIRE(pods.size() == 1);
  CHECK(pods[0]["spec"]["imagePullSecrets"] == json::array({{{"name", name}}}));
  REQUIRE((*sandbox)->Release().ok());

  REQUIRE(backend->DeletePullSecret().ok());
  CHECK(get(name).is_null());
  CHECK(backend->DeletePullSecret().ok());  // nothing made: nothing to do

  // gc --run-id removes one a killed forge-launch left.
  REQUIRE(backend->ApplyPullSecret("Run 9/x", config).ok());
  auto collected = backend->CollectPullSecrets("Run 9/x");
  REQUIRE(collected.ok());
  CHECK(*collected == 1);
  CHECK(get(name).is_null());

  // One the user names: it must exist, and be of a type the kubelet pulls with.
  k8s::K8sOptions named = fake.Options();
  named.image_pull_secret = "regcred";
  auto user = Backend(named);
  auto missing = user->CheckPullSecret();
  CHECK(missing.kind() == Kind::kBadConfig);
  CHECK(missing.message().find("no Secret regcred in namespace " + ns) != std::string::npos);
  json opaque = {{"apiVersion", "v1"}, {"kind", "Secret"}, {"metadata", {{"name", "regcred"}}}, {"type", "Opaque"},
                 {"data", {{"x", "eA=="}}}};
  REQUIRE(user->client().Call("POST", secrets, opaque.dump(), "create")->status == 201);
  auto wrong = user->CheckPullSecret();
  CHECK(wrong.kind() == Kind::kBadConfig);
  CHECK(wrong.message().find("of type 'Opaque'") != std::string::npos);
  REQUIRE(user->client().Call("DELETE", secrets + "/regcred", "", "delete")->status == 200);
  REQUIRE(user->client().Call("POST", secrets, k8s::BuildPullSecret("regcred", ns, "r", config).dump(), "c")->status == 201);
  CHECK(user->CheckPullSecret().ok());
}
