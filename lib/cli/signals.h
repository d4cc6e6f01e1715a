// SIGINT and SIGTERM ask a tool to stop: long loops poll StopRequested(),
// stop taking work, finish or roll back what is in flight, and return. A
// second signal ends the process at once. SIGPIPE is ignored so that a closed
// stdout shows up as EPIPE on write, which the JSONL writer turns into a quiet
// end.
#pragma once

namespace forge::cli {

void InstallSignalHandlers();
bool StopRequested();
// The signal that asked for the stop, or 0.
int StopSignal();
// For tests and for tools that stop themselves (e.g. an admin "shutdown").
void RequestStop(int signal_number);
void ResetStopForTesting();

}  // namespace forge::cli
