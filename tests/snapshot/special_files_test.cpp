// Special files: a FIFO, a directory, a character device or a socket named as a snapshot, or
// standing where an increment's parent should be, is refused by its type before a byte is read
// and without blocking, by every reader: SnapshotReader, read_snapshot_header, verify_snapshot,
// snapshot_chain, restore, compact, and reheap-snap's info, verify, diff and compact. Each ends
// promptly with a SnapshotError whose message names the file and says what it is.
//
// A FIFO without a writer blocks open(O_RDONLY) forever, so every library call runs on a thread
// with a deadline and every tool run is killed after one. A library call that misses it is
// reported, then freed by giving the FIFOs a writer that comes and goes (the blocked open returns
// and the reads see end of file), so that one hang fails its test instead of stopping the suite.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <future>
#include <string>
#include <vector>

#include "cases.h"
#include "reheap/snapshot.h"
#include "support.h"
#include "tool_runner.h"
#include "write_tracking_support.h"

namespace reheap::snaptest {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Refusing a file by its type costs a stat, an open and an fstat, while a call that opened a FIFO
// for reading waits for a writer for ever: a call still running after this is taken to hang. The
// bound is long because only a broken call reaches it, and a call that is merely slow (a loaded
// machine, a sanitizer build, the tool's process starting) must not.
constexpr milliseconds kHang{60000};
// A call still running this long after its FIFOs were given writers will never end.
constexpr milliseconds kGiveUp{30000};

struct Timed {
  Outcome outcome;
  bool hung = false;
};

Timed run_with_deadline(const std::function<void()>& f, const std::vector<fs::path>& fifos) {
  std::future<Timed> done = std::async(std::launch::async, [&f] {
    Timed t;
    t.outcome = attempt(f);
    return t;
  });
  bool hung = false;
  if (done.wait_for(kHang) == std::future_status::timeout) {
    hung = true;
    const Clock::time_point rescue = Clock::now();
    while (done.wait_for(milliseconds{50}) == std::future_status::timeout) {
      // O_RDWR opens a FIFO without waiting for a reader; closing it again leaves the reader at
      // end of file. The reader may open the FIFO more than once, hence the loop.
      for (const fs::path& fifo : fifos) {
        const int fd = ::open(fifo.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
        if (fd >= 0) ::close(fd);
      }
      if (Clock::now() - rescue > kGiveUp) {
        std::fprintf(stderr, "special_files_test: a call hangs even with the FIFOs opened\n");
        std::abort();
      }
    }
  }
  Timed t = done.get();
  t.hung = hung;
  return t;
}

// `t` failed promptly with `code`, naming `file` and saying it is a `what`.
void expect_refused(const Timed& t, SnapshotErrc code, const fs::path& file, const std::string& what) {
  EXPECT_FALSE(t.hung) << "blocked until the FIFO got a writer";
  EXPECT_TRUE(t.outcome.failed_with(code)) << t.outcome.describe();
  EXPECT_NE(t.outcome.what.find(file.string()), std::string::npos) << "name the file: " << t.outcome.what;
  EXPECT_NE(t.outcome.what.find("is a " + what + ", not a regular file"), std::string::npos)
      << "say what it is: " << t.outcome.what;
}

std::string joined(const std::vector<std::string>& args) {
  std::string text = "reheap-snap";
  for (const std::string& arg : args) text += " " + arg;
  return text;
}

// reheap-snap `args` ended promptly with `exit_code`, naming `file` and saying it is a `what`.
void expect_tool_refuses(const std::vector<std::string>& args, int exit_code, const fs::path& file,
                         const std::string& what) {
  SCOPED_TRACE(joined(args));
  const ToolResult r = run_tool(args, kHang);
  EXPECT_FALSE(r.timed_out) << "hung, and was killed";
  EXPECT_EQ(r.exit_code, exit_code) << r.out << r.err;
  const std::string text = r.out + r.err;
  EXPECT_NE(text.find(file.string()), std::string::npos) << "name the file: " << text;
  EXPECT_NE(text.find("is a " + what + ", not a regular file"), std::string::npos)
      << "say what it is: " << text;
}

class SpecialFiles : public ::testing::Test {
 protected:
  // "base.snap", a full snapshot, and "inc.snap", an increment on it (a full snapshot where the
  // kernel cannot track writes: the tests that need the increment skip there). The heap is gone
  // when the test starts.
  void SetUp() override {
    const Case& c = find_case("map");
    HeapPtr heap = Heap::create();
    build_in(*heap, c, 71);
    Snapshotter snapshotter(*heap);
    tracking_ = snapshotter.tracking();
    snapshotter.save(base());
    mutate_in(*heap, c, 1);
    has_increment_ = snapshotter.save_increment(inc()).kind == SnapshotKind::kIncremental;
  }

  fs::path base() const { return dir_ / "base.snap"; }
  fs::path inc() const { return dir_ / "inc.snap"; }
  fs::path out() const { return dir_ / "out.snap"; }

  fs::path make_fifo(const std::string& name) const {
    const fs::path path = dir_ / name;
    EXPECT_EQ(::mkfifo(path.c_str(), 0600), 0) << std::strerror(errno);
    return path;
  }

  // Every library reader on `file`: each refuses it with `code`, naming `named` as a `what`.
  void expect_every_reader_refuses(const fs::path& file, SnapshotErrc code, const fs::path& named,
                                   const std::string& what, const std::vector<fs::path>& fifos) {
    const auto check = [&](const char* reader, const std::function<void()>& f) {
      SCOPED_TRACE(reader);
      expect_refused(run_with_deadline(f, fifos), code, named, what);
    };
    check("SnapshotReader", [&] { SnapshotReader reader(file); });
    check("read_snapshot_header", [&] { read_snapshot_header(file); });
    check("verify_snapshot", [&] { verify_snapshot(file); });
    check("snapshot_chain", [&] { snapshot_chain(file); });
    const ZoneUse before = zone_use();
    check("restore", [&] { HeapPtr heap = restore(file); });
    EXPECT_EQ(zone_use(), before) << "a failed restore leaves nothing behind";
    check("compact", [&] { compact(file, out()); });
    EXPECT_FALSE(fs::exists(out())) << "a failed compact leaves no output";
  }

  // Every reheap-snap command on `file` as a snapshot of its own.
  void expect_every_command_refuses(const fs::path& file, const std::string& what) {
    if (!tool_built()) GTEST_SKIP() << "reheap-snap is not built (REHEAP_BUILD_TOOLS=OFF)";
    const std::string f = file.string();
    expect_tool_refuses({"info", f}, 3, file, what);
    expect_tool_refuses({"info", "--json", f}, 3, file, what);
    expect_tool_refuses({"verify", f}, 3, file, what);
    expect_tool_refuses({"verify", "--chain", f}, 3, file, what);
    expect_tool_refuses({"diff", f, base().string()}, 3, file, what);
    expect_tool_refuses({"diff", base().string(), f}, 3, file, what);
    expect_tool_refuses({"compact", f, out().string()}, 3, file, what);
    EXPECT_FALSE(fs::exists(out()));
  }

  TempDir dir_;
  std::string tracking_;
  bool has_increment_ = false;
};

TEST_F(SpecialFiles, AFifoIsRefusedByEveryReaderWithoutBlocking) {
  const fs::path fifo = make_fifo("fifo.snap");
  expect_every_reader_refuses(fifo, SnapshotErrc::kIo, fifo, "FIFO", {fifo});
}

TEST_F(SpecialFiles, ASymlinkToAFifoIsRefusedLikeTheFifo) {
  const fs::path fifo = make_fifo("fifo.snap");
  const fs::path link = dir_ / "link.snap";
  fs::create_symlink(fifo, link);
  expect_every_reader_refuses(link, SnapshotErrc::kIo, link, "FIFO", {fifo});
}

TEST_F(SpecialFiles, ADirectoryIsRefusedByEveryReader) {
  const fs::path directory = dir_ / "dir.snap";
  fs::create_directory(directory);
  expect_every_reader_refuses(directory, SnapshotErrc::kIo, directory, "directory", {});
}

TEST_F(SpecialFiles, DevZeroIsRefusedByEveryReader) {
  if (!fs::is_character_file("/dev/zero")) GTEST_SKIP() << "no /dev/zero here";
  expect_every_reader_refuses("/dev/zero", SnapshotErrc::kIo, "/dev/zero", "character device", {});
}

TEST_F(SpecialFiles, ASocketIsRefusedByEveryReader) {
  const fs::path socket_path = dir_ / "sock.snap";
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (socket_path.string().size() >= sizeof address.sun_path) GTEST_SKIP() << "TMPDIR is too long for a socket";
  std::strcpy(address.sun_path, socket_path.c_str());
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address), 0) << std::strerror(errno);
  expect_every_reader_refuses(socket_path, SnapshotErrc::kIo, socket_path, "socket", {});
  ::close(fd);
}

