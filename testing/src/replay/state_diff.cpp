// Page differences between a recorded snapshot and a replayed heap (see state_diff.h).
#include "state_diff.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <unordered_map>
#include <vector>

#include "reheap/heap_digest.h"
#include "reheap/snapshot.h"
#include "reheap/snapshot_file.h"

namespace reheap::testing::detail {
namespace {

// The pages a full snapshot stores, one at a time, in ascending address order.
class PageCursor {
 public:
  explicit PageCursor(const std::filesystem::path& file) : reader_(file), page_(reader_.header().page_size) {}

  // The next stored page, false after the last.
  bool next() {
    while (left_ == 0) {
      PageRun run;
      if (!reader_.next(run)) return false;
      if (run.zero || run.pages == 0) continue;  // increments only; a full snapshot has none
      data_.resize(static_cast<std::size_t>(run.pages) * page_);
      reader_.read_data(data_.data());
      address_ = run.address;
      at_ = 0;
      left_ = run.pages;
      first_ = true;
    }
    if (!first_) {
      address_ += page_;
      at_ += page_;
    }
    first_ = false;
    --left_;
    return true;
  }
  std::uintptr_t address() const noexcept { return address_; }
  const char* data() const noexcept { return data_.data() + at_; }
  std::size_t page_size() const noexcept { return page_; }

 private:
  SnapshotReader reader_;
  std::size_t page_;
  std::vector<char> data_;
  std::uintptr_t address_ = 0;
  std::size_t at_ = 0;
  std::uint32_t left_ = 0;
  bool first_ = true;
};

std::string hex(std::uintptr_t v) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(v));
  return text;
}

// Each program pointer a snapshot's pages hold, by value, as state_digest names it.
using ProgramNames = std::unordered_map<std::uint64_t, std::uint64_t>;

ProgramNames program_names(const SnapshotHeader& header) {
  ProgramNames names;
  for (const ProgramRef& ref : header.program_refs) names.emplace(ref.value, program_ref_name(ref, header.layout));
  return names;
}

// Whether two words hold pointers to the same thing in their programs: a heap relocated into
// another binary holds other values for them, which are no difference.
bool same_program_word(std::uint64_t a, std::uint64_t b, const ProgramNames& names_a, const ProgramNames& names_b) {
  const auto in_a = names_a.find(a);
  const auto in_b = names_b.find(b);
  return in_a != names_a.end() && in_b != names_b.end() && in_a->second == in_b->second;
}

// Compares one page with another (null: the zero page); "" if they are equal.
std::string compare_page(std::uintptr_t address, const char* recorded, const char* replayed, std::size_t size,
                         const ProgramNames& recorded_names, const ProgramNames& replayed_names) {
  std::size_t first = size;
  std::size_t last = 0;
  std::size_t bytes = 0;
  for (std::size_t at = 0; at < size; at += sizeof(std::uint64_t)) {
    std::uint64_t a = 0;
    std::uint64_t b = 0;
    if (recorded != nullptr) std::memcpy(&a, recorded + at, sizeof a);
    if (replayed != nullptr) std::memcpy(&b, replayed + at, sizeof b);
    if (a == b || same_program_word(a, b, recorded_names, replayed_names)) continue;
    for (std::size_t i = at; i < at + sizeof(std::uint64_t); ++i) {
      const char x = recorded != nullptr ? recorded[i] : 0;
      const char y = replayed != nullptr ? replayed[i] : 0;
      if (x == y) continue;
      if (first == size) first = i;
      last = i;
      ++bytes;
    }
  }
  if (bytes == 0) return "";
  const char* where = recorded == nullptr ? " (only the replayed heap uses it)"
                      : replayed == nullptr ? " (only the recorded heap uses it)"
                                            : "";
  return "page " + hex(address) + where + ": " + std::to_string(bytes) + " bytes differ, from offset " +
         hex(first) + " to " + hex(last) + " (addresses " + hex(address + first) + ".." + hex(address + last) + ")";
}

}  // namespace

std::string describe_page_differences(const std::filesystem::path& recorded, Heap& replayed,
                                      std::size_t max_pages) {
  static std::atomic<unsigned> counter{0};
  const std::filesystem::path scratch = std::filesystem::temp_directory_path() /
                                        ("reheap-replay-diff-" + std::to_string(::getpid()) + "-" +
                                         std::to_string(counter.fetch_add(1)));
  std::filesystem::create_directories(scratch);
  struct Cleanup {
    std::filesystem::path dir;
    ~Cleanup() {
      std::error_code ignored;
      std::filesystem::remove_all(dir, ignored);
    }
  } cleanup{scratch};

  std::filesystem::path recorded_full = recorded;
  if (read_snapshot_header(recorded).kind == SnapshotKind::kIncremental) {
    recorded_full = scratch / "recorded.snap";
    compact(recorded, recorded_full);
  }
  const std::filesystem::path replayed_file = scratch / "replayed.snap";
  {
    Snapshotter save(replayed, WriteTracking::kOff);
    save.save(replayed_file);
  }

  // Pointers into the program compare by what they point to: the replay may run in another binary.
  const ProgramNames names_a = program_names(read_snapshot_header(recorded_full));
  const ProgramNames names_b = program_names(read_snapshot_header(replayed_file));
  PageCursor a(recorded_full);
  PageCursor b(replayed_file);
  const std::size_t page = a.page_size();
  std::string lines;
  std::size_t differing = 0;
  auto note = [&](const std::string& line) {
    if (line.empty()) return;
    if (differing < max_pages) lines += "\n    " + line;
    ++differing;
  };
  bool more_a = a.next();
  bool more_b = b.next();
  while (more_a || more_b) {
    if (more_a && (!more_b || a.address() < b.address())) {
      note(compare_page(a.address(), a.data(), nullptr, page, names_a, names_b));
      more_a = a.next();
    } else if (more_b && (!more_a || b.address() < a.address())) {
      note(compare_page(b.address(), nullptr, b.data(), page, names_a, names_b));
      more_b = b.next();
    } else {
      note(compare_page(a.address(), a.data(), b.data(), page, names_a, names_b));
      more_a = a.next();
      more_b = b.next();
    }
  }
  std::string out = std::to_string(differing) + " page" + (differing == 1 ? "" : "s") + " differ from " +
                    recorded.string() + " (the recorded heap after this event)";
  if (differing > max_pages) out += "; the first " + std::to_string(max_pages) + ":";
  return out + lines;
}

}  // namespace reheap::testing::detail
