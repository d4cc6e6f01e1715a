#include "cli/signals.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>

namespace forge::cli {
namespace {

std::atomic<StopToken*> g_stop{nullptr};

void OnStopSignal(int signal_number) {
  StopToken* stop = g_stop.load();
  if (stop == nullptr) _exit(128 + signal_number);
  // Second signal: the user means it.
  if (stop->requested()) _exit(128 + signal_number);
  stop->Request(signal_number);
}

}  // namespace

void InstallSignalHandlers(StopToken& stop) {
  g_stop.store(&stop);
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

void UninstallSignalHandlers() {
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  g_stop.store(nullptr);
}

}  // namespace forge::cli
