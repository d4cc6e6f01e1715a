#include "tasks/load.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <system_error>

#include "records/jsonl.h"
#include "tasks/harbor.h"

namespace forge::tasks {
namespace {

namespace fs = std::filesystem;

class Loader {
 public:
  Loader(Env& env, const LoadOptions& options, const std::function<Status(Task&)>& on_task,
         LoadStats* stats)
      : env_(env), options_(options), on_task_(on_task), stats_(stats) {}

  Status Load(const std::string& input) {
    if (input == "-") return LoadJsonl(input, fs::current_path().string());
    std::error_code ec;
    const fs::file_status st = fs::status(input, ec);
    if (ec || !fs::exists(st)) {
      return Status::NotFound(input + ": " + (ec ? ec.message() : std::strerror(ENOENT)));
    }
    if (!fs::is_directory(st)) {
      fs::path absolute = fs::absolute(input, ec).lexically_normal();
      return LoadJsonl(input, absolute.parent_path().string());
    }
    if (IsHarborTaskDir(input)) return LoadHarbor(input);
    return LoadDataset(input);
  }

  Status Finish() const {
    if (stats_->broken == 0) return Status::Ok();
    return Status::InvalidData(std::to_string(stats_->broken) + " broken task" +
                           (stats_->broken == 1 ? "" : "s") + " skipped");
  }

 private:
  void Warn(const std::string& message) const {
    if (options_.on_warning) {
      options_.on_warning(message);
    } else {
      env_.Warn(message);
    }
  }

  // A broken task: an error in strict mode, else reported and counted.
  Status Broken(const std::string& message) {
    if (options_.strict) return Status::InvalidData(message);
    if (options_.on_broken) {
      options_.on_broken(message);
    } else {
      env_.Error(message + " (task skipped)");
    }
    ++stats_->broken;
    return Status::Ok();
  }

  Status Deliver(Task& task, const std::string& where) {
    auto [it, inserted] = first_source_.emplace(task.id, where);
    if (!inserted) {
      return Broken(where + ": id: duplicate task id \"" + task.id + "\" (first read from " +
                    it->second + ")");
    }
    ++stats_->loaded;
    return on_task_(task);
  }

  Status LoadJsonl(const std::string& path, const std::string& base_dir) {
    records::ReaderOptions reader_options;
    reader_options.strict = options_.strict;
    auto reader = records::JsonlReader::Open(path, env_, reader_options);
    if (!reader.ok()) return reader.status();
    for (;;) {
      auto next = (*reader)->Next();
      if (!next.ok()) return next.status();
      if (!next->has_value()) break;
      const records::Record& record = **next;
      auto task = TaskFromJson(record.json, base_dir, record.where());
      if (!task.ok()) {
        FORGE_RETURN_IF_ERROR(Broken(record.where() + ": " + task.status().message()));
        continue;
      }
      FORGE_RETURN_IF_ERROR(Deliver(*task, record.where()));
    }
    // The reader has reported its malformed lines already; count them here.
    stats_->broken += (*reader)->bad_lines();
    return Status::Ok();
  }

  Status LoadHarbor(const std::string& dir) {
    if (env_.stop().requested()) return Status::Cancelled("stopped while reading " + dir);
    std::vector<std::string> warnings;
    auto task = ReadHarborTask(dir, env_, &warnings);
    for (const std::string& w : warnings) Warn(w);
    stats_->warnings += warnings.size();
    if (!task.ok()) return Broken(task.status().message());
    return Deliver(*task, task->source);
  }

  // A directory of task directories; name order keeps runs reproducible.
  Status LoadDataset(const std::string& dir) {
    std::vector<fs::path> children;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (!name.empty() && name[0] != '.' && it->is_directory(ec)) children.push_back(it->path());
    }
    if (ec) return Status::NotFound(dir + ": " + ec.message());
    std::sort(children.begin(), children.end());
    size_t found = 0;
    for (const fs::path& child : children) {
      if (!IsHarborTaskDir(child.string())) {
        Warn(child.string() + ": no task.toml; not a Harbor task (skipped)");
        ++stats_->warnings;
        continue;
      }
      ++found;
      FORGE_RETURN_IF_ERROR(LoadHarbor(child.string()));
    }
    if (found == 0) {
      return Status::NotFound(dir + ": no task.toml here nor in any subdirectory");
    }
    return Status::Ok();
  }

  Env& env_;
  const LoadOptions& options_;
  const std::function<Status(Task&)>& on_task_;
  LoadStats* stats_;
  std::map<std::string, std::string> first_source_;  // task id -> where it was first read
};

}  // namespace

Status LoadTasks(const std::vector<std::string>& inputs, Env& env, const LoadOptions& options,
                 const std::function<Status(Task&)>& on_task, LoadStats* stats) {
  LoadStats local;
  if (stats == nullptr) stats = &local;
  Loader loader(env, options, on_task, stats);
  for (const std::string& input : inputs) FORGE_RETURN_IF_ERROR(loader.Load(input));
  return loader.Finish();
}

}  // namespace forge::tasks
