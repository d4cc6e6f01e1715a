// libFuzzer target: the ResponsesFormat request translator and stream writer.
#include "fuzz/fuzz_translate.h"
#include "proxy/formats/responses.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  forge::proxy::ResponsesFormat format;
  forge::proxy::fuzz::Drive(format, data, size);
  return 0;
}
