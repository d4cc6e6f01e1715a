#include "base/free_memory.h"

#include <malloc.h>

namespace forge {

void ReturnFreedMemory() {
#ifdef __GLIBC__
  // pad 0: keep nothing spare at the top of the main heap either.
  malloc_trim(0);
#endif
}

}  // namespace forge
