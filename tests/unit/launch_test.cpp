// Unit tests for forge-launch's pieces that need no engine: the exec stream
// demultiplexer, tar, harness profiles, task records, units, and the local
// backend (real processes, real rlimits).
#include <doctest/doctest.h>

#include <atomic>
#include <fstream>
#include <iterator>
#include <thread>

#include <unistd.h>

#include "launch/harness.h"
#include "launch/launcher.h"
#include "launch/task_input.h"
#include "launch/units.h"
#include "sandbox/docker/stream_demux.h"
#include "sandbox/local/local_backend.h"
#include "sandbox/tar.h"
#include "tasks/load.h"
#include "tasks/task.h"
#include "support/fake_env.h"
#include "support/temp_dir.h"
#include "forge_paths.h"

using forge::Kind;
using forge::records::Json;
using forge::sandbox::docker::StreamDemux;

namespace {

std::string Frame(uint8_t stream, const std::string& payload) {
  std::string f = {static_cast<char>(stream), 0, 0, 0};
  uint32_t n = static_cast<uint32_t>(payload.size());
  f += static_cast<char>(n >> 24);
  f += static_cast<char>(n >> 16);
  f += static_cast<char>(n >> 8);
  f += static_cast<char>(n);
  return f + payload;
}


}  // namespace

TEST_CASE("demux splits stdout and stderr even when frames are cut at every byte") {
  std::string stream = Frame(1, "hello ") + Frame(2, "oops\n") + Frame(1, "world\n") + Frame(1, "");
  StreamDemux whole(1 << 20);
  whole.Feed(stream);
  CHECK(whole.out() == "hello world\n");
  CHECK(whole.err() == "oops\n");
  CHECK_FALSE(whole.malformed());
  StreamDemux bytewise(1 << 20);
  for (char c : stream) bytewise.Feed(std::string_view(&c, 1));
  CHECK(bytewise.out() == "hello world\n");
  CHECK(bytewise.err() == "oops\n");
}

TEST_CASE("demux keeps at most the cap per stream and flags the rest") {
  StreamDemux demux(4);
  demux.Feed(Frame(1, "abcdefgh") + Frame(2, "xy"));
  CHECK(demux.out() == "abcd");
  CHECK(demux.err() == "xy");
  CHECK(demux.truncated());
}

TEST_CASE("demux finds a watched stderr line across frames, past the cap, and not on stdout") {
  const std::string stream = Frame(1, "mark-1 9 9\n") + Frame(2, std::string(50, 'e') + "\nmar") +
                             Frame(2, "k-1 13") + Frame(2, "7 1\nlater\n");
  const size_t line_end = stream.find("7 1\n") + 3;
  for (size_t step : {stream.size(), size_t{1}, size_t{5}}) {
    StreamDemux demux(8);
    demux.WatchStderr("mark-1 ");
    auto feed = [&](size_t from, size_t to) {
      for (size_t at = from; at < to; at += step) demux.Feed(std::string_view(stream).substr(at, std::min(step, to - at)));
    };
    feed(0, line_end);
    CHECK_FALSE(demux.watched().has_value());
    feed(line_end, stream.size());
    REQUIRE(demux.watched().has_value());
    CHECK(*demux.watched() == "137 1");
    CHECK(demux.err() == std::string(8, 'e'));
    CHECK(demux.truncated());
  }
  StreamDemux unfinished(100);
  unfinished.WatchStderr("mark-1 ");
  unfinished.Feed(Frame(2, "mark-1 0"));
  CHECK_FALSE(unfinished.watched().has_value());
}

TEST_CASE("demux reports a stream cut inside a frame and unknown stream ids") {
  StreamDemux cut(100);
  cut.Feed(Frame(1, "abcdef").substr(0, 10));
  CHECK(cut.malformed());
  StreamDemux odd(100);
  odd.Feed(Frame(9, "zz"));
  CHECK(odd.malformed());
}

TEST_CASE("tar round trip: files, long names, a host tree") {
  forge::sandbox::TarWriter tar;
  std::string long_name(180, 'n');
  tar.AddParents("a/b/" + long_name);
  tar.AddFile("a/b/" + long_name, "long content");
  std::string archive = tar.Finish();
  CHECK(archive.size() % 512 == 0);
  auto entry = forge::sandbox::FirstFileInTar(archive, 100);
  REQUIRE(entry.ok());
  CHECK(entry->name == "a/b/" + long_name);
  CHECK(entry->content == "long content");
  auto capped = forge::sandbox::FirstFileInTar(archive, 4);
  CHECK(capped->content == "long");
  CHECK(capped->size == 12);

  forge::testing::TempDir dir;
  std::filesystem::create_directories(dir.path() / "tree/sub");
  std::ofstream(dir.File("tree/sub/x.txt")) << "x";
  forge::sandbox::TarWriter from_host;
  REQUIRE(from_host.AddHostPath(dir.File("tree"), "tree").ok());
  auto first = forge::sandbox::FirstFileInTar(from_host.Finish(), 10);
  REQUIRE(first.ok());
  CHECK(first->name == "tree/sub/x.txt");
  CHECK(from_host.AddHostPath(dir.File("missing"), "m").kind() == Kind::kNotFound);
}

