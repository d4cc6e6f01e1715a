// Tamper evidence from what the verifier actually did: the rules that decide,
// for one file a verifier process executed or read, whether the agent
// reached into the verifier's machinery. The watch (verify/watch.h) sees the
// accesses from outside the sandbox and fills in the facts; nothing here
// touches the system, so every rule is tested on its own
// (tests/unit/verify_evidence_test.cpp).
//
// The line (docs/forge-verify.md "Evidence"): the verifier's machinery — its
// interpreter, its test runner and plugins, its shell and what it sources,
// the commands it runs — must be the image's (or written by forge or by the
// verifier itself). The agent's work lives in the task's working area (the
// sandbox's workdir) and is judged by the tests: the tests may read it, and
// a program of the agent's that they run becomes the agent's program, with
// the verifier's privileges, not part of the machinery. A Python interpreter,
// once it reaches its input (a test file, its script), may also read what the
// agent installed (a package the tests import) unless it shadows or replaces
// a module of the image's.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace forge::verify::evidence {

// Whose a file is, by its change time and the watch's record of writes.
enum class Origin {
  kPristine,  // changed before the harness started: the image's or the environment's
  kTrusted,   // written during verification by forge or by the verifier
  kAgent,     // changed since the harness started, not by forge or the verifier
};

// What a process of the sandbox is to the rules.
enum class Role {
  kOther,         // not the verifier's: the environment's services, the keep-alive
  kMachinery,     // the verifier's: judged
  kAgentProgram,  // runs a program of the agent's that the tests started; not judged
};

struct ProcessView {
  Role role = Role::kOther;
  bool python = false;   // the program is a Python interpreter
  bool started = false;  // (python) it has read its input: a file under /tests, a file it was named
  bool shell = false;    // the program is a shell: its first file argument is its script
};

struct Access {
  bool exec = false;        // executed (the program, or its #! or ELF interpreter), else read
  std::string path;         // the file, as the sandbox names it
  Origin origin = Origin::kPristine;
  std::string agent_link;   // the path went through this symlink of the agent's
  bool path_unknown = false;  // the path asked for could not be followed to this file
  bool first_file_arg = false;  // the process's first argument naming a file (its script)
  bool named_in_argv = false;   // named by one of its arguments (its input)
};

// What the rules ask of the sandbox's image.
struct Image {
  // A top-level Python module or package of that name in the image's layers.
  std::function<bool(const std::string& name)> has_module;
  // A command of that name in the image's layers, in a standard bin directory.
  std::function<bool(const std::string& name)> has_command;
  // The file's content (for the allowlist's checks of what a file says).
  std::function<std::optional<std::string>(const std::string& path)> content;
};

struct Decision {
  std::string tampered;        // non-empty: why this access is the agent's hand in the machinery
  bool becomes_agent = false;  // the process runs the agent's program from now on
  bool ends_startup = false;   // (python) it has reached its input
};

// The working area: everything under workdir, unless workdir is "/", a home
// directory (where shell start-up files live) or a system directory, which
// gives none ("" returned).
std::string WorkingArea(std::string_view workdir);
bool InWorkingArea(std::string_view path, std::string_view area);

// The decision for one access by a process.
Decision Judge(const ProcessView& process, const Access& access, std::string_view area, const Image& image);
// The same, the accessed file's content (its first 64 KiB) read from fd, the
// open file the access is of: reading it by path could wait on the very
// watch that asks, or reach another file.
Decision JudgeOpen(const ProcessView& process, const Access& access, std::string_view area, Image image, int fd);

// Files the agent may have written that the machinery may read because they
// only name other files, which are then checked in their turn, or hold only
// data the machinery cannot run: the loader's cache, the user and group
// databases, dpkg's and apt's state, Python distributions' metadata, and an
// entry_points.txt or installer `env` script whose content passes a check.
// nullopt: not a kind of file the list knows; "": allowed; else why a file
// of a listed kind fails its check.
std::optional<std::string> AllowlistCheck(std::string_view path, const Image& image);

// A Python interpreter's file name (python3, python3.11); a shell's (sh,
// bash, dash, ash, zsh, ksh, mksh).
bool IsPythonProgram(std::string_view path);
bool IsShellProgram(std::string_view path);

// The Python module names a file may be imported as: its package below a
// site directory (site-packages, dist-packages, lib-dynload, lib/pythonX.Y),
// or, elsewhere (the working area, which `python -m` puts first on
// sys.path), each directory below the area's root and the file's own stem.
// Empty for files that are not modules (by their extension).
std::vector<std::string> ModuleNames(std::string_view path, std::string_view area);

}  // namespace forge::verify::evidence
