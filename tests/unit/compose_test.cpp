// Harbor compose tasks as pods, and MCP servers handed to harnesses:
// tests/data/harbor's task directories against their golden records and
// stderr, the compose reader's refusals, the pod's start order, each
// harness's MCP config, and the Kubernetes Pod a compose task becomes.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "launch/harness.h"
#include "launch/mcp.h"
#include "launch/services.h"
#include "../fakes/k8s_fake_server.h"
#include "sandbox/k8s/k8s_backend.h"
#include "sandbox/k8s/pod_spec.h"
#include "tasks/compose.h"
#include "tasks/harbor.h"
#include "forge_paths.h"
#include "support/fake_env.h"
#include "support/temp_dir.h"

namespace fs = std::filesystem;
using forge::Kind;
using forge::tasks::Json;

namespace {

const fs::path kData = fs::path(FORGE_SOURCE_DIR) / "tests" / "data" / "harbor";

std::string Normalized(std::string text) {
  const std::string root = kData.string();
  for (size_t at; (at = text.find(root)) != std::string::npos;) text.replace(at, root.size(), "{data}");
  return text;
}

// What reading the task gives: the record (pretty JSON) or nothing, and the
// warnings or the error, one per line; paths under tests/data/harbor as {data}.
std::pair<std::string, std::string> ReadTaskOutput(const std::string& name) {
  std::vector<std::string> warnings;
  auto task = forge::tasks::ReadHarborTask((kData / name).string(), forge::testing::FakeEnv(), &warnings);
  std::string record, stderr_text;
  if (task.ok()) {
    record = Normalized(task->ToJson().dump(2)) + "\n";
  } else {
    warnings.push_back("error: " + task.status().message());
  }
  for (const auto& w : warnings) stderr_text += Normalized(w) + "\n";
  return {record, stderr_text};
}

// Compares with tests/data/harbor/<name>/expected/{record.json,stderr.txt};
// FORGE_UPDATE_GOLDEN=1 rewrites them.
void CheckGolden(const std::string& name) {
  CAPTURE(name);
  auto [record, stderr_text] = ReadTaskOutput(name);
  const fs::path expected = kData / name / "expected";
  if (std::getenv("FORGE_UPDATE_GOLDEN") != nullptr) {
    fs::create_directories(expected);
    if (!record.empty()) std::ofstream(expected / "record.json") << record;
    std::ofstream(expected / "stderr.txt") << stderr_text;
  }
  CHECK(stderr_text == forge::testing::ReadFile(expected / "stderr.txt"));
  if (fs::exists(expected / "record.json")) {
    CHECK(record == forge::testing::ReadFile(expected / "record.json"));
  } else {
    CHECK(record.empty());
  }
}

}  // namespace

TEST_CASE("the compose and MCP task corpus reads as its golden records and stderr say") {
  for (const char* name : {"compose-two-services", "compose-secret", "mcp-server", "simulated-user", "skills",
                           "compose-refused-ports",
                           "compose-refused-networks", "compose-refused-main-image", "compose-bad-depends",
                           "mcp-bad-transport"}) {
    CheckGolden(name);
  }
}

TEST_CASE("a refused compose key is named with file, line and key") {
  auto [record, err] = ReadTaskOutput("compose-refused-ports");
  CHECK(record.empty());
  CHECK(err.find("{data}/compose-refused-ports/environment/docker-compose.yaml:4: services.web.ports: not supported") !=
        std::string::npos);
  std::tie(record, err) = ReadTaskOutput("mcp-bad-transport");
  CHECK(err.find("{data}/mcp-bad-transport/task.toml:8: environment.mcp_servers[1].transport: \"websocket\"") !=
        std::string::npos);
}

