// Reading a file the runtime did not write itself (a bundle's files, a kernel-cache entry) without exceptions or
// hangs: a directory, a FIFO or a device in its place is a fault the caller names, not a thrown ios_base::failure
// (which would abort a C caller) or a read that never returns.
#pragma once

#include <string>

namespace flashc::rt {

enum class FileRead { Ok, Missing, NotRegular, Unreadable };

/// The whole of the regular file at `path` into `out` (cleared first). The file is opened without blocking and
/// checked to be regular through its descriptor, so what is read is what was checked.
FileRead readRegularFile(const std::string &path, std::string &out);

/// "is missing", "is not a regular file", "cannot be read" (Ok: "").
const char *describe(FileRead fault);

} // namespace flashc::rt
