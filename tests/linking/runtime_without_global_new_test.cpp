// A program that links reheap::runtime but not reheap::global_new builds its reactors with the
// system's operator new, outside the heaps the runtime made for them: such reactors would run, and
// their snapshots would hold an empty heap whose root points into malloc memory. This executable
// is linked that way on purpose (tests/CMakeLists.txt); the runtime must refuse the first spawn
// with an error that says what to link, and stay usable.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include <reheap/runtime.h>

namespace {

struct Counter : reheap::Reactor {
  std::vector<int> values{1, 2, 3};
};

TEST(RuntimeWithoutGlobalNew, SpawnRefusesAReactorBuiltOutsideItsHeapAndSaysWhatToLink) {
  reheap::Runtime rt;
  for (int attempt = 0; attempt < 2; ++attempt) {
    SCOPED_TRACE("attempt " + std::to_string(attempt));
    try {
      rt.spawn<Counter>();
      FAIL() << "a reactor built by the system's operator new was accepted";
    } catch (const std::logic_error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("reheap::Runtime::spawn"), std::string::npos) << what;
      EXPECT_NE(what.find("outside its heap"), std::string::npos) << what;
      EXPECT_NE(what.find("reheap::global_new"), std::string::npos) << what;
    }
  }
  EXPECT_EQ(rt.stats().reactors, 0u);
  rt.shutdown();
}

}  // namespace
