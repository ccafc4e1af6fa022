// The symbols of one loaded object, read from its ELF file: what a pointer into the program is
// called, and where the same name lies in another build.
//
// Sources, in order: the file's .symtab (complete, with local symbols and the source file each
// belongs to), the debug file /usr/lib/debug/.build-id/xx/yyyy.debug when the file is stripped,
// and the .dynsym (exported symbols only). The file must carry the build-id of the object as
// loaded: a file replaced on disk since the process started describes another program.
//
// Tables are read once per process and shared: a file is mapped read-only and the names are
// views into the mapping, which lives as long as the table.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "reheap/program_layout.h"

namespace reheap::detail::snapshot {

struct ElfSymbol {
  std::uint64_t address = 0;  // link-time address; in the process, object base + address
  std::uint64_t size = 0;
  std::string_view name;
  std::string_view file;  // local symbols: the source file the table names; "" for global ones
  bool function = false;
  std::uint8_t rank = 0;  // preference among aliases: 0 global, 1 weak, 2 local
};

class SymbolTable {
 public:
  // The table of `object`, or null with `why` saying what is missing. Thread-safe; cached.
  static std::shared_ptr<const SymbolTable> of(const LoadedObject& object, std::string* why);

  ~SymbolTable();
  SymbolTable(const SymbolTable&) = delete;
  SymbolTable& operator=(const SymbolTable&) = delete;

  // The symbol that a pointer to `address` (link-time) names: the function starting there, or
  // the data symbol it lies in (one past the end included). Aliases: the first by rank, then
  // name. Null if none; then `*inside_function` says whether a function covers the address.
  const ElfSymbol* resolve(std::uint64_t address, const ElfSymbol** inside_function) const;

  // The symbol called `name` (with `file`, for a local symbol). Null if none, or if several
  // (then `*ambiguous` is set).
  const ElfSymbol* find(std::string_view name, std::string_view file, bool* ambiguous) const;

  // Where the symbols were read from, and whether it was the full table (.symtab).
  const std::string& source() const noexcept { return source_; }
  bool complete() const noexcept { return complete_; }

 private:
  SymbolTable() = default;
  static std::shared_ptr<const SymbolTable> load(const LoadedObject& object, std::string* why);
  bool read(const std::string& path, const std::string& build_id, bool dynamic_ok, std::string* why);

  void* map_ = nullptr;
  std::size_t map_size_ = 0;
  std::string source_;
  bool complete_ = false;
  std::vector<ElfSymbol> by_address_;
  std::unordered_map<std::string_view, std::vector<std::uint32_t>> by_name_;
};

// Human-readable name of a mangled one ("vtable for Room"), or the name itself.
std::string demangle(std::string_view name);

}  // namespace reheap::detail::snapshot