TEST_CASE("the two-service compose task's pod: volumes, conditions, interpolation, start order") {
  std::vector<std::string> warnings;
  auto task = forge::tasks::ReadHarborTask((kData / "compose-two-services").string(), forge::testing::FakeEnv(), &warnings);
  REQUIRE(task.ok());
  const Json& pod = task->extra["pod"];
  CHECK(pod["main"]["depends_on"]["api"] == "service_healthy");
  CHECK(pod["main"]["environment"]["SECRET_FILE"] == "/shared/secret.txt");
  // ${SECRET_SUFFIX:-42}: unset on the host, so the default.
  CHECK(pod["services"]["db"]["command"][2].get<std::string>().find("pod-42") != std::string::npos);
  CHECK(pod["services"]["api"]["command"] == Json::array({"httpd", "-f", "-p", "8000", "-h", "/www"}));
  CHECK(pod["services"]["api"]["healthcheck"]["test"][0] == "CMD-SHELL");
  CHECK(pod["services"]["api"]["healthcheck"]["start_period_sec"] == 1.0);
  CHECK(pod["services"]["api"]["volumes"][0] == Json{{"source", "shared"}, {"target", "/www"}, {"read_only", true}});
  auto parsed = forge::launch::PodFromJson(pod);
  REQUIRE(parsed.ok());
  REQUIRE((*parsed)->services.size() == 2);
  CHECK((*parsed)->services[0].name == "db");  // api depends on db
  CHECK((*parsed)->services[1].name == "api");
  CHECK((*parsed)->main_mounts[0].volume == "shared");
  CHECK((*parsed)->main_mounts[0].read_only);
}

TEST_CASE("a compose environment stays a template in the record; its secret is resolved per sandbox") {
  forge::testing::FakeEnv host({{"FORGE_CORPUS_SECRET", std::string("s3cr3t-value")}});
  std::vector<std::string> warnings;
  auto task = forge::tasks::ReadHarborTask((kData / "compose-secret").string(), host, &warnings);
  REQUIRE(task.ok());
  const std::string record = task->ToJson().dump();
  CHECK(record.find("s3cr3t-value") == std::string::npos);
  const Json& pod = task->extra["pod"];
  CHECK(pod["main"]["environment"]["API_KEY"] == "${FORGE_CORPUS_SECRET}");
  CHECK(pod["main"]["environment"]["LITERAL"] == "cost $$5 ${FORGE_CORPUS_UNSET_VAR:-none}");
  CHECK(pod["services"]["vault"]["environment"]["TOKEN"] == "${FORGE_CORPUS_SECRET}");
  CHECK(pod["services"]["vault"]["environment"]["FORGE_CORPUS_SECRET"].is_null());

  forge::launch::PodEnv env;
  auto parsed = forge::launch::PodFromJson(pod, &env);
  REQUIRE(parsed.ok());
  CHECK((*parsed)->services[0].env.empty());  // only templates, until a sandbox is made
  auto lookup = [](const std::string& name) -> std::optional<std::string> {
    if (name == "FORGE_CORPUS_SECRET") return std::string("s3cr3t-value");
    return std::nullopt;
  };
  std::map<std::string, std::string> main_env;
  auto resolved = forge::launch::ResolvePod(**parsed, env, lookup, &main_env);
  REQUIRE(resolved.ok());
  CHECK(main_env["API_KEY"] == "s3cr3t-value");
  CHECK(main_env["LITERAL"] == "cost $5 none");
  CHECK((*resolved)->services[0].env.at("TOKEN") == "s3cr3t-value");
  CHECK((*resolved)->services[0].env.at("FORGE_CORPUS_SECRET") == "s3cr3t-value");
  // A bare KEY the host lacks is left out, as compose leaves it out.
  auto none = [](const std::string&) -> std::optional<std::string> { return std::nullopt; };
  main_env.clear();
  resolved = forge::launch::ResolvePod(**parsed, env, none, &main_env);
  REQUIRE(resolved.ok());
  CHECK(main_env["API_KEY"].empty());
  CHECK((*resolved)->services[0].env.count("FORGE_CORPUS_SECRET") == 0);
  // A malformed template is named by its field.
  env.services["vault"]["BAD"] = "${UNCLOSED";
  auto bad = forge::launch::ResolvePod(**parsed, env, none, &main_env);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("pod.services.vault.environment.BAD: unterminated") == 0);
}

