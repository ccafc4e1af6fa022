// state_digest (see reheap/heap_digest.h): the used pages hashed one by one, each word that points
// into the program replaced by a name of what it points to, and each word whose upper half is that
// of a program address made relative to its object.
#include <xxhash.h>

#include <algorithm>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "../layout.h"
#include "format.h"
#include "program_scan.h"
#include "reheap/heap_digest.h"
#include "reheap/heap_scope.h"
#include "used_pages.h"

namespace reheap {
namespace {

constexpr std::size_t kPageBytes = kPageSize;  // used ranges are whole pages
constexpr std::size_t kPageWords = kPageBytes / sizeof(std::uint64_t);

// The upper halves (bits 32-63) the addresses of one loaded object's segments take.
struct HighHalves {
  std::uint64_t begin = 0;  // of the first segment's first byte
  std::uint64_t end = 0;    // one past that of its last byte
  std::uint64_t name = 0;   // the object's identity, hashed: its build-id, else its path
  std::uint64_t base = 0;   // its load address's upper half
};

// The process's loaded objects, taken once, and the scan over their segments. An object loaded
// later (dlopen) is not among them, so a word into it is hashed as it is, by address.
struct ProcessProgram {
  ProgramLayout layout = current_program_layout();
  detail::snapshot::ProgramScan scan{layout};
  std::vector<HighHalves> halves;  // in layout order: the main executable first
  std::uint64_t halves_low = 1;    // [halves_low, halves_low + halves_span) covers them all
  std::uint64_t halves_span = 0;

  ProcessProgram() {
    std::uint64_t high = 0;
    for (const LoadedObject& object : layout) {
      if (object.segments.empty()) continue;
      HighHalves h;
      h.begin = object.segments.front().begin >> 32;
      h.end = ((object.segments.back().end - 1) >> 32) + 1;
      const std::string id = object.main_executable ? std::string() : object.build_id.empty() ? object.path : object.build_id;
      h.name = XXH3_64bits(id.data(), id.size());
      h.base = object.base >> 32;
      if (halves.empty() || h.begin < halves_low) halves_low = h.begin;
      high = std::max(high, h.end);
      halves.push_back(h);
    }
    if (!halves.empty()) halves_span = high - halves_low;
  }

  // Whether the word's upper half is that of an address in the program: what is left of a
  // pointer whose lower half was overwritten, as a 4-byte field written over a freed block that
  // held one leaves it, or the padding after such a field.
  bool high_half_in_program(std::uint64_t word) const noexcept { return (word >> 32) - halves_low < halves_span; }

