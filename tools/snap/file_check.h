// The whole-file check `verify` and `info` share: every byte of one snapshot read through
// SnapshotReader, which checks the header, each run's structure and checksum, the end record and
// the trailer's digest over the whole file.
//
// A header that parses says nothing about the pages behind it, so no command may present a file
// as good after reading only its header: `info` runs this check by default and, with
// --header-only, says that it did not (exit kUnverified).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "command.h"

namespace reheap::snap {

struct FileCheck {
  int code = kOk;             // kOk, kNegative (the file is bad) or kError (unreadable)
  std::string error;          // to_string(SnapshotErrc), or "error" for other exceptions
  std::string message;
  SnapshotKind kind = SnapshotKind::kFull;
  std::uint64_t generation = 0;
  std::uint64_t runs = 0;
  std::uint64_t data_pages = 0;
  std::uint64_t zero_pages = 0;
};

// Reads all of `file`; never throws (a failure is the result's code and message).
FileCheck check_file(const std::filesystem::path& file, bool force_progress);

// The exit code a SnapshotError stands for: an unreadable file is an error of the tool's
// environment (kError), anything else a verdict on the file (kNegative).
int code_of(SnapshotErrc errc);

}  // namespace reheap::snap
