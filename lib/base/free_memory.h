// Memory malloc keeps after it is freed. A process with hundreds of threads
// (forge-launch on Kubernetes, one per rollout in flight) frees in many
// arenas; glibc gives back only what lies at the top of each heap, so the
// holes left between live blocks stay resident to the end of the run.
#pragma once

namespace forge {

// Gives the kernel back the whole free pages inside every malloc arena (a
// later allocation there faults them in again, zeroed). It walks every
// arena's free lists under that arena's lock: call it now and then (once a
// second), not on a hot path.
void ReturnFreedMemory();

}  // namespace forge
