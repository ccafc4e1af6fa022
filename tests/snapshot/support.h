// Test support for the snapshot suite: temporary directories, file bytes, the zone's usage (to
// prove a failed restore left nothing behind), catching a SnapshotError, and running this test
// binary again as a helper process (main.cpp dispatches the helper modes, helper_modes.cpp).
//
// Everything here allocates with the system allocator: call it with no heap current.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "aslr_support.h"
#include "reheap/snapshot_error.h"
#include "reheap/zone.h"

namespace reheap::snaptest {

// Set by main(): whether this process runs without ASLR, and why not if it does not. Tests that
// restore in another process a heap holding pointers into the program need it: they skip where
// the machine forbids turning ASLR off and fail where it could not be turned off for another
// reason (aslr_support.h).
void set_aslr_state(bool disabled, const std::string& why);
bool layout_stable();
const std::string& aslr_reason();

#define REQUIRE_LAYOUT_STABLE() \
  REQUIRE_ASLR_OFF(::reheap::snaptest::layout_stable(), ::reheap::snaptest::aslr_reason())

// Builds with sanitizers or without optimisation run shorter loops.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kSlowBuild = true;
#else
inline constexpr bool kSlowBuild = false;
#endif

// A fresh directory under $TMPDIR (or /tmp), removed with everything in it.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }
  std::vector<std::string> entries() const;  // file names, sorted

 private:
  std::filesystem::path path_;
};

std::vector<unsigned char> read_bytes(const std::filesystem::path& file);
void write_bytes(const std::filesystem::path& file, const std::vector<unsigned char>& bytes);

// What the zone has handed out: unchanged by any failed restore.
struct ZoneUse {
  std::size_t live_heaps = 0;
  std::size_t class_chunks = 0;
  std::size_t large_chunks = 0;
  bool operator==(const ZoneUse&) const = default;
};
ZoneUse zone_use();
std::string to_string(const ZoneUse& use);

// The outcome of running `f`: a SnapshotError (code and message), another exception, or none.
struct Outcome {
  enum class Kind { kReturned, kSnapshotError, kOtherException } kind = Kind::kReturned;
  SnapshotErrc code = SnapshotErrc::kIo;
  std::string what;
  bool failed_with(SnapshotErrc expected) const {
    return kind == Kind::kSnapshotError && code == expected;
  }
  std::string describe() const;
};
Outcome attempt(const std::function<void()>& f);

// This test binary run again (/proc/self/exe) with `args`, its stdout and stderr in one pipe.
struct SpawnOptions {
  bool keep_aslr = false;  // run the child with ASLR on (and tell its main not to turn it off)
  bool randomize = false;  // start the child with ASLR on; its main turns it off as usual
  std::vector<std::string> extra_env = {};  // "NAME=value" entries added to the environment
};
struct Child {
  pid_t pid = -1;
  int output_fd = -1;  // read end of the child's stdout+stderr
};
Child spawn_self(const std::vector<std::string>& args, const SpawnOptions& options = {});

struct ChildResult {
  int wait_status = 0;
  std::string output;
  bool succeeded() const;  // exited with status 0
  std::string describe() const;
};
// Reads the child's output to the end, then reaps it.
ChildResult finish(Child& child);
ChildResult run_self(const std::vector<std::string>& args, const SpawnOptions& options = {});

std::string hex(std::uint64_t value);
std::uint64_t parse_hex(const std::string& text);

// Restores the quarantine's length on every path out of a test that shortens it.
class QuarantineLength {
 public:
  explicit QuarantineLength(std::size_t chunks) : before_(Zone::set_quarantine(chunks)) {}
  QuarantineLength(const QuarantineLength&) = delete;
  QuarantineLength& operator=(const QuarantineLength&) = delete;
  ~QuarantineLength() { Zone::set_quarantine(before_); }

 private:
  std::size_t before_;
};

// Turns the heap cache off for a scope (zone.h, "Recycling"), emptying it first.
class NoHeapCache {
 public:
  NoHeapCache() : before_(off()) {}
  NoHeapCache(const NoHeapCache&) = delete;
  NoHeapCache& operator=(const NoHeapCache&) = delete;
  ~NoHeapCache() { Zone::set_heap_cache(before_); }

 private:
  static HeapCacheConfig off() {
    Zone::purge_heap_cache();
    HeapCacheConfig none;
    none.heaps = 0;
    return Zone::set_heap_cache(none);
  }
  HeapCacheConfig before_;
};

}  // namespace reheap::snaptest
