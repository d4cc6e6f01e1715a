// forge-box verify: a whole verification of a held sandbox in one stream
// (box_protocol.h), for a pod where every exec is a request through the API
// server. It reads forge-verify's archive (the verifier's command and
// environment, the task's tests), sweeps (sweep.cpp), unpacks the tests into
// the fresh /tests, runs the verifier by absolute path, never from PATH, under
// its deadline, and sends back its exit status, its output and the reward
// files, framed by one status line. Nothing of the sandbox's runs before the
// verifier itself.
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <ctime>
#include <optional>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "commands.h"
#include "proc.h"
#include "run.h"
#include "sandbox/box_protocol.h"
#include "sweep.h"
#include "verify/client_watch.h"
#include "verify/tracer.h"
#include "verify_stop.h"

namespace forge::box {
namespace {

constexpr size_t kBlock = 512;
constexpr size_t kMaxInput = size_t{512} << 20;

struct ArchiveEntry {
  std::string name;
  char type = '0';
  unsigned mode = 0644;
  std::string content;
  std::string link;
};

struct VerifyOptions {
  SweepArgs sweep;
  double timeout_seconds = 0;
  size_t max_output = 1 << 20;
  bool shebang = false;
  long long reward_bytes = -1;  // < 0: read no reward files
  bool trace = true;            // --no-trace: no runtime evidence (the benchmark's baseline)
  long long t0_ns = -1;         // --t0: the harness's start; else the sandbox's (PID 1's start)
  double heartbeat = -1;        // --heartbeat: watch the client (verify/client_watch.h); < 0: not
};

// Set by SIGTERM, SIGINT or SIGHUP (forge-box verify-stop), or by the watch
// on the client: the verifier's whole tree is killed.
volatile sig_atomic_t g_stop = 0;

void OnStopSignal(int) { g_stop = 1; }

void StopOnSignals() {
  struct sigaction sa{};
  sa.sa_handler = OnStopSignal;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) sigaction(sig, &sa, nullptr);
}

// The watch on the client (verify/client_watch.h) for as long as it lives:
// the verifier's run. A client gone before it starts is seen at once (its
// stdin has ended). heartbeat < 0: no watch. At its end it says on stderr
// when it, or a stop signal, ended the verifier's tree (box_protocol.h).
class ClientWatch {
 public:
  explicit ClientWatch(double heartbeat) {
    if (heartbeat >= 0) thread_ = std::thread([this, heartbeat] { end_ = verify::WatchClient(0, heartbeat, done_, &g_stop); });
  }
  ~ClientWatch() {
    done_.store(true);
    if (thread_.joinable()) thread_.join();
    const std::string why = end_ != verify::ClientEnd::kNone ? std::string(verify::ClientEndWhy(end_)) +
                                                                     ": the client is gone"
                            : g_stop ? "a stop signal came"
                                     : "";
    if (why.empty()) return;
    WriteAll(2, std::string(sandbox::kBoxTag) + "verify: " + why + ", " + sandbox::kVerifyTreeEnded + "\n");
  }
  ClientWatch(const ClientWatch&) = delete;
  ClientWatch& operator=(const ClientWatch&) = delete;

