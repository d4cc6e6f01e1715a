// forge-box's subcommands (sandbox/box_protocol.h says what each prints).
// Each returns the process's exit status; mark only returns on failure.
#pragma once

namespace forge::box {

int Mark(int argc, char** argv);       // after "mark": "--" CMD ARGS...
int KeepAlive(int argc, char** argv);  // after "keepalive": SECONDS
int Sleep(int argc, char** argv);      // after "sleep": SECONDS
int Sweep(int argc, char** argv);      // after "sweep": options
int Supervise(int argc, char** argv);  // after "supervise": options "--" CMD ARGS...
int Done(int argc, char** argv);       // after "done": nothing
int Install(int argc, char** argv);    // after "install": DEST
int Verify(int argc, char** argv);     // after "verify": options, the archive on stdin
int VerifyStop(int argc, char** argv); // after "verify-stop": [--wait S]

}  // namespace forge::box
