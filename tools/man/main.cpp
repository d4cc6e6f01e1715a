// forge-man: writes the option lists of man/*.1 and docs/*.md from the
// tools' flag tables (cli/flags.h), between markers in those files:
//
//   .\" forge-flags: forge-launch k8s        <!-- forge-flags: forge-launch k8s -->
//   (generated .TP paragraphs)               (generated Markdown list)
//   .\" forge-flags: end                     <!-- forge-flags: end -->
//
// Everything else in a page (DESCRIPTION, EXAMPLES, EXIT STATUS, ...) is
// written by hand. `forge-man --check DIR` exits 1 naming every list that
// differs from its table, and every table section no man page lists (the
// ctest man_pages runs it); `forge-man --write DIR` rewrites the lists.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cli/terminal_env.h"
#include "forge-dedup/flags.h"
#include "forge-launch/flags.h"
#include "forge-pack/flags.h"
#include "forge-proxy/flags.h"
#include "forge-verify/flags.h"

namespace {

namespace fs = std::filesystem;
using forge::cli::FlagTable;

// A tool's table, defined on an app of its own with every default as the
// tool has it with no environment variables set.
struct Table {
  std::string tool;
  std::unique_ptr<CLI::App> app;
  std::shared_ptr<void> args;
  FlagTable flags;
};

template <typename Args>
Table Define(const std::string& tool, FlagTable (*define)(CLI::App&, Args&, const forge::Env&),
             const forge::Env& env) {
  Table t{tool, std::make_unique<CLI::App>(tool, tool), std::make_shared<Args>(), {}};
  t.flags = define(*t.app, *static_cast<Args*>(t.args.get()), env);
  return t;
}

std::vector<Table> AllTables(const forge::Env& env) {
  std::vector<Table> tables;
  tables.push_back(Define("forge-proxy", &forge::tools::proxy::DefineFlags, env));
  tables.push_back(Define("forge-launch", &forge::tools::launch::DefineFlags, env));
  tables.push_back(Define("forge-verify", &forge::tools::verify::DefineFlags, env));
  tables.push_back(Define("forge-dedup", &forge::tools::dedup::DefineFlags, env));
  tables.push_back(Define("forge-pack", &forge::tools::pack::DefineFlags, env));
  return tables;
}

struct Marker {
  std::string begin_prefix, begin_suffix, end;
  bool markdown;
};
const Marker kRoff{".\\\" forge-flags: ", "", ".\\\" forge-flags: end", false};
const Marker kMarkdown{"<!-- forge-flags: ", " -->", "<!-- forge-flags: end -->", true};

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Regenerates the lists of one file's text. Problems are appended to errors;
// `listed` gets "tool section" of each roff list.
std::string Regenerate(const std::string& text, const Marker& marker, const std::vector<Table>& tables,
                       const std::string& name, std::vector<std::string>& errors, std::vector<std::string>& listed) {
  std::istringstream in(text);
  std::string out, line;
  size_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    out += line + "\n";
    if (line.rfind(marker.begin_prefix, 0) != 0 || line == marker.end) continue;
    if (!marker.begin_suffix.empty() && !line.ends_with(marker.begin_suffix)) continue;
    std::istringstream words(line.substr(marker.begin_prefix.size(),
                                         line.size() - marker.begin_prefix.size() - marker.begin_suffix.size()));
    std::string tool, section;
    words >> tool >> section;
    const std::string where = name + ":" + std::to_string(number);
    const Table* table = nullptr;
    for (const Table& t : tables) {
      if (t.tool == tool) table = &t;
    }
    forge::Result<std::string> list = forge::Status::NotFound(where + ": no flag table for tool \"" + tool + "\"");
    if (table != nullptr) list = marker.markdown ? table->flags.Markdown(section) : table->flags.Roff(section);
    if (!list.ok()) {
      errors.push_back(list.status().Prefixed(where).message());
    } else {
      out += *list;
      if (!marker.markdown) listed.push_back(tool + " " + section);
    }
    // Skip the old list, up to and including its end marker.
    bool ended = false;
    while (std::getline(in, line)) {
      ++number;
      if (line == marker.end) {
        ended = true;
        out += line + "\n";
        break;
      }
    }
    if (!ended) errors.push_back(where + ": no \"" + marker.end + "\" after this list");
  }
  return out;
}

// Every section of every table is listed in the tool's man page (a section
// of positional arguments only, which the SYNOPSIS names, has no list).
void CheckListed(const std::vector<Table>& tables, const std::vector<std::string>& listed,
                 const std::map<std::string, std::vector<std::string>>& sections, std::vector<std::string>& errors) {
  for (const Table& t : tables) {
    for (const std::string& section : sections.at(t.tool)) {
      auto roff = t.flags.Roff(section);
      if (roff.ok() && roff->empty()) continue;
      if (std::find(listed.begin(), listed.end(), t.tool + " " + section) == listed.end()) {
        errors.push_back("man/" + t.tool + ".1: no list of " + t.tool + "'s \"" + section + "\" flags (add \"" +
                         kRoff.begin_prefix + t.tool + " " + section + "\" and its end marker)");
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc == 3 ? argv[1] : "";
  if (mode != "--check" && mode != "--write") {
    std::fputs("usage: forge-man --check|--write SOURCE_DIR\n"
               "Writes (or checks) the option lists of man/*.1 and docs/*.md from the tools' flag tables.\n",
               stderr);
    return 64;
  }
  const fs::path source = argv[2];
  forge::cli::TerminalEnv env("forge-man", {});  // no variables: the defaults a fresh shell sees
  const std::vector<Table> tables = AllTables(env);
  std::map<std::string, std::vector<std::string>> sections;
  for (const Table& t : tables) sections[t.tool] = t.flags.sections();

  std::vector<std::string> errors, stale, listed;
  std::vector<std::pair<fs::path, const Marker*>> files;
  for (const char* dir : {"man", "docs"}) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(source / dir, ec)) {
      const std::string ext = entry.path().extension().string();
      if (ext == ".1") files.emplace_back(entry.path(), &kRoff);
      if (ext == ".md") files.emplace_back(entry.path(), &kMarkdown);
    }
    if (ec) errors.push_back((source / dir).string() + ": " + ec.message());
  }
  std::sort(files.begin(), files.end());
  for (const auto& [path, marker] : files) {
    const std::string name = fs::relative(path, source).string();
    const std::string text = ReadFile(path);
    const std::string fresh = Regenerate(text, *marker, tables, name, errors, listed);
    if (fresh == text) continue;
    if (mode == "--write") {
      std::ofstream(path, std::ios::binary) << fresh;
      env.Note("wrote " + name);
    } else {
      stale.push_back(name);
    }
  }
  CheckListed(tables, listed, sections, errors);
  for (const std::string& e : errors) env.Error(e);
  for (const std::string& name : stale) {
    env.Error(name + ": its option lists differ from the flag tables in tools/*/flags.cpp; "
              "run: build/forge-man --write .");
  }
  return errors.empty() && stale.empty() ? 0 : 1;
}
