// The program's layout: the loaded executable and shared objects with their addresses and
// build-ids, and the verdict restore gives when a snapshot's saved layout meets the current one.
#include <dlfcn.h>
#include <gnu/libc-version.h>
#include <link.h>
#include <limits.h>
#include <stdlib.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "reheap/heap.h"
#include "reheap/heap_scope.h"
#include "reheap/program_layout.h"

namespace reheap {
namespace {

std::uintptr_t address_of(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

// The load bias of the object holding `code`, as the loader's own link map records it.
std::uintptr_t load_bias_of(const void* code) {
  Dl_info info{};
  link_map* map = nullptr;
  if (dladdr1(code, &info, reinterpret_cast<void**>(&map), RTLD_DL_LINKMAP) == 0 ||
      map == nullptr) {
    ADD_FAILURE() << "dladdr1 found no object for " << code;
    return 0;
  }
  return map->l_addr;
}

std::string canonical(const char* path) {
  char buffer[PATH_MAX];
  return realpath(path, buffer) != nullptr ? std::string(buffer) : std::string();
}

bool is_lowercase_hex(const std::string& s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

const LoadedObject* find_by_file_name_prefix(const ProgramLayout& layout, const std::string& p) {
  for (const LoadedObject& object : layout) {
    const std::string name = object.path.substr(object.path.rfind('/') + 1);
    if (name.starts_with(p)) {
      return &object;
    }
  }
  return nullptr;
}

std::size_t count_lines(const std::string& s) {
  return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n')) + (s.empty() ? 0 : 1);
}

int function_in_this_executable() { return 42; }

TEST(CurrentProgramLayout, StartsWithTheMainExecutableAndItsBuildId) {
  const ProgramLayout layout = current_program_layout();
  ASSERT_FALSE(layout.empty());
  const LoadedObject& exe = layout.front();
  EXPECT_TRUE(exe.main_executable);
  EXPECT_EQ(exe.path, canonical("/proc/self/exe"));
  EXPECT_EQ(exe.base, load_bias_of(reinterpret_cast<const void*>(&function_in_this_executable)));
  // Debian's gcc passes --build-id to the linker by default; a 160-bit SHA-1 is 40 hex digits.
  EXPECT_EQ(exe.build_id.size(), 40u) << exe.build_id;
  EXPECT_TRUE(is_lowercase_hex(exe.build_id)) << exe.build_id;
  EXPECT_EQ(std::count_if(layout.begin(), layout.end(),
                          [](const LoadedObject& o) { return o.main_executable; }),
            1);
}

TEST(CurrentProgramLayout, ContainsLibcAtTheAddressTheLoaderReports) {
  const ProgramLayout layout = current_program_layout();
  const LoadedObject* libc = find_by_file_name_prefix(layout, "libc.so");
  ASSERT_NE(libc, nullptr);
  EXPECT_FALSE(libc->main_executable);
  // gnu_get_libc_version is in libc itself; sanitizer runtimes intercept malloc and friends.
  const void* in_libc = reinterpret_cast<const void*>(&gnu_get_libc_version);
  EXPECT_EQ(libc->base, load_bias_of(in_libc));
  Dl_info info{};
  ASSERT_NE(dladdr(in_libc, &info), 0);
  EXPECT_EQ(libc->path, canonical(info.dli_fname));
  EXPECT_LE(libc->base, address_of(info.dli_fbase));
  EXPECT_FALSE(libc->build_id.empty());
  EXPECT_TRUE(is_lowercase_hex(libc->build_id)) << libc->build_id;
}

TEST(CurrentProgramLayout, NamesEveryObjectByAbsolutePathAndLeavesOutTheVdso) {
  const ProgramLayout layout = current_program_layout();
  ASSERT_GE(layout.size(), 2u);  // the executable and at least libc
  for (const LoadedObject& object : layout) {
    ASSERT_FALSE(object.path.empty());
    EXPECT_EQ(object.path.front(), '/') << object.path;
    EXPECT_EQ(object.path.find("linux-vdso"), std::string::npos) << object.path;
    EXPECT_EQ(object.path.find("linux-gate"), std::string::npos) << object.path;
    EXPECT_EQ(object.build_id.size() % 2, 0u) << object.path;
  }
}

TEST(CurrentProgramLayout, IsTheSameOnEveryCallAndComparesEqualToItself) {
  const ProgramLayout a = current_program_layout();
  const ProgramLayout b = current_program_layout();
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].path, b[i].path);
    EXPECT_EQ(a[i].base, b[i].base);
    EXPECT_EQ(a[i].build_id, b[i].build_id);
    EXPECT_EQ(a[i].main_executable, b[i].main_executable);
  }
  EXPECT_EQ(layout_difference(a, b, LayoutCheck::kStrict), "");
}

TEST(CurrentProgramLayout, LeavesNothingBehindInTheCurrentHeap) {
  HeapPtr heap = Heap::create();
  const std::size_t before = heap->stats().live_bytes;
  {
    HeapScope scope(*heap);
    const ProgramLayout layout = current_program_layout();
    EXPECT_FALSE(layout.empty());
    EXPECT_TRUE(heap->owns(layout.data()));  // the caller's vector follows the current heap
    EXPECT_GT(heap->stats().live_bytes, before);
  }
  EXPECT_EQ(heap->stats().live_bytes, before);
}

// A made-up layout: differences are easiest to state on objects whose fields the test chose.
ProgramLayout saved_layout() {
  return {
      {"/opt/app/bin/server", 0x555555554000, "aa11aa11aa11aa11aa11", true, {}},
      {"/usr/lib/x86_64-linux-gnu/libfoo.so.1", 0x7ffff7c00000, "bb22bb22bb22bb22bb22", false, {}},
      {"/usr/lib/x86_64-linux-gnu/libc.so.6", 0x7ffff7a00000, "cc33cc33cc33cc33cc33", false, {}},
      {"/opt/app/lib/libplain.so", 0x7ffff7e00000, "", false, {}},
  };
}

constexpr LayoutCheck kAllChecks[] = {LayoutCheck::kStrict, LayoutCheck::kExecutableOnly,
                                      LayoutCheck::kNone};

TEST(LayoutDifference, IsEmptyForIdenticalLayouts) {
  for (LayoutCheck check : kAllChecks) {
    EXPECT_EQ(layout_difference(saved_layout(), saved_layout(), check), "");
  }
}

TEST(LayoutDifference, IgnoresObjectsLoadedOnlyNow) {
  ProgramLayout now = saved_layout();
  now.push_back({"/usr/lib/x86_64-linux-gnu/libextra.so", 0x7ffff7000000, "dd44", false, {}});
  EXPECT_EQ(layout_difference(saved_layout(), now, LayoutCheck::kStrict), "");
}

TEST(LayoutDifference, MatchesByBuildIdWhenThePathDiffers) {
  ProgramLayout now = saved_layout();
  now[1].path = "/lib/x86_64-linux-gnu/libfoo.so.1";  // the same file reached another way
  now[0].path = "/tmp/copy-of-server";
  EXPECT_EQ(layout_difference(saved_layout(), now, LayoutCheck::kStrict), "");
}

TEST(LayoutDifference, NamesAMovedLibraryWithBothAddressesAndTheFix) {
  ProgramLayout now = saved_layout();
  now[1].base = 0x7f1234500000;
  const std::string message = layout_difference(saved_layout(), now, LayoutCheck::kStrict);
  EXPECT_NE(message.find("libfoo.so.1: loaded at 0x7ffff7c00000 when saved, at 0x7f1234500000 now"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("ASLR"), std::string::npos) << message;
  EXPECT_NE(message.find("reexec_without_aslr"), std::string::npos) << message;
  EXPECT_NE(message.find("setarch -R"), std::string::npos) << message;
  EXPECT_EQ(count_lines(message), 2u) << message;  // the difference, then the fix
  // Only the executable matters to kExecutableOnly, and nothing to kNone.
  EXPECT_EQ(layout_difference(saved_layout(), now, LayoutCheck::kExecutableOnly), "");
  EXPECT_EQ(layout_difference(saved_layout(), now, LayoutCheck::kNone), "");
}

TEST(LayoutDifference, NamesAMovedExecutableUnderEveryCheckButNone) {
  ProgramLayout now = saved_layout();
  now[0].base = 0x5600deadb000;
  for (LayoutCheck check : {LayoutCheck::kStrict, LayoutCheck::kExecutableOnly}) {
    const std::string message = layout_difference(saved_layout(), now, check);
    EXPECT_NE(message.find("the main executable server: loaded at 0x555555554000 when saved, at "
                           "0x5600deadb000 now"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("ASLR"), std::string::npos) << message;
    EXPECT_EQ(count_lines(message), 2u) << message;
  }
  EXPECT_EQ(layout_difference(saved_layout(), now, LayoutCheck::kNone), "");
}

TEST(LayoutDifference, NamesADifferentBuildAtTheSamePath) {
  ProgramLayout now = saved_layout();
  now[2].build_id = "ee55ee55ee55ee55ee55";
  const std::string message = layout_difference(saved_layout(), now, LayoutCheck::kStrict);
  EXPECT_NE(message.find("libc.so.6: build-id differs (saved cc33cc33cc33..., now ee55ee55ee55...)"
                         ": a different build of /usr/lib/x86_64-linux-gnu/libc.so.6"),
            std::string::npos)
      << message;
  EXPECT_EQ(count_lines(message), 2u) << message;
}

TEST(LayoutDifference, NamesADifferentBuildOfTheExecutableEvenWithExecutableOnly) {
  ProgramLayout now = saved_layout();
  now[0].build_id = "ff66";
  const std::string message = layout_difference(saved_layout(), now, LayoutCheck::kExecutableOnly);
  EXPECT_NE(message.find("the main executable server: build-id differs (saved aa11aa11aa11..., now ff66)"),
            std::string::npos)
      << message;
}

TEST(LayoutDifference, NamesAMissingObject) {
  ProgramLayout now = saved_layout();
  now.erase(now.begin() + 3);
  const std::string message = layout_difference(saved_layout(), now, LayoutCheck::kStrict);
  EXPECT_NE(message.find("libplain.so: not loaded now (/opt/app/lib/libplain.so)"),
            std::string::npos)
      << message;
  EXPECT_EQ(count_lines(message), 2u) << message;
  EXPECT_EQ(layout_difference(saved_layout(), now, LayoutCheck::kExecutableOnly), "");
}

TEST(LayoutDifference, MatchesObjectsWithoutBuildIdByPath) {
  ProgramLayout now = saved_layout();
  now[3].base = 0x7ffff6000000;
  const std::string message = layout_difference(saved_layout(), now, LayoutCheck::kStrict);
  EXPECT_NE(message.find("libplain.so: loaded at 0x7ffff7e00000 when saved, at 0x7ffff6000000 now"),
            std::string::npos)
      << message;
}

TEST(LayoutDifference, GivesOneLinePerDifferenceAndTheFixOnce) {
  ProgramLayout now = saved_layout();
  now[0].base += 0x1000;
  now[1].base += 0x1000;
  now[2].build_id = "0123";
  now.pop_back();
  const std::string message = layout_difference(saved_layout(), now, LayoutCheck::kStrict);
  EXPECT_EQ(count_lines(message), 5u) << message;
  EXPECT_EQ(message.find("ASLR disabled"), message.rfind("ASLR disabled")) << message;
  EXPECT_EQ(layout_difference(saved_layout(), now, LayoutCheck::kNone), "");
}

// A bare file name reads as a library's ("rec_lib: build-id differs"): the executable says what it is.
TEST(LayoutDifference, SaysWhichObjectIsTheMainExecutable) {
  ProgramLayout now = saved_layout();
  now[0].build_id = "ff66";
  now[1].base += 0x1000;
  const std::string message = layout_difference(saved_layout(), now, LayoutCheck::kStrict);
  EXPECT_EQ(message.rfind("the main executable server: build-id differs", 0), 0u) << message;
  EXPECT_NE(message.find("\nlibfoo.so.1: loaded at "), std::string::npos) << message;
  EXPECT_EQ(message.find("the main executable"), message.rfind("the main executable")) << message;
}

TEST(LayoutDifference, NamesTheRealLibcWhenItMoves) {
  const ProgramLayout saved = current_program_layout();
  ProgramLayout now = saved;
  LoadedObject* libc = nullptr;
  for (LoadedObject& object : now) {
    if (object.path.find("/libc.so") != std::string::npos) {
      libc = &object;
    }
  }
  ASSERT_NE(libc, nullptr);
  libc->base += 0x200000;
  const std::string message = layout_difference(saved, now, LayoutCheck::kStrict);
  EXPECT_EQ(message.rfind("libc.so.6: loaded at ", 0), 0u) << message;
  EXPECT_EQ(count_lines(message), 2u) << message;
}

std::string joined_lines(const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& line : lines) text += line + "\n";
  return text;
}

TEST(LayoutMismatches, IsEmptyWhereLayoutDifferenceIs) {
  ProgramLayout moved = saved_layout();
  moved[0].base += 0x1000;
  for (LayoutCheck check : kAllChecks) {
    EXPECT_TRUE(layout_mismatches(saved_layout(), saved_layout(), check).empty());
  }
  EXPECT_TRUE(layout_mismatches(saved_layout(), moved, LayoutCheck::kNone).empty());
  EXPECT_TRUE(layout_mismatches(saved_layout(), moved, LayoutCheck::kRelocate).empty());
  EXPECT_EQ(layout_difference(saved_layout(), moved, LayoutCheck::kRelocate), "");
}

// A replay relocates the heap anyway: it reports the differences without a restore's advice.
TEST(LayoutMismatches, AreLayoutDifferencesLinesWithoutTheAdvice) {
  ProgramLayout now = saved_layout();
  now[0].base += 0x1000;
  now[1].base += 0x1000;
  now[2].build_id = "0123";
  now.pop_back();
  for (LayoutCheck check : {LayoutCheck::kStrict, LayoutCheck::kExecutableOnly}) {
    const std::vector<std::string> lines = layout_mismatches(saved_layout(), now, check);
    ASSERT_EQ(lines.size(), check == LayoutCheck::kStrict ? 4u : 1u);
    const std::string text = joined_lines(lines);
    for (const std::string& line : lines) {
      EXPECT_FALSE(line.empty());
      EXPECT_EQ(line.find('\n'), std::string::npos) << line;
      EXPECT_EQ(line.find("ASLR"), std::string::npos) << line;
    }
    EXPECT_EQ(text.find("restore with"), std::string::npos) << text;
    EXPECT_EQ(text.find("setarch"), std::string::npos) << text;
    const std::string difference = layout_difference(saved_layout(), now, check);
    ASSERT_EQ(difference.rfind(text, 0), 0u) << difference;
    const std::string advice = difference.substr(text.size());
    EXPECT_EQ(advice.rfind("restore with LayoutCheck::kRelocate (the default)", 0), 0u) << advice;
    EXPECT_EQ(advice.find('\n'), std::string::npos) << advice;
  }
}

TEST(LayoutMismatches, NameTheMainExecutableAsLayoutDifferenceDoes) {
  ProgramLayout now = saved_layout();
  now[0].base = 0x5600deadb000;
  const std::vector<std::string> lines = layout_mismatches(saved_layout(), now, LayoutCheck::kExecutableOnly);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "the main executable server: loaded at 0x555555554000 when saved, at 0x5600deadb000 now");
}

}  // namespace
}  // namespace reheap
