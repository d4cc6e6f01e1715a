// forge-dedup's flags, one row each (cli/flags.h): they build its command
// line and the OPTIONS of man/forge-dedup.1.
#pragma once

#include <string>

#include "base/env.h"
#include "cli/flags.h"
#include "dedup/dedup.h"
#include "dedup/remote_embedder.h"

namespace forge::tools::dedup {

// What the flags set; the text ones are resolved once the command line is read.
struct Args {
  forge::dedup::DedupOptions options;
  forge::dedup::RemoteOptions remote;
  std::string threshold;  // empty: the embedding's calibrated default
  bool no_exact_stage = false;
  int ngram = 0;          // 0: the embedding's default
  std::string store_path;
  std::string api_key_env = "FORGE_EMBED_API_KEY";
  CLI::App* calibrate = nullptr;  // the calibrate subcommand
};

// Defines every flag of forge-dedup on app, bound to args.
cli::FlagTable DefineFlags(CLI::App& app, Args& args, const Env& env);

}  // namespace forge::tools::dedup
