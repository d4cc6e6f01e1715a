// forge-box's tracer (verify/tracer.h) without a pod: a shell traced here,
// with the files it reads and runs made before or after t0 in a scratch
// directory; the verifier that never ends, the one killed, many processes at
// once; and the report's framing, which forge-verify reads back.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <fstream>
#include <string>
#include <vector>

#include "base/clock.h"
#include "support/skip.h"
#include "support/temp_dir.h"
#include "verify/tracer.h"

namespace verify_tracer_test {
using namespace forge::verify;

namespace {

int64_t NowNs() { return forge::ClockNs(CLOCK_REALTIME_COARSE); }

struct Traced {
  TraceReport report;
  int status = 0;
  bool timed_out = false;
};

// Runs /bin/sh -c script under a tracer, as forge-box's RunCommand does.
Traced RunTraced(const std::string& script, TracePlan plan, double timeout = 0) {
  int go[2], why[2];
  REQUIRE(pipe2(go, O_CLOEXEC) == 0);
  REQUIRE(pipe2(why, O_CLOEXEC) == 0);
  Tracer tracer(std::move(plan));
  const pid_t child = fork();
  if (child == 0) {
    setsid();
    close(go[1]);
    close(why[0]);
    Tracer::InChild(go[0], why[1]);
    execl("/bin/sh", "sh", "-c", script.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(go[0]);
  close(why[1]);
  tracer.Attach(child, go[1]);
  Traced t;
  t.status = tracer.Run(timeout > 0 ? forge::MonotonicSeconds() + timeout : 0, 1.0, nullptr, &t.timed_out);
  char buf[256];
  const ssize_t n = read(why[0], buf, sizeof buf);
  close(why[0]);
  tracer.ChildFailed(n > 0 ? std::string(buf, static_cast<size_t>(n)) : "");
  t.report = tracer.Finish();
  return t;
}

bool Traceable(const Traced& t) { return t.report.checked || t.report.why.find("EPERM") == std::string::npos; }

}  // namespace

TEST_SUITE("host") {

TEST_CASE("tracer: the image's files read and run by the verifier are no finding") {
  Traced t = RunTraced("cat /etc/passwd >/dev/null; /bin/true", {.t0_ns = NowNs(), .workdir = "/"});
  if (!t.report.checked) FORGE_SKIP("the tracer cannot trace here (ptrace or seccomp refused)");
  CHECK(WIFEXITED(t.status));
  CHECK(WEXITSTATUS(t.status) == 0);
  CHECK(t.report.findings.empty());
  CHECK(t.report.processes >= 2);  // sh and what it ran
  CHECK(t.report.judged >= 3);     // sh's exec and loader, /etc/passwd, cat's exec ...
  CHECK(t.report.events >= t.report.judged);
}

TEST_CASE("tracer: a command the agent changed after t0, run by the verifier, is a finding") {
  forge::testing::TempDir dir;
  const int64_t t0 = NowNs() - 1;
  const std::string tool = dir.File("tool");
  {
    std::ofstream(tool) << "#!/bin/sh\nexit 0\n";
  }
  chmod(tool.c_str(), 0755);
  usleep(20000);  // a clock tick past the write: the tracer trusts what changes once it runs
  Traced t = RunTraced(tool, {.t0_ns = t0, .workdir = "/"});
  if (!t.report.checked) FORGE_SKIP("the tracer cannot trace here (ptrace or seccomp refused)");
  REQUIRE(t.report.finding_count >= 1);
  CHECK(t.report.findings[0].path == tool);
  CHECK(!t.report.findings[0].why.empty());
  // The same file from before t0 is the image's.
  Traced before = RunTraced(tool, {.t0_ns = NowNs() + 1000000000, .workdir = "/"});
  CHECK(before.report.finding_count == 0);
}

TEST_CASE("tracer: a file the agent changed, read by the verifier's shell as its script, is a finding") {
  forge::testing::TempDir dir;
  const int64_t t0 = NowNs() - 1;
  const std::string lib = dir.File("lib.sh");
  std::ofstream(lib) << "true\n";
  usleep(20000);
  Traced t = RunTraced(". " + lib, {.t0_ns = t0, .workdir = "/"});
  if (!t.report.checked) FORGE_SKIP("the tracer cannot trace here (ptrace or seccomp refused)");
  REQUIRE(t.report.finding_count == 1);
  CHECK(t.report.findings[0].path == lib);
}

TEST_CASE("tracer: a verifier past its deadline is killed, its whole tree, and the tracer answers") {
  const double start = forge::MonotonicSeconds();
  Traced t = RunTraced("sleep 300 & sh -c 'sleep 300' & sleep 300", {.t0_ns = NowNs(), .workdir = "/"}, 1.0);
  if (!Traceable(t)) FORGE_SKIP("the tracer cannot trace here");
  CHECK(t.timed_out);
  CHECK(WIFSIGNALED(t.status));
  CHECK(forge::MonotonicSeconds() - start < 60);  // not the sleeps' 300 s
  CHECK(t.report.processes >= 3);
}

TEST_CASE("tracer: a verifier killed by a signal ends the run with that signal") {
  Traced t = RunTraced("kill -9 $$", {.t0_ns = NowNs(), .workdir = "/"});
  if (!Traceable(t)) FORGE_SKIP("the tracer cannot trace here");
  CHECK(WIFSIGNALED(t.status));
  CHECK(WTERMSIG(t.status) == SIGKILL);
  CHECK(!t.timed_out);
}

TEST_CASE("tracer: hundreds of processes forking at once are followed and all killed at the deadline") {
  // A bounded fork bomb: each level starts two more, 2^8 processes in all.
  const std::string bomb = "f() { if [ $1 -gt 0 ]; then f $(($1 - 1)) & f $(($1 - 1)) & fi; sleep 300; }; f 7";
  Traced t = RunTraced(bomb, {.t0_ns = NowNs(), .workdir = "/"}, 3.0);
  if (!Traceable(t)) FORGE_SKIP("the tracer cannot trace here");
  CHECK(t.timed_out);
  CHECK(t.report.processes >= 16);
  CHECK(t.report.findings.empty());
}

TEST_CASE("tracer: a path longer than PATH_MAX is refused by the kernel, and neither crashes nor finds") {
  std::string longest;
  for (int i = 0; i < 1500; ++i) longest += "ab/";
  Traced t = RunTraced("cat " + longest + "x 2>/dev/null; exec 3<" + longest + "y; true", {.t0_ns = NowNs(), .workdir = "/"});
  if (!t.report.checked) FORGE_SKIP("the tracer cannot trace here (ptrace or seccomp refused)");
  CHECK(t.report.findings.empty());
}

TEST_CASE("tracer: a child that could not be attached leaves the report unchecked, saying why") {
  Tracer tracer({.t0_ns = NowNs(), .workdir = "/"});
  const pid_t gone = fork();
  if (gone == 0) _exit(0);
  waitpid(gone, nullptr, 0);
  int go[2];
  REQUIRE(pipe2(go, O_CLOEXEC) == 0);
  tracer.Attach(gone, go[1]);
  char sent = 0;
  CHECK(read(go[0], &sent, 1) == 1);
  close(go[0]);
  CHECK(sent == 'U');  // the child would run untraced
  TraceReport r = tracer.Finish();
  CHECK(!r.checked);
  CHECK(r.why.find("PTRACE_SEIZE") != std::string::npos);
}

TEST_CASE("tracer: io_uring and opens by handle are refused to the verifier's tree, which no trap would see") {
  // io_uring_setup (425) answers ENOSYS, as a kernel without io_uring;
  // open_by_handle_at (304) EPERM, whatever the caller's capabilities (as
  // root, an empty handle is otherwise EINVAL). The exit status is the errno.
  const std::string call = "python3 -c 'import ctypes, sys; libc = ctypes.CDLL(None, use_errno=True); "
                           "buf = ctypes.create_string_buffer(256); "
                           "r = libc.syscall(NR, ARGS); sys.exit(ctypes.get_errno() if r < 0 else 0)'";
  auto with = [&](const std::string& nr, const std::string& args) {
    std::string s = call;
    s.replace(s.find("NR"), 2, nr);
    s.replace(s.find("ARGS"), 4, args);
    return s;
  };
  Traced ring = RunTraced(with("425", "1, buf"), {.t0_ns = NowNs(), .workdir = "/"});
  if (!ring.report.checked) FORGE_SKIP("the tracer cannot trace here (ptrace or seccomp refused)");
  REQUIRE(WIFEXITED(ring.status));
  CHECK(WEXITSTATUS(ring.status) == ENOSYS);
  Traced handle = RunTraced(with("304", "-100, buf, 0"), {.t0_ns = NowNs(), .workdir = "/"});
  REQUIRE(WIFEXITED(handle.status));
  CHECK(WEXITSTATUS(handle.status) == EPERM);
  CHECK(handle.report.findings.empty());
}

}  // TEST_SUITE("host")

TEST_CASE("tracer: the report survives its framing, tabs and newlines in paths included") {
  TraceReport r;
  r.checked = true;
  r.t0_ns = 1;
  r.start_ns = 2;
  r.end_ns = 3;
  r.events = 40;
  r.judged = 12;
  r.finding_count = 3;
  r.unverified_examples = {"/a\tb"};
  r.findings = {{"/usr/bin/pytest", 7, "/usr/bin/python3.11", "the agent's file"}, {"/x\ny\\z", 8, "", "why\t2"}};
  auto back = ParseTraceReport(FormatTraceReport(r));
  REQUIRE(back);
  CHECK(back->checked);
  CHECK(back->events == 40);
  CHECK(back->finding_count == 3);
  REQUIRE(back->findings.size() == 2);
  CHECK(back->findings[1].path == "/x\ny\\z");
  CHECK(back->findings[1].why == "why\t2");
  CHECK(back->findings[0].pid == 7);
  CHECK(back->unverified_examples[0] == "/a\tb");
  TraceReport unchecked;
  unchecked.why = "seccomp(SECCOMP_SET_MODE_FILTER): Operation not permitted";
  auto u = ParseTraceReport(FormatTraceReport(unchecked));
  REQUIRE(u);
  CHECK(!u->checked);
  CHECK(u->why == unchecked.why);
}

TEST_CASE("tracer: a malformed report is refused, never half read") {
  CHECK(!ParseTraceReport(""));                                // no checked line
  CHECK(!ParseTraceReport("checked\t1"));                      // no newline
  CHECK(!ParseTraceReport("checked\tyes\n"));                  // not a number
  CHECK(!ParseTraceReport("checked\t1\nfinding_count\t0\nfinding\t1\ta\tb\tc\n"));  // more findings than counted
  CHECK(ParseTraceReport("checked\t1\nfinding_count\t1\nfinding\t1\ta\tb\tc\n"));
}

TEST_CASE("tracer: its filter fits a classic BPF program") {
  const auto program = TraceFilterProgram();
  CHECK(!program.empty());
  CHECK(program.size() % 8 == 0);           // sock_filter
  CHECK(program.size() / 8 <= 4096);        // BPF_MAXINSNS
}

}  // namespace verify_tracer_test