TEST_CASE("a corrupt tar is a InvalidData, an empty one NotFound") {
  forge::sandbox::TarWriter tar;
  tar.AddFile("f", "data");
  std::string archive = tar.Finish();
  archive[10] ^= 0x55;
  CHECK(forge::sandbox::FirstFileInTar(archive, 10).status().kind() == Kind::kInvalidData);
  CHECK(forge::sandbox::FirstFileInTar(std::string(1024, '\0'), 10).status().kind() == Kind::kNotFound);
}

TEST_CASE("placeholders fill known keys and leave other braces alone") {
  std::map<std::string, std::string> vars = {{"proxy", "http://127.0.0.1:9"}, {"secret", "s3"}};
  CHECK(forge::launch::FillPlaceholders("{proxy}/v1 key={secret}", vars) == "http://127.0.0.1:9/v1 key=s3");
  CHECK(forge::launch::FillPlaceholders("{\"a\": {\"b\": \"{proxy}\"}} ${HOME} {x", vars) ==
        "{\"a\": {\"b\": \"http://127.0.0.1:9\"}} ${HOME} {x");
}

TEST_CASE("every shipped harness profile parses") {
  for (const char* name : {"command", "react", "claude-code", "codex", "gemini-cli", "qwen-code",
                           "opencode", "openclaw"}) {
    auto profile = forge::launch::LoadHarness(FORGE_SOURCE_DIR "/harnesses", name);
    CHECK_MESSAGE(profile.ok(), name << ": " << profile.status().message());
  }
  CHECK(forge::launch::LoadHarness(FORGE_SOURCE_DIR "/harnesses", "nope").status().kind() ==
        Kind::kNotFound);
  CHECK(forge::launch::LoadHarness(FORGE_SOURCE_DIR "/harnesses", "../etc").status().kind() ==
        Kind::kInvalidArgument);
  auto bad = forge::launch::ParseHarness(Json{{"command", "sh"}}, "x.json");
  CHECK(bad.status().kind() == Kind::kBadConfig);
  CHECK(bad.status().message().find("'command'") != std::string::npos);
}

TEST_CASE("task specs: stated limits win, unstated ones are left to the launcher") {
  auto parse = [](const std::string& text) {
    auto task = forge::tasks::TaskFromJson(Json::parse(text), "/", "tasks.jsonl:7");
    REQUIRE_MESSAGE(task.ok(), task.status().message());
    return forge::launch::SpecFromTask(*task);
  };
  auto stated = parse(
      R"({"id":"t","instruction":"do","environment":{"image":"img","memory_mb":512,"cpus":1,"allow_internet":false},"agent":{"timeout_sec":30},"resources":{"pids":64},"command":"echo hi"})");
  REQUIRE(stated.ok());
  CHECK(stated->id == "t");
  CHECK(stated->image == "img");
  CHECK(*stated->memory_bytes == 512LL << 20);
  CHECK(*stated->cpus == 1);
  CHECK(*stated->pids == 64);
  CHECK(stated->agent_timeout_seconds == 30);
  CHECK(*stated->allow_internet == false);
  CHECK(stated->command == "echo hi");
  CHECK(nlohmann::json::parse(stated->record)["id"] == "t");
  auto bare = parse(R"({"id":"b","instruction":"do"})");
  REQUIRE(bare.ok());
  CHECK_FALSE(bare->cpus.has_value());
  CHECK_FALSE(bare->memory_bytes.has_value());
  CHECK(bare->agent_timeout_seconds == 0);
  auto bad_pids = parse(R"({"id":"p","instruction":"do","resources":{"pids":"many"}})");
  CHECK(bad_pids.status().kind() == Kind::kInvalidData);
  CHECK(bad_pids.status().message().find("tasks.jsonl:7: resources.pids") != std::string::npos);
  auto bad_dir = parse(R"({"id":"f","instruction":"do","files":"/nonexistent/dir"})");
  CHECK(bad_dir.status().kind() == Kind::kInvalidData);
  CHECK(bad_dir.status().message().find("files") != std::string::npos);
}

