// Minimal check helpers for the runtime's ctest executables: each check prints
// what it checks; main returns checkSummary() (non-zero if anything failed).
#pragma once

#include "flashc/runtime/Result.h"

#include <cstdio>
#include <string>

namespace flashc::test {

inline int &failures() {
  static int n = 0;
  return n;
}
inline int &checks() {
  static int n = 0;
  return n;
}

inline bool check(bool ok, const std::string &what, const std::string &detail = "") {
  ++checks();
  if (ok) {
    std::printf("ok   %s\n", what.c_str());
  } else {
    ++failures();
    std::printf("FAIL %s%s%s\n", what.c_str(), detail.empty() ? "" : ": ", detail.c_str());
  }
  std::fflush(stdout);
  return ok;
}

inline bool contains(const std::string &haystack, const std::string &needle) {
  return haystack.find(needle) != std::string::npos;
}

/// The status must be an error whose message contains `expected`.
inline bool checkError(const rt::Status &s, const std::string &expected, const std::string &what) {
  if (s.ok()) return check(false, what, "succeeded, expected an error containing '" + expected + "'");
  return check(contains(s.message(), expected), what,
               "message '" + s.message() + "' lacks '" + expected + "'");
}
template <typename T>
bool checkError(const rt::Result<T> &r, const std::string &expected, const std::string &what) {
  return checkError(r.status(), expected, what);
}

inline bool checkOk(const rt::Status &s, const std::string &what) {
  return check(s.ok(), what, s.ok() ? "" : s.message());
}
template <typename T> bool checkOk(const rt::Result<T> &r, const std::string &what) {
  return checkOk(r.status(), what);
}

inline int checkSummary() {
  std::printf("%d checks, %d failed\n", checks(), failures());
  return failures() ? 1 : 0;
}

} // namespace flashc::test
