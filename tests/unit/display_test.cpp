// The virtual display: parsing WxHxD (flag and task field), the wrapper run
// for real on the local backend with the host's Xvfb (the screen the harness
// sees has the asked-for size, two rollouts at once get two displays, Xvfb is
// gone when the harness ends, the harness's exit status comes through), and
// its failures: no Xvfb on PATH and an Xvfb that dies at start end quickly
// with the marker, never a hang.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include "sandbox/display.h"
#include "sandbox/local/local_backend.h"
#include "support/skip.h"
#include "support/temp_dir.h"
#include "support/fake_env.h"

using forge::Kind;
using forge::sandbox::Display;
using forge::sandbox::DisplayFailed;
using forge::sandbox::DisplayFromJson;
using forge::sandbox::ParseDisplay;
using forge::sandbox::WithDisplay;

namespace {

bool HostHasXvfb() {
  return std::system("command -v Xvfb >/dev/null 2>&1 && command -v xdpyinfo >/dev/null 2>&1") == 0;
}

std::unique_ptr<forge::sandbox::Sandbox> NewLocalSandbox(forge::sandbox::local::LocalBackend& backend,
                                                         const std::string& rollout) {
  forge::sandbox::Spec spec;
  spec.run_id = "display-test";
  spec.rollout_id = rollout;
  auto box = backend.Create(spec);
  REQUIRE(box.ok());
  return std::move(*box);
}

forge::sandbox::ExecRequest Shell(const std::string& command) {
  forge::sandbox::ExecRequest request;
  request.argv = {"/bin/sh", "-c", command};
  request.timeout_seconds = 30;
  return request;
}

}  // namespace

TEST_CASE("display: WxH and WxHxD parse; anything else is a usage error naming it") {
  auto d = ParseDisplay("1024x768x16");
  REQUIRE(d.ok());
  CHECK(d->width == 1024);
  CHECK(d->height == 768);
  CHECK(d->depth == 16);
  CHECK(d->ToString() == "1024x768x16");
  auto two = ParseDisplay("640x480");
  REQUIRE(two.ok());
  CHECK(two->depth == 24);
  for (const char* bad : {"", "640", "640x", "x480", "640x480x", "640x480x24x1", "640x480x32",
                          "0x480", "640x-1", "640x480x24 ", "40000x10", "axb"}) {
    auto parsed = ParseDisplay(bad);
    CHECK_MESSAGE(!parsed.ok(), std::string(bad));
    if (!parsed.ok()) {
      CHECK(parsed.status().kind() == Kind::kInvalidArgument);
      CHECK(parsed.status().message().find(std::string("'") + bad + "'") != std::string::npos);
    }
  }
}

TEST_CASE("display: a task's field as a string or an object") {
  using Json = nlohmann::json;
  auto s = DisplayFromJson(Json("800x600x24"));
  REQUIRE(s.ok());
  CHECK(s->ToString() == "800x600x24");
  auto o = DisplayFromJson(Json{{"width", 320}, {"height", 200}});
  REQUIRE(o.ok());
  CHECK(o->ToString() == "320x200x24");
  auto deep = DisplayFromJson(Json{{"width", 320}, {"height", 200}, {"depth", 8}});
  REQUIRE(deep.ok());
  CHECK(deep->depth == 8);
  CHECK(DisplayFromJson(Json{{"width", 320}}).status().message().find("missing height") != std::string::npos);
  CHECK(DisplayFromJson(Json{{"width", "320"}, {"height", 200}}).status().message().find("width") !=
        std::string::npos);
  CHECK(!DisplayFromJson(Json{{"width", 320}, {"height", 200}, {"depth", 12}}).ok());
  CHECK(!DisplayFromJson(Json(42)).ok());
}

TEST_CASE("display: the failure marker counts only at the start of a line, with its exit status") {
  forge::sandbox::ExecResult r;
  r.exit_code = forge::sandbox::kDisplaySetupExit;
  r.stderr_data = "forge-display: no Xvfb on PATH (/bin)\n";
  auto f = DisplayFailed(r);
  REQUIRE(f);
  CHECK(f->missing_xvfb);
  CHECK(f->detail == "no Xvfb on PATH (/bin)");
  r.stderr_data = "noise\nforge-display: Xvfb did not start (exit 1): boom \n";
  f = DisplayFailed(r);
  REQUIRE(f);
  CHECK(!f->missing_xvfb);
  CHECK(f->detail.find("did not start") != std::string::npos);
  r.stderr_data = "the harness said forge-display: no Xvfb\n";
  CHECK(!DisplayFailed(r));
  r.stderr_data = "forge-display: no Xvfb\n";
  r.exit_code = 1;
  CHECK(!DisplayFailed(r));
}

