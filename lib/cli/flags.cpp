#include "cli/flags.h"

#include <algorithm>
#include <map>

namespace forge::cli {
namespace {

std::vector<std::string> Names(const std::string& names) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= names.size()) {
    size_t comma = names.find(',', start);
    if (comma == std::string::npos) comma = names.size();
    std::string name = names.substr(start, comma - start);
    if (!name.empty()) out.push_back(name);
    start = comma + 1;
  }
  return out;
}

bool Positional(const Flag& flag) { return !flag.names.empty() && flag.names[0] != '-'; }

// "-n, --attempts N" in the fonts of a man page's option line.
std::string RoffHead(const Flag& flag) {
  std::string head;
  for (const std::string& name : Names(flag.names)) {
    if (!head.empty()) head += ", ";
    head += "\\fB" + RoffEscape(name) + "\\fR";
  }
  if (!flag.value.empty()) head += " \\fI" + RoffEscape(flag.value) + "\\fR";
  return head;
}

std::string Sentence(const std::string& text) {
  if (text.empty() || text.back() == '.') return text;
  return text + ".";
}

// The flag's text in the man page, its default after it when shown.
std::string RoffText(const Flag& flag, const CLI::Option& option) {
  std::string text = flag.doc.empty() ? RoffEscape(Sentence(flag.help)) : flag.doc;
  while (!text.empty() && text.back() == '\n') text.pop_back();
  if (flag.show_default && !option.get_default_str().empty()) {
    text += "\nDefault: \\fB" + RoffEscape(option.get_default_str()) + "\\fR.";
  }
  return text;
}

// Roff's inline escapes and fonts as Markdown: bold is code (names of
// flags, files, commands), italics stay italics.
Result<std::string> InlineMarkdown(std::string_view text) {
  static const std::map<std::string, std::string, std::less<>> kSpecial = {
      {"em", "—"}, {"en", "–"}, {">=", "≥"}, {"<=", "≤"}, {"mu", "×"}, {"aq", "'"}, {"dq", "\""}};
  std::string out;
  const char* open = nullptr;
  auto close = [&] {
    if (open != nullptr) out += open;
    open = nullptr;
  };
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\\') {
      out += text[i];
      continue;
    }
    if (i + 1 >= text.size()) return Status::InvalidData("a lone backslash at the end of \"" + std::string(text) + "\"");
    const char c = text[++i];
    if (c == '-') {
      out += '-';
    } else if (c == 'e') {
      out += '\\';
    } else if (c == '&') {
    } else if (c == 'f' && i + 1 < text.size()) {
      const char font = text[++i];
      close();
      if (font == 'B') open = "`";
      if (font == 'I') open = "*";
      if (open != nullptr) out += open;
    } else if (c == '(' && i + 2 < text.size()) {
      auto it = kSpecial.find(text.substr(i + 1, 2));
      if (it == kSpecial.end()) return Status::InvalidData("roff character \\(" + std::string(text.substr(i + 1, 2)) + " has no Markdown here");
      out += it->second;
      i += 2;
    } else {
      return Status::InvalidData(std::string("roff escape \\") + c + " has no Markdown here");
    }
  }
  close();
  return out;
}

// The words of a font request (".BR a b"), quotes grouping words.
std::vector<std::string> RequestWords(std::string_view args) {
  std::vector<std::string> words;
  std::string word;
  bool quoted = false, any = false;
  for (char c : args) {
    if (c == '"') {
      quoted = !quoted;
      any = true;
    } else if (c == ' ' && !quoted) {
      if (any) words.push_back(word);
      word.clear();
      any = false;
    } else {
      word += c;
      any = true;
    }
  }
  if (any) words.push_back(word);
  return words;
}

