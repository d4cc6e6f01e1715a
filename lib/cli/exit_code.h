// The exit statuses of forge's binaries, sysexits(3) where one fits, and the
// one mapping from a Status's kind to the status a shell sees.
#pragma once

#include "base/status.h"

namespace forge::cli {

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

constexpr ExitCode ExitCodeOf(Kind kind) {
  switch (kind) {
    case Kind::kOk: return ExitCode::kOk;
    case Kind::kNegative: return ExitCode::kNegative;
    case Kind::kInvalidArgument: return ExitCode::kUsage;
    case Kind::kInvalidData: return ExitCode::kDataErr;
    case Kind::kNotFound: return ExitCode::kNoInput;
    case Kind::kUnavailable: return ExitCode::kUnavailable;
    case Kind::kInternal: return ExitCode::kSoftware;
    case Kind::kCannotCreate: return ExitCode::kCantCreate;
    case Kind::kIoError: return ExitCode::kIoErr;
    case Kind::kBusy: return ExitCode::kTempFail;
    case Kind::kProtocol: return ExitCode::kProtocol;
    case Kind::kBadConfig: return ExitCode::kConfig;
    case Kind::kCancelled: return ExitCode::kInterrupted;
  }
  return ExitCode::kSoftware;
}

}  // namespace forge::cli