TEST_CASE("pods the launcher cannot start are refused by field") {
  Json pod = {{"services", {{"a", {{"image", "x"}, {"depends_on", {{"b", "service_started"}}}}},
                            {"b", {{"image", "x"}, {"depends_on", {{"a", "service_started"}}}}}}}};
  auto cycle = forge::launch::PodFromJson(pod);
  REQUIRE_FALSE(cycle.ok());
  CHECK(cycle.status().message().find("dependency cycle") != std::string::npos);
  pod = {{"services", {{"a", {{"image", "x"}}}}}, {"main", {{"depends_on", {{"a", "service_healthy"}}}}}};
  auto unhealthy = forge::launch::PodFromJson(pod);
  REQUIRE_FALSE(unhealthy.ok());
  CHECK(unhealthy.status().message() == "pod.main.depends_on.a: service_healthy, but service a has no healthcheck");
  pod = {{"services", {{"a", {{"image", "x"}, {"volumes", Json::array({{{"source", "nope"}, {"target", "/d"}}})}}}}}};
  CHECK(forge::launch::PodFromJson(pod).status().message().find("pod.services.a.volumes[0].source") == 0);
  pod = {{"services", {{"a", Json::object()}}}};
  CHECK(forge::launch::PodFromJson(pod).status().kind() == Kind::kInvalidData);
}

TEST_CASE("compose durations and command strings") {
  CHECK(*forge::tasks::ParseComposeDuration("2s") == 2.0);
  CHECK(*forge::tasks::ParseComposeDuration("1m30s") == 90.0);
  CHECK(*forge::tasks::ParseComposeDuration("500ms") == 0.5);
  CHECK_FALSE(forge::tasks::ParseComposeDuration("10").ok());
  CHECK_FALSE(forge::tasks::ParseComposeDuration("3 days").ok());
  auto words = forge::tasks::SplitComposeCommand("sh -c 'echo \"a b\"' x\\ y");
  REQUIRE(words.ok());
  CHECK(*words == std::vector<std::string>{"sh", "-c", "echo \"a b\"", "x y"});
  CHECK_FALSE(forge::tasks::SplitComposeCommand("sh -c 'open").ok());
}

namespace {

std::vector<forge::tasks::McpServer> TwoServers() {
  forge::tasks::McpServer http{"codes", "streamable-http", "http://mcp-server:8000/mcp", "", {}};
  forge::tasks::McpServer stdio{"local", "stdio", "", "python3", {"/srv/server.py", "--quiet"}};
  return {http, stdio};
}

// The profile's config with {mcp_servers} filled, as the launcher fills it.
Json FilledConfig(const std::string& harness, const std::string& path) {
  auto profile = forge::launch::LoadHarness((fs::path(FORGE_SOURCE_DIR) / "harnesses").string(), harness);
  REQUIRE(profile.ok());
  auto servers = forge::launch::RenderMcpServers(*profile->mcp_format, TwoServers());
  REQUIRE(servers.ok());
  std::map<std::string, std::string> vars = {{"mcp_servers", *servers}, {"model", "m"}, {"proxy", "http://p"},
                                             {"secret", "s"}, {"root", ""}};
  const std::string text = path == "env:OPENCODE_CONFIG_CONTENT" ? profile->env.at("OPENCODE_CONFIG_CONTENT")
                                                                  : profile->config_files.at(path);
  return Json::parse(forge::launch::FillPlaceholders(text, vars));
}

}  // namespace