// A flag's roff text as one Markdown paragraph: the font requests (.B, .BR,
// .I, .IR, .BI, .RB, .RI) and paragraph breaks (.PP, .IP, .br) it uses.
Result<std::string> MarkdownText(const std::string& roff) {
  std::string out;
  size_t start = 0;
  while (start < roff.size()) {
    size_t end = roff.find('\n', start);
    if (end == std::string::npos) end = roff.size();
    std::string_view line(roff.data() + start, end - start);
    start = end + 1;
    std::string piece;
    if (line.empty()) continue;
    if (line[0] != '.') {
      piece = std::string(line);
    } else {
      const size_t space = line.find(' ');
      const std::string request(line.substr(1, space == std::string_view::npos ? std::string_view::npos : space - 1));
      const std::string_view args = space == std::string_view::npos ? "" : line.substr(space + 1);
      static const std::map<std::string, std::pair<char, char>> kFonts = {
          {"B", {'B', 'B'}}, {"I", {'I', 'I'}}, {"BR", {'B', 'R'}}, {"IR", {'I', 'R'}},
          {"BI", {'B', 'I'}}, {"RB", {'R', 'B'}}, {"RI", {'R', 'I'}}};
      if (request == "PP" || request == "IP" || request == "br") {
        piece.clear();
      } else if (auto font = kFonts.find(request); font != kFonts.end()) {
        const std::vector<std::string> words = RequestWords(args);
        for (size_t w = 0; w < words.size(); ++w) {
          const char f = request.size() == 1 ? font->second.first : (w % 2 == 0 ? font->second.first : font->second.second);
          const std::string join = request.size() == 1 && w > 0 ? " " : "";
          piece += join + (f == 'R' ? words[w] : std::string("\\f") + f + words[w] + "\\fR");
        }
      } else {
        return Status::InvalidData("roff request ." + request + " has no Markdown here");
      }
    }
    if (piece.empty()) continue;
    auto converted = InlineMarkdown(piece);
    if (!converted.ok()) return converted.status();
    if (!out.empty() && out.back() != ' ') out += ' ';
    out += *converted;
  }
  return out;
}

}  // namespace

std::string RoffEscape(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '\\') {
      out += "\\e";
    } else if (c == '-') {
      out += "\\-";
    } else {
      if ((c == '.' || c == '\'') && (out.empty() || out.back() == '\n')) out += "\\&";
      out += c;
    }
  }
  return out;
}

void FlagTable::Add(CLI::App& app, const std::string& section, std::vector<Flag> flags, const std::string& group) {
  auto it = std::find_if(sections_.begin(), sections_.end(), [&](const auto& s) { return s.first == section; });
  if (it == sections_.end()) it = sections_.insert(sections_.end(), {section, {}});
  for (Flag& flag : flags) {
    CLI::Option* option = flag.bind(app, flag.names, flag.help);
    if (flag.show_default) option->capture_default_str();
    if (!group.empty()) option->group(group);
    if (flag.more) flag.more(*option);
    it->second.push_back({std::move(flag), option});
  }
}

Result<const std::vector<FlagTable::Entry>*> FlagTable::Section(std::string_view section) const {
  for (const auto& [name, entries] : sections_) {
    if (name == section) return &entries;
  }
  return Status::NotFound("no flags in section \"" + std::string(section) + "\"");
}

std::vector<std::string> FlagTable::sections() const {
  std::vector<std::string> names;
  for (const auto& [name, entries] : sections_) names.push_back(name);
  return names;
}

Result<std::string> FlagTable::Roff(std::string_view section) const {
  auto entries = Section(section);
  if (!entries.ok()) return entries.status();
  std::string out;
  for (const Entry& entry : **entries) {
    if (Positional(entry.flag)) continue;
    out += ".TP\n" + RoffHead(entry.flag) + "\n" + RoffText(entry.flag, *entry.option) + "\n";
  }
  return out;
}

Result<std::string> FlagTable::Markdown(std::string_view section) const {
  auto entries = Section(section);
  if (!entries.ok()) return entries.status();
  std::string out;
  for (const Entry& entry : **entries) {
    if (Positional(entry.flag)) continue;
    std::string head;
    for (const std::string& name : Names(entry.flag.names)) head += (head.empty() ? "" : ", ") + name;
    if (!entry.flag.value.empty()) head += " " + entry.flag.value;
    auto text = MarkdownText(RoffText(entry.flag, *entry.option));
    if (!text.ok()) return text.status().Prefixed(entry.flag.names);
    out += "- `" + head + "`: " + *text + "\n";
  }
  return out;
}

}  // namespace forge::cli