TEST_CASE("units") {
  CHECK(*forge::launch::ParseBytes("4g") == 4LL << 30);
  CHECK(*forge::launch::ParseBytes("512MiB") == 512LL << 20);
  CHECK(*forge::launch::ParseBytes("100") == 100);
  CHECK_FALSE(forge::launch::ParseBytes("4q").ok());
  CHECK(*forge::launch::ParseDuration("90") == 90);
  CHECK(*forge::launch::ParseDuration("2h") == 7200);
  CHECK_FALSE(forge::launch::ParseDuration("-1s").ok());
}

TEST_CASE("rollout ids are stable per (run, task, attempt) and distinct otherwise") {
  CHECK(forge::launch::RolloutId("r", "t", 0) == forge::launch::RolloutId("r", "t", 0));
  CHECK(forge::launch::RolloutId("r", "t", 0) != forge::launch::RolloutId("r", "t", 1));
  CHECK(forge::launch::RolloutId("r", "t", 0) != forge::launch::RolloutId("r2", "t", 0));
}

TEST_CASE("local backend: work dir, copy in, exec with output, deadline kills the group, gc") {
  forge::testing::TempDir dir;
  forge::sandbox::local::LocalBackend backend(forge::testing::HostEnv(), dir.File("root"));
  forge::sandbox::Spec spec;
  spec.run_id = "run1";
  spec.rollout_id = "r1";
  spec.env = {{"GREETING", "hi"}};
  spec.limits.memory_bytes = 256LL << 20;
  auto box = backend.Create(spec);
  REQUIRE(box.ok());
  std::ofstream(dir.File("input.txt")) << "payload";
  REQUIRE((*box)->CopyIn(dir.File("input.txt"), "/work/in").ok());

  forge::sandbox::ExecRequest echo;
  echo.argv = {"/bin/sh", "-c", "cat in/input.txt; echo \" $GREETING $EXTRA\"; echo e >&2; echo made > out.txt"};
  echo.env = {{"EXTRA", "there"}};
  auto ran = (*box)->Exec(echo);
  REQUIRE(ran.ok());
  CHECK(ran->exit_code == 0);
  CHECK(ran->stdout_data == "payload hi there\n");
  CHECK(ran->stderr_data == "e\n");
  CHECK(*(*box)->ReadFile("/work/out.txt", 100) == "made\n");
  CHECK((*box)->ReadFile("/work/none", 100).status().kind() == Kind::kNotFound);

  // A runaway whose child ignores the parent's death: the whole group goes.
  forge::sandbox::ExecRequest runaway;
  runaway.argv = {"/bin/sh", "-c", "sleep 30 & sleep 30; echo never"};
  runaway.timeout_seconds = 0.5;
  auto start = std::chrono::steady_clock::now();
  auto killed = (*box)->Exec(runaway);
  REQUIRE(killed.ok());
  CHECK(killed->timed_out);
  CHECK(killed->exit_code == 128 + 9);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));

  // RLIMIT_DATA: an allocation past the limit fails inside the process.
  forge::sandbox::ExecRequest hog;
  hog.argv = {"/bin/sh", "-c", "x=$(head -c 400000000 /dev/zero | tr '\\0' a); echo ${#x}"};
  auto hogged = (*box)->Exec(hog);
  REQUIRE(hogged.ok());
  CHECK(hogged->stdout_data != "400000000\n");
  // ... but address space reserved and never written is not memory: V8
  // reserves gigabytes (Node.js 24 would not start under RLIMIT_AS at 1 GB).
  forge::sandbox::ExecRequest reserve;
  reserve.argv = {"python3", "-c",
                  "import mmap; m = mmap.mmap(-1, 1 << 31, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, "
                  "prot=0); print('reserved')"};  // prot=0: PROT_NONE
  auto reserved = (*box)->Exec(reserve);
  REQUIRE(reserved.ok());
  CHECK(reserved->stdout_data == "reserved\n");
  // As root, the limit is a memory cgroup, as Docker's: a writable mapping
  // never touched is no memory either (V8 maps its code range so, once per
  // isolate), where RLIMIT_DATA would refuse it.
  if (geteuid() == 0) {
    std::ifstream meta(dir.File("root") + "/run1/r1/" + ".forge-sandbox.json");
    const auto text = std::string(std::istreambuf_iterator<char>(meta), {});
    CHECK(text.find("\"memory_cgroup\":\"/sys/fs/cgroup/") != std::string::npos);
    forge::sandbox::ExecRequest writable;
    writable.argv = {"python3", "-c",
                     "import mmap; m = mmap.mmap(-1, 1 << 30, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS); "
                     "print('mapped')"};
    auto mapped = (*box)->Exec(writable);
    REQUIRE(mapped.ok());
    CHECK(mapped->stdout_data == "mapped\n");
  }

  // Output beyond the cap is dropped and flagged.
  forge::sandbox::ExecRequest loud;
  loud.argv = {"/bin/sh", "-c", "head -c 100000 /dev/zero"};
  loud.max_output_bytes = 1000;
  auto louder = (*box)->Exec(loud);
  CHECK(louder->stdout_data.size() == 1000);
  CHECK(louder->truncated);

  // Cancel: as a timeout, but reported as Cancelled.
  forge::StopToken cancel;
  forge::sandbox::ExecRequest waiting;
  waiting.argv = {"sleep", "30"};
  waiting.cancel = &cancel;
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    cancel.Request();
  });
  auto cancelled = (*box)->Exec(waiting);
  stopper.join();
  CHECK(cancelled.status().kind() == Kind::kCancelled);

  auto attached = backend.Attach((*box)->handle());
  REQUIRE(attached.ok());
  CHECK(*(*attached)->ReadFile("/work/out.txt", 100) == "made\n");
  CHECK(backend.Attach({"docker", "x"}).status().kind() == Kind::kBadConfig);

  auto other = backend.Create([&] { auto s = spec; s.rollout_id = "r2"; s.run_id = "run2"; return s; }());
  REQUIRE(other.ok());
  auto removed = backend.Collect("run1", 0);
  REQUIRE(removed.ok());
  CHECK(*removed == 1);
  CHECK_FALSE(std::filesystem::exists((*box)->handle().id));
  CHECK(std::filesystem::exists((*other)->handle().id));
  CHECK(*backend.Collect("run2", 3600) == 0);  // too young
  CHECK(*backend.Collect("", 0) == 1);
}

