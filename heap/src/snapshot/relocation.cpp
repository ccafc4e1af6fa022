// Relocation: mapping a saved heap's pointers into the program to the program now (see
// relocation.h and program_refs.h for the rules).
#include "relocation.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <string_view>

#include "elf_symbols.h"
#include "format.h"
#include "object_labels.h"

namespace reheap::detail::snapshot {
namespace {

constexpr std::size_t kMaxReported = 12;

std::string hex(std::uint64_t v) {
  char buffer[24];
  std::snprintf(buffer, sizeof buffer, "%#llx", static_cast<unsigned long long>(v));
  return buffer;
}

// What a ref names, for a message.
std::string describe(const ProgramRef& r, const LoadedObject& object) {
  switch (r.kind) {
    case ProgramRefKind::kSymbol: {
      std::string s = demangle(r.symbol);
      if (r.offset != 0) s += " + " + std::to_string(r.offset);
      if (!r.file.empty()) s += " (local to " + r.file + ")";
      return s;
    }
    case ProgramRefKind::kString: {
      std::string text = r.bytes.substr(0, std::min<std::size_t>(r.bytes.size() - 1, 40));
      for (char& c : text) {
        if (static_cast<unsigned char>(c) < 0x20 || c == '"') c = '?';
      }
      return "the string literal \"" + text + (r.bytes.size() > 41 ? "...\"" : "\"");
    }
    case ProgramRefKind::kUnresolved:
      break;
  }
  return "the address " + label_of(object) + "+" + hex(r.value - object.base) + ", " + r.symbol;
}

// What to do about a symbol the restoring program lacks. A vtable is the common case (a test that
// only reads a replayed reactor never constructs its class): the advice is the line that keeps it.
std::string missing_code_advice(const ProgramRef& r) {
  std::string advice =
      "; a program that restores a heap must contain the code its objects use: link the source files (or the "
      "library members) that define its classes, and use them, or the linker drops them";
  constexpr std::string_view kVtable = "vtable for ";
  const std::string name = demangle(r.symbol);
  if (r.file.empty() && name.starts_with(kVtable)) {
    advice += "; for this class, write `REHEAP_RESTORABLE(" + name.substr(kVtable.size()) +
              ");` (#include <reheap/restorable.h>) at namespace scope in a source file of this program";
  }
  return advice;
}

// The object of `now` standing for `saved`: the main executable for the main executable (a test
// binary or a rebuilt service stands for the saving program), else the same build, else the same
// file name.
const LoadedObject* counterpart(const LoadedObject& saved, const ProgramLayout& now) {
  for (const LoadedObject& o : now) {
    if (saved.main_executable ? o.main_executable : (!saved.build_id.empty() && o.build_id == saved.build_id)) {
      return &o;
    }
  }
  if (saved.main_executable) return nullptr;
  for (const LoadedObject& o : now) {
    if (!o.main_executable && label_of(o) == label_of(saved)) return &o;
  }
  return nullptr;
}

// The address of `bytes` in the read-only data of `object`. Raw reads: the search crosses other
// globals' ASan redzones.
__attribute__((no_sanitize("address"))) std::optional<std::uint64_t> find_literal(const LoadedObject& object,
                                                                                   const std::string& bytes) {
  for (const ImageSegment& s : object.segments) {
    if (s.writable || s.executable || s.end - s.begin < bytes.size()) continue;
    const char* p = reinterpret_cast<const char*>(s.begin);
    const std::size_t last = s.end - s.begin - bytes.size();
    for (std::size_t i = 0; i <= last; ++i) {
      if (p[i] != bytes[0]) continue;
      std::size_t k = 1;
      while (k < bytes.size() && p[i + k] == bytes[k]) ++k;
      if (k == bytes.size()) return s.begin + i;
    }
  }
  return std::nullopt;
}

class Planner {
 public:
  Planner(const SnapshotHeader& saved, const ProgramLayout& now, const RelocationOptions& options)
      : saved_(saved), now_(now), options_(options) {}

