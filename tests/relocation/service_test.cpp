// The chat service's snapshot, taken by the service with ASLR on, restored and run (virtual
// calls, std::function, message handlers) in this test binary, in a rebuild of the service with
// an unrelated change, in the same service started again, and refused by name by a build whose
// classes changed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "chat_room.h"
#include "reheap/runtime.h"
#include "reheap/snapshot_file.h"

namespace {

struct Ran {
  int status = -1;
  std::string output;  // stdout and stderr
};

Ran run(const std::string& program, const std::string& args) {
  Ran ran;
  FILE* pipe = popen((program + " " + args + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return ran;
  char buffer[4096];
  std::size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) ran.output.append(buffer, n);
  const int status = pclose(pipe);
  ran.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return ran;
}

std::string read_file(const std::filesystem::path& file) {
  std::stringstream s;
  s << std::ifstream(file).rdbuf();
  return s.str();
}

class ServiceSnapshot : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("reheap-relocation-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    const Ran saved = run(RELOC_SERVICE, "save " + dir_.string());
    ASSERT_EQ(saved.status, 0) << saved.output;
    expected_ = read_file(dir_ / "expected.txt");
    ASSERT_NE(expected_.find("h*ello from alice!"), std::string::npos) << expected_;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::filesystem::path dir_;
  std::string expected_;
};

bool aslr_on() {
  return read_file("/proc/sys/kernel/randomize_va_space").substr(0, 1) != "0";
}

TEST_F(ServiceSnapshot, ListsThePointersIntoTheServiceByName) {
  const reheap::SnapshotHeader h = reheap::SnapshotReader(dir_ / "room.snap").header();
  ASSERT_TRUE(h.has_program_refs);
  bool human_vtable = false, literal = false, type_info = false, score = false, thunk = false, manager = false;
  for (const reheap::ProgramRef& r : h.program_refs) {
    ASSERT_LT(r.object, h.layout.size());
    EXPECT_NE(r.kind, reheap::ProgramRefKind::kUnresolved) << r.symbol << " at " << r.value;
    if (r.symbol == "_ZTVN5reloc12_GLOBAL__N_15HumanE") {
      human_vtable = r.offset == 16 && r.file == "chat_room.cpp";
    }
    if (r.symbol == "_ZTIN5reloc12_GLOBAL__N_15HumanE") type_info = r.offset == 0;
    if (r.symbol == "_ZN5reloc12_GLOBAL__N_15scoreEl") score = r.function && r.offset == 0;
    if (r.symbol.find("6invoke") != std::string::npos && r.symbol.find("7on_join") != std::string::npos) {
      thunk = r.function;  // the message-handler thunk Reactor::handle<&Room::on_join> made
    }
    if (r.symbol.find("_Function_handler") != std::string::npos && r.symbol.find("_M_manager") != std::string::npos) {
      manager = true;
    }
    if (r.kind == reheap::ProgramRefKind::kString) {
      literal = literal || r.bytes == std::string("rooms survive rebuilds", 23);
    }
  }
  EXPECT_TRUE(human_vtable);
  EXPECT_TRUE(type_info);
  EXPECT_TRUE(score);
  EXPECT_TRUE(thunk);
  EXPECT_TRUE(manager);
  EXPECT_TRUE(literal);
}

TEST_F(ServiceSnapshot, RestoresAndRunsInTheTestBinary) {
  const reheap::SnapshotHeader h = reheap::SnapshotReader(dir_ / "room.snap").header();
  ASSERT_FALSE(h.layout.empty());
  ASSERT_TRUE(h.layout[0].main_executable);
  // Another program: the service saved it, this binary restores it.
  EXPECT_NE(h.layout[0].build_id, reheap::current_program_layout()[0].build_id);

  reheap::Runtime rt;
  const reheap::ActorRef room = rt.restore(dir_ / "room.snap");
  rt.send(room, reloc::Report{2});
  EXPECT_EQ(reloc::wait_for_report(2), expected_);
  rt.send(room, reloc::Join{"bob", false});
  rt.send(room, reloc::Join{"c3", true});
  rt.send(room, reloc::Post{"bob", "back"});
  rt.send(room, reloc::Report{3});
  const std::string more = reloc::wait_for_report(3);
  EXPECT_NE(more.find("h*ello from bob!"), std::string::npos) << more;
  EXPECT_NE(more.find("b*eep from c3!=7(bot)"), std::string::npos) << more;
  EXPECT_NE(more.find(" bob:1017"), std::string::npos) << more;
}

TEST_F(ServiceSnapshot, RestoresAndRunsInARebuiltServiceWithAnUnrelatedChange) {
  const Ran restored = run(RELOC_SERVICE_REBUILT, "restore " + dir_.string());
  ASSERT_EQ(restored.status, 0) << restored.output;
  EXPECT_TRUE(restored.output.starts_with("OK " + expected_.substr(0, expected_.find(" alice:"))))
      << restored.output;
  EXPECT_NE(restored.output.find("h*ello from bob!"), std::string::npos) << restored.output;
}

// A function the heap points to (score, through a function pointer) has other code and another
// size in this build: its pointer still means the same function.
TEST_F(ServiceSnapshot, RestoresAndRunsInARebuildWhoseFunctionsHaveOtherCode) {
  const Ran restored = run(RELOC_SERVICE_RECODED, "restore " + dir_.string());
  ASSERT_EQ(restored.status, 0) << restored.output;
  EXPECT_TRUE(restored.output.starts_with("OK " + expected_.substr(0, expected_.find(" alice:"))))
      << restored.output;
  EXPECT_NE(restored.output.find(" bob:1017"), std::string::npos) << restored.output;
}

TEST_F(ServiceSnapshot, RestoresInTheSameServiceStartedAgainWithASLROn) {
  if (!aslr_on()) GTEST_SKIP() << "this machine has ASLR off (kernel.randomize_va_space = 0)";
  const Ran restored = run(RELOC_SERVICE, "restore " + dir_.string());
  ASSERT_EQ(restored.status, 0) << restored.output;
  EXPECT_EQ(restored.output.rfind("OK ", 0), 0u) << restored.output;
}

TEST_F(ServiceSnapshot, ABuildWhoseClassesChangedIsRefusedNamingEachChange) {
  const Ran restored = run(RELOC_SERVICE_CHANGED, "restore " + dir_.string());
  EXPECT_EQ(restored.status, 1) << restored.output;
  const std::string& out = restored.output;
  EXPECT_NE(out.find("vtable for reloc::(anonymous namespace)::Human changed: 40-byte object when saved, "
                     "48-byte object now"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("reloc::(anonymous namespace)::score(long) (local to chat_room.cpp) is not in "
                     "the main executable reloc_service_changed now"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("OK "), std::string::npos) << out;
}

}  // namespace
