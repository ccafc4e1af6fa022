// The GNU build-id in a block of ELF notes: what identifies a build, read from a loaded PT_NOTE
// segment (program_layout.cpp) or from a file's SHT_NOTE section (elf_symbols.cpp).
#pragma once

#include <cstddef>
#include <string>

namespace reheap::detail::snapshot {

// Lowercase hex of the first NT_GNU_BUILD_ID note in [notes, notes + size), "" if none. Notes are
// padded to `alignment` (4 classically, 8 for blocks holding GNU property notes); a malformed or
// truncated note ends the walk rather than a read past the block.
std::string build_id_in_notes(const unsigned char* notes, std::size_t size, std::size_t alignment);

}  // namespace reheap::detail::snapshot
