// JSON Lines in and out, shared by every tool.
//
// The reader reports a bad line as "file:line: reason" and goes on with the
// next one, so one malformed record never costs the rest of the stream; in
// strict mode the first bad line is an error instead. Records are kept as
// whole JSON objects, so a stage passes through fields it does not know.
#pragma once

#include <cstdio>
#include <functional>
#include <vector>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/env.h"
#include "base/status.h"

namespace forge::records {

using Json = nlohmann::json;

struct Record {
  Json json;
  std::string source;  // file name, or "<stdin>"
  size_t line = 0;     // 1-based line number in source
  std::string text;    // the line as read without its \n (CRLF keeps its \r), for pass-through stages

  // "source:line", for messages about this record.
  std::string where() const { return source + ":" + std::to_string(line); }
};

struct ReaderOptions {
  bool strict = false;
  // Records must be JSON objects; other values are bad lines.
  bool objects_only = true;
};

class JsonlReader {
 public:
  // path "-" reads stdin. Bad lines are reported to env, and its stop token
  // ends the input (env must outlive the reader).
  static Result<std::unique_ptr<JsonlReader>> Open(const std::string& path, Env& env,
                                                    ReaderOptions options = {});
  // Reads from an already open stream (closed by the reader when owns).
  JsonlReader(std::FILE* stream, std::string source, Env& env, ReaderOptions options, bool owns);
  ~JsonlReader();
  JsonlReader(const JsonlReader&) = delete;
  JsonlReader& operator=(const JsonlReader&) = delete;

  // The next good record, std::nullopt at the end of input. A bad line is
  // reported to the Env as an error and skipped; in strict mode it is returned
  // as InvalidData. A stop ends the input early with Cancelled.
  Result<std::optional<Record>> Next();

  size_t bad_lines() const { return bad_lines_; }
  size_t good_lines() const { return good_lines_; }
  const std::string& source() const { return source_; }

 private:
  std::FILE* stream_;
  std::string source_;
  Env& env_;
  ReaderOptions options_;
  bool owns_;
  size_t line_ = 0;
  size_t bad_lines_ = 0;
  size_t good_lines_ = 0;
  char* buffer_ = nullptr;
  size_t buffer_size_ = 0;
};

// Reads every input in turn ("-" for stdin), calling on_record for each good
// record. Stops at the first error on_record returns. Bad lines are reported
// and counted; afterwards, if any were seen (lenient mode), returns InvalidData
// naming how many, so a pipeline notices that data was skipped. When bad_lines
// is given, it receives that count as well.
Status ForEachRecord(const std::vector<std::string>& paths, Env& env, ReaderOptions options,
                     const std::function<Status(Record&)>& on_record, size_t* bad_lines = nullptr);

class JsonlWriter {
 public:
  // Writes to stdout.
  JsonlWriter();
  // Writes to a file it creates (or truncates).
  static Result<std::unique_ptr<JsonlWriter>> Create(const std::string& path);
  ~JsonlWriter();
  JsonlWriter(const JsonlWriter&) = delete;
  JsonlWriter& operator=(const JsonlWriter&) = delete;

  // One compact line per record, flushed, so a downstream stage sees it at
  // once. A vanished reader (EPIPE) is Status::OutputClosed().
  Status Write(const Json& record);
  // Writes one line as given (a record passed through untouched); a newline is added.
  Status WriteLine(std::string_view line);
  size_t written() const { return written_; }

 private:
  JsonlWriter(std::FILE* stream, std::string name, bool owns);
  std::FILE* stream_;
  std::string name_;
  bool owns_;
  size_t written_ = 0;
};

}  // namespace forge::records