TEST_CASE("skill folders: the dir itself, or each subdirectory with a SKILL.md; none is an error naming it") {
  forge::testing::TempDir dir;
  std::filesystem::create_directories(dir.path() / "set/b-skill/scripts");
  std::filesystem::create_directories(dir.path() / "set/a-skill");
  std::filesystem::create_directories(dir.path() / "set/plain");
  std::ofstream(dir.File("set/b-skill/SKILL.md")) << "---\nname: b\n---\n";
  std::ofstream(dir.File("set/a-skill/SKILL.md")) << "---\nname: a\n---\n";
  std::ofstream(dir.File("set/plain/README")) << "not a skill";
  auto folders = forge::launch::SkillFolders(dir.File("set"));
  REQUIRE(folders.ok());
  CHECK(*folders == std::vector<std::string>{dir.File("set/a-skill"), dir.File("set/b-skill")});
  auto single = forge::launch::SkillFolders(dir.File("set/a-skill"));
  REQUIRE(single.ok());
  CHECK(*single == std::vector<std::string>{dir.File("set/a-skill")});
  auto none = forge::launch::SkillFolders(dir.File("set/plain"));
  CHECK(none.status().kind() == Kind::kInvalidData);
  CHECK(none.status().message().find("set/plain") != std::string::npos);
  CHECK(forge::launch::SkillFolders(dir.File("missing")).status().kind() == Kind::kNotFound);
}

TEST_CASE("a task's skills field is a directory relative to its file; a missing one is named") {
  forge::testing::TempDir dir;
  std::filesystem::create_directories(dir.path() / "sk/one");
  std::ofstream(dir.File("sk/one/SKILL.md")) << "x";
  std::ofstream(dir.File("tasks.jsonl")) << "{\"id\":\"a\",\"instruction\":\"x\",\"skills\":\"sk\"}\n"
                                         << "{\"id\":\"b\",\"instruction\":\"x\",\"skills\":\"nope\"}\n";
  std::vector<forge::launch::TaskSpec> specs;
  std::vector<std::string> errors;
  forge::testing::FakeEnv load_env;
  forge::Status loaded = forge::tasks::LoadTasks({dir.File("tasks.jsonl")}, load_env, {}, [&](forge::tasks::Task& task) {
    auto spec = forge::launch::SpecFromTask(task);
    if (spec.ok()) specs.push_back(*spec); else errors.push_back(spec.status().message());
    return forge::Status::Ok();
  });
  CHECK(loaded.ok());
  REQUIRE(specs.size() == 1);
  CHECK(specs[0].skills_dir == (dir.path() / "sk").string());
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].find("skills") != std::string::npos);
  CHECK(errors[0].find("nope") != std::string::npos);
}
