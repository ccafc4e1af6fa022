// ProgramScan: the save-time half of relocation (see program_scan.h and program_refs.h).
#include "program_scan.h"

#include <algorithm>
#include <cstring>

#include "elf_symbols.h"

namespace reheap::detail::snapshot {
namespace {

constexpr std::size_t kMaxLiteral = 4096;

// The bytes of a NUL-terminated string at `address`, read within [address, limit), or "" when
// no NUL comes first. The read is of the program's own read-only data, but under ASan a value
// may land in a global's redzone, which must not be reported: this is a raw read.
__attribute__((no_sanitize("address"))) std::string literal_at(std::uintptr_t address, std::uintptr_t limit) {
  const auto* p = reinterpret_cast<const volatile char*>(address);
  const std::size_t most = std::min<std::size_t>(kMaxLiteral, limit - address);
  std::string out;
  for (std::size_t i = 0; i < most; ++i) {
    const char c = p[i];
    out.push_back(c);
    if (c == '\0') return out;
  }
  return {};
}

}  // namespace

ProgramScan::ProgramScan(const ProgramLayout& layout) : layout_(layout) {
  for (std::uint32_t i = 0; i < layout.size(); ++i) {
    for (const ImageSegment& s : layout[i].segments) segments_.add({s.begin, s.end, i, s.writable, s.executable});
  }
  segments_.seal();
}

void ProgramScan::scan(std::uintptr_t begin, std::size_t bytes) {
  const auto* words = reinterpret_cast<const std::uint64_t*>(begin);
  const std::size_t n = bytes / sizeof(std::uint64_t);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t v = words[i];
    if (segments_.outside_all(v)) [[likely]] continue;
    if (segments_.find(v) != nullptr) ++counts_[v];
  }
}

ProgramRef ProgramScan::resolve(std::uint64_t value) const {
  const Segment& segment = *segments_.find(value);
  const LoadedObject& object = layout_[segment.object];
  ProgramRef r;
  r.value = value;
  r.object = segment.object;
  std::string why;
  const std::shared_ptr<const SymbolTable> table = SymbolTable::of(object, &why);
  const ElfSymbol* inside = nullptr;
  const ElfSymbol* symbol = table != nullptr ? table->resolve(value - object.base, &inside) : nullptr;
  if (symbol != nullptr) {
    r.kind = ProgramRefKind::kSymbol;
    r.symbol = std::string(symbol->name);
    r.file = std::string(symbol->file);
    r.function = symbol->function;
    r.size = symbol->size;
    r.offset = value - object.base - symbol->address;
  } else if (!segment.writable && !segment.executable &&
             !(r.bytes = literal_at(value, segment.end)).empty()) {
    r.kind = ProgramRefKind::kString;
  } else {
    r.kind = ProgramRefKind::kUnresolved;
    if (inside != nullptr) {
      r.symbol = "inside the function " + demangle(inside->name) + " (+" +
                 std::to_string(value - object.base - inside->address) + ")";
    } else if (table == nullptr) {
      r.symbol = why;
    } else {
      r.symbol = std::string("no symbol covers it (in a ") +
                 (segment.executable ? "code" : segment.writable ? "writable data" : "read-only data") +
                 " segment)";
    }
  }
  return r;
}

std::vector<ProgramRef> ProgramScan::refs() const {
  std::vector<ProgramRef> out;
  out.reserve(counts_.size());
  for (const auto& [value, count] : counts_) {
    ProgramRef r = resolve(value);
    r.words = count;
    out.push_back(std::move(r));
  }
  std::sort(out.begin(), out.end(), [](const ProgramRef& a, const ProgramRef& b) { return a.value < b.value; });
  return out;
}

}  // namespace reheap::detail::snapshot
