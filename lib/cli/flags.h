// One definition per flag, as ripgrep's crates/core/flags/defs.rs: a tool's
// flags are the rows of a table, each saying once everything about its flag
// (its names, the value it takes, the variable it sets and so its type and
// default, its --help line, its man page text and the section it is listed
// in), and that table both builds the CLI11 app and writes the option lists
// of the man page and docs/ (tools/man), so the parser, --help, man/ and
// docs/ cannot disagree; the ctest man_pages fails when they would.
//
//   cli::FlagTable flags;
//   flags.Add(app, "", {
//       {.names = "-n,--attempts", .value = "N", .bind = cli::Bind(o.attempts), .show_default = true,
//        .help = "Rollouts per task",
//        .doc = "Rollouts of each task, each in a sandbox of its own."},
//   });
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "base/status.h"

namespace forge::cli {

// Adds one flag to an app, bound to the variable it sets.
using Binder = std::function<CLI::Option*(CLI::App& app, const std::string& names, const std::string& help)>;

// The variable's type is the flag's: a bool is a switch, anything else takes
// a value (a vector one per occurrence); its value before parsing is the
// flag's default.
template <typename T>
Binder Bind(T& target) {
  return [&target](CLI::App& app, const std::string& names, const std::string& help) -> CLI::Option* {
    if constexpr (std::is_same_v<T, bool>) {
      return app.add_flag(names, target, help);
    } else {
      return app.add_option(names, target, help);
    }
  };
}

struct Flag {
  std::string names;          // CLI11's: "-n,--attempts"; a positional argument: "tasks"
  std::string value = {};     // the value's name in the man page ("N", "FILE"); empty: a switch
  Binder bind;                // the variable it sets: Bind(options.attempts)
  bool show_default = false;  // --help and the man page show the variable's value before parsing
  std::function<void(CLI::Option&)> more = {};  // checks, transforms, delimiters, exclusions
  std::string help;           // the --help line
  std::string doc = {};       // the man page's text, roff; empty: the help line
};

class FlagTable {
 public:
  // Adds flags to app (a tool, or one of its subcommands) and lists them in
  // the man page's `section`; a non-empty group is their heading in --help.
  void Add(CLI::App& app, const std::string& section, std::vector<Flag> flags, const std::string& group = "");

  // A section's options as man page paragraphs (.TP), in the order added;
  // positional arguments are the SYNOPSIS's, not listed. NotFound for a
  // section no flag was added to.
  Result<std::string> Roff(std::string_view section) const;
  // The same as a Markdown list, for docs/. InvalidData when a flag's text
  // uses a roff request the conversion does not know.
  Result<std::string> Markdown(std::string_view section) const;
  // The sections, in the order first added to.
  std::vector<std::string> sections() const;

 private:
  struct Entry {
    Flag flag;
    const CLI::Option* option;
  };
  // NotFound naming the section when no flag is in it.
  Result<const std::vector<Entry>*> Section(std::string_view section) const;

  std::vector<std::pair<std::string, std::vector<Entry>>> sections_;
};

// Roff's escapes for plain text: "-" as "\-", a backslash doubled, and a
// line that would start with a control character ("." or "'") guarded.
std::string RoffEscape(std::string_view text);

}  // namespace forge::cli
