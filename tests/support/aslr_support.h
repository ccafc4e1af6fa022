// What a test that needs address randomisation off may conclude when it is on.
//
// The snapshot and runtime suites' mains turn ASLR off by re-executing themselves
// (reheap::reexec_without_aslr), so that a heap holding pointers into the program can be restored
// in a child process. That can fail for two kinds of reasons. The machine may forbid a process to
// turn its randomisation off: personality(ADDR_NO_RANDOMIZE) refused or ignored, as under the
// seccomp filter of some container runtimes. That is something the machine lacks, and the tests
// that need ASLR off skip, naming it. Anything else (the exec failed, the addresses were still
// random after it, the binary was started through ld.so) is a failure of what those tests rely
// on, and they fail with the reason.
#pragma once

#include <gtest/gtest.h>
#include <sys/personality.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace reheap::testsupport {

// "" if this process may set ADDR_NO_RANDOMIZE in its personality; otherwise what stops it. The
// persona is restored at once: it matters only to a later exec.
inline std::string aslr_off_forbidden() {
  constexpr unsigned long kQuery = 0xffffffff;  // personality(2) with this only asks
  const int persona = ::personality(kQuery);
  if (persona == -1) return std::string("personality: ") + std::strerror(errno);
  if (::personality(static_cast<unsigned>(persona) | ADDR_NO_RANDOMIZE) == -1) {
    return std::string("personality(ADDR_NO_RANDOMIZE): ") + std::strerror(errno);
  }
  const bool took = (static_cast<unsigned>(::personality(kQuery)) & ADDR_NO_RANDOMIZE) != 0;
  ::personality(static_cast<unsigned>(persona));
  return took ? std::string() : "personality(ADDR_NO_RANDOMIZE) was accepted but did not take effect";
}

}  // namespace reheap::testsupport

// In a test that needs ASLR off: skips if the machine forbids turning it off, fails if it could
// not be turned off for another reason. `off` and `why` are what reexec_without_aslr answered.
#define REQUIRE_ASLR_OFF(off, why)                                                            \
  do {                                                                                        \
    if (!(off)) {                                                                             \
      const std::string forbidden_ = ::reheap::testsupport::aslr_off_forbidden();             \
      if (!forbidden_.empty()) {                                                              \
        GTEST_SKIP() << "this machine forbids turning ASLR off for a process (" << forbidden_ \
                     << ")";                                                                  \
      }                                                                                       \
      FAIL() << "ASLR could not be turned off, although this machine allows it: " << (why);   \
    }                                                                                         \
  } while (false)