 private:
  std::atomic<bool> done_{false};
  verify::ClientEnd end_ = verify::ClientEnd::kNone;
  std::thread thread_;
};

bool Refuse(const std::string& why) {
  WriteAll(2, std::string(sandbox::kBoxTag) + "verify: " + why + "\n");
  return false;
}

// Before anything of this verification: one that is still running in this
// sandbox (its client gone, its stop exec lost) is ended, or this one is
// refused; none may race the other's verifier.
bool NoOtherVerify() {
  int left = 0;
  if (StopVerifies(5, &left) == 0 || left == 0) return true;
  return Refuse(std::to_string(left) + " earlier forge-box verify still running here after SIGKILL");
}

bool ReadExactly(char* data, size_t n) {
  size_t got = 0;
  while (got < n) {
    const ssize_t r = read(0, data + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    got += static_cast<size_t>(r);
  }
  return true;
}

unsigned long long TarOctal(const char* field, size_t width) {
  unsigned long long value = 0;
  for (size_t i = 0; i < width && field[i] != '\0'; ++i) {
    if (field[i] == ' ') continue;
    if (field[i] < '0' || field[i] > '7') break;
    value = value * 8 + static_cast<unsigned>(field[i] - '0');
  }
  return value;
}

// pax records: "LEN key=value\n"; path and linkpath name the next entry.
void Pax(const std::string& body, std::string* path, std::string* link) {
  for (size_t at = 0; at < body.size();) {
    const size_t space = body.find(' ', at);
    const size_t len = std::strtoul(body.c_str() + at, nullptr, 10);
    if (space == std::string::npos || len == 0 || at + len > body.size()) return;
    const std::string record = body.substr(space + 1, at + len - space - 2);
    if (record.rfind("path=", 0) == 0) *path = record.substr(5);
    if (record.rfind("linkpath=", 0) == 0) *link = record.substr(9);
    at += len;
  }
}

// The archive on stdin, to its first zero block (then the second).
bool ReadArchive(std::vector<ArchiveEntry>* entries) {
  std::string long_name, long_link;
  size_t total = 0;
  for (;;) {
    char block[kBlock];
    if (!ReadExactly(block, kBlock)) return Refuse("the input ended before the archive's end blocks");
    bool zero = true;
    for (char c : block) zero = zero && c == '\0';
    if (zero) {
      ReadExactly(block, kBlock);
      return true;
    }
    unsigned sum = 0;
    for (size_t i = 0; i < kBlock; ++i) sum += (i >= 148 && i < 156) ? ' ' : static_cast<unsigned char>(block[i]);
    if (sum != TarOctal(block + 148, 8)) return Refuse("bad tar header checksum");
    ArchiveEntry e;
    e.type = block[156] != '\0' ? block[156] : '0';
    e.mode = static_cast<unsigned>(TarOctal(block + 100, 8)) & 07777;
    const unsigned long long size = TarOctal(block + 124, 12);
    total += size;
    if (total > kMaxInput) return Refuse("the input is larger than " + std::to_string(kMaxInput) + " bytes");
    e.content.resize((size + kBlock - 1) / kBlock * kBlock);
    if (!ReadExactly(e.content.data(), e.content.size())) return Refuse("the input ended inside an entry");
    e.content.resize(size);
    e.name.assign(block, strnlen(block, 100));
    if (std::memcmp(block + 257, "ustar", 5) == 0 && block[345] != '\0') {
      e.name = std::string(block + 345, strnlen(block + 345, 155)) + "/" + e.name;
    }
    e.link.assign(block + 157, strnlen(block + 157, 100));
    if (e.type == 'x') {
      Pax(e.content, &long_name, &long_link);
      continue;
    }
    if (e.type == 'L' || e.type == 'K') {
      (e.type == 'L' ? long_name : long_link) = e.content.substr(0, strnlen(e.content.c_str(), e.content.size()));
      continue;
    }
    if (e.type == 'g') continue;
    if (!long_name.empty()) e.name = long_name;
    if (!long_link.empty()) e.link = long_link;
    long_name.clear();
    long_link.clear();
    entries->push_back(std::move(e));
  }
}

std::vector<std::string> NulList(const std::string& text) {
  std::vector<std::string> out;
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\0', at);
    if (end == std::string::npos) end = text.size();
    out.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

// Puts one entry under the directory fd tests, never through a symlink and
// never above it; false (with why) when it cannot.
bool Unpack(int tests, const ArchiveEntry& e, std::string* why) {
  std::vector<std::string> parts;
  for (const std::string& p : NulList([&] {
         std::string s = e.name.substr(std::strlen(sandbox::kVerifyTests));
         for (char& c : s) c = c == '/' ? '\0' : c;
         return s;
       }())) {
    if (p == "..") return (*why = e.name + ": names a parent directory", false);
    if (!p.empty() && p != ".") parts.push_back(p);
  }
  if (parts.empty()) return true;  // tests/ itself
  int dir = dup(tests);
  for (size_t i = 0; i + 1 < parts.size() && dir >= 0; ++i) {
    mkdirat(dir, parts[i].c_str(), 0755);
    const int next = openat(dir, parts[i].c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    close(dir);
    dir = next;
  }
  if (dir < 0) return (*why = e.name + ": " + std::strerror(errno), false);
  const char* leaf = parts.back().c_str();
  bool ok = true;
  if (e.type == '5') {
    ok = (mkdirat(dir, leaf, 0700) == 0 || errno == EEXIST) && fchmodat(dir, leaf, e.mode, 0) == 0;
  } else if (e.type == '2') {
    ok = symlinkat(e.link.c_str(), dir, leaf) == 0;
  } else if (e.type == '0' || e.type == '7') {
    const int fd = openat(dir, leaf, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    ok = fd >= 0;
    if (ok) {
      size_t done = 0;
      while (ok && done < e.content.size()) {
        const ssize_t n = write(fd, e.content.data() + done, e.content.size() - done);
        ok = n > 0 || (n < 0 && errno == EINTR);
        if (n > 0) done += static_cast<size_t>(n);
      }
      ok = ok && fchmod(fd, e.mode) == 0;
      ok = close(fd) == 0 && ok;
    }
  }
  if (!ok) *why = e.name + ": " + std::strerror(errno);
  close(dir);
  return ok;
}

// argv run by its script's "#!" line, as the shell's `exec ${l#??} "$f"`
// splits it; a script without one under /bin/sh.
std::vector<std::string> ByShebang(const std::vector<std::string>& argv) {
  std::string line;
  const int fd = open(argv[0].c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    char buf[4096];
    const ssize_t n = read(fd, buf, sizeof buf);
    close(fd);
    if (n > 0) line.assign(buf, static_cast<size_t>(n));
  }
  line = line.substr(0, line.find('\n'));
  std::vector<std::string> out;
  if (line.rfind("#!", 0) == 0) {
    for (size_t at = 2; at < line.size();) {
      const size_t begin = line.find_first_not_of(" \t\r", at);
      if (begin == std::string::npos) break;
      const size_t end = line.find_first_of(" \t\r", begin);
      out.push_back(line.substr(begin, end == std::string::npos ? std::string::npos : end - begin));
      at = end == std::string::npos ? line.size() : end;
    }
  }
  if (out.empty()) out.push_back("/bin/sh");
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

// A reward file's bytes (at most max + 1), or -1 when it is missing or not
// a regular file (a symlink is not followed).
long long ReadReward(const char* path, long long max, std::string* out) {
  const int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat st{};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return -1;
  }
  std::string text(static_cast<size_t>(max) + 1, '\0');
  size_t got = 0;
  for (ssize_t n; got < text.size() && (n = read(fd, text.data() + got, text.size() - got)) > 0;) {
    got += static_cast<size_t>(n);
  }
  close(fd);
  text.resize(got);
  *out += text;
  return static_cast<long long>(got);
}

bool ParseVerify(int argc, char** argv, VerifyOptions* o) {
  for (int i = 0; i < argc; ++i) {
    bool bad = false;
    if (SweepArg(argc, argv, &i, &o->sweep, &bad)) {
      if (bad) return false;
      continue;
    }
    const std::string flag = argv[i];
    if (flag == "--shebang" || flag == "--no-trace") {
      (flag == "--shebang" ? o->shebang : o->trace) = flag == "--shebang";
      continue;
    }
    if (flag == "--t0" && i + 1 < argc) {
      char* end = nullptr;
      o->t0_ns = std::strtoll(argv[++i], &end, 10);
      if (end == argv[i] || *end != '\0' || o->t0_ns < 0) return false;
      continue;
    }
    if (i + 1 >= argc) return false;
    char* end = nullptr;
    const double value = std::strtod(argv[++i], &end);
    if (end == argv[i] || *end != '\0' || value < 0) return false;
    if (flag == "--timeout") o->timeout_seconds = value;
    else if (flag == "--max-output") o->max_output = static_cast<size_t>(value);
    else if (flag == "--reward") o->reward_bytes = static_cast<long long>(value);
    else if (flag == "--heartbeat") o->heartbeat = value;
    else return false;
  }
  return SweepArgsValid(o->sweep);
}

// The sandbox's start on the wall clock: PID 1's start (clock ticks since
// boot) moved by the wall clock's distance from the boot clock now. Without
// the harness's mark, what the entrypoint wrote then counts as the agent's,
// never the other way round.
long long SandboxStartNs() {
  std::string stat;
  const int fd = open("/proc/1/stat", O_RDONLY | O_CLOEXEC);
  char buf[1024];
  const ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
  if (fd >= 0) close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  const char* at = std::strrchr(buf, ')');
  for (int field = 2; at != nullptr && field < 22; ++field) at = std::strchr(at + 1, ' ');
  if (at == nullptr) return 0;
  const long long ticks = std::atoll(at + 1);
  timespec real{}, boot{};
  clock_gettime(CLOCK_REALTIME_COARSE, &real);
  clock_gettime(CLOCK_BOOTTIME, &boot);
  const long long offset = (static_cast<long long>(real.tv_sec) - boot.tv_sec) * 1000000000LL + (real.tv_nsec - boot.tv_nsec);
  return offset + ticks * (1000000000LL / sysconf(_SC_CLK_TCK));
}

std::string WorkingDirectory() {
  char buf[4096];
  return getcwd(buf, sizeof buf) != nullptr ? std::string(buf) : "/";
}

}  // namespace

int Verify(int argc, char** argv) {
  VerifyOptions o;
  if (!ParseVerify(argc, argv, &o)) {
    WriteAll(2, std::string(sandbox::kBoxTag) +
                    "usage: forge-box verify --tag TAG [--stop] [--keep LIST] [--clear] [--timeout S] "
                    "[--max-output BYTES] [--shebang] [--reward BYTES] [--t0 NS] [--no-trace] [--heartbeat S] < ARCHIVE\n");
    return 64;
  }
  // No process in the sandbox may write to this one's stdout through /proc.
  prctl(PR_SET_DUMPABLE, 0);
  StopOnSignals();
  std::vector<ArchiveEntry> entries;
  if (!ReadArchive(&entries)) return 65;
  if (!NoOtherVerify()) return sandbox::kVerifyBusy;
  RunSpec run;
  run.terminate = &g_stop;
  run.timeout_seconds = o.timeout_seconds;
  run.max_output = o.max_output;
  run.path_lookup = false;
  for (const ArchiveEntry& e : entries) {
    if (e.name == sandbox::kVerifyArgv) run.argv = NulList(e.content);
    if (e.name != sandbox::kVerifyEnv) continue;
    for (const std::string& kv : NulList(e.content)) {
      const size_t eq = kv.find('=');
      if (eq != std::string::npos && eq > 0) setenv(kv.substr(0, eq).c_str(), kv.substr(eq + 1).c_str(), 1);
    }
  }
  if (run.argv.empty() || run.argv[0].empty() || run.argv[0][0] != '/') {
    return Refuse(std::string("the archive's ") + sandbox::kVerifyArgv + " names no absolute command"), 65;
  }
  if (const int swept = SweepSteps(o.sweep); swept != 0) return swept;
  // What changes from now on is forge's (the tests) or the verifier's.
  const int64_t swept_at = ClockNs(CLOCK_REALTIME_COARSE);
  const int tests = o.sweep.clear ? open("/tests", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
  for (const ArchiveEntry& e : entries) {
    if (e.name.rfind(sandbox::kVerifyTests, 0) != 0) continue;
    std::string why = tests < 0 ? std::string("/tests is not open (no --clear)") : "";
    if (tests < 0 || !Unpack(tests, e, &why)) {
      WriteAll(1, std::string(sandbox::kSweepTag) + "cannot unpack the tests into /tests: " + why + "\n");
      return 4;
    }
  }
  if (tests >= 0) close(tests);
  if (o.shebang) run.argv = ByShebang(run.argv);
  verify::TracePlan plan;
  plan.t0_ns = o.t0_ns >= 0 ? o.t0_ns : SandboxStartNs();
  plan.workdir = WorkingDirectory();
  plan.agent_may_run = !o.sweep.stop;
  plan.trusted_from_ns = swept_at;
  std::optional<verify::Tracer> tracer;
  if (o.trace) run.tracer = &tracer.emplace(plan);
  RunOutcome r;
  {
    const ClientWatch watch(o.heartbeat);
    RunCommand(run, false, &r);
  }
  std::string rewards;
  long long txt = -1, json = -1;
  if (o.reward_bytes >= 0) {
    txt = ReadReward("/logs/verifier/reward.txt", o.reward_bytes, &rewards);
    json = ReadReward("/logs/verifier/reward.json", o.reward_bytes, &rewards);
  }
  std::string evidence;
  if (tracer) {
    verify::TraceReport report = tracer->Finish();
    for (const char* path : {"/logs/verifier/reward.txt", "/logs/verifier/reward.json"}) {
      // The reward file must be the verifier's own (verifiers.cpp's Witness).
      if (o.reward_bytes < 0 || !report.checked) break;
      const std::string why = tracer->Writer(path);
      if (why.empty()) continue;
      ++report.finding_count;
      report.findings.push_back({path, 0, "", why});
    }
    evidence = verify::FormatTraceReport(report);
  }
  WriteAll(1, std::string(sandbox::kVerifyTag) + "exit=" + std::to_string(r.exit) + " timed_out=" +
                  (r.timed_out ? "1" : "0") + " truncated=" + (r.truncated ? "1" : "0") +
                  " stdout=" + std::to_string(r.out.size()) + " stderr=" + std::to_string(r.err.size()) +
                  " reward.txt=" + std::to_string(txt) + " reward.json=" + std::to_string(json) +
                  " evidence=" + std::to_string(tracer ? static_cast<long long>(evidence.size()) : -1) + "\n" + r.out +
                  r.err + rewards + evidence);
  return 0;
}

}  // namespace forge::box
