// Reading an executable's build-id from its file (see elf_build_id.h).
#include "elf_build_id.h"

#include <elf.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "snapshot/elf_notes.h"  // heap/src: the note walk the heap uses for loaded objects

namespace reheap::snap {
namespace {

// A build-id note is 36 bytes; a note segment of more than this is not one a linker wrote.
constexpr std::uint64_t kMaxNoteBytes = 64 * 1024;
// Executables have a dozen program headers; the bound keeps a forged count from costing memory.
constexpr unsigned kMaxProgramHeaders = 4096;

// Reads exactly `size` bytes at `offset`; false on a short read or an error.
bool read_at(int fd, void* out, std::size_t size, std::uint64_t offset) {
  auto* p = static_cast<unsigned char*>(out);
  while (size != 0) {
    const ssize_t n = ::pread(fd, p, size, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<std::size_t>(n);
    offset += static_cast<std::uint64_t>(n);
  }
  return true;
}

bool holds(std::uint64_t file_size, std::uint64_t offset, std::uint64_t bytes) {
  return offset <= file_size && bytes <= file_size - offset;
}

}  // namespace

ElfBuildId read_elf_build_id(int fd, std::uint64_t size) {
  ElfBuildId out;
  Elf64_Ehdr eh{};
  if (size < sizeof eh || !read_at(fd, &eh, sizeof eh, 0) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) {
    out.problem = "not an ELF executable (a script, or another kind of file)";
    return out;
  }
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || (eh.e_type != ET_EXEC && eh.e_type != ET_DYN)) {
    out.problem = "not a 64-bit ELF executable";
    return out;
  }
  out.elf = true;
  if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 || eh.e_phnum > kMaxProgramHeaders ||
      !holds(size, eh.e_phoff, std::uint64_t{eh.e_phnum} * sizeof(Elf64_Phdr))) {
    out.problem = "its ELF program headers are malformed";
    return out;
  }
  std::vector<Elf64_Phdr> headers(eh.e_phnum);
  if (!read_at(fd, headers.data(), headers.size() * sizeof(Elf64_Phdr), eh.e_phoff)) {
    out.problem = "its ELF program headers cannot be read";
    return out;
  }
  for (const Elf64_Phdr& ph : headers) {
    if (ph.p_type != PT_NOTE || ph.p_filesz == 0 || ph.p_filesz > kMaxNoteBytes ||
        !holds(size, ph.p_offset, ph.p_filesz)) {
      continue;
    }
    std::vector<unsigned char> notes(ph.p_filesz);
    if (!read_at(fd, notes.data(), notes.size(), ph.p_offset)) continue;
    out.build_id = detail::snapshot::build_id_in_notes(notes.data(), notes.size(), ph.p_align == 8 ? 8 : 4);
    if (!out.build_id.empty()) return out;
  }
  out.problem = "it has no GNU build id (linked with --build-id=none?)";
  return out;
}

}  // namespace reheap::snap
