// The relocation plan on made-up headers: what is mapped how, and what is refused by name.
#include <gtest/gtest.h>

#include <algorithm>
#include <exception>
#include <string>
#include <vector>

#include "reheap/snapshot_error.h"
#include "snapshot/elf_symbols.h"
#include "snapshot/relocation.h"

extern "C" int reloc_plan_probe() { return 1; }

namespace {

using reheap::LoadedObject;
using reheap::ProgramLayout;
using reheap::ProgramRef;
using reheap::ProgramRefKind;
using reheap::SnapshotErrc;
using reheap::SnapshotError;
using reheap::SnapshotHeader;
using reheap::detail::snapshot::Relocation;

// The library std::terminate lives in, as loaded now.
const LoadedObject& libstdcxx(const ProgramLayout& now) {
  for (const LoadedObject& o : now) {
    if (o.path.find("libstdc++") != std::string::npos) return o;
  }
  throw std::runtime_error("libstdc++ is not loaded");
}

// The size of the symbol at `address` in `object`, as its symbol table says.
std::uint64_t size_of(const LoadedObject& object, std::uint64_t address) {
  std::string why;
  const auto table = reheap::detail::snapshot::SymbolTable::of(object, &why);
  if (table == nullptr) throw std::runtime_error(why);
  const reheap::detail::snapshot::ElfSymbol* inside = nullptr;
  const reheap::detail::snapshot::ElfSymbol* s = table->resolve(address - object.base, &inside);
  if (s == nullptr) throw std::runtime_error("no symbol at the address");
  return s->size;
}

// A header saved by "this process" with one ref to std::terminate in libstdc++.
SnapshotHeader saved_with_a_ref_into_libstdcxx(const ProgramLayout& now) {
  SnapshotHeader h;
  h.layout = now;
  h.has_program_refs = true;
  const LoadedObject& lib = libstdcxx(now);
  ProgramRef r;
  r.value = reinterpret_cast<std::uint64_t>(&std::terminate);
  r.object = static_cast<std::uint32_t>(&lib - now.data());
  r.kind = ProgramRefKind::kSymbol;
  r.symbol = "_ZSt9terminatev";
  r.function = true;
  r.size = size_of(lib, r.value);  // the size must match for the symbol to map
  r.words = 1;
  h.program_refs.push_back(r);
  return h;
}

std::string refusal(const SnapshotHeader& h, const ProgramLayout& now, bool relink = false) {
  try {
    Relocation::plan(h, now, {.relink_libraries = relink}, "test.snap");
  } catch (const SnapshotError& e) {
    EXPECT_EQ(e.code(), SnapshotErrc::kLayoutMismatch);
    return e.what();
  }
  return "";
}

TEST(RelocationPlan, TheSameLayoutMovesNothing) {
  const ProgramLayout now = reheap::current_program_layout();
  EXPECT_TRUE(Relocation::plan(saved_with_a_ref_into_libstdcxx(now), now, {}, "test.snap").empty());
}

TEST(RelocationPlan, TheSameBuildElsewhereMovesByTheLoadAddress) {
  const ProgramLayout now = reheap::current_program_layout();
  SnapshotHeader h = saved_with_a_ref_into_libstdcxx(now);
  LoadedObject& lib = h.layout[h.program_refs[0].object];
  const std::uint64_t shift = 0x100000000;
  lib.base -= shift;
  for (auto& s : lib.segments) s.begin -= shift, s.end -= shift;
  h.program_refs[0].value -= shift;
  const Relocation plan = Relocation::plan(h, now, {}, "test.snap");
  ASSERT_FALSE(plan.empty());
  std::uint64_t words[3] = {h.program_refs[0].value, 42, h.program_refs[0].value};
  const std::size_t rewritten = plan.apply(reinterpret_cast<std::uintptr_t>(words), sizeof words);
  EXPECT_EQ(words[0], reinterpret_cast<std::uint64_t>(&std::terminate));
  EXPECT_EQ(words[1], 42u);
  EXPECT_EQ(words[2], reinterpret_cast<std::uint64_t>(&std::terminate));
  EXPECT_EQ(rewritten, 2u);
  // A word in the moved library's saved range that the header does not list: the file lies.
  std::uint64_t unlisted = h.program_refs[0].value + 8;
  try {
    plan.apply(reinterpret_cast<std::uintptr_t>(&unlisted), sizeof unlisted);
    ADD_FAILURE() << "an unlisted word was accepted";
  } catch (const SnapshotError& e) {
    EXPECT_EQ(e.code(), SnapshotErrc::kCorrupt);
  }
}

TEST(RelocationPlan, ALibraryOfAnotherBuildIsRefusedNamingItAndWhatPointsIntoIt) {
  const ProgramLayout now = reheap::current_program_layout();
  SnapshotHeader h = saved_with_a_ref_into_libstdcxx(now);
  h.layout[h.program_refs[0].object].build_id = "0123456789abcdef0123";
  const std::string why = refusal(h, now);
  EXPECT_NE(why.find(": a different build (saved 0123456789ab..."), std::string::npos) << why;
  EXPECT_NE(why.find("libstdc++.so.6"), std::string::npos) << why;
  EXPECT_NE(why.find("std::terminate()"), std::string::npos) << why;
  // Allowed, it is mapped by symbol.
  const Relocation plan = Relocation::plan(h, now, {.relink_libraries = true}, "test.snap");
  EXPECT_FALSE(plan.empty());
}

TEST(RelocationPlan, AnObjectNotLoadedNowIsRefusedNamingIt) {
  const ProgramLayout now = reheap::current_program_layout();
  SnapshotHeader h = saved_with_a_ref_into_libstdcxx(now);
  LoadedObject& lib = h.layout[h.program_refs[0].object];
  lib.path = "/opt/gone/libgone.so.3";
  lib.build_id = "feedfeedfeedfeedfeed";
  const std::string why = refusal(h, now);
  EXPECT_NE(why.find("libgone.so.3: not loaded now (/opt/gone/libgone.so.3)"), std::string::npos) << why;
}

TEST(RelocationPlan, AnotherMainExecutableMapsBySymbolAndRefusesWhatItCannotMap) {
  const ProgramLayout now = reheap::current_program_layout();
  SnapshotHeader h;
  h.layout = now;
  h.layout[0].build_id = "another-build-of-the-main-executable";
  h.has_program_refs = true;
  const std::uint64_t base = now[0].base;
  // A symbol that exists, one that does not, an unresolved word, a literal.
  ProgramRef exists;
  exists.value = reinterpret_cast<std::uint64_t>(&reloc_plan_probe);
  exists.kind = ProgramRefKind::kSymbol;
  exists.symbol = "reloc_plan_probe";
  exists.function = true;
  exists.size = size_of(now[0], exists.value);
  ProgramRef missing = exists;
  missing.value = base + 0x20;
  missing.symbol = "_Z14no_such_symbolv";
  ProgramRef unresolved;
  unresolved.value = base + 0x30;
  unresolved.kind = ProgramRefKind::kUnresolved;
  unresolved.symbol = "inside the function f() (+12)";
  unresolved.words = 2;
  ProgramRef literal;
  literal.value = base + 0x40;
  literal.kind = ProgramRefKind::kString;
  // Built backwards, so that the program holds the reversed bytes only.
  literal.bytes = "ylerus ,laretil siht sah margorp on";
  std::reverse(literal.bytes.begin(), literal.bytes.end());
  literal.bytes.push_back('\0');
  h.program_refs = {exists, missing, unresolved, literal};
  const std::string why = refusal(h, now);
  EXPECT_EQ(why.find("reloc_plan_probe"), std::string::npos) << why;  // it maps
  EXPECT_NE(why.find("no_such_symbol() is not in"), std::string::npos) << why;
  EXPECT_NE(why.find("must contain the code its objects use: link the source files"), std::string::npos) << why;
  EXPECT_NE(why.find("inside the function f() (+12) to another build (2 words)"), std::string::npos) << why;
  EXPECT_NE(why.find("the string literal \"no program has this literal, surely\" is not in"), std::string::npos)
      << why;
}

// A vtable the restoring program lacks is the usual way a program misses a class (it reads a
// restored object but never constructs one): the refusal names the line that keeps the class.
TEST(RelocationPlan, AMissingVtableIsRefusedWithTheLineThatKeepsItsClass) {
  const ProgramLayout now = reheap::current_program_layout();
  SnapshotHeader h;
  h.layout = now;
  h.layout[0].build_id = "another-build-of-the-main-executable";
  h.has_program_refs = true;
  ProgramRef vtable;
  vtable.value = now[0].base + 0x20;
  vtable.kind = ProgramRefKind::kSymbol;
  vtable.symbol = "_ZTVN4bank7AccountE";  // vtable for bank::Account, which this program has not
  vtable.offset = 16;
  vtable.size = 40;
  ProgramRef function = vtable;
  function.value = now[0].base + 0x40;
  function.symbol = "_ZN4bank7Account7depositEi";  // bank::Account::deposit(int)
  function.offset = 0;
  function.function = true;
  h.program_refs = {vtable, function};
  const std::string why = refusal(h, now);
  EXPECT_NE(why.find("vtable for bank::Account + 16 is not in"), std::string::npos) << why;
  EXPECT_NE(why.find("write `REHEAP_RESTORABLE(bank::Account);` (#include <reheap/restorable.h>)"),
            std::string::npos)
      << why;
  // A function's refusal keeps the general advice only: its class is not known from its name alone.
  EXPECT_EQ(why.find("REHEAP_RESTORABLE", why.find("bank::Account::deposit(int) is not in")), std::string::npos)
      << why;
}

TEST(RelocationPlan, AFileWithoutPointerListsRestoresOnlyInTheSameLayout) {
  const ProgramLayout now = reheap::current_program_layout();
  SnapshotHeader h;
  h.layout = now;
  EXPECT_TRUE(Relocation::plan(h, now, {}, "old.snap").empty());
  h.layout[0].base += 0x200000;
  const std::string why = refusal(h, now);
  EXPECT_NE(why.find("did not list the heap's pointers into the program"), std::string::npos) << why;
}

}  // namespace
