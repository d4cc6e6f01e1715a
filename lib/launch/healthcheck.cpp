#include "launch/healthcheck.h"

#include <cmath>

namespace forge::launch {
namespace {

std::string WholeSeconds(double seconds) {
  return std::to_string(static_cast<long long>(std::ceil(std::max(0.0, seconds))));
}

}  // namespace

std::vector<std::string> WithHealthcheck(const tasks::Healthcheck& check, const std::vector<std::string>& argv) {
  // $1 command, $2 timeout, $3 interval, $4 start period, $5 start interval, $6 retries.
  static const std::string kScript =
      "c=$1 t=$2 i=$3 p=$4 si=$5 r=$6; shift 6; e=0 f=0\n"
      "command -v timeout >/dev/null 2>&1 && to=\"timeout $t\" || to=\n"
      "while ! $to /bin/sh -c \"$c\" >/dev/null 2>&1; do\n"
      "  [ \"$e\" -ge \"$p\" ] && f=$((f+1))\n"
      "  if [ \"$f\" -ge \"$r\" ]; then\n"
      "    echo \"forge-healthcheck: '$c' failed $r times in a row\" >&2; exit " +
      std::to_string(kHealthcheckExit) + "\n"
      "  fi\n"
      "  if [ \"$e\" -lt \"$p\" ]; then s=$si; else s=$i; fi\n"
      "  sleep \"$s\"; e=$((e+s))\n"
      "done\n"
      "exec \"$@\"\n";
  std::vector<std::string> out = {"/bin/sh",
                                  "-c",
                                  kScript,
                                  "forge-healthcheck",
                                  check.command,
                                  WholeSeconds(check.timeout_sec),
                                  WholeSeconds(check.interval_sec),
                                  WholeSeconds(check.start_period_sec),
                                  WholeSeconds(check.start_interval_sec),
                                  std::to_string(check.retries)};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

}  // namespace forge::launch
