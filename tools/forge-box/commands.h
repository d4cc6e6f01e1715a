// forge-box's subcommands (sandbox/box_protocol.h says what each prints).
// Each returns the process's exit status; mark only returns on failure.
#pragma once

namespace forge::box {

int Mark(int argc, char** argv);       // after "mark": "--" CMD ARGS...
int KeepAlive(int argc, char** argv);  // after "keepalive": SECONDS
int Sleep(int argc, char** argv);      // after "sleep": SECONDS
int Sweep(int argc, char** argv);      // after "sweep": options

}  // namespace forge::box