TEST_CASE("every MCP-speaking harness gets the task's servers in its own config") {
  using forge::launch::McpFormat;
  Json gemini = FilledConfig("gemini-cli", "/forge/gemini-home/.gemini/settings.json");
  CHECK(gemini["mcpServers"]["codes"] == Json{{"httpUrl", "http://mcp-server:8000/mcp"}});
  CHECK(gemini["mcpServers"]["local"]["args"][0] == "/srv/server.py");
  Json qwen = FilledConfig("qwen-code", "{root}/forge/qwen-home/.qwen/settings.json");
  CHECK(qwen["mcpServers"]["codes"]["httpUrl"] == "http://mcp-server:8000/mcp");
  CHECK(qwen["security"]["auth"]["selectedType"] == "openai");  // the rest is untouched
  Json opencode = FilledConfig("opencode", "env:OPENCODE_CONFIG_CONTENT");
  CHECK(opencode["mcp"]["codes"] == Json{{"type", "remote"}, {"url", "http://mcp-server:8000/mcp"}});
  CHECK(opencode["mcp"]["local"]["command"] == Json::array({"python3", "/srv/server.py", "--quiet"}));
  Json openclaw = FilledConfig("openclaw", "{root}/forge/openclaw/config.json");
  CHECK(openclaw["mcp"]["servers"]["codes"]["transport"] == "streamable-http");
  CHECK(openclaw["mcp"]["servers"]["local"]["command"] == "python3");

  auto claude = forge::launch::LoadHarness((fs::path(FORGE_SOURCE_DIR) / "harnesses").string(), "claude-code");
  REQUIRE(claude.ok());
  auto claude_json = forge::launch::RenderMcpServers(*claude->mcp_format, TwoServers());
  REQUIRE(claude_json.ok());
  Json mcp = Json::parse(*claude_json);
  CHECK(mcp["mcpServers"]["codes"] == Json{{"type", "http"}, {"url", "http://mcp-server:8000/mcp"}});
  CHECK(mcp["mcpServers"]["local"]["type"] == "stdio");
  CHECK(forge::launch::UsesPlaceholder(*claude, "mcp_servers"));

  auto codex = forge::launch::RenderMcpServers(McpFormat::kCodex, TwoServers());
  REQUIRE(codex.ok());
  CHECK(*codex == "\n[mcp_servers.\"codes\"]\nurl = \"http://mcp-server:8000/mcp\"\n"
                  "\n[mcp_servers.\"local\"]\ncommand = \"python3\"\nargs = [\"/srv/server.py\", \"--quiet\"]\n");
  auto sse = TwoServers();
  sse[0].transport = "sse";
  CHECK(forge::launch::RenderMcpServers(McpFormat::kCodex, sse).status().kind() == Kind::kInvalidArgument);
  // No servers: every form is still valid where the profile puts it.
  CHECK(*forge::launch::RenderMcpServers(McpFormat::kGemini, {}) == "{}");
  CHECK(*forge::launch::RenderMcpServers(McpFormat::kClaude, {}) == "{\"mcpServers\":{}}");
  CHECK(forge::launch::RenderMcpServers(McpFormat::kCodex, {})->empty());
  // A name no harness reads is no format at all.
  CHECK_FALSE(forge::launch::McpFormatOf("cursor").has_value());
  CHECK(forge::launch::McpFormatOf("codex") == McpFormat::kCodex);
}

