// Turning address space layout randomisation off for this process, by re-executing it.
//
// The kernel decides where the executable, the loader and the libraries go when it executes the
// program, so the only way to unrandomise a running process is to set ADDR_NO_RANDOMIZE in its
// personality (inherited across execve) and execute the same file again. /proc/self/exe names the
// file that is running even if the path it was started from now holds something else.
//
// Loop guard: REHEAP_ASLR_REEXEC marks the re-executed image. The image removes it at once, so
// that the programs it starts in turn do not inherit it, and if it finds its addresses still
// random (a setuid file, whose exec clears the flag, or a kernel ignoring it) it reports failure
// instead of executing itself again.
#include "reheap/aslr.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/personality.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace reheap {
namespace {

constexpr char kReexecMarker[] = "REHEAP_ASLR_REEXEC";

// personality(2) with this argument only queries the current persona.
constexpr unsigned long kQueryPersona = 0xffffffff;

// randomize_va_space = 0 turns randomisation off for every process, whatever its personality.
// Read with plain system calls: this runs in a noexcept function and may run with a heap current.
bool randomisation_off_system_wide() noexcept {
  const int fd = open("/proc/sys/kernel/randomize_va_space", O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return false;
  }
  char value = 0;
  const ssize_t n = read(fd, &value, 1);
  close(fd);
  return n == 1 && value == '0';
}

// Run as `ld.so program args`, the process's executable is the dynamic loader, and main's argv
// lacks the loader's own arguments, so /proc/self/exe cannot be executed with it.
bool started_through_the_loader() noexcept {
  char path[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) {
    return false;
  }
  path[n] = '\0';
  const char* slash = std::strrchr(path, '/');
  const char* name = slash != nullptr ? slash + 1 : path;
  return std::strncmp(name, "ld-", 3) == 0 && std::strstr(name, ".so") != nullptr;
}

bool fail(std::string* why, const std::string& reason) {
  if (why != nullptr) {
    *why = reason;
  }
  return false;
}

std::string errno_text(const char* call, int error) {
  return std::string(call) + ": " + std::strerror(error);
}

}  // namespace

bool aslr_disabled() noexcept {
  const int persona = personality(kQueryPersona);
  if (persona != -1 && (static_cast<unsigned>(persona) & ADDR_NO_RANDOMIZE) != 0) {
    return true;
  }
  return randomisation_off_system_wide();
}

bool reexec_without_aslr(int argc, char** argv, std::string* why) {
  const bool reexecuted = std::getenv(kReexecMarker) != nullptr;
  if (reexecuted) {
    unsetenv(kReexecMarker);
  }
  if (aslr_disabled()) {
    return true;
  }
  if (reexecuted) {
    return fail(why,
                "re-executed with ADDR_NO_RANDOMIZE, but addresses are still randomised (a setuid "
                "or file-capability program, whose exec clears the flag?)");
  }
  // execv needs the null-terminated vector main() was given, to start main() again with it.
  if (argc < 1 || argv == nullptr || argv[argc] != nullptr) {
    return fail(why, "reexec_without_aslr needs main's argc and argv");
  }
  if (started_through_the_loader()) {
    return fail(why,
                "the program was started as `ld.so program`: executing /proc/self/exe would start "
                "the loader without the program; run the program directly");
  }
  const int persona = personality(kQueryPersona);
  if (persona == -1) {
    return fail(why, errno_text("personality", errno));
  }
  if (personality(static_cast<unsigned>(persona) | ADDR_NO_RANDOMIZE) == -1) {
    return fail(why, errno_text("personality(ADDR_NO_RANDOMIZE)", errno));
  }
  // A seccomp filter may answer the call with success and do nothing; executing again would then
  // only cost time before the re-executed image fails.
  if ((static_cast<unsigned>(personality(kQueryPersona)) & ADDR_NO_RANDOMIZE) == 0) {
    personality(static_cast<unsigned>(persona));
    return fail(why, "personality(ADDR_NO_RANDOMIZE) was accepted but did not take effect");
  }
  if (setenv(kReexecMarker, "1", 1) != 0) {
    const int error = errno;
    personality(static_cast<unsigned>(persona));
    return fail(why, errno_text("setenv", error));
  }
  // Output buffered so far would vanish with this image: write it out first.
  std::fflush(nullptr);
  execv("/proc/self/exe", argv);
  const int error = errno;
  personality(static_cast<unsigned>(persona));
  unsetenv(kReexecMarker);
  return fail(why, errno_text("execv(/proc/self/exe)", error));
}

}  // namespace reheap
