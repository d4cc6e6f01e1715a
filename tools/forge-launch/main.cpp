// forge-launch: Run each rollout of each task in its own sandbox.
#include "cli/tool.h"

int main(int argc, char** argv) {
  forge::cli::Tool tool("forge-launch", "Run each rollout of each task in its own sandbox.");
  return tool.Run(argc, argv, [] {
    return forge::Status::Internal("this stage is not built yet");
  });
}
