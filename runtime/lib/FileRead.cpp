// See FileRead.h.
#include "FileRead.h"

#include <cerrno>
#include <exception>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace flashc::rt {

FileRead readRegularFile(const std::string &path, std::string &out) {
  out.clear();
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT || errno == ENOTDIR ? FileRead::Missing : FileRead::Unreadable;
  struct stat st {};
  FileRead result = FileRead::Ok;
  if (::fstat(fd, &st) != 0) {
    result = FileRead::Unreadable;
  } else if (!S_ISREG(st.st_mode)) {
    result = FileRead::NotRegular;
  } else {
    try {  // (a file too large for memory: unreadable, not a bad_alloc through a C caller)
      out.reserve(size_t(st.st_size));
      char buffer[1 << 16];
      for (;;) {
        ssize_t n = ::read(fd, buffer, sizeof buffer);
        if (n > 0) {
          out.append(buffer, size_t(n));
        } else if (n == 0) {
          break;
        } else if (errno != EINTR) {
          result = FileRead::Unreadable;
          out.clear();
          break;
        }
      }
    } catch (const std::exception &) {
      result = FileRead::Unreadable;
      out = std::string();
    }
  }
  ::close(fd);
  return result;
}

const char *describe(FileRead fault) {
  switch (fault) {
  case FileRead::Ok: return "";
  case FileRead::Missing: return "is missing";
  case FileRead::NotRegular: return "is not a regular file";
  case FileRead::Unreadable: return "cannot be read";
  }
  return "cannot be read";
}

} // namespace flashc::rt
