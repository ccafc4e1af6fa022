// The commands of `reheap-snap` and what they share: parsed options, exit codes, formatting.
//
// main.cpp parses the command line into Options and calls one command; each command lives in
// its own file (info.cpp, verify.cpp, diff.cpp, compact.cpp, replay.cpp), writes its report to stdout (text,
// or JSON with --json) and returns the process's exit code. Errors the command does not turn into
// an answer (an unreadable file, say) propagate as exceptions to main, which maps them to kError.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "reheap/snapshot_error.h"
#include "reheap/snapshot_file.h"

namespace reheap::snap {

// Exit codes, as in cmp(1): 1 is a negative answer, not a failure of the tool.
enum ExitCode : int {
  kOk = 0,           // success; verify: every file is good; diff: the states are identical
  kNegative = 1,     // verify: some file is bad; diff: the states differ
  kUsage = 2,        // bad command line
  kError = 3,        // I/O error, or an input that is not a valid snapshot (info, diff, compact)
  kUnverified = 4,   // info --header-only: the header was read, the rest of the file was not
  kDiverged = 5,     // replay: the replay departed from the recording before the failure
  kIncomplete = 6,   // replay: the bundle's log does not reach (or mark) its manifest's failing event
};

struct Options {
  std::string command;
  std::vector<std::filesystem::path> files;
  bool json = false;
  bool progress = false;  // draw the progress line even when stderr is not a terminal
  bool chain = false;     // verify: also every file of each file's chain
  bool header_only = false;  // info: read the header only (and exit kUnverified)
  std::size_t max_lines = 50;  // diff: ranges listed in text mode (0: all)
  std::filesystem::path program;  // replay: the program to run (default: the manifest's)
  unsigned timeout_seconds = 300;  // replay: the program is stopped after this
};

int run_info(const Options& options);
int run_verify(const Options& options);
int run_diff(const Options& options);
int run_compact(const Options& options);
int run_replay(const Options& options);

// "0x0000110000000000"-style hex, fixed width, for addresses and ids.
std::string hex(std::uint64_t value);
// "64.0 MiB"-style sizes for text output.
std::string human_bytes(std::uint64_t bytes);
// "2024-05-01T12:34:56.789Z" from nanoseconds since the Unix epoch.
std::string utc_time(std::uint64_t unix_ns);
const char* kind_name(SnapshotKind kind);
const char* use_name(ChunkUse use);

// "reheap-snap: <what>" on stderr.
void report_error(const std::string& what);
// The line printed for a SnapshotError: "<code>: <message>".
std::string describe(const SnapshotError& error);

}  // namespace reheap::snap
