// Reading an object's symbol table from its ELF file (see elf_symbols.h).
//
// The file is untrusted in the small sense that it may be truncated, replaced or not an ELF file
// at all: every offset and size is checked against the mapping before it is followed, and
// anything malformed means "no symbols" with a reason, never a crash.
#include "elf_symbols.h"

#include "elf_notes.h"

#include <cxxabi.h>
#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

namespace reheap::detail::snapshot {
namespace {

// A checked view of the mapped file.
struct Image {
  const unsigned char* data = nullptr;
  std::size_t size = 0;

  bool holds(std::uint64_t offset, std::uint64_t bytes) const {
    return offset <= size && bytes <= size - offset;
  }
  template <typename T>
  const T* at(std::uint64_t offset) const {
    return holds(offset, sizeof(T)) ? reinterpret_cast<const T*>(data + offset) : nullptr;
  }
  // A NUL-terminated string at `offset` of the string table [table, table + table_size).
  std::string_view string(std::uint64_t table, std::uint64_t table_size, std::uint64_t offset) const {
    if (!holds(table, table_size) || offset >= table_size) return {};
    const char* begin = reinterpret_cast<const char*>(data + table + offset);
    const void* nul = std::memchr(begin, '\0', table_size - offset);
    return nul == nullptr ? std::string_view() : std::string_view(begin, static_cast<const char*>(nul) - begin);
  }
};

// The GNU build-id among the file's note sections, "" if none.
std::string file_build_id(const Image& image, const Elf64_Ehdr& eh) {
  for (unsigned i = 0; i < eh.e_shnum; ++i) {
    const auto* sh = image.at<Elf64_Shdr>(eh.e_shoff + std::uint64_t{i} * sizeof(Elf64_Shdr));
    if (sh == nullptr || sh->sh_type != SHT_NOTE || !image.holds(sh->sh_offset, sh->sh_size)) continue;
    std::string id = build_id_in_notes(image.data + sh->sh_offset, sh->sh_size, sh->sh_addralign == 8 ? 8 : 4);
    if (!id.empty()) return id;
  }
  return {};
}

std::mutex g_cache_mutex;
// By build-id (or path, for an object without one), with why a table could not be read. Tables
// are never dropped: a process loads few objects, and a table is read only for objects a heap
// points into.
struct CachedTable {
  std::shared_ptr<const SymbolTable> table;
  std::string why;
};
std::map<std::string, CachedTable>& cache() {
  static auto* tables = new std::map<std::string, CachedTable>();
  return *tables;
}

}  // namespace

SymbolTable::~SymbolTable() {
  if (map_ != nullptr) munmap(map_, map_size_);
}

std::shared_ptr<const SymbolTable> SymbolTable::of(const LoadedObject& object, std::string* why) {
  const std::string key = object.build_id.empty() ? "path:" + object.path : object.build_id;
  std::lock_guard lock(g_cache_mutex);
  auto it = cache().find(key);
  if (it == cache().end()) {
    CachedTable entry;
    entry.table = load(object, &entry.why);
    it = cache().emplace(key, std::move(entry)).first;
  }
  if (it->second.table == nullptr && why != nullptr) *why = it->second.why;
  return it->second.table;
}

std::shared_ptr<const SymbolTable> SymbolTable::load(const LoadedObject& object, std::string* why) {
  std::shared_ptr<SymbolTable> table(new SymbolTable());
  std::string reason;
  if (table->read(object.path, object.build_id, false, &reason)) return table;
  // Stripped: the distribution's debug file has the full table.
  if (object.build_id.size() > 2) {
    const std::string debug = "/usr/lib/debug/.build-id/" + object.build_id.substr(0, 2) + "/" +
                              object.build_id.substr(2) + ".debug";
    std::shared_ptr<SymbolTable> from_debug(new SymbolTable());
    std::string ignored;
    if (from_debug->read(debug, object.build_id, false, &ignored)) return from_debug;
  }
  table.reset(new SymbolTable());
  std::string dynamic_reason;
  if (table->read(object.path, object.build_id, true, &dynamic_reason)) return table;
  if (why != nullptr) *why = reason.empty() ? dynamic_reason : reason;
  return nullptr;
}

bool SymbolTable::read(const std::string& path, const std::string& build_id, bool dynamic_ok,
                       std::string* why) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *why = "cannot open " + path + ": " + std::strerror(errno);
    return false;
  }
  struct stat st{};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < static_cast<off_t>(sizeof(Elf64_Ehdr))) {
    close(fd);
    *why = path + " is not a regular ELF file";
    return false;
  }
  void* map = mmap(nullptr, static_cast<std::size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (map == MAP_FAILED) {
    *why = "cannot map " + path + ": " + std::strerror(errno);
    return false;
  }
  map_ = map;
  map_size_ = static_cast<std::size_t>(st.st_size);
  const Image image{static_cast<const unsigned char*>(map), map_size_};
  const auto* eh = image.at<Elf64_Ehdr>(0);
  if (std::memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
      eh->e_shentsize != sizeof(Elf64_Shdr) ||
      !image.holds(eh->e_shoff, std::uint64_t{eh->e_shnum} * sizeof(Elf64_Shdr))) {
    *why = path + " is not a 64-bit ELF file with section headers";
    return false;
  }
  if (!build_id.empty() && file_build_id(image, *eh) != build_id) {
    *why = path + " on disk is not the build that is loaded (the file was replaced since the process started)";
    return false;
  }
  const Elf64_Shdr* symbols = nullptr;
  for (const std::uint32_t wanted : {std::uint32_t{SHT_SYMTAB}, std::uint32_t{SHT_DYNSYM}}) {
    if (wanted == SHT_DYNSYM && !dynamic_ok) break;
    for (unsigned i = 0; i < eh->e_shnum && symbols == nullptr; ++i) {
      const auto* sh = image.at<Elf64_Shdr>(eh->e_shoff + std::uint64_t{i} * sizeof(Elf64_Shdr));
      if (sh->sh_type == wanted) symbols = sh;
    }
    if (symbols != nullptr) break;
  }
  if (symbols == nullptr || symbols->sh_type == SHT_NOBITS || symbols->sh_entsize != sizeof(Elf64_Sym) ||
      symbols->sh_link >= eh->e_shnum || !image.holds(symbols->sh_offset, symbols->sh_size)) {
    *why = path + " has no symbol table (stripped; keep .symtab, install its debug file, or link with -rdynamic)";
    return false;
  }
  const auto* strings = image.at<Elf64_Shdr>(eh->e_shoff + std::uint64_t{symbols->sh_link} * sizeof(Elf64_Shdr));
  source_ = path + (symbols->sh_type == SHT_SYMTAB ? " (.symtab)" : " (.dynsym)");
  complete_ = symbols->sh_type == SHT_SYMTAB;
  std::string_view file;
  const std::uint64_t count = symbols->sh_size / sizeof(Elf64_Sym);
  for (std::uint64_t i = 1; i < count; ++i) {
    const auto* sym = image.at<Elf64_Sym>(symbols->sh_offset + i * sizeof(Elf64_Sym));
    const unsigned type = ELF64_ST_TYPE(sym->st_info);
    const unsigned binding = ELF64_ST_BIND(sym->st_info);
    const std::string_view name = image.string(strings->sh_offset, strings->sh_size, sym->st_name);
    if (type == STT_FILE) {
      file = name;
      continue;
    }
    if (binding != STB_LOCAL) file = {};
    const bool function = type == STT_FUNC || type == STT_GNU_IFUNC;
    if ((!function && type != STT_OBJECT) || sym->st_shndx == SHN_UNDEF || sym->st_shndx >= SHN_LORESERVE ||
        name.empty()) {
      continue;
    }
    ElfSymbol s;
    s.address = sym->st_value;
    s.size = sym->st_size;
    s.name = name;
    s.file = binding == STB_LOCAL ? file : std::string_view();
    s.function = function;
    s.rank = binding == STB_GLOBAL ? 0 : binding == STB_WEAK ? 1 : 2;
    by_address_.push_back(s);
  }
  std::sort(by_address_.begin(), by_address_.end(), [](const ElfSymbol& a, const ElfSymbol& b) {
    if (a.address != b.address) return a.address < b.address;
    if (a.rank != b.rank) return a.rank < b.rank;
    if (a.name.size() != b.name.size()) return a.name.size() < b.name.size();
    return a.name < b.name;
  });
  for (std::uint32_t i = 0; i < by_address_.size(); ++i) by_name_[by_address_[i].name].push_back(i);
  return true;
}

