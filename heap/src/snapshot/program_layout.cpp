// The program's layout, as the dynamic loader reports it, and the comparison restore makes.
//
// dl_iterate_phdr walks the loader's list of objects (main executable first, then shared objects
// in load order) under the loader lock. The callback only copies what it is given into a local
// vector; resolving paths (realpath, readlink) waits until the lock is released. The build-id is
// read from the object's PT_NOTE segments in memory, never from the file, so it describes what is
// loaded even if the file on disk was replaced since.
//
// Allocation: this may run while a reheap heap is current on the thread, so every std::string and
// std::vector below may land in that heap. That is fine for what is returned (the caller owns it),
// which is why nothing here is cached in a static.
#include "reheap/program_layout.h"

#include "elf_notes.h"
#include "object_labels.h"

#include <elf.h>
#include <link.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string_view>

namespace reheap {
namespace detail::snapshot {
namespace {

std::string to_hex(const unsigned char* bytes, std::size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * n);
  for (std::size_t i = 0; i < n; ++i) {
    hex.push_back(kDigits[bytes[i] >> 4]);
    hex.push_back(kDigits[bytes[i] & 0xf]);
  }
  return hex;
}

std::size_t align_up(std::size_t n, std::size_t alignment) {
  return (n + alignment - 1) & ~(alignment - 1);
}

}  // namespace

std::string build_id_in_notes(const unsigned char* notes, std::size_t size, std::size_t alignment) {
  const unsigned char* p = notes;
  std::size_t left = size;
  while (left >= sizeof(ElfW(Nhdr))) {
    ElfW(Nhdr) note;
    std::memcpy(&note, p, sizeof note);
    const std::size_t name_at = sizeof note;
    const std::size_t desc_at = name_at + align_up(note.n_namesz, alignment);
    const std::size_t next = desc_at + align_up(note.n_descsz, alignment);
    if (desc_at > left || next > left) {
      break;  // malformed or truncated: ignore the rest rather than read past the block
    }
    if (note.n_type == NT_GNU_BUILD_ID && note.n_namesz == 4 && std::memcmp(p + name_at, "GNU", 4) == 0 &&
        note.n_descsz > 0) {
      return to_hex(p + desc_at, note.n_descsz);
    }
    p += next;
    left -= next;
  }
  return {};
}

// Build-ids are 20 bytes of SHA-1 in practice: twelve hex digits tell two builds apart in a
// message and keep its line short.
std::string short_id(const std::string& id) {
  if (id.empty()) {
    return "none";
  }
  return id.size() > 12 ? id.substr(0, 12) + "..." : id;
}

// A bare file name reads as a library's, so the executable says what it is: a user took
// "rec_lib: build-id differs" for a shared library.
std::string label_of(const LoadedObject& object) {
  if (object.path.empty()) return "(unnamed object)";
  const std::size_t slash = object.path.rfind('/');
  const std::string name = slash == std::string::npos ? object.path : object.path.substr(slash + 1);
  return object.main_executable ? "the main executable " + name : name;
}

}  // namespace detail::snapshot

namespace {

using detail::snapshot::label_of;
using detail::snapshot::short_id;


std::string build_id_of(const dl_phdr_info& info) {
  for (ElfW(Half) i = 0; i < info.dlpi_phnum; ++i) {
    if (info.dlpi_phdr[i].p_type == PT_NOTE) {
      const ElfW(Phdr)& segment = info.dlpi_phdr[i];
      std::string id = detail::snapshot::build_id_in_notes(
          reinterpret_cast<const unsigned char*>(info.dlpi_addr + segment.p_vaddr), segment.p_memsz,
          segment.p_align == 8 ? 8 : 4);
      if (!id.empty()) {
        return id;
      }
    }
  }
  return {};
}

bool is_vdso(std::string_view name, bool first) {
  if (name.starts_with("linux-vdso") || name.starts_with("linux-gate")) {
    return true;
  }
  // The loader names only the main executable with "": any other nameless object is the vDSO
  // under a name this libc does not give it.
  return name.empty() && !first;
}

int collect(dl_phdr_info* info, std::size_t /*size*/, void* data) {
  auto& layout = *static_cast<ProgramLayout*>(data);
  const bool first = layout.empty();
  const std::string_view name = info->dlpi_name != nullptr ? info->dlpi_name : "";
  if (is_vdso(name, first)) {
    return 0;
  }
  LoadedObject object;
  object.path = name;
  object.base = info->dlpi_addr;
  object.build_id = build_id_of(*info);
  object.main_executable = first;
  for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& segment = info->dlpi_phdr[i];
    if (segment.p_type != PT_LOAD || segment.p_memsz == 0) continue;
    ImageSegment s;
    s.begin = info->dlpi_addr + segment.p_vaddr;
    s.end = s.begin + segment.p_memsz;
    s.writable = (segment.p_flags & PF_W) != 0;
    s.executable = (segment.p_flags & PF_X) != 0;
    object.segments.push_back(s);
  }
  std::sort(object.segments.begin(), object.segments.end(),
            [](const ImageSegment& a, const ImageSegment& b) { return a.begin < b.begin; });
  layout.push_back(std::move(object));
  return 0;
}

