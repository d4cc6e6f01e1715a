// forge-box verify's watch on the client of its stream: forge-verify, at the
// other end of a pod exec's WebSocket. Closing that connection does not end
// the process the exec started (kubernetes/kubernetes#89031, #73056), so
// forge-box ends its verifier itself once its client is gone. What reaches
// it is its stdin's end (the runtime closes an exec's stdin when the stream
// ends: containerd's CRI exec attaches it StdinOnce, pkg/cri/server/
// container_execsync.go) and, with a heartbeat, the silence of a client that
// stopped sending (a runtime that keeps stdin open, a connection that hangs
// without closing). Libc only: forge-box links it.
#pragma once

#include <atomic>
#include <csignal>

namespace forge::verify {

enum class ClientEnd {
  kNone,    // the watch was ended (*done): the client is still there
  kEof,     // stdin reached its end: the stream was closed
  kSilent,  // no byte within the heartbeat bound
  kError,   // stdin cannot be read
};

const char* ClientEndWhy(ClientEnd end);

// Reads fd (the stream's stdin, past the input archive; what arrives is
// discarded) until the client is gone or done is set. On the client's end
// it sets *gone to 1 (the run's terminate flag) and says how it ended.
// heartbeat_seconds > 0: a byte must arrive at least that often; 0: only
// the end of stdin counts.
ClientEnd WatchClient(int fd, double heartbeat_seconds, const std::atomic<bool>& done, volatile sig_atomic_t* gone);

}  // namespace forge::verify
