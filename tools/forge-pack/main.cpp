// forge-pack: Pack rollouts and recorded calls into SFT and RL training batches.
#include "cli/tool.h"

int main(int argc, char** argv) {
  forge::cli::Tool tool("forge-pack", "Pack rollouts and recorded calls into SFT and RL training batches.");
  return tool.Run(argc, argv, [] {
    return forge::Status::Internal("this stage is not built yet");
  });
}
