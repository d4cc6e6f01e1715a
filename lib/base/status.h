// Errors travel as values, as in leveldb: library code returns a Status (or a
// Result<T>) that says what kind of thing went wrong, and whether trying the
// same again may succeed. What a shell sees for each kind, the exit status,
// is chosen in one place: lib/cli (cli::ExitCodeFor).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace forge {

// What went wrong.
enum class Kind : unsigned char {
  kOk,
  kNegative,         // the work ran; its verdict is negative (a task failed)
  kInvalidArgument,  // a bad command line, option or call
  kInvalidData,      // input that does not parse or breaks its schema (a record, a task)
  kNotFound,         // a file, image, object or answer that is not there
  kUnavailable,      // a service (upstream, Docker engine, API server) did not answer
  kInternal,         // a bug in forge, or a library that failed where it cannot
  kCannotCreate,     // an output (file, directory, socket, sandbox) could not be made
  kIoError,          // reading or writing failed midway
  kBusy,             // a resource is busy or a deadline passed (a store locked, an engine conflict)
  kProtocol,         // a peer broke its protocol
  kBadConfig,        // a configuration that cannot be used
  kCancelled,        // stopped by a signal or by a caller
};

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK

  static Status Ok() { return Status(); }
  static Status Negative(std::string m) { return Status(Kind::kNegative, std::move(m)); }
  static Status InvalidArgument(std::string m) { return Status(Kind::kInvalidArgument, std::move(m)); }
  static Status InvalidData(std::string m) { return Status(Kind::kInvalidData, std::move(m)); }
  static Status NotFound(std::string m) { return Status(Kind::kNotFound, std::move(m)); }
  static Status Unavailable(std::string m) { return Status(Kind::kUnavailable, std::move(m)); }
  static Status Internal(std::string m) { return Status(Kind::kInternal, std::move(m)); }
  static Status CannotCreate(std::string m) { return Status(Kind::kCannotCreate, std::move(m)); }
  static Status IoError(std::string m) { return Status(Kind::kIoError, std::move(m)); }
  static Status Busy(std::string m) { return Status(Kind::kBusy, std::move(m)); }
  static Status Protocol(std::string m) { return Status(Kind::kProtocol, std::move(m)); }
  static Status BadConfig(std::string m) { return Status(Kind::kBadConfig, std::move(m)); }
  static Status Cancelled(std::string m) { return Status(Kind::kCancelled, std::move(m)); }
  // The reader of our stdout went away; the tool ends quietly.
  static Status OutputClosed() {
    Status s(Kind::kOk, "output closed");
    s.output_closed_ = true;
    return s;
  }

  bool ok() const { return kind_ == Kind::kOk && !output_closed_; }
  bool output_closed() const { return output_closed_; }
  Kind kind() const { return kind_; }
  bool Is(Kind kind) const { return kind_ == kind; }
  const std::string& message() const { return message_; }

  // Whether trying the same again may succeed. Each kind has a default (a
  // service that did not answer, a busy resource, an I/O or protocol failure
  // may pass; the rest will not); the code that meets the error overrides it
  // where it knows better (a registry's 404 is not worth a retry; a build that
  // failed pulling its base image is).
  bool transient() const { return transient_; }
  Status Transient(bool transient) const {
    Status s = *this;
    if (!s.ok()) s.transient_ = transient;
    return s;
  }

  // "context: message", keeping the kind.
  Status Prefixed(std::string_view context) const {
    if (ok()) return *this;
    Status s = *this;
    s.message_ = std::string(context) + ": " + message_;
    return s;
  }

 private:
  Status(Kind kind, std::string message)
      : kind_(kind), message_(std::move(message)), transient_(TransientByDefault(kind)) {}

  static bool TransientByDefault(Kind kind) {
    return kind == Kind::kUnavailable || kind == Kind::kBusy || kind == Kind::kIoError ||
           kind == Kind::kProtocol;
  }

  Kind kind_ = Kind::kOk;
  std::string message_;
  bool output_closed_ = false;
  bool transient_ = false;
};

// A value or the Status saying why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {}  // NOLINT: implicit by design

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace forge

// Returns early from the enclosing function when a Status is not OK.
#define FORGE_RETURN_IF_ERROR(expr)          \
  do {                                       \
    ::forge::Status forge_status_ = (expr);  \
    if (!forge_status_.ok()) return forge_status_; \
  } while (0)