// The increment itself is good, so verify_snapshot and SnapshotReader accept it; whatever follows
// the chain finds the parent broken.
TEST_F(SpecialFiles, AFifoInPlaceOfTheParentBreaksTheChainWithoutBlocking) {
  REQUIRE_WRITE_TRACKING();
  ASSERT_TRUE(has_increment_) << "the increment was saved in full: " << tracking_;
  fs::remove(base());
  make_fifo("base.snap");
  EXPECT_EQ(verify_snapshot(inc()).kind, SnapshotKind::kIncremental);
  const auto check = [&](const char* reader, const std::function<void()>& f) {
    SCOPED_TRACE(reader);
    expect_refused(run_with_deadline(f, {base()}), SnapshotErrc::kBrokenChain, base(), "FIFO");
  };
  check("snapshot_chain", [&] { snapshot_chain(inc()); });
  const ZoneUse before = zone_use();
  check("restore", [&] { HeapPtr heap = restore(inc()); });
  EXPECT_EQ(zone_use(), before);
  check("compact", [&] { compact(inc(), out()); });
  EXPECT_FALSE(fs::exists(out()));
}

TEST_F(SpecialFiles, ADirectoryInPlaceOfTheParentBreaksTheChain) {
  REQUIRE_WRITE_TRACKING();
  ASSERT_TRUE(has_increment_) << "the increment was saved in full: " << tracking_;
  fs::remove(base());
  fs::create_directory(base());
  const auto check = [&](const char* reader, const std::function<void()>& f) {
    SCOPED_TRACE(reader);
    expect_refused(run_with_deadline(f, {}), SnapshotErrc::kBrokenChain, base(), "directory");
  };
  check("snapshot_chain", [&] { snapshot_chain(inc()); });
  check("restore", [&] { HeapPtr heap = restore(inc()); });
  check("compact", [&] { compact(inc(), out()); });
}

