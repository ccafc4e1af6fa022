// reheap-snap: inspect, verify, diff and compact reheap snapshot files, and replay crash bundles.
//
// This file parses the command line and maps errors to exit codes; each command is in its own
// file (see command.h). The help text below is the tool's reference and README.md repeats it.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>
#include <string_view>

#include "command.h"
#include "reheap/snapshot_error.h"

namespace {

using reheap::snap::Options;

constexpr const char* kHelp =
    R"(usage: reheap-snap COMMAND [OPTIONS] FILE...

Commands:
  info FILE [--json] [--header-only]
                               the header (kind, ids, generation, zone, heap, root, limit,
                               committed bytes, chunks, pages by class, layout, tracking), the
                               parent chain (from the parents' headers) or why it is broken,
                               and whether the file is good: every byte is read and checked
                               as by verify. --header-only reads the header only, says "not
                               verified" and exits 4
  verify FILE... [--chain] [--json]
                               read every byte of each file and check every checksum and
                               structural rule; --chain also verifies each file's parents,
                               every readable one, and calls a file bad whose chain is
                               broken or holds a bad file
  diff A B [--json] [--max-lines N]
                               the pages that differ between the heap states A and B: pages
                               only in A, only in B, changed pages and changed bytes, as
                               address ranges (text lists N ranges, default 50, 0 = all;
                               --json lists all); in each range the spans of differing bytes,
                               each with the allocator block it lies in (address, size class,
                               page run or huge block, offset) or "unattributed". An increment
                               stands for the state of its whole chain: it is compacted to a
                               temporary file first
  compact LATEST OUT [--json]  fold the chain ending at LATEST into one full snapshot OUT
  replay BUNDLE [--program PATH] [--timeout SECONDS]
                               replay a crash bundle (crash-<event>/ of a recorded reactor) in
                               a new process: checks the bundle (its log must reach the failing
                               event its manifest names), then runs PATH (e.g. a fixed build),
                               or else the program the manifest names if its ELF build id is
                               the bundle's, with REHEAP_REPLAY set; the program must call
                               reheap::testing::replay_main_if_asked at the start of main, and
                               prints the failure (event, hook, what). Everything (reading the
                               bundle, the program, its report) is stopped after SECONDS
                               (default 300)

Options:
  --json        machine-readable output on stdout (ids and addresses as hex strings)
  --progress    draw a progress line on stderr for files over 100 MB even when stderr is not
                a terminal (it is drawn by default only on a terminal)
  -h, --help    this text

Exit codes:
  0  success; info, verify: every file is good; diff: the states are identical
  1  info, verify: a file is bad (info still prints its header); diff: the states differ
  2  usage error
  3  error: a file cannot be read (verify: the highest code over all files wins), or the
     header of info's file, or an input of diff or compact, is not a valid snapshot
  4  info --header-only: the header was printed but the file was not verified
  5  replay: the replay diverged from the recording before the failure
  6  replay: the bundle is incomplete: its log does not reach the failing event its manifest
     names, or does not mark it failed (a bundle cut short; no program was run, or the program
     found the same)
  (replay: 0 the replay ran to its end without the failure, 1 the failure recurred, 3 the
  bundle cannot be read, no program may be run, or the program does not support replay or
  could not replay the bundle)
)";

// A bound alarm(2) can hold with the replay's grace added, and far beyond any replay.
constexpr unsigned long long kMaxTimeoutSeconds = 1000000;

int usage(const std::string& why) {
  reheap::snap::report_error(why + " (see reheap-snap --help)");
  return reheap::snap::kUsage;
}

// How many FILE arguments each command takes: [min, max].
bool file_count_ok(const std::string& command, std::size_t n) {
  if (command == "info") return n == 1;
  if (command == "verify") return n >= 1;
  if (command == "diff" || command == "compact") return n == 2;
  if (command == "replay") return n == 1;
  return false;
}

int run(int argc, char** argv) {
  Options options;
  bool options_done = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (!options_done && arg == "--") {
      options_done = true;
    } else if (!options_done && (arg == "-h" || arg == "--help")) {
      std::fputs(kHelp, stdout);
      return reheap::snap::kOk;
    } else if (!options_done && arg == "--json") {
      options.json = true;
    } else if (!options_done && arg == "--progress") {
      options.progress = true;
    } else if (!options_done && arg == "--chain") {
      options.chain = true;
    } else if (!options_done && arg == "--header-only") {
      options.header_only = true;
    } else if (!options_done && arg == "--max-lines") {
      if (i + 1 >= argc) return usage("--max-lines needs a number");
      char* end = nullptr;
      const unsigned long long n = std::strtoull(argv[++i], &end, 10);
      if (end == argv[i] || *end != '\0') return usage("--max-lines needs a number");
      options.max_lines = static_cast<std::size_t>(n);
    } else if (!options_done && arg == "--program") {
      if (i + 1 >= argc) return usage("--program needs a path");
      options.program = argv[++i];
    } else if (!options_done && arg == "--timeout") {
      if (i + 1 >= argc) return usage("--timeout needs a number of seconds");
      char* end = nullptr;
      const unsigned long long n = std::strtoull(argv[++i], &end, 10);
      if (end == argv[i] || *end != '\0' || n == 0 || n > kMaxTimeoutSeconds) {
        return usage("--timeout needs a number of seconds from 1 to " + std::to_string(kMaxTimeoutSeconds));
      }
      options.timeout_seconds = static_cast<unsigned>(n);
    } else if (!options_done && arg.size() > 1 && arg[0] == '-') {
      return usage("unknown option " + std::string(arg));
    } else if (options.command.empty()) {
      options.command = arg;
    } else {
      options.files.emplace_back(std::string(arg));
    }
  }
  if (options.command.empty()) {
    std::fputs(kHelp, stderr);
    return reheap::snap::kUsage;
  }
  const std::string& c = options.command;
  if (c != "info" && c != "verify" && c != "diff" && c != "compact" && c != "replay") {
    return usage("unknown command " + c);
  }
  if (!file_count_ok(c, options.files.size())) return usage("wrong number of files for " + c);
  if (options.chain && c != "verify") return usage("--chain applies to verify only");
  if (options.header_only && c != "info") return usage("--header-only applies to info only");
  if (!options.program.empty() && c != "replay") return usage("--program applies to replay only");
  if (c == "replay" && options.json) return usage("--json does not apply to replay (the program prints the outcome)");
  if (c == "replay") return reheap::snap::run_replay(options);
  if (c == "info") return reheap::snap::run_info(options);
  if (c == "verify") return reheap::snap::run_verify(options);
  if (c == "diff") return reheap::snap::run_diff(options);
  return reheap::snap::run_compact(options);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const int code = run(argc, argv);
    std::cout.flush();
    return std::cout ? code : reheap::snap::kError;
  } catch (const reheap::SnapshotError& error) {
    reheap::snap::report_error(reheap::snap::describe(error));
  } catch (const std::exception& error) {
    reheap::snap::report_error(error.what());
  }
  return reheap::snap::kError;
}
