// A store's call log: a file beside the database to which forge-proxy
// appends each call before it sends the call's last byte; a thread of the
// proxy then moves the calls into the database in batches. An append only
// reaches the page cache, so a logged call is exactly as safe as a SQLite
// commit in WAL mode with synchronous=NORMAL (the store's setting): it
// survives a crash of the process, not of the machine. What it saves is the
// transaction on the call's path (locks, B-tree inserts, WAL frames): ~250 µs
// of a 1 KB call's ~400.
//
// File "<database>-calls-<16 random hex digits>": the 8 bytes "FORGECL3",
// then records: u64 body length, u64 XXH3-64 of the body seeded with its
// length, the body; then a header of zeros (past which a recycled log may
// hold an earlier use's records, and a new one holds zeros). A call record's body
// is the call (call_codec.h); a request record (top bit of the length set)
// is a call's request text, appended while the upstream works, and the
// call's record, appended when it ends, refers to it by offset instead of
// holding the text: a 200 KB request is no longer written on the call's path.
// A call record may also hold only the end of its prompt ids, after the
// offset of an earlier call record of its rollout (which holds all of its
// own) and how many of that one's come first; a request record likewise for
// its text. ("FORGECL2" logs, without such references, and "FORGECL1" logs,
// without request records either, are still read.) The database keeps how far it has taken
// each log, in the transaction that stores the calls (meta row
// "call-log:<file name>" = the byte offset). Once the database has taken all
// of a long log, its writer empties it and keeps it as the spare that takes
// over from the next (Recycle), so logs stay small and their pages mapped.
//
// The file is allocated 16 MiB at a time past its records (fallocate, zeros,
// its size grown) and mapped shared: an append of a record under 16 KiB (a
// call's, a short request's) is a copy into the page cache, no system call
// (two writev(2)s a call, each growing the file's size, were ~20 µs of a
// 1 KB call's added latency, more than nginx's whole). The pages such
// appends write next are written once ahead of them, off the calls' path
// (Prefault): a page's first write through the mapping costs ~5 µs here.
// A longer record, or one past those pages, is pwritev(2)'d (within the
// file's size: no size to update), as the kernel's copy takes no such fault. Where
// the file system cannot allocate ahead, or the file cannot be mapped, appends
// are pwritev(2)s into a file grown sparse (a write can then fail with a full
// disk, where a mapped copy would be killed by SIGBUS). Readers stop at a
// header of zeros: no record has one. An append over an earlier use's
// records writes the zero header that ends it before the record itself, so
// a reader (or a crash) never meets an old record after a new one.
//
// A live writer holds an flock(2) on its log; Store::Open moves whatever a log whose writer
// has gone still holds into the database (as SQLite replays a hot journal),
// then deletes it. A record cut short by the crash was never acknowledged to
// a client (its append had not returned) and is dropped.
#pragma once

#include <sys/uio.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "store/call_codec.h"
#include "store/store.h"

namespace forge::store {

// Where a log stood after an append: what the database has taken once it
// holds every call up to it.
struct LogPosition {
  uint64_t end = 0;
};

// Not thread-safe: its one owner serializes appends with everything else.
class CallLog {
 public:
  // Creates a new log beside the database at db_path, locked to this process.
  // mapped = false: appended by pwritev, as where the file system cannot
  // allocate ahead (the same bytes).
  static Result<std::unique_ptr<CallLog>> Create(const std::string& db_path, bool mapped = true);
  ~CallLog();
  CallLog(const CallLog&) = delete;
  CallLog& operator=(const CallLog&) = delete;

  // Appends a request record: a call's request text, logged while the
  // upstream works so the call's own record, appended when it ends, is
  // short. Returns the record's offset, for Append. With the call's rollout,
  // a text that begins (for half or more of it) as that rollout's last whole
  // request text did is written as a reference to it and the rest. On
  // failure the records are as they were before.
  Result<uint64_t> AppendRequestText(std::string_view text, const std::string& rollout = {});
  // Appends one call; with request_text_at, its request text is the request
  // record at that offset in this log, not written again. When half or more of its
  // prompt ids begin the prompt of its rollout's last call logged with all of
  // its ids, only the rest are written, after that call's offset (a harness
  // resends its conversation: a 50K-token prompt is 200 KB of ids a call).
  // On failure the records are as they were before.
  Result<LogPosition> Append(const CallRecord& call, uint64_t request_text_at = 0);
  // The pages appends will copy into next that are not yet written (past the
  // end, twice the short records' bytes since the last call, 64 KiB to
  // 4 MiB), for Prefault; none when the log is not mapped. Only records
  // under 16 KiB that fit in pages handed out so are copied; the rest are
  // pwritev'd.
  struct Ahead {
    char* at = nullptr;
    size_t bytes = 0;
  };
  Ahead TakeAhead();
  // Writes to each of them without changing a byte, so an append's copy into
  // them takes no fault: any thread, outside the owner's lock (the log must
  // outlive the call).
  static void Prefault(Ahead ahead);
  // The meta row that records that the database has taken the log up to `at`.
  LogMark MarkAt(LogPosition at) const;
  // Deletes the file and its meta row. Only when the database holds every
  // call appended so far; the object is unusable afterwards.
  Status Remove(Store& store);
  // Empties the log for reuse, under a new name (so the database's record of
  // how far it took the old one cannot apply), keeping its file, its lock and
  // its pages: a new log's pages each cost a page fault to map, the writer's
  // largest cost for short calls. Only when the database holds every call
  // appended so far, and only a mapped log (else an error: Remove it instead).
  Status Recycle(Store& store);

