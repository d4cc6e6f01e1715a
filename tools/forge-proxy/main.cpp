// forge-proxy: Serve and record every model call a harness makes.
#include "cli/tool.h"

int main(int argc, char** argv) {
  forge::cli::Tool tool("forge-proxy", "Serve and record every model call a harness makes.");
  return tool.Run(argc, argv, [] {
    return forge::Status::Internal("this stage is not built yet");
  });
}
