// Messages for people go to stderr, prefixed with the tool's name, so they
// never mix with the JSON Lines a tool writes on stdout.
#pragma once

#include <string>
#include <string_view>

namespace forge::cli {

void SetToolName(std::string_view name);
const std::string& ToolName();

void Error(std::string_view message);
void Warn(std::string_view message);
void Note(std::string_view message);

// True when stderr is a terminal: only then do tools draw progress.
bool StderrIsTerminal();
// Colour only on a terminal and only when NO_COLOR is unset or empty.
bool UseColor();

}  // namespace forge::cli
