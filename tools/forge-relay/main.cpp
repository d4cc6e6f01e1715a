// forge-relay: the sandbox half of `forge-launch --network proxy-only`.
// Listens on LISTEN and relays every connection to TARGET (see net/relay.h).
// Linked statically against libc, with no CLI library, so forge-launch can
// bind-mount it into any image (busybox, a debootstrap rootfs) and run it.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "net/relay.h"

namespace {

constexpr const char* kUsage =
    "usage: forge-relay [--background] LISTEN TARGET\n"
    "Relays every connection accepted on LISTEN to a new connection to TARGET.\n"
    "LISTEN, TARGET: IPV4:PORT or unix:/PATH.\n"
    "--background  return once LISTEN accepts connections, relaying on in a child\n"
    "              (its stdin, stdout and stderr on /dev/null)\n";

forge::net::Relay* g_relay = nullptr;

void OnSignal(int) {
  if (g_relay) g_relay->Stop();
}

int Fail(const std::string& message, int code) {
  std::fprintf(stderr, "forge-relay: %s\n", message.c_str());
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  bool background = false;
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--background") {
      background = true;
    } else if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else {
      args.push_back(arg);
    }
  }
  if (args.size() != 2) {
    std::fputs(kUsage, stderr);
    return 64;
  }
  auto listen_at = forge::net::ParseEndpoint(args[0]);
  if (!listen_at.ok()) return Fail(listen_at.status().message(), 64);
  auto target = forge::net::ParseEndpoint(args[1]);
  if (!target.ok()) return Fail(target.status().message(), 64);
  // A container user other than root must be able to connect to a unix socket we make.
  auto fd = forge::net::Listen(*listen_at, 0666);
  if (!fd.ok()) return Fail(fd.status().message(), 69);

  if (background) {
    // The socket listens already, so whoever waits for this process to exit
    // may connect at once: readiness without polling.
    pid_t child = fork();
    if (child < 0) return Fail(std::string("fork: ") + std::strerror(errno), 71);
    if (child > 0) _exit(0);
    // Not setsid(): staying in the caller's process group lets a group kill
    // (the local backend's deadline) take the relay with the harness.
    int null = open("/dev/null", O_RDWR);
    if (null >= 0) {
      dup2(null, 0);
      dup2(null, 1);
      dup2(null, 2);
      if (null > 2) close(null);
    }
  }
  signal(SIGPIPE, SIG_IGN);
  forge::net::Relay relay(*fd, *target);
  g_relay = &relay;
  struct sigaction stop = {};
  stop.sa_handler = OnSignal;
  sigaction(SIGTERM, &stop, nullptr);
  sigaction(SIGINT, &stop, nullptr);
  forge::Status status = relay.Run();
  g_relay = nullptr;
  if (!status.ok()) return Fail(status.message(), 74);
  return 0;
}
