#include "store/call_log.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t on the stack
#include <xxhash.h>
#if defined(__x86_64__)
// XXH3 with the widest vectors this CPU has (libxxhash picks at run time;
// the same values): a 200 KB request record hashes in 5 us instead of 18.
#include <xxh_x86dispatch.h>
#endif

#include <boost/container/small_vector.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <thread>
#include <unordered_map>
#include <utility>

#include "base/hash.h"
#include "store/call_codec.h"
#include "store/little_endian.h"

namespace forge::store {
namespace {

// Logs whose call records may begin their prompt with an earlier call's are
// version 3; version 2 (request records, no such prompts) and version 1
// (neither) are still read. An older reader leaves a newer log alone rather
// than stopping at the first record it cannot read.
constexpr char kMagic[8] = {'F', 'O', 'R', 'G', 'E', 'C', 'L', '3'};
constexpr char kMagicV2[8] = {'F', 'O', 'R', 'G', 'E', 'C', 'L', '2'};
constexpr char kMagicV1[8] = {'F', 'O', 'R', 'G', 'E', 'C', 'L', '1'};
constexpr uint64_t kHeaderBytes = sizeof kMagic;
// Set in a record's length: a request record (the request text alone).
constexpr uint64_t kRequestRecordBit = uint64_t{1} << 63;
constexpr uint64_t kRecordHeaderBytes = 16;
constexpr std::string_view kInfix = "-calls-";
constexpr size_t kIdDigits = 16;
// A batch read back from a dead writer's log: bounded so a long log does
// not sit in memory whole.
constexpr size_t kRecoveryBatchCalls = 512;
constexpr size_t kRecoveryBatchBytes = 64 << 20;
// A log's file grows by this at a time: one fallocate (~10 µs) per 16 MiB of calls.
constexpr uint64_t kGrowStep = 16 << 20;
// Address space a log is mapped into (no memory: the pages are the file's);
// a log past it (the database stuck for tens of GiB of calls) is written.
constexpr uint64_t kMappedBytes = uint64_t{64} << 30;
// Records this long or longer are pwritev'd, not copied into the mapping:
// the kernel copies them through its own mapping of the page cache, where a
// first write to each page of ours costs ~5 µs here (a 200 KB request text:
// 50 pages), whoever takes it. So are short records past the pages
// prefaulted: an io thread never takes that first write.
constexpr uint64_t kLongestCopied = 16 << 10;
// How far past the end Prefault writes pages: twice the short records'
// bytes since the last time (the writer prefaults when it takes a batch,
// every 50 ms under load), within these bounds. Long records need no
// prefaulting; pages prefaulted for nothing cost the writer's time.
constexpr uint64_t kLeastAhead = 64 << 10;
constexpr uint64_t kMostAhead = 4 << 20;
constexpr uint64_t kPageBytes = 4096;

std::string ErrnoText() { return std::strerror(errno); }

std::string BaseName(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string DirName(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
}

std::string MetaKey(const std::string& log_path) { return "call-log:" + BaseName(log_path); }

// A log's name: the database's, the infix, a random id.
std::string NewLogPath(const std::string& db_path) {
  return db_path + std::string(kInfix) + RandomHex(kIdDigits / 2);
}

// The logs beside db_path, in the directory's order (RecoverCallLogs puts
// those the database has a mark for first).
std::vector<std::string> LogPaths(const std::string& db_path) {
  std::string dir = DirName(db_path);
  std::string prefix = BaseName(db_path) + std::string(kInfix);
  std::vector<std::string> paths;
  DIR* d = opendir(dir.c_str());
  if (!d) return paths;
  while (dirent* entry = readdir(d)) {
    std::string_view name = entry->d_name;
    if (name.size() != prefix.size() + kIdDigits || name.substr(0, prefix.size()) != prefix) continue;
    if (name.substr(prefix.size()).find_first_not_of("0123456789abcdef") != std::string_view::npos) continue;
    paths.push_back(dir + "/" + std::string(name));
  }
  closedir(d);
  return paths;
}

// Opens a log and takes its lock if no live writer holds it; -1 otherwise.
int OpenOrphan(const std::string& path) {
  int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return -1;
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

bool ReadAll(int fd, uint64_t offset, char* out, size_t n) {
  while (n > 0) {
    ssize_t got = pread(fd, out, n, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    out += got;
    offset += static_cast<uint64_t>(got);
    n -= static_cast<size_t>(got);
  }
  return true;
}

// Through the file, not the mapping: false (errno set, or 0 for a write of
// nothing) if it could not.
bool WriteZeros(int fd, uint64_t offset, uint64_t n) {
  static constexpr char kZeros[4096] = {};
  while (n > 0) {
    ssize_t put = pwrite(fd, kZeros, static_cast<size_t>(std::min<uint64_t>(sizeof kZeros, n)),
                         static_cast<off_t>(offset));
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) return false;
    offset += static_cast<uint64_t>(put);
    n -= static_cast<uint64_t>(put);
  }
  return true;
}

uint64_t Load64(const char* bytes) {
  uint64_t value;
  std::memcpy(&value, bytes, 8);
  return value;
}

struct RecordHeader {
  uint64_t length = 0;  // of the body
  uint64_t checksum = 0;
  bool request = false;  // a request record
};

// The header of the record at offset, if the whole record lies before end;
// none at a header of zeros, the end of the records (no record's length is 0).
std::optional<RecordHeader> ReadRecordHeader(int fd, uint64_t offset, uint64_t end) {
  char bytes[kRecordHeaderBytes];
  if (offset + kRecordHeaderBytes > end || !ReadAll(fd, offset, bytes, kRecordHeaderBytes)) return std::nullopt;
  RecordHeader header{Load64(bytes), Load64(bytes + 8), false};
  if (header.length == 0) return std::nullopt;
  header.request = (header.length & kRequestRecordBit) != 0;
  header.length &= ~kRequestRecordBit;
  if (header.length > end - offset - kRecordHeaderBytes) return std::nullopt;
  return header;
}

bool IsCallLogMagic(const char* header) {
  return std::memcmp(header, kMagic, sizeof kMagic) == 0 || std::memcmp(header, kMagicV2, sizeof kMagicV2) == 0 ||
         std::memcmp(header, kMagicV1, sizeof kMagicV1) == 0;
}

// Whether the records end at offset: the end of the file, or zeros (what a
// log's file holds past its records).
bool RecordsEndAt(int fd, uint64_t offset, uint64_t size) {
  char bytes[kRecordHeaderBytes] = {};
  size_t n = static_cast<size_t>(std::min<uint64_t>(kRecordHeaderBytes, size > offset ? size - offset : 0));
  if (n > 0 && !ReadAll(fd, offset, bytes, n)) return false;
  return std::all_of(bytes, bytes + n, [](char c) { return c == 0; });
}

// Reads the body of the record at offset into body; false unless it is all
// there and its checksum holds.
bool ReadRecordBody(int fd, uint64_t offset, const RecordHeader& header, std::string* body) {
  body->resize(header.length);
  return ReadAll(fd, offset + kRecordHeaderBytes, body->data(), body->size()) &&
         XXH3_64bits_withSeed(body->data(), body->size(), header.length) == header.checksum;
}

// How far the database has taken the log (0: nothing, or no row).
Result<uint64_t> TakenOffset(Store& store, const std::string& key) {
  auto stored = store.meta().Get(key);
  if (!stored.ok()) return stored.status();
  return stored->has_value() ? std::strtoull((*stored)->c_str(), nullptr, 10) : 0;
}

// In place of a request record's text: it begins with `prefix` bytes of the
// (whole) request record at `base`; the rest of the text follows these three.
constexpr uint64_t kTextAfterEarlierRequest = ~uint64_t{0};
constexpr size_t kRequestBaseBytes = 24;

// The records a log's calls refer to for their beginnings, read once each
// (every one holds its own whole, so together they hold no more than the log).
struct WholeRecordsRead {
  std::unordered_map<uint64_t, std::string> request_texts;
  std::unordered_map<uint64_t, std::vector<int32_t>> prompts;
};

// The body of the request record at `at`, which must end before `before`;
// false if it is not there whole.
bool ReadRequestBody(int fd, uint64_t at, uint64_t before, std::string* body) {
  if (at < kHeaderBytes) return false;
  auto header = ReadRecordHeader(fd, at, before);
  return header && header->request && ReadRecordBody(fd, at, *header, body);
}

bool IsRequestReference(const std::string& body) {
  return body.size() >= kRequestBaseBytes && Load64(body.data()) == kTextAfterEarlierRequest;
}

// The text of the request record at `at` that holds it whole, ending before
// `before`; null if it is not there so.
const std::string* WholeRequestText(int fd, uint64_t at, uint64_t before, WholeRecordsRead& read) {
  if (auto known = read.request_texts.find(at); known != read.request_texts.end()) return &known->second;
  std::string text;
  if (!ReadRequestBody(fd, at, before, &text) || IsRequestReference(text)) return nullptr;
  return &read.request_texts.emplace(at, std::move(text)).first->second;
}

// The prompt ids of the call record at `at` that holds them all, ending
// before `before`; null if it is not there so.
const std::vector<int32_t>* WholePrompt(int fd, uint64_t at, uint64_t before, WholeRecordsRead& read) {
  if (auto known = read.prompts.find(at); known != read.prompts.end()) return &known->second;
  if (at < kHeaderBytes) return nullptr;
  auto header = ReadRecordHeader(fd, at, before);
  std::string body;
  if (!header || header->request || !ReadRecordBody(fd, at, *header, &body)) return nullptr;
  uint64_t request_text_at;
  PromptBase its_base;
  auto call = DecodeCall(body, &request_text_at, &its_base);
  if (!call.ok() || its_base.at != 0) return nullptr;
  return &read.prompts.emplace(at, std::move(call->prompt_ids)).first->second;
}

// Gives the call at `offset` what its record refers to: its request text
// (from its request record, and that one's beginning from the record it
// refers to) and the beginning of its prompt. Why not, if a reference does
// not hold.
std::optional<std::string> ResolveReferences(int fd, uint64_t offset, uint64_t request_text_at,
                                             const PromptBase& prompt_base, CallRecord& call, WholeRecordsRead& read) {
  const std::string here = "the call at byte " + std::to_string(offset);
  if (request_text_at != 0) {
    std::string& text = call.request_text;
    bool whole = ReadRequestBody(fd, request_text_at, offset, &text);
    if (whole && IsRequestReference(text)) {
      const uint64_t base_at = Load64(text.data() + 8), shared = Load64(text.data() + 16);
      const std::string* base = WholeRequestText(fd, base_at, request_text_at, read);
      whole = base && base->size() >= shared;
      if (whole) text.replace(0, kRequestBaseBytes, *base, 0, shared);
    }
    if (!whole) {
      return here + " refers to a request record at byte " + std::to_string(request_text_at) +
             " that is not there whole";
    }
  }
  if (prompt_base.at != 0) {
    const std::vector<int32_t>* base = WholePrompt(fd, prompt_base.at, offset, read);
    if (!base || base->size() < prompt_base.prefix) {
      return here + " begins its prompt with " + std::to_string(prompt_base.prefix) + " ids of the call at byte " +
             std::to_string(prompt_base.at) + ", which does not hold them whole";
    }
    call.prompt_ids.insert(call.prompt_ids.begin(), base->begin(),
                           base->begin() + static_cast<ptrdiff_t>(prompt_base.prefix));
  }
  return std::nullopt;
}

// Moves the records of a log (past its magic, `size` bytes long) that the
// database has not taken yet into it, in bounded batches, each with its mark.
// Stops at a record cut short or damaged: it was never answered.
Status MoveRecords(Store& store, int fd, const std::string& path, uint64_t size) {
  LogMark mark{MetaKey(path), ""};
  auto taken = TakenOffset(store, mark.key);
  if (!taken.ok()) return taken.status().Prefixed(path);
  uint64_t offset = std::max(*taken, kHeaderBytes);
  std::vector<CallRecord> batch;
  size_t batch_bytes = 0;
  auto flush = [&]() -> Status {
    if (batch.empty()) return Status::Ok();
    mark.value = std::to_string(offset);
    FORGE_RETURN_IF_ERROR(store.calls().AppendCalls(batch, &mark));
    batch.clear();
    batch_bytes = 0;
    return Status::Ok();
  };
  std::string body;
  WholeRecordsRead read;
  while (auto header = ReadRecordHeader(fd, offset, size)) {  // none: cut short
    uint64_t length = header->length;
    if (header->request) {  // read when the call that refers to it comes
      offset += kRecordHeaderBytes + length;
      continue;
    }
    if (!ReadRecordBody(fd, offset, *header, &body)) break;
    uint64_t request_text_at = 0;
    PromptBase prompt_base;
    auto call = DecodeCall(body, &request_text_at, &prompt_base);
    if (!call.ok()) return call.status().Prefixed(path + " at byte " + std::to_string(offset));
    if (auto why = ResolveReferences(fd, offset, request_text_at, prompt_base, *call, read)) {
      // A reference that does not hold ends the move, after the calls before it.
      FORGE_RETURN_IF_ERROR(flush());
      return Status::InvalidData(path + ": " + *why);
    }
    batch.push_back(std::move(*call));
    batch_bytes += length;
    offset += kRecordHeaderBytes + length;
    if (batch.size() >= kRecoveryBatchCalls || batch_bytes >= kRecoveryBatchBytes) FORGE_RETURN_IF_ERROR(flush());
  }
  return flush();
}

// Moves one orphan log (locked, open as fd) into the store, then deletes it.
Status Recover(Store& store, int fd, const std::string& path) {
  struct stat st {};
  if (fstat(fd, &st) != 0) return Status::IoError(path + ": " + ErrnoText());
  uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size >= kHeaderBytes) {  // (shorter: its writer died before the magic; nothing in it)
    char header[kHeaderBytes];
    if (!ReadAll(fd, 0, header, kHeaderBytes)) return Status::IoError(path + ": cannot read the header");
    if (!IsCallLogMagic(header)) return Status::Ok();  // not ours: left alone
    FORGE_RETURN_IF_ERROR(MoveRecords(store, fd, path, size));
  }
  // Everything is in the database: the log and its row go.
  if (unlink(path.c_str()) != 0 && errno != ENOENT) return Status::IoError(path + ": " + ErrnoText());
  return store.meta().Delete(MetaKey(path));
}

// Where the last call record between `from` and `size` ends (`from` when
// there is none): the records of a log, read from their headers only.
uint64_t EndOfLastCall(const std::string& path, uint64_t from, uint64_t size) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return size;  // unreadable: wait for all of it, as before request records
  uint64_t offset = std::max(from, kHeaderBytes), calls_end = from;
  while (auto header = ReadRecordHeader(fd, offset, size)) {  // none: the end, or one being written
    offset += kRecordHeaderBytes + header->length;
    if (!header->request) calls_end = offset;
  }
  close(fd);
  return calls_end;
}

}  // namespace

Result<std::unique_ptr<CallLog>> CallLog::Create(const std::string& db_path, bool mapped) {
  // Made under a name recovery does not match, locked, then renamed: a
  // recovering process never sees a log before its writer holds the lock.
  std::string path = NewLogPath(db_path);
  std::string fresh = path + ".new";
  int fd = open(fresh.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return Status::CannotCreate(fresh + ": " + ErrnoText());
  if (flock(fd, LOCK_EX | LOCK_NB) != 0 || rename(fresh.c_str(), path.c_str()) != 0) {
    Status error = Status::CannotCreate(path + ": " + ErrnoText());
    close(fd);
    unlink(fresh.c_str());
    return error;
  }
  if (pwrite(fd, kMagic, kHeaderBytes, 0) != static_cast<ssize_t>(kHeaderBytes)) {
    Status error = Status::IoError(path + ": " + ErrnoText());
    close(fd);
    unlink(path.c_str());
    return error;
  }
  std::unique_ptr<CallLog> log(new CallLog(fd, path, kHeaderBytes));
  // Mapped only where its blocks can be allocated ahead: a mapped copy into
  // a page the disk has no room for is killed by SIGBUS, a pwritev fails.
  if (mapped && fallocate(fd, 0, 0, static_cast<off_t>(kGrowStep)) == 0) {
    void* map = mmap(nullptr, kMappedBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map != MAP_FAILED) log->map_ = static_cast<char*>(map);
    log->size_ = kGrowStep;
  } else if (ftruncate(fd, static_cast<off_t>(kGrowStep)) == 0) {
    log->size_ = kGrowStep;
  } else {
    log->size_ = kHeaderBytes;  // grown by the first append, or its error said then
  }
  Prefault(log->TakeAhead());  // not shared yet: the first calls' pages, here
  return log;
}

Status CallLog::GrowTo(uint64_t bytes) {
  if (size_ >= bytes) return Status::Ok();
  uint64_t to = std::max(bytes, size_ + kGrowStep);
  if (map_ ? fallocate(fd_, 0, static_cast<off_t>(size_), static_cast<off_t>(to - size_)) != 0
           : ftruncate(fd_, static_cast<off_t>(to)) != 0) {
    return Status::IoError(path_ + ": cannot grow the file to " + std::to_string(to) + " bytes: " + ErrnoText());
  }
  size_ = to;
  return Status::Ok();
}

CallLog::Ahead CallLog::TakeAhead() {
  // (A new log starts with the least: the writer replaces its log every 8 MiB
  // of 200 KB calls too, and prefaulting 1 MiB took it ~30 µs a call.)
  if (!map_) return {};
  uint64_t ahead = std::clamp(2 * short_since_ahead_, kLeastAhead, kMostAhead);
  short_since_ahead_ = 0;
  uint64_t to = std::min({size_, end_ + ahead, kMappedBytes}) / kPageBytes * kPageBytes;
  uint64_t from = std::max(prefaulted_, end_ / kPageBytes * kPageBytes);
  if (to <= from) return {};
  prefaulted_ = to;
  return {map_ + from, static_cast<size_t>(to - from)};
}

void CallLog::Prefault(Ahead ahead) {
#if defined(__x86_64__)
  // A write to each page. madvise(MADV_POPULATE_WRITE) maps them too, but on
  // this machine the first write to a page so mapped still took ~5 µs (a
  // page written once, from any thread, no longer does): 1.9 µs a 1.5 KB
  // record on average against 0.05. The write is a locked OR of zero: an
  // append may be copying into the same page by now, and must lose no byte.
  for (size_t at = 0; at < ahead.bytes; at += kPageBytes) {
    asm volatile("lock orb $0, %0" : "+m"(ahead.at[at])::"memory");
  }
#else
  // (Before Linux 5.14, EINVAL: appends then take the faults themselves.)
  if (ahead.bytes > 0) madvise(ahead.at, ahead.bytes, MADV_POPULATE_WRITE);
#endif
}

CallLog::~CallLog() {
  if (map_) munmap(map_, kMappedBytes);
  if (fd_ >= 0) close(fd_);
}

template <typename Whole>
template <typename Value>
PromptBase CallLog::LastWholeRecords<Whole>::SharedBeginning(const std::string& rollout, const Value& value) const {
  auto last = by_rollout_.find(rollout);
  if (last == by_rollout_.end()) return {};
  size_t shared = CommonPrefix(last->second.value, value);
  if (shared < min_length_ || 2 * shared < value.size()) return {};
  return {last->second.at, shared};
}

template <typename Whole>
template <typename Value>
void CallLog::LastWholeRecords<Whole>::Remember(const std::string& rollout, uint64_t at, const Value& value) {
  if (value.size() < min_length_) return;
  auto it = by_rollout_.try_emplace(rollout).first;
  bytes_ -= Bytes(it->second.value.size());
  if (bytes_ + Bytes(value.size()) > max_bytes_) {
    // Past the bound (thousands of long rollouts at once): start again; their
    // next records are written whole, and remembered.
    by_rollout_.clear();
    bytes_ = 0;
    it = by_rollout_.try_emplace(rollout).first;
  }
  bytes_ += Bytes(value.size());
  it->second.at = at;
  it->second.value.assign(value.begin(), value.end());
}

Result<uint64_t> CallLog::AppendRequestText(std::string_view text, const std::string& rollout) {
  const uint64_t at = end_;
  PromptBase base = rollout.empty() ? PromptBase{} : whole_requests_.SharedBeginning(rollout, text);
  if (base.at != 0) {
    uint64_t reference[3] = {kTextAfterEarlierRequest, base.at, base.prefix};
    iovec pieces[2] = {{reference, sizeof reference},
                       {const_cast<char*>(text.data()) + base.prefix, text.size() - base.prefix}};
    FORGE_RETURN_IF_ERROR(AppendRecord(pieces, /*request=*/true));
    return at;
  }
  iovec piece{const_cast<char*>(text.data()), text.size()};
  FORGE_RETURN_IF_ERROR(AppendRecord({&piece, 1}, /*request=*/true));
  if (!rollout.empty()) whole_requests_.Remember(rollout, at, text);
  return at;
}

Result<LogPosition> CallLog::Append(const CallRecord& call, uint64_t request_text_at) {
  const uint64_t at = end_;
  PromptBase prompt_base = whole_prompts_.SharedBeginning(call.rollout_id, call.prompt_ids);
  EncodedCall body(call, request_text_at, prompt_base);
  FORGE_RETURN_IF_ERROR(AppendRecord(body.pieces(), /*request=*/false));
  if (prompt_base.at == 0) whole_prompts_.Remember(call.rollout_id, at, call.prompt_ids);
  return LogPosition{end_};
}

Status CallLog::AppendRecord(std::span<const iovec> body, bool request) {
  uint64_t length = 0;
  for (const iovec& piece : body) length += piece.iov_len;
  uint64_t checksum;
  if (body.size() == 1) {
    // One piece (a request record, a short call): the one-shot hash, the same
    // value without the streaming state's set-up (it derives a secret from the seed).
    checksum = XXH3_64bits_withSeed(body[0].iov_base, body[0].iov_len, length);
  } else {
    XXH3_state_t state;
    // A state on the stack must be initialised before a seeded reset: XXH3
    // keeps the secret it derived for the seed the state already holds, so
    // stack garbage equal to this length (the last record's, often) left a
    // stale secret, and a wrong checksum hid the record from recovery.
    XXH3_INITSTATE(&state);
    XXH3_64bits_reset_withSeed(&state, length);
    for (const iovec& piece : body) XXH3_64bits_update(&state, piece.iov_base, piece.iov_len);
    checksum = XXH3_64bits_digest(&state);
  }
  uint64_t record_header[2] = {length | (request ? kRequestRecordBit : 0), checksum};
  boost::container::small_vector<iovec, 8> pieces;
  pieces.reserve(body.size() + 1);
  pieces.push_back({record_header, sizeof record_header});
  pieces.insert(pieces.end(), body.begin(), body.end());
  const uint64_t total = sizeof record_header + length;
  FORGE_RETURN_IF_ERROR(GrowTo(end_ + total));
  FORGE_RETURN_IF_ERROR(EndRecordsAt(end_ + total));
  FORGE_RETURN_IF_ERROR(WriteAtEnd({pieces.data(), pieces.size()}, total));
  end_ += total;
  return Status::Ok();
}

Status CallLog::EndRecordsAt(uint64_t at) {
  if (at >= stale_until_ || at >= size_) return Status::Ok();  // zeros there already
  size_t n = static_cast<size_t>(std::min<uint64_t>(kRecordHeaderBytes, size_ - at));
  if (map_ && at + n <= prefaulted_) {
    std::memset(map_ + at, 0, n);
  } else if (!WriteZeros(fd_, at, n)) {
    return Status::IoError(path_ + ": cannot end its records: " + ErrnoText());
  }
  // Before the record that ends here: a reader that sees any of the record
  // sees its end.
  std::atomic_thread_fence(std::memory_order_release);
  return Status::Ok();
}

Status CallLog::WriteAtEnd(std::span<iovec> pieces, uint64_t length) {
  if (length < kLongestCopied) short_since_ahead_ += length;
  if (map_ && length < kLongestCopied && end_ + length <= prefaulted_) {
    char* to = map_ + end_;
    for (const iovec& piece : pieces) {
      std::memcpy(to, piece.iov_base, piece.iov_len);
      to += piece.iov_len;
    }
    return Status::Ok();
  }
  // pwritev takes at most IOV_MAX pieces and may write less than asked.
  size_t first = 0;
  uint64_t written = 0;
  while (first < pieces.size()) {
    int count = static_cast<int>(std::min<size_t>(pieces.size() - first, IOV_MAX));
    ssize_t n = pwritev(fd_, pieces.data() + first, count, static_cast<off_t>(end_ + written));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      Status error = Status::IoError(path_ + ": " + (n < 0 ? ErrnoText() : std::string("nothing written")));
      // What was written of the record goes back to zeros, where readers
      // stop: a torn record would hide every later one from recovery. (Not
      // by cutting the file: the writer may be prefaulting pages past here,
      // and a mapped page past the file's end is SIGBUS.)
      if (!WriteZeros(fd_, end_, written)) return Status::IoError(path_ + ": cannot erase a failed append: " + ErrnoText());
      return error;
    }
    written += static_cast<uint64_t>(n);
    for (size_t left = static_cast<size_t>(n); left > 0;) {
      iovec& piece = pieces[first];
      if (left >= piece.iov_len) {
        left -= piece.iov_len;
        ++first;
      } else {
        piece.iov_base = static_cast<char*>(piece.iov_base) + left;
        piece.iov_len -= left;
        left = 0;
      }
    }
    while (first < pieces.size() && pieces[first].iov_len == 0) ++first;
  }
  return Status::Ok();
}

LogMark CallLog::MarkAt(LogPosition at) const {
  return {MetaKey(path_), std::to_string(at.end)};
}

Status CallLog::Remove(Store& store) {
  if (unlink(path_.c_str()) != 0) return Status::IoError(path_ + ": " + ErrnoText());
  close(fd_);
  fd_ = -1;
  return store.meta().Delete(MetaKey(path_));
}

Status CallLog::Recycle(Store& store) {
  if (!map_) return Status::Unavailable(path_ + ": a log written, not mapped, is not reused");
  // Emptied first, under the old name, whose meta row says the database took
  // it all: a crash meanwhile leaves nothing to recover twice. Then renamed:
  // the new name has no meta row, so its records count from the start.
  // Only the first record's header is zeroed: readers stop there, and each
  // append ends the records after it with a zero header (EndRecordsAt)
  // while it writes over the old ones. (Zeroing all of them, 8 MiB a swap,
  // took ~17 µs of the writer's CPU a 200 KB call.)
  std::memset(map_ + kHeaderBytes, 0, std::min(kRecordHeaderBytes, end_ - kHeaderBytes));
  std::atomic_thread_fence(std::memory_order_release);
  std::string fresh = NewLogPath(store.path());
  if (rename(path_.c_str(), fresh.c_str()) != 0) return Status::IoError(path_ + ": " + ErrnoText());
  std::string old = std::exchange(path_, fresh);
  stale_until_ = std::max(stale_until_, end_);
  // The pages before the old end stay mapped, but those its long records
  // were pwritev'd into are not in this mapping: Prefault writes them again.
  prefaulted_ = 0;
  end_ = kHeaderBytes;
  short_since_ahead_ = 0;
  whole_prompts_.Forget();  // their offsets were in the old records
  whole_requests_.Forget();
  return store.meta().Delete(MetaKey(old));
}

Status RecoverCallLogs(Store& store) {
  // A writer that died just after swapping logs leaves two with calls the
  // database lacks: the old one, partly taken (it has a mark), and the new
  // one, of which nothing was (the writer commits the old log's last batch
  // first). The old one's calls came first, and a call's place in its
  // rollout is the order it reaches the database.
  std::vector<std::string> paths, unmarked;
  for (std::string& path : LogPaths(store.path())) {
    auto stored = store.meta().Get(MetaKey(path));
    if (!stored.ok()) return stored.status().Prefixed("recovering a call log");
    (stored->has_value() ? paths : unmarked).push_back(std::move(path));
  }
  paths.insert(paths.end(), unmarked.begin(), unmarked.end());
  for (const std::string& path : paths) {
    int fd = OpenOrphan(path);
    if (fd < 0) continue;  // a live writer's, or gone already
    Status s = Recover(store, fd, path);
    close(fd);
    if (!s.ok()) return s.Prefixed("recovering a call log");
  }
  return Status::Ok();
}

Status WaitForLiveCallLogs(Store& store, double timeout_seconds) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds);
  for (const std::string& path : LogPaths(store.path())) {
    struct stat at_open {};
    if (stat(path.c_str(), &at_open) != 0 || static_cast<uint64_t>(at_open.st_size) <= kHeaderBytes) continue;
    std::string key = MetaKey(path);
    auto taken_at_open = TakenOffset(store, key);
    if (!taken_at_open.ok()) return taken_at_open.status();
    // Request records of calls still in flight may follow the last call: the
    // wait is for the calls the log held.
    uint64_t calls_end = EndOfLastCall(path, *taken_at_open, static_cast<uint64_t>(at_open.st_size));
    for (;;) {
      auto taken = TakenOffset(store, key);
      if (!taken.ok()) return taken.status();
      if (*taken >= calls_end) break;
      // The log removed (its writer stopped) means the database took everything.
      struct stat now {};
      if (stat(path.c_str(), &now) != 0 || now.st_ino != at_open.st_ino) break;
      if (std::chrono::steady_clock::now() >= deadline) break;  // a stalled writer must not hang readers
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  return Status::Ok();
}

Result<std::vector<CallLogScan>> ScanCallLogs(const std::string& db_path) {
  std::vector<CallLogScan> scans;
  for (const std::string& path : LogPaths(db_path)) {
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;  // removed meanwhile
    struct stat st {};
    char magic[kHeaderBytes];
    if (fstat(fd, &st) != 0 || !ReadAll(fd, 0, magic, kHeaderBytes) || !IsCallLogMagic(magic)) {
      close(fd);
      return Status::InvalidData(path + ": not a forge call log");
    }
    CallLogScan scan;
    scan.path = path;
    uint64_t size = static_cast<uint64_t>(st.st_size), offset = kHeaderBytes;
    std::string body;
    WholeRecordsRead read;
    while (auto header = ReadRecordHeader(fd, offset, size)) {
      const bool whole = ReadRecordBody(fd, offset, *header, &body);
      bool intact = whole;
      if (intact && !header->request) {
        // A call's references must hold too, or recovery would stop there.
        uint64_t request_text_at = 0;
        PromptBase prompt_base;
        auto call = DecodeCall(body, &request_text_at, &prompt_base);
        intact = call.ok() && !ResolveReferences(fd, offset, request_text_at, prompt_base, *call, read);
      }
      uint64_t next = offset + kRecordHeaderBytes + header->length;
      if (!whole && RecordsEndAt(fd, next, size)) {
        // The last record, cut short by a crash while it was copied in (its
        // header promises bytes the zeros after it stand for): never answered.
        scan.cut_short = true;
        break;
      }
      if (!intact) scan.bad.push_back(offset);
      ++(header->request ? scan.request_records : scan.calls);
      offset = next;
    }
    scan.end = offset;
    scan.cut_short = scan.cut_short || !RecordsEndAt(fd, offset, size);
    close(fd);
    scans.push_back(std::move(scan));
  }
  return scans;
}

bool HasOrphanCallLogs(const std::string& db_path) {
  for (const std::string& path : LogPaths(db_path)) {
    int fd = OpenOrphan(path);
    if (fd >= 0) {
      close(fd);
      return true;
    }
  }
  return false;
}

}  // namespace forge::store
