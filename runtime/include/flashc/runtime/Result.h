// Result<T> / Status: value-or-error returns for the whole runtime API.
// The runtime does not throw across its API: the compiler links this code and is
// built without exceptions, and the C ABI needs plain status codes anyway.
#pragma once

#include <optional>
#include <string>
#include <utility>

namespace flashc::rt {

/// Coarse error classes; the C ABI maps them 1:1 onto flashc_status.
enum class ErrorCode {
  Ok = 0,
  InvalidArgument = 1, // a launch argument or API input is wrong
  InvalidBundle = 2,   // manifest/bundle cannot be read or is inconsistent
  NoDriver = 3,        // libcuda.so.1 missing
  NoDevice = 4,        // driver present but no usable device
  CompileFailed = 5,   // NVRTC rejected the source (message holds the log)
  CudaError = 6,       // a driver call failed
  NotFound = 7,        // unknown kernel/program/file
  Unsupported = 8,     // version mismatch, no fitting code with JIT disabled, ...
  Internal = 9,
};

struct Error {
  ErrorCode code = ErrorCode::Internal;
  std::string message;
};

/// Status: success or an Error.
class [[nodiscard]] Status {
public:
  Status() = default;
  Status(Error e) : error_(std::move(e)) {}
  static Status success() { return Status(); }
  bool ok() const { return !error_.has_value(); }
  explicit operator bool() const { return ok(); }
  const Error &error() const { return *error_; }
  const std::string &message() const { return error_->message; }
  ErrorCode code() const { return error_ ? error_->code : ErrorCode::Ok; }

private:
  std::optional<Error> error_;
};

/// Result<T>: a T or an Error.
template <typename T> class [[nodiscard]] Result {
public:
  Result(T value) : value_(std::move(value)) {}
  Result(Error e) : error_(std::move(e)) {}
  Result(Status s) : error_(s.error()) {} // only from a failed Status
  bool ok() const { return value_.has_value(); }
  explicit operator bool() const { return ok(); }
  T &value() { return *value_; }
  const T &value() const { return *value_; }
  T &operator*() { return *value_; }
  const T &operator*() const { return *value_; }
  T *operator->() { return &*value_; }
  const T *operator->() const { return &*value_; }
  const Error &error() const { return *error_; }
  const std::string &message() const { return error_->message; }
  ErrorCode code() const { return error_ ? error_->code : ErrorCode::Ok; }
  Status status() const { return ok() ? Status() : Status(*error_); }

private:
  std::optional<T> value_;
  std::optional<Error> error_;
};

inline Error makeError(ErrorCode code, std::string message) {
  return Error{code, std::move(message)};
}

} // namespace flashc::rt