  const std::string& path() const { return path_; }
  uint64_t bytes() const { return end_; }

 private:
  CallLog(int fd, std::string path, uint64_t end) : fd_(fd), path_(std::move(path)), end_(end) {}
  // Grows the file (zeros; allocated unless it is written, not mapped) to at
  // least `bytes`, a step at a time.
  Status GrowTo(uint64_t bytes);
  // Writes pieces at the end: copied into the mapping, or pwritev'd.
  Status WriteAtEnd(std::span<iovec> pieces, uint64_t length);
  // Where what an earlier use of the file left (Recycle) follows the record
  // about to end at `at`, a zero header there first, for readers to stop at.
  Status EndRecordsAt(uint64_t at);
  // Appends one record: its header (length, kind, checksum), then body.
  Status AppendRecord(std::span<const iovec> body, bool request);
  // The last record of each rollout written whole (its prompt ids, or its
  // request text), which the rollout's next records may begin by referring
  // to; Whole is std::vector<int32_t> or std::string.
  template <typename Whole>
  class LastWholeRecords {
   public:
    // A value shorter than min_length is never shared: a reference would
    // save little. max_bytes bounds what is remembered.
    LastWholeRecords(size_t min_length, size_t max_bytes) : min_length_(min_length), max_bytes_(max_bytes) {}
    // The record value may refer to: the rollout's last whole one, when they
    // begin alike for min_length or more and at least half of value (so a
    // reference never costs more than writing value whole). at = 0: none.
    template <typename Value>
    PromptBase SharedBeginning(const std::string& rollout, const Value& value) const;
    // Keeps (a copy of) value, written whole at `at`, for the rollout's next records.
    template <typename Value>
    void Remember(const std::string& rollout, uint64_t at, const Value& value);
    void Forget() {
      by_rollout_.clear();
      bytes_ = 0;
    }

   private:
    static size_t Bytes(size_t length) { return length * sizeof(typename Whole::value_type); }
    struct Entry {
      uint64_t at = 0;  // the record's offset
      Whole value;
    };
    size_t min_length_, max_bytes_;
    std::unordered_map<std::string, Entry> by_rollout_;
    size_t bytes_ = 0;
  };

  int fd_;
  std::string path_;
  uint64_t end_;           // of the records
  uint64_t size_ = 0;      // of the file: the records, then zeros
  char* map_ = nullptr;    // the file mapped shared (kMappedBytes of addresses); null: written
  uint64_t prefaulted_ = 0;  // the mapping's pages before this are written
  uint64_t stale_until_ = 0;  // past end_, the records of earlier uses (Recycle) end before this
  uint64_t short_since_ahead_ = 0;  // bytes of records under 16 KiB since TakeAhead
  // A 50K-token prompt is 200 KB of ids; its request text about as long.
  LastWholeRecords<std::vector<int32_t>> whole_prompts_{256, 64 << 20};
  LastWholeRecords<std::string> whole_requests_{4096, 64 << 20};
};

// Moves what the logs of store's database hold, for each log whose writer
// has gone, into the database, and deletes them. Logs of live writers are
// left alone.
Status RecoverCallLogs(Store& store);
// Waits until the database holds every call that live writers' logs held
// when this was called, so a process that opens the store right after a
// harness saw its last answer sees that call (the writer takes a few ms).
// Gives up quietly after timeout_seconds: a stalled writer must not hang
// its readers.
Status WaitForLiveCallLogs(Store& store, double timeout_seconds);
// What a log holds, every record's checksum checked, without moving
// anything into the database (forge-proxy --check-call-log).
struct CallLogScan {
  std::string path;
  uint64_t calls = 0;
  uint64_t request_records = 0;
  std::vector<uint64_t> bad;  // offsets of records whose checksum or encoding fails
  uint64_t end = 0;           // where the whole records end
  bool cut_short = false;     // a last record cut short (a crash while it was appended)
};
// Scans every log beside db_path.
Result<std::vector<CallLogScan>> ScanCallLogs(const std::string& db_path);

// Whether any log beside db_path is not held by a live writer (a cheap test
// for read-only openers, which cannot recover themselves).
bool HasOrphanCallLogs(const std::string& db_path);

}  // namespace forge::store