TEST_CASE("a compose task's pod becomes one multi-container Kubernetes Pod") {
  std::vector<std::string> warnings;
  auto task = forge::tasks::ReadHarborTask((kData / "compose-two-services").string(), forge::testing::FakeEnv(), &warnings);
  REQUIRE(task.ok());
  auto pod = forge::launch::PodFromJson(task->extra["pod"]);
  REQUIRE(pod.ok());
  forge::sandbox::Spec spec;
  spec.run_id = "r1";
  spec.rollout_id = "ro1";
  spec.image = "registry.local/compose-two-services:1";
  spec.pod = *pod;
  forge::sandbox::k8s::K8sOptions options;
  auto built = forge::sandbox::k8s::BuildPod(spec, options, "ns");
  REQUIRE(built.ok());
  const Json& s = (*built)["spec"];
  CHECK(s["containers"].size() == 1);
  REQUIRE(s["initContainers"].size() == 2);
  CHECK(s["initContainers"][0]["name"] == "db");
  CHECK(s["initContainers"][1]["name"] == "api");
  CHECK(s["initContainers"][0]["restartPolicy"] == "Always");
  CHECK(s["initContainers"][0]["startupProbe"]["exec"]["command"][0] == "wget");
  CHECK(s["initContainers"][1]["startupProbe"]["exec"]["command"][0] == "/bin/sh");
  CHECK(s["initContainers"][1]["startupProbe"]["failureThreshold"] == 21);  // retries 20 + the 1 s start period
  CHECK(s["initContainers"][1]["args"] == Json::array({"httpd", "-f", "-p", "8000", "-h", "/www"}));
  CHECK(s["hostAliases"][0] == Json{{"ip", "127.0.0.1"}, {"hostnames", {"db", "api"}}});
  CHECK(s["volumes"][0] == Json{{"name", "vol-shared"}, {"emptyDir", Json::object()}});
  CHECK(s["containers"][0]["volumeMounts"][0]["mountPath"] == "/shared");
  CHECK(s["initContainers"][1]["volumeMounts"][0]["readOnly"] == true);

  // The other corpus tasks build their services' images: the backend itself cannot (forge-launch --registry does first).
  auto mcp_task = forge::tasks::ReadHarborTask((kData / "mcp-server").string(), forge::testing::FakeEnv(), &warnings);
  REQUIRE(mcp_task.ok());
  auto mcp_pod = forge::launch::PodFromJson(mcp_task->extra["pod"]);
  REQUIRE(mcp_pod.ok());
  spec.pod = *mcp_pod;
  auto refused = forge::sandbox::k8s::BuildPod(spec, options, "ns");
  CHECK(refused.status().kind() == Kind::kInvalidArgument);
  CHECK(refused.status().message().find("service mcp-server: the k8s backend cannot build images") == 0);
}

TEST_CASE("a compose task's Pod against the fake Kubernetes API server: one Pod, every container") {
  std::vector<std::string> warnings;
  auto task = forge::tasks::ReadHarborTask((kData / "compose-two-services").string(), forge::testing::FakeEnv(), &warnings);
  REQUIRE(task.ok());
  auto pod = forge::launch::PodFromJson(task->extra["pod"]);
  REQUIRE(pod.ok());
  forge::testing::FakeK8s fake;
  auto backend = forge::sandbox::k8s::MakeK8sBackend(fake.Options(), forge::testing::HostEnv());
  REQUIRE(backend.ok());
  forge::sandbox::Spec spec;
  spec.run_id = "compose-run";
  spec.rollout_id = "compose-1";
  spec.image = "registry.local/compose-two-services:1";
  spec.lifetime_seconds = 600;
  spec.pod = *pod;
  auto sandbox = (*backend)->Create(spec);
  REQUIRE_MESSAGE(sandbox.ok(), sandbox.status().message());
  Json pods = fake.Pods();
  REQUIRE(pods.size() == 1);  // one Pod for the whole task
  const Json& s = pods[0]["spec"];
  CHECK(s["containers"].size() == 1);
  CHECK(s["containers"][0]["image"] == "registry.local/compose-two-services:1");
  REQUIRE(s["initContainers"].size() == 2);
  CHECK(s["initContainers"][0]["image"] == "forge-busybox:latest");
  CHECK(s["hostAliases"][0]["hostnames"] == Json::array({"db", "api"}));
  CHECK(pods[0]["status"]["phase"] == "Running");
  CHECK((*sandbox)->Release().ok());
}