// The executable's own path: argv[0] may be relative, or not a path at all.
std::string executable_path() {
  char buffer[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buffer, sizeof buffer);
  if (n <= 0 || static_cast<std::size_t>(n) >= sizeof buffer) {
    return {};
  }
  return std::string(buffer, static_cast<std::size_t>(n));
}

// An absolute path with symbolic links resolved, so /lib/x/libc.so.6 and /usr/lib/x/libc.so.6 on
// a merged-/usr system compare equal. A path that no longer resolves (the file was deleted) is
// kept as the loader gave it. The buffer lives on the stack: realpath(p, nullptr) would malloc.
std::string canonical(const std::string& path) {
  if (path.empty()) {
    return path;
  }
  char buffer[PATH_MAX];
  if (realpath(path.c_str(), buffer) == nullptr) {
    return path;
  }
  return buffer;
}

std::string hex_address(std::uintptr_t address) {
  char buffer[2 + 2 * sizeof address + 1];
  std::snprintf(buffer, sizeof buffer, "0x%zx", static_cast<std::size_t>(address));
  return buffer;
}

const LoadedObject* main_executable_of(const ProgramLayout& layout) {
  for (const LoadedObject& object : layout) {
    if (object.main_executable) {
      return &object;
    }
  }
  return nullptr;
}

// The object of `now` that stands for `saved`: the same build-id when both have one (preferring
// one at the same address, should the same file be loaded twice), else the same path.
const LoadedObject* counterpart(const LoadedObject& saved, const ProgramLayout& now) {
  const LoadedObject* by_id = nullptr;
  if (!saved.build_id.empty()) {
    for (const LoadedObject& object : now) {
      if (object.build_id == saved.build_id && (by_id == nullptr || object.base == saved.base)) {
        by_id = &object;
      }
    }
  }
  if (by_id != nullptr) {
    return by_id;
  }
  if (saved.path.empty()) {
    return nullptr;
  }
  for (const LoadedObject& object : now) {
    if (object.path == saved.path) {
      return &object;
    }
  }
  return nullptr;
}

// Adds one line per way `now_object` fails to stand for `saved` (none if it does).
void compare(const LoadedObject& saved, const LoadedObject* now_object,
             std::vector<std::string>& out) {
  const std::string label = label_of(saved);
  if (now_object == nullptr) {
    out.push_back(label + ": not loaded now (" + saved.path + ")");
    return;
  }
  if (now_object->build_id != saved.build_id) {
    out.push_back(label + ": build-id differs (saved " + short_id(saved.build_id) + ", now " +
                  short_id(now_object->build_id) + "): a different build of " + now_object->path);
  } else if (saved.build_id.empty() && now_object->path != saved.path) {
    // Two main executables without build-ids: all that can be said is that the paths differ.
    out.push_back(label + ": a different executable (saved " + saved.path + ", now " +
                  now_object->path + ")");
  }
  if (now_object->base != saved.base) {
    out.push_back(label + ": loaded at " + hex_address(saved.base) + " when saved, at " +
                  hex_address(now_object->base) + " now");
  }
}

}  // namespace

ProgramLayout current_program_layout() {
  ProgramLayout layout;
  dl_iterate_phdr(collect, &layout);
  for (LoadedObject& object : layout) {
    // glibc names the executable "". Started as `ld.so program`, /proc/self/exe names the
    // loader instead of the program; the build-id still tells the program apart.
    object.path = object.main_executable && object.path.empty() ? executable_path()
                                                                 : canonical(object.path);
  }
  return layout;
}

std::vector<std::string> layout_mismatches(const ProgramLayout& saved, const ProgramLayout& now,
                                           LayoutCheck check) {
  if (check == LayoutCheck::kNone || check == LayoutCheck::kRelocate) {
    return {};  // kRelocate: the relocation plan (relocation.cpp) says what cannot be mapped
  }
  std::vector<std::string> out;
  // The main executable is compared with the main executable, never with a library that happens
  // to share its build-id or path.
  const LoadedObject* saved_main = main_executable_of(saved);
  const LoadedObject* now_main = main_executable_of(now);
  if (saved_main != nullptr) {
    if (now_main == nullptr) {
      out.push_back("the current layout names no main executable");
    } else {
      compare(*saved_main, now_main, out);
    }
  }
  if (check == LayoutCheck::kStrict) {
    for (const LoadedObject& object : saved) {
      if (!object.main_executable) {
        compare(object, counterpart(object, now), out);
      }
    }
  }
  return out;
}

std::string layout_difference(const ProgramLayout& saved, const ProgramLayout& now,
                              LayoutCheck check) {
  const std::vector<std::string> mismatches = layout_mismatches(saved, now, check);
  if (mismatches.empty()) {
    return {};
  }
  std::string out;
  for (const std::string& line : mismatches) {
    out += line + "\n";
  }
  out +=
      "restore with LayoutCheck::kRelocate (the default), or in the same binary with ASLR "
      "disabled: call reheap::reexec_without_aslr(argc, argv) first thing in main (aslr.h), or "
      "run under `setarch -R`";
  return out;
}

}  // namespace reheap
