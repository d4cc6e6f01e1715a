// libFuzzer target: the GeminiFormat request translator and stream writer.
#include "fuzz/fuzz_translate.h"
#include "proxy/formats/gemini.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  forge::proxy::GeminiFormat format;
  forge::proxy::fuzz::Drive(format, data, size);
  return 0;
}
