#include "launch/task_list.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <utility>

#include "records/jsonl.h"
#include "sandbox/docker/image_pull.h"
#include "tasks/task.h"

namespace forge::launch {

Result<TaskList> TaskList::Open(const std::string& dir) {
  int fd = open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) {
    // A file system without O_TMPFILE: a named file, unlinked at once.
    std::string pattern = dir + "/forge-launch-tasks-XXXXXX";
    fd = mkostemp(pattern.data(), O_CLOEXEC);
    if (fd >= 0) unlink(pattern.c_str());
  }
  if (fd < 0) return Status::CannotCreate(dir + ": cannot make the run's task spool: " + std::strerror(errno));
  return TaskList(fd);
}

TaskList::TaskList(TaskList&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      end_(other.end_),
      entries_(std::move(other.entries_)),
      named_images_(std::move(other.named_images_)),
      named_registries_(std::move(other.named_registries_)) {}

TaskList& TaskList::operator=(TaskList&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    end_ = other.end_;
    entries_ = std::move(other.entries_);
    named_images_ = std::move(other.named_images_);
    named_registries_ = std::move(other.named_registries_);
  }
  return *this;
}

TaskList::~TaskList() {
  if (fd_ >= 0) close(fd_);
}

Status TaskList::Write(const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = pwrite(fd_, bytes.data() + done, bytes.size() - done, static_cast<off_t>(end_ + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Status::CannotCreate("the run's task spool: " + std::string(std::strerror(errno)));
    done += static_cast<size_t>(n);
  }
  end_ += bytes.size();
  return Status::Ok();
}

Status TaskList::Add(const tasks::Task& task, const TaskSpec& spec) {
  const std::string object = task.extra.dump();
  constexpr size_t kMax = std::numeric_limits<uint32_t>::max();
  if (spec.record.size() > kMax || object.size() > kMax) {
    return Status::InvalidData(spec.id + ": a task record of " + std::to_string(spec.record.size()) + " bytes");
  }
  Entry entry{FactsOf(spec), end_, static_cast<uint32_t>(spec.record.size()), static_cast<uint32_t>(object.size())};
  FORGE_RETURN_IF_ERROR(Write(spec.record));
  FORGE_RETURN_IF_ERROR(Write(object));
  entries_.push_back(std::move(entry));
  for (std::string& image : NamedImages(spec)) {
    if (named_registries_.insert(sandbox::docker::ParseImageRef(image).registry).second) {
      named_images_.push_back(std::move(image));
    }
  }
  return Status::Ok();
}

Result<std::string> TaskList::Read(size_t i, uint64_t offset, size_t size) const {
  std::string bytes(size, '\0');
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = pread(fd_, bytes.data() + done, bytes.size() - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      return Status::Internal(facts(i).id + ": the run's task spool: " +
                              (n == 0 ? std::string("short read") : std::string(std::strerror(errno))));
    }
    done += static_cast<size_t>(n);
  }
  return bytes;
}

Result<std::string> TaskList::Record(size_t i) const {
  const Entry& entry = entries_.at(i);
  return Read(i, entry.offset, entry.record_size);
}

Result<TaskSpec> TaskList::Spec(size_t i) const {
  const Entry& entry = entries_.at(i);
  auto both = Read(i, entry.offset, size_t{entry.record_size} + entry.object_size);
  if (!both.ok()) return both.status();
  const std::string_view bytes = *both;
  const records::Json record = records::Json::parse(bytes.substr(0, entry.record_size), nullptr, false);
  records::Json object = records::Json::parse(bytes.substr(entry.record_size), nullptr, false);
  if (record.is_discarded() || object.is_discarded()) {
    return Status::Internal(facts(i).id + ": the run's task spool holds no JSON");
  }
  // The record's typed fields (its paths absolute, its source its own), and
  // what the task stated (SpecFromTask reads that from the object).
  auto task = tasks::TaskFromJson(record, "", "");
  if (!task.ok()) return task.status().Prefixed("task " + facts(i).id);
  task->extra = std::move(object);
  auto spec = SpecFromTask(*task);
  if (!spec.ok()) return spec.status().Prefixed("task " + facts(i).id);
  return spec;
}

}  // namespace forge::launch
