// The GNU build-id of an executable file, read from its ELF program headers' notes without
// running or mapping it: what `replay` compares with a bundle's build before it runs the program
// the bundle's manifest names.
//
// The note is the one the loader maps (PT_NOTE), so the id read here is the one the program
// reports of itself when it runs (reheap::program_build_id()). The file is untrusted: every offset
// and size is checked against the file's size, at most kMaxNoteBytes of notes are read per
// segment, and anything malformed is "not an ELF executable" or "no build id" with a reason.
#pragma once

#include <cstdint>
#include <string>

namespace reheap::snap {

struct ElfBuildId {
  bool elf = false;      // a 64-bit ELF executable or shared object
  std::string build_id;  // lowercase hex, "" if it has none
  std::string problem;   // why it is not an ELF executable, or has no id ("" if it has one)
};

// Reads the executable open as `fd` (a regular file of `size` bytes) with pread alone.
ElfBuildId read_elf_build_id(int fd, std::uint64_t size);

}  // namespace reheap::snap
