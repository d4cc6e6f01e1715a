// The calling thread's stack, for threads that block for long: what a
// deep call (an HTTP request, a JSON parse, a store write) touched below
// the current frame stays resident while the thread waits, though nothing
// there is live any more. forge-launch on Kubernetes keeps hundreds of
// rollouts waiting on their pods this way (bench/README.md, k8s rows).
#pragma once

namespace forge {

// Gives the kernel back the pages of this thread's stack below the
// caller's frame (less a margin for the calls the wait itself makes); a
// later deeper call faults them in again, zeroed. No-op on the main thread
// or where the stack's bounds are unknown.
void ReleaseStackBelow();

}  // namespace forge
