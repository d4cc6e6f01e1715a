// forge-proxy: serve and record every model call a harness makes.
#include "cli/tool.h"
#include "forge-proxy/flags.h"
#include "proxy/dump.h"

int main(int argc, char** argv) {
  forge::cli::Tool tool("forge-proxy", "Serve and record every model call a harness makes.");
  forge::tools::proxy::Args args;
  forge::tools::proxy::DefineFlags(tool.app(), args, tool.env());
  return tool.Run(argc, argv, [&] {
    forge::proxy::ProxyConfig& c = args.config;
    c.env = &tool.env();
    if (args.check_call_log) return forge::proxy::CheckCallLogs(c.store_path);
    if (!args.dump_rollout.empty()) return forge::proxy::DumpRolloutCalls(c.store_path, args.dump_rollout);
    if (args.export_calls) return forge::proxy::ExportCalls(c.store_path);
    return forge::proxy::RunProxy(c);
  });
}
