// SIGINT and SIGTERM ask a tool to stop: the handler requests the stop token
// the tool's Env holds, long loops poll it and waits end on it; the work stops
// taking more, finishes or rolls back what is in flight, and returns. A second
// signal ends the process at once. SIGPIPE is ignored so that a closed stdout
// shows up as EPIPE on write, which the JSONL writer turns into a quiet end.
#pragma once

#include "base/stop_token.h"

namespace forge::cli {

// stop must outlive the handlers (UninstallSignalHandlers).
void InstallSignalHandlers(StopToken& stop);
// The signals then end the process as they would without a tool.
void UninstallSignalHandlers();

}  // namespace forge::cli