const ElfSymbol* SymbolTable::resolve(std::uint64_t address, const ElfSymbol** inside_function) const {
  *inside_function = nullptr;
  auto it = std::upper_bound(by_address_.begin(), by_address_.end(), address,
                             [](std::uint64_t a, const ElfSymbol& s) { return a < s.address; });
  // Symbols do not nest in practice (aliases share a start), so the ones that can cover
  // `address` are the last few starting at or below it; the bound keeps a lookup short.
  const ElfSymbol* best = nullptr;
  for (int steps = 0; it != by_address_.begin() && steps < 64; ++steps) {
    --it;
    const ElfSymbol& s = *it;
    const std::uint64_t offset = address - s.address;
    const bool covers = s.function ? offset == 0 : offset <= s.size;
    if (covers) {
      // The closest start wins; among aliases (same start), walking backwards meets the one the
      // sort prefers last.
      if (best == nullptr || s.address == best->address) best = &s;
    } else if (s.function && offset < s.size && *inside_function == nullptr) {
      *inside_function = &s;
    }
  }
  if (best != nullptr) *inside_function = nullptr;
  return best;
}

const ElfSymbol* SymbolTable::find(std::string_view name, std::string_view file, bool* ambiguous) const {
  *ambiguous = false;
  auto it = by_name_.find(name);
  if (it == by_name_.end()) return nullptr;
  const ElfSymbol* found = nullptr;
  for (std::uint32_t index : it->second) {
    const ElfSymbol& s = by_address_[index];
    if (s.file != file) continue;
    if (found != nullptr && found->address != s.address) {
      *ambiguous = true;
      return nullptr;
    }
    found = &s;
  }
  return found;
}

std::string demangle(std::string_view name) {
  const std::string mangled(name);
  int status = 0;
  char* readable = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
  if (status != 0 || readable == nullptr) {
    std::free(readable);
    return mangled;
  }
  std::string out(readable);
  std::free(readable);
  return out;
}

}  // namespace reheap::detail::snapshot
