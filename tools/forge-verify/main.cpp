// forge-verify: Verify rollouts and report pass@k and pass^k.
#include "cli/tool.h"

int main(int argc, char** argv) {
  forge::cli::Tool tool("forge-verify", "Verify rollouts and report pass@k and pass^k.");
  return tool.Run(argc, argv, [] {
    return forge::Status::Internal("this stage is not built yet");
  });
}
