// forge-dedup: Remove near-duplicate records by embedding similarity.
#include "cli/tool.h"

int main(int argc, char** argv) {
  forge::cli::Tool tool("forge-dedup", "Remove near-duplicate records by embedding similarity.");
  return tool.Run(argc, argv, [] {
    return forge::Status::Internal("this stage is not built yet");
  });
}