  // Fills `moves` and `ranges` for the refs of object `index`, or records why it cannot.
  void object(std::uint32_t index, const std::vector<const ProgramRef*>& refs,
              std::unordered_map<std::uint64_t, std::uint64_t>& moves, std::vector<ImageSegment>& ranges) {
    const LoadedObject& was = saved_.layout[index];
    const std::string label = label_of(was);
    const LoadedObject* is = counterpart(was, now_);
    if (is == nullptr) {
      error(label + ": not loaded now (" + was.path + "), and the heap points into it: " + examples(refs, was));
      return;
    }
    const bool same_build = !was.build_id.empty() && was.build_id == is->build_id;
    if (same_build && was.base == is->base) return;  // nothing moves
    ranges.insert(ranges.end(), was.segments.begin(), was.segments.end());
    if (same_build) {
      for (const ProgramRef* r : refs) moves[r->value] = r->value - was.base + is->base;
      return;
    }
    if (!was.main_executable && !options_.relink_libraries) {
      error(label + ": a different build (saved " + short_id(was.build_id) + ", now " + short_id(is->build_id) +
            " at " + is->path + "), and the heap points into it: " + examples(refs, was) +
            "; a library's types may be laid out differently in another build: restore with the "
            "same library (or set RestoreOptions::relink_libraries to map its symbols anyway)");
      return;
    }
    std::string why;
    const std::shared_ptr<const SymbolTable> table = SymbolTable::of(*is, &why);
    for (const ProgramRef* r : refs) {
      switch (r->kind) {
        case ProgramRefKind::kSymbol: {
          if (table == nullptr) {
            error(label + ": cannot map " + describe(*r, was) + " by symbol: " + why);
            break;
          }
          bool ambiguous = false;
          const ElfSymbol* s = table->find(r->symbol, r->file, &ambiguous);
          if (s == nullptr) {
            error(describe(*r, was) + (ambiguous ? " is defined more than once in " : " is not in ") +
                  label_of(*is) + " now (" + table->source() + ")" +
                  (ambiguous ? std::string() : missing_code_advice(*r)));
          } else if (s->function != r->function || (!r->function && s->size != r->size)) {
            // An object's size is its layout (a vtable that grew: the class changed). A
            // function's is only its code, which a rebuild changes freely (inlining differs from
            // one translation unit to the next): its name is what a pointer to it means.
            error(demangle(r->symbol) + " changed: " + std::to_string(r->size) + (r->function ? "-byte function" : "-byte object") +
                  " when saved, " + std::to_string(s->size) + (s->function ? "-byte function" : "-byte object") +
                  " now (its type or code changed; the heap's objects may not match it)");
          } else {
            moves[r->value] = is->base + s->address + r->offset;
          }
          break;
        }
        case ProgramRefKind::kString: {
          const std::optional<std::uint64_t> at = find_literal(*is, r->bytes);
          if (!at) {
            error(describe(*r, was) + " is not in " + label_of(*is) + " now");
          } else {
            moves[r->value] = *at;
          }
          break;
        }
        case ProgramRefKind::kUnresolved:
          error("cannot map " + describe(*r, was) + " to another build (" + std::to_string(r->words) + " word" +
                (r->words == 1 ? "" : "s") + ")");
          break;
      }
    }
  }

  const std::vector<std::string>& errors() const { return errors_; }

 private:
  void error(std::string line) { errors_.push_back(std::move(line)); }

  static std::string examples(const std::vector<const ProgramRef*>& refs, const LoadedObject& was) {
    std::string out;
    for (std::size_t i = 0; i < refs.size() && i < 3; ++i) out += (i ? ", " : "") + describe(*refs[i], was);
    if (refs.size() > 3) out += " and " + std::to_string(refs.size() - 3) + " more";
    return out;
  }

  const SnapshotHeader& saved_;
  const ProgramLayout& now_;
  const RelocationOptions& options_;
  std::vector<std::string> errors_;
};

}  // namespace

Relocation Relocation::plan(const SnapshotHeader& saved, const ProgramLayout& now,
                            const RelocationOptions& options, const std::string& name) {
  Relocation r;
  r.name_ = name;
  if (!saved.has_program_refs) {
    const std::string difference = layout_difference(saved.layout, now, LayoutCheck::kStrict);
    if (!difference.empty()) {
      fail(SnapshotErrc::kLayoutMismatch, name,
           "written by a reheap that did not list the heap's pointers into the program, so it restores "
           "only where the program is laid out as it was:\n" + difference);
    }
    return r;
  }
  std::map<std::uint32_t, std::vector<const ProgramRef*>> by_object;
  for (const ProgramRef& ref : saved.program_refs) by_object[ref.object].push_back(&ref);
  Planner planner(saved, now, options);
  std::vector<ImageSegment> ranges;
  for (const auto& [index, refs] : by_object) planner.object(index, refs, r.moves_, ranges);
  if (!planner.errors().empty()) {
    const std::vector<std::string>& errors = planner.errors();
    std::string what = "the heap points into the program at places this process cannot map:";
    for (std::size_t i = 0; i < errors.size() && i < kMaxReported; ++i) what += "\n  " + errors[i];
    if (errors.size() > kMaxReported) what += "\n  and " + std::to_string(errors.size() - kMaxReported) + " more";
    fail(SnapshotErrc::kLayoutMismatch, name, what);
  }
  for (const ImageSegment& segment : ranges) r.ranges_.add({segment.begin, segment.end});
  r.ranges_.seal();
  return r;
}

std::size_t Relocation::apply(std::uintptr_t begin, std::size_t bytes) const {
  auto* words = reinterpret_cast<std::uint64_t*>(begin);
  const std::size_t n = bytes / sizeof(std::uint64_t);
  std::size_t rewritten = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t v = words[i];
    if (ranges_.outside_all(v) || ranges_.find(v) == nullptr) [[likely]] continue;
    auto it = moves_.find(v);
    if (it == moves_.end()) {
      fail(SnapshotErrc::kCorrupt, name_,
           "the word at " + hex(begin + i * sizeof(std::uint64_t)) + " points into the saving program (" + hex(v) +
               ") but the header does not list it");
    }
    words[i] = it->second;
    ++rewritten;
  }
  return rewritten;
}

}  // namespace reheap::detail::snapshot
