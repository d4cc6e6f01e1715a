#include "records/jsonl.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>


namespace forge::records {

Result<std::unique_ptr<JsonlReader>> JsonlReader::Open(const std::string& path, Env& env,
                                                        ReaderOptions options) {
  if (path == "-") {
    return std::make_unique<JsonlReader>(stdin, "<stdin>", env, options, false);
  }
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    return Status::NotFound(path + ": " + std::strerror(errno));
  }
  return std::make_unique<JsonlReader>(f, path, env, options, true);
}

JsonlReader::JsonlReader(std::FILE* stream, std::string source, Env& env, ReaderOptions options, bool owns)
    : stream_(stream), source_(std::move(source)), env_(env), options_(options), owns_(owns) {}

JsonlReader::~JsonlReader() {
  std::free(buffer_);
  if (owns_) std::fclose(stream_);
}

Result<std::optional<Record>> JsonlReader::Next() {
  for (;;) {
    if (env_.stop().requested()) return Status::Cancelled("stopped while reading " + source_);
    errno = 0;
    ssize_t n = getline(&buffer_, &buffer_size_, stream_);
    if (n < 0) {
      if (errno == EINTR) {
        clearerr(stream_);
        continue;  // the loop head notices a stop
      }
      if (std::ferror(stream_)) return Status::IoError(source_ + ": " + std::strerror(errno));
      return std::optional<Record>();
    }
    ++line_;
    // The record's text keeps a CRLF line's \r (JSON reads it as whitespace),
    // so that a stage passing records through writes back the bytes it read.
    std::string_view text(buffer_, static_cast<size_t>(n));
    if (!text.empty() && text.back() == '\n') text.remove_suffix(1);
    if (text.find_first_not_of(" \t\r") == std::string_view::npos) continue;  // blank line

    std::string where = source_ + ":" + std::to_string(line_);
    std::string reason;
    Json json = Json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (json.is_discarded()) {
      // Parse again with exceptions only to get a precise reason.
      try {
        Json unused = Json::parse(text);
        (void)unused;
      } catch (const Json::parse_error& e) {
        reason = e.what();
        // nlohmann's message starts with "[json.exception.parse_error.101] "
        if (auto p = reason.find("] "); p != std::string::npos) reason.erase(0, p + 2);
      }
      if (reason.empty()) reason = "malformed JSON";
    } else if (options_.objects_only && !json.is_object()) {
      reason = std::string("expected a JSON object, got ") + json.type_name();
    }
    if (!reason.empty()) {
      ++bad_lines_;
      if (options_.strict) return Status::InvalidData(where + ": " + reason);
      env_.Error(where + ": " + reason + " (line skipped)");
      continue;
    }
    ++good_lines_;
    return std::optional<Record>(Record{std::move(json), source_, line_, std::string(text)});
  }
}

Status ForEachRecord(const std::vector<std::string>& paths, Env& env, ReaderOptions options,
                     const std::function<Status(Record&)>& on_record, size_t* bad_lines) {
  size_t bad = 0;
  for (const std::string& path : paths) {
    auto reader = JsonlReader::Open(path, env, options);
    if (!reader.ok()) return reader.status();
    for (;;) {
      auto next = (*reader)->Next();
      if (!next.ok()) return next.status();
      if (!next->has_value()) break;
      FORGE_RETURN_IF_ERROR(on_record(**next));
    }
    bad += (*reader)->bad_lines();
  }
  if (bad_lines != nullptr) *bad_lines = bad;
  if (bad > 0) {
    return Status::InvalidData(std::to_string(bad) + " malformed input line" + (bad == 1 ? "" : "s") +
                           " skipped");
  }
  return Status::Ok();
}

JsonlWriter::JsonlWriter() : JsonlWriter(stdout, "<stdout>", false) {}

JsonlWriter::JsonlWriter(std::FILE* stream, std::string name, bool owns)
    : stream_(stream), name_(std::move(name)), owns_(owns) {}

Result<std::unique_ptr<JsonlWriter>> JsonlWriter::Create(const std::string& path) {
  if (path == "-") return std::unique_ptr<JsonlWriter>(new JsonlWriter());
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return Status::CannotCreate(path + ": " + std::strerror(errno));
  return std::unique_ptr<JsonlWriter>(new JsonlWriter(f, path, true));
}

JsonlWriter::~JsonlWriter() {
  if (owns_) std::fclose(stream_);
}

Status JsonlWriter::Write(const Json& record) {
  return WriteLine(record.dump(-1, ' ', false, Json::error_handler_t::replace));
}

Status JsonlWriter::WriteLine(std::string_view text) {
  std::string line(text);
  line += '\n';
  errno = 0;
  if (std::fwrite(line.data(), 1, line.size(), stream_) != line.size() || std::fflush(stream_) != 0) {
    if (errno == EPIPE) return Status::OutputClosed();
    return Status::IoError(name_ + ": " + std::strerror(errno));
  }
  ++written_;
  return Status::Ok();
}

}  // namespace forge::records