  // Such a word with its upper half made relative to its object's load address (and the object
  // named), so that the same remnant reads the same in every process.
  std::uint64_t named_high_half(std::uint64_t word) const noexcept {
    const std::uint64_t hi = word >> 32;
    for (const HighHalves& h : halves) {
      if (hi < h.begin || hi >= h.end) continue;
      const std::uint64_t relative = hi - h.base;
      return (word & 0xffffffffULL) ^ ((relative << 32) + h.name * 0x9e3779b97f4a7c15ULL);
    }
    return word;
  }
};

const ProcessProgram& process_program() {
  static std::once_flag once;
  static ProcessProgram* program = nullptr;
  std::call_once(once, [] {
    const HeapScope system(nullptr);
    program = new ProcessProgram();  // never freed: a digest may be taken until the process ends
  });
  return *program;
}

// Names already resolved, per thread (workers take digests of their heaps at once): resolving
// reads symbol tables, so it is done once per distinct value and thread.
std::uint64_t cached_name(std::uint64_t value, const ProcessProgram& program) {
  const HeapScope system(nullptr);
  thread_local std::unordered_map<std::uint64_t, std::uint64_t> names;
  const auto it = names.find(value);
  if (it != names.end()) return it->second;
  const std::uint64_t name = program_ref_name(program.scan.resolve(value), program.layout);
  names.emplace(value, name);
  return name;
}

// The page's words, read raw: under AddressSanitizer a heap page holds poisoned bytes (redzones,
// the allocator's own guards) that are part of its state all the same. Whether any word needs a
// name; no early exit, so that the compiler vectorizes the loop (most pages have none).
__attribute__((no_sanitize("address"))) bool has_program_word(const std::uint64_t* words, std::size_t n,
                                                               const ProcessProgram& program) {
  const std::uint64_t low = program.halves_low;  // in locals: the words might alias them otherwise
  const std::uint64_t span = program.halves_span;
  std::uint64_t hits = 0;
  for (std::size_t i = 0; i < n; ++i) hits |= static_cast<std::uint64_t>((words[i] >> 32) - low < span);
  return hits != 0;  // every program pointer has such an upper half too
}

__attribute__((no_sanitize("address"))) void copy_named(const std::uint64_t* words, std::size_t n, std::uint64_t* out,
                                                        const ProcessProgram& program) {
  for (std::size_t i = 0; i < n; ++i) out[i] = words[i];
  for (std::size_t i = 0; i < n; ++i) {
    if (!program.high_half_in_program(out[i])) continue;
    out[i] = program.scan.points_into_program(out[i]) ? cached_name(out[i], program) : program.named_high_half(out[i]);
  }
}

// One page's hash, seeded with its address: equal pages at other addresses hash apart.
std::uint64_t page_hash(std::uintptr_t page, const ProcessProgram& program) {
  const auto* words = reinterpret_cast<const std::uint64_t*>(page);
  if (!has_program_word(words, kPageWords, program)) return XXH3_64bits_withSeed(words, kPageBytes, page);
  alignas(64) std::uint64_t named[kPageWords];
  copy_named(words, kPageWords, named, program);
  return XXH3_64bits_withSeed(named, kPageBytes, page);
}

}  // namespace

std::uint64_t program_ref_name(const ProgramRef& ref, const ProgramLayout& layout) {
  detail::snapshot::Digest d;
  const char kind = static_cast<char>(ref.kind);
  d.update(&kind, 1);
  switch (ref.kind) {
    case ProgramRefKind::kSymbol:
      d.update(ref.symbol.data(), ref.symbol.size() + 1);
      d.update(ref.file.data(), ref.file.size() + 1);
      d.update(&ref.offset, sizeof ref.offset);
      break;
    case ProgramRefKind::kString:
      d.update(ref.bytes.data(), ref.bytes.size());
      break;
    case ProgramRefKind::kUnresolved: {
      const LoadedObject& object = layout[ref.object];
      const std::string id =
          object.main_executable ? std::string() : object.build_id.empty() ? object.path : object.build_id;
      const std::uint64_t offset = ref.value - object.base;
      d.update(id.data(), id.size() + 1);
      d.update(&offset, sizeof offset);
      break;
    }
  }
  return d.value();
}

std::uint64_t state_digest(const Heap& heap) {
  const ProcessProgram& program = process_program();
  HeapScope system(nullptr);  // the range list is the process's, not the heap's
  detail::HeapState* h = const_cast<detail::HeapState*>(detail::state(&heap));
  detail::UnpoisonedFreeBlocks unpoisoned(h);  // the digest reads freed blocks' bytes too
  // A sum of the pages' hashes, so that a page's share can be taken out and put back when only
  // some pages changed; the page count goes into the final mix.
  std::uint64_t sum = 0;
  std::uint64_t pages = 0;
  std::vector<detail::os::PageRange> ranges;
  for (const detail::snapshot::ChunkRun& run : detail::snapshot::chunk_runs(h)) {
    ranges.clear();
    detail::snapshot::used_ranges(h, run, ranges);
    for (const detail::os::PageRange& r : ranges) {
      for (std::uintptr_t page = r.begin; page < r.end; page += kPageBytes) {
        sum += page_hash(page, program);
        ++pages;
      }
    }
  }
  const std::uint64_t both[2] = {sum, pages};
  return XXH3_64bits(both, sizeof both);
}

}  // namespace reheap
