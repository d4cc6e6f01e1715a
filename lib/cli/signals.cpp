#include "cli/signals.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>

namespace forge::cli {
namespace {

std::atomic<int> g_stop_signal{0};

void OnStopSignal(int signal_number) {
  int expected = 0;
  if (!g_stop_signal.compare_exchange_strong(expected, signal_number)) {
    // Second signal: the user means it.
    _exit(128 + signal_number);
  }
}

}  // namespace

void InstallSignalHandlers() {
  struct sigaction action {};
  action.sa_handler = OnStopSignal;
  sigemptyset(&action.sa_mask);
  // No SA_RESTART: a blocking read on stdin returns EINTR so the reader can
  // notice the stop.
  action.sa_flags = 0;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

bool StopRequested() { return g_stop_signal.load() != 0; }
int StopSignal() { return g_stop_signal.load(); }
void RequestStop(int signal_number) { g_stop_signal.store(signal_number); }
void ResetStopForTesting() { g_stop_signal.store(0); }

}  // namespace forge::cli