TEST_F(SpecialFiles, ReheapSnapRefusesAFifoInEveryCommandWithoutBlocking) {
  expect_every_command_refuses(make_fifo("fifo.snap"), "FIFO");
}

TEST_F(SpecialFiles, ReheapSnapRefusesADirectoryInEveryCommand) {
  const fs::path directory = dir_ / "dir.snap";
  fs::create_directory(directory);
  expect_every_command_refuses(directory, "directory");
}

TEST_F(SpecialFiles, ReheapSnapRefusesDevZeroInEveryCommand) {
  if (!fs::is_character_file("/dev/zero")) GTEST_SKIP() << "no /dev/zero here";
  expect_every_command_refuses("/dev/zero", "character device");
}

// info describes the increment and reports the broken chain (exit 0: the file itself is fine);
// verify --chain marks it bad (1); diff and compact cannot fold the chain (3).
TEST_F(SpecialFiles, ReheapSnapReportsAFifoParentWithoutBlocking) {
  if (!tool_built()) GTEST_SKIP() << "reheap-snap is not built (REHEAP_BUILD_TOOLS=OFF)";
  REQUIRE_WRITE_TRACKING();
  ASSERT_TRUE(has_increment_) << "the increment was saved in full: " << tracking_;
  fs::remove(base());
  make_fifo("base.snap");
  const std::string i = inc().string();
  expect_tool_refuses({"info", i}, 0, base(), "FIFO");
  expect_tool_refuses({"verify", "--chain", i}, 1, base(), "FIFO");
  expect_tool_refuses({"diff", i, i}, 3, base(), "FIFO");
  expect_tool_refuses({"compact", i, out().string()}, 3, base(), "FIFO");
  EXPECT_FALSE(fs::exists(out()));
}

}  // namespace
}  // namespace reheap::snaptest
