// The run's tasks between their reading and their rollouts. A run holds
// every task to its end (a rollout of the last task may start hours after
// the first), so a task is kept as little as the run needs before its
// rollout: its facts (task_input.h's TaskFacts, ~70 bytes) in memory, and
// in a spool file, unlinked, in the directory given (TMPDIR's), its
// canonical record and the object it was read from (which says what the
// task states: a limit it leaves unset is the launcher's, though the record
// fills in its default). A rollout rebuilds its TaskSpec from them as it
// starts (Spec), so what forge-launch holds grows with the rollouts in
// flight, not with the run's length: a TaskSpec is ~1.6 KiB before a long
// instruction; the spool costs the page cache, not the process.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "base/status.h"
#include "launch/task_input.h"

namespace forge::launch {

class TaskList {
 public:
  // An empty list spooling to an unlinked file in dir; CannotCreate naming
  // dir when no file can be made there.
  static Result<TaskList> Open(const std::string& dir);
  TaskList(TaskList&& other) noexcept;
  TaskList& operator=(TaskList&& other) noexcept;
  TaskList(const TaskList&) = delete;
  TaskList& operator=(const TaskList&) = delete;
  ~TaskList();

  // Keeps the facts of spec (SpecFromTask(task)) and spools its record and
  // task's object. CannotCreate when the spool cannot be written (a full disk).
  Status Add(const tasks::Task& task, const TaskSpec& spec);

  size_t size() const { return entries_.size(); }
  // One image the tasks name themselves (NamedImages) per registry host, in
  // the order first named: whose credentials a cluster pulls them with.
  const std::vector<std::string>& named_images() const { return named_images_; }
  const TaskFacts& facts(size_t i) const { return entries_[i].facts; }
  // The task's canonical record as it was read. Safe from several threads.
  Result<std::string> Record(size_t i) const;
  // The task's TaskSpec as SpecFromTask made it when it was read, rebuilt
  // from its record; InvalidData naming the task when it no longer holds
  // (a directory it names is gone). Safe from several threads.
  Result<TaskSpec> Spec(size_t i) const;

 private:
  explicit TaskList(int fd) : fd_(fd) {}
  // The record at offset, the object read right after it.
  struct Entry {
    TaskFacts facts;
    uint64_t offset = 0;
    uint32_t record_size = 0;
    uint32_t object_size = 0;
  };
  Status Write(const std::string& bytes);
  Result<std::string> Read(size_t i, uint64_t offset, size_t size) const;
  int fd_ = -1;
  uint64_t end_ = 0;
  std::vector<Entry> entries_;
  std::vector<std::string> named_images_;
  std::set<std::string> named_registries_;
};

}  // namespace forge::launch
