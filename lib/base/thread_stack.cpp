#include "base/thread_stack.h"

#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>

namespace forge {
namespace {

// Below the frame that calls ReleaseStackBelow, kept for the wait's own
// calls (a condition variable's futex, a clock read) and the red zone.
constexpr uintptr_t kMargin = 1024;

}  // namespace

void ReleaseStackBelow() {
  // The main thread's bounds come from /proc/self/maps: too slow, and it
  // is never one of many.
  static const pid_t main_thread = getpid();
  if (gettid() == main_thread) return;
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return;
  void* lowest = nullptr;
  size_t size = 0;
  const int rc = pthread_attr_getstack(&attr, &lowest, &size);
  pthread_attr_destroy(&attr);
  if (rc != 0 || lowest == nullptr) return;
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  volatile char here = 0;
  const uintptr_t low = (reinterpret_cast<uintptr_t>(lowest) + page - 1) & ~(page - 1);
  const uintptr_t frame = reinterpret_cast<uintptr_t>(&here);
  if (frame < low + kMargin) return;
  const uintptr_t high = (frame - kMargin) & ~(page - 1);
  if (high > low) madvise(reinterpret_cast<void*>(low), high - low, MADV_DONTNEED);
}

}  // namespace forge