TEST_CASE("display: the harness sees the screen it asked for; two at once get two displays; Xvfb stops" *
          doctest::test_suite("host")) {
  if (!HostHasXvfb()) FORGE_SKIP("no Xvfb/xdpyinfo on this host (apt-get install xvfb x11-utils)");
  forge::testing::TempDir dir;
  forge::sandbox::local::LocalBackend backend(forge::testing::HostEnv(), dir.File("root"));
  auto a = NewLocalSandbox(backend, "a");
  auto b = NewLocalSandbox(backend, "b");
  // Each harness holds its display for a moment so the two overlap.
  const std::string probe =
      "echo \"DISPLAY=$DISPLAY\"; xdpyinfo | grep -E 'dimensions|depth of root'; sleep 1; exit 3";
  forge::Result<forge::sandbox::ExecResult> ra = forge::Status::Internal("not run"), rb = ra;
  std::thread ta([&] {
    auto request = Shell(probe);
    request.argv = WithDisplay(Display{640, 480, 24}, request.argv);
    ra = a->Exec(request);
  });
  std::thread tb([&] {
    auto request = Shell(probe);
    request.argv = WithDisplay(Display{320, 200, 16}, request.argv);
    rb = b->Exec(request);
  });
  ta.join();
  tb.join();
  REQUIRE(ra.ok());
  REQUIRE(rb.ok());
  INFO("a: " << ra->stdout_data << ra->stderr_data);
  INFO("b: " << rb->stdout_data << rb->stderr_data);
  CHECK(ra->exit_code == 3);  // the harness's own status, through the wrapper
  CHECK(rb->exit_code == 3);
  CHECK(ra->stdout_data.find("dimensions:    640x480 pixels") != std::string::npos);
  CHECK(ra->stdout_data.find("depth of root window:    24 planes") != std::string::npos);
  CHECK(rb->stdout_data.find("dimensions:    320x200 pixels") != std::string::npos);
  CHECK(rb->stdout_data.find("depth of root window:    16 planes") != std::string::npos);
  std::smatch ma, mb;
  const std::regex number("DISPLAY=:([0-9]+)");
  REQUIRE(std::regex_search(ra->stdout_data, ma, number));
  REQUIRE(std::regex_search(rb->stdout_data, mb, number));
  CHECK(ma[1].str() != mb[1].str());
  // Xvfb removes its lock file when it exits: both are gone with their harness.
  for (const auto& n : {ma[1].str(), mb[1].str()}) {
    CHECK_MESSAGE(!std::filesystem::exists("/tmp/.X" + n + "-lock"), "display :" << n << " still held");
  }
}

TEST_CASE("display: no Xvfb on PATH ends at once with the marker; the harness never runs") {
  forge::testing::TempDir dir;
  forge::sandbox::local::LocalBackend backend(forge::testing::HostEnv(), dir.File("root"));
  auto box = NewLocalSandbox(backend, "none");
  auto request = Shell("touch ran");
  request.argv = WithDisplay(Display{}, request.argv);
  request.env["PATH"] = dir.File("empty-path");
  auto r = box->Exec(request);
  REQUIRE(r.ok());
  CHECK(r->exit_code == forge::sandbox::kDisplaySetupExit);
  auto failed = DisplayFailed(*r);
  REQUIRE(failed);
  CHECK(failed->missing_xvfb);
  CHECK(failed->detail.find(dir.File("empty-path")) != std::string::npos);
  CHECK(!std::filesystem::exists(box->handle().id + "/fs/work/ran"));
}

TEST_CASE("display: an Xvfb that dies at start is reported with its message, not waited for") {
  forge::testing::TempDir dir;
  // A stand-in Xvfb that fails the way a broken one does: a message and exit 1.
  std::filesystem::create_directories(dir.File("bin"));
  {
    std::ofstream fake(dir.File("bin/Xvfb"));
    fake << "#!/bin/sh\necho 'Fatal server error: no screens found' >&2\nexit 1\n";
  }
  std::filesystem::permissions(dir.File("bin/Xvfb"), std::filesystem::perms::owner_all);
  forge::sandbox::local::LocalBackend backend(forge::testing::HostEnv(), dir.File("root"));
  auto box = NewLocalSandbox(backend, "dies");
  auto request = Shell("touch ran");
  request.argv = WithDisplay(Display{}, request.argv);
  request.env["PATH"] = dir.File("bin") + ":/usr/bin:/bin";
  request.env["TMPDIR"] = dir.File("tmp");
  std::filesystem::create_directories(dir.File("tmp"));
  auto r = box->Exec(request);
  REQUIRE(r.ok());
  CHECK(!r->timed_out);
  auto failed = DisplayFailed(*r);
  REQUIRE(failed);
  CHECK(!failed->missing_xvfb);
  CHECK(failed->detail.find("exit 1") != std::string::npos);
  CHECK(failed->detail.find("no screens found") != std::string::npos);
  CHECK(!std::filesystem::exists(box->handle().id + "/fs/work/ran"));
  CHECK(std::filesystem::is_empty(dir.File("tmp")));  // its scratch is removed
}
