// Errors travel as values: library code returns a Status (or a Result<T>) and
// only a tool's main turns one into an exit code. The codes are sysexits(3),
// so the mapping from "what went wrong" to "what the shell sees" lives here once.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace forge {

enum class ExitCode : int {
  kOk = 0,
  kNegative = 1,       // ran fine; the verdict is negative (e.g. a task failed)
  kUsage = 64,         // bad command line
  kDataErr = 65,       // bad input data (malformed record, broken task)
  kNoInput = 66,       // an input file is missing or unreadable
  kUnavailable = 69,   // a service (upstream, Docker engine, API server) is unavailable
  kSoftware = 70,      // internal error: a bug in forge
  kCantCreate = 73,    // cannot create an output file
  kIoErr = 74,         // I/O error
  kTempFail = 75,      // temporary failure; trying again may work (store busy)
  kProtocol = 76,      // a peer broke its protocol
  kConfig = 78,        // bad configuration
  kInterrupted = 130,  // SIGINT
  kTerminated = 143,   // SIGTERM
};

class Status {
 public:
  Status() = default;  // OK

  static Status Ok() { return Status(); }
  static Status Negative(std::string m) { return Status(ExitCode::kNegative, std::move(m)); }
  static Status Usage(std::string m) { return Status(ExitCode::kUsage, std::move(m)); }
  static Status DataErr(std::string m) { return Status(ExitCode::kDataErr, std::move(m)); }
  static Status NoInput(std::string m) { return Status(ExitCode::kNoInput, std::move(m)); }
  static Status Unavailable(std::string m) { return Status(ExitCode::kUnavailable, std::move(m)); }
  static Status Internal(std::string m) { return Status(ExitCode::kSoftware, std::move(m)); }
  static Status CantCreate(std::string m) { return Status(ExitCode::kCantCreate, std::move(m)); }
  static Status Io(std::string m) { return Status(ExitCode::kIoErr, std::move(m)); }
  static Status TempFail(std::string m) { return Status(ExitCode::kTempFail, std::move(m)); }
  static Status Protocol(std::string m) { return Status(ExitCode::kProtocol, std::move(m)); }
  static Status Config(std::string m) { return Status(ExitCode::kConfig, std::move(m)); }
  static Status Cancelled(std::string m) { return Status(ExitCode::kInterrupted, std::move(m)); }
  // The reader of our stdout went away; the tool ends quietly.
  static Status OutputClosed() {
    Status s(ExitCode::kOk, "output closed");
    s.output_closed_ = true;
    return s;
  }

  bool ok() const { return code_ == ExitCode::kOk && !output_closed_; }
  bool output_closed() const { return output_closed_; }
  ExitCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // "context: message", keeping the code.
  Status Prefixed(std::string_view context) const {
    if (ok()) return *this;
    Status s = *this;
    s.message_ = std::string(context) + ": " + message_;
    return s;
  }

 private:
  Status(ExitCode code, std::string message) : code_(code), message_(std::move(message)) {}

  ExitCode code_ = ExitCode::kOk;
  std::string message_;
  bool output_closed_ = false;
};

// A value or the Status saying why there is none.
template <typename T>
class Result {
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
