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

// glibc keeps freed small blocks in a cache of each thread (tcache: up to 7
// of each size up to 1 KiB), given back only when the thread exits or reuses
// them. A thread that waits most of its life (forge-launch's, one a rollout
// in flight) keeps its cache to the end: ~24 KiB a thread at -j 384 on
// Kubernetes (docs/k8s-backend.md). glibc reads its tunables only at
// start-up, so this re-executes the program (same pid, argv) with
// GLIBC_TUNABLES=glibc.malloc.tcache_count=0 and, in the program so
// started, puts GLIBC_TUNABLES back as it was, so nothing it starts
// inherits the setting. Returns when the caches are already off (set by the
// caller's environment, or this is the program re-executed) or exec fails.
// For main, before any thread starts.
void ExecWithoutThreadCaches(char** argv);

}  // namespace forge
