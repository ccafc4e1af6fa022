// Fatal signals of recorded reactors (see fatal_signal.h).
#include "fatal_signal.h"

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

namespace reheap::detail::recording {
namespace {

constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
constexpr std::size_t kCount = sizeof kFatalSignals / sizeof kFatalSignals[0];

struct sigaction g_previous[kCount];
std::atomic<bool> g_installed{false};

// Initial-exec: the handler reads it, and a first access to dynamic TLS may allocate.
__attribute__((tls_model("initial-exec"))) thread_local FatalSignalWitness* t_witness = nullptr;
__attribute__((tls_model("initial-exec"))) thread_local bool t_in_handler = false;

std::size_t index_of(int signal) noexcept {
  for (std::size_t i = 0; i < kCount; ++i) {
    if (kFatalSignals[i] == signal) return i;
  }
  return 0;
}

void on_fatal_signal(int signal, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  // A fault while writing the bundle comes back here: the second time, only forward.
  if (FatalSignalWitness* witness = t_witness; witness != nullptr && !t_in_handler) {
    t_in_handler = true;
    witness->on_fatal_signal(signal, *info);
    t_in_handler = false;  // a previous handler may recover (siglongjmp) and the thread go on
  }
  errno = saved_errno;
  forward_signal(g_previous[index_of(signal)], signal, info, context);
}

// The alternate stack of a thread that had none, unmapped when the thread ends.
struct AlternateStack {
  void* base = nullptr;
  std::size_t size = 0;
  ~AlternateStack() {
    if (base == nullptr) return;
    stack_t off{};
    off.ss_flags = SS_DISABLE;
    ::sigaltstack(&off, nullptr);
    ::munmap(base, size);
  }
};
thread_local AlternateStack t_stack;

}  // namespace

void install_fatal_signal_handlers() noexcept {
  if (g_installed.exchange(true)) return;
  for (std::size_t i = 0; i < kCount; ++i) {
    struct sigaction action {};
    action.sa_sigaction = on_fatal_signal;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    ::sigaction(kFatalSignals[i], &action, &g_previous[i]);
  }
}

void set_fatal_signal_witness(FatalSignalWitness* witness) noexcept { t_witness = witness; }

void ensure_alternate_signal_stack() noexcept {
  stack_t current{};
  if (::sigaltstack(nullptr, &current) != 0 || (current.ss_flags & SS_DISABLE) == 0) return;
  // The bundle is written on this stack: the handler's own frames plus a block's checksum state.
  constexpr std::size_t kSize = 64 * 1024;
  void* base = ::mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (base == MAP_FAILED) return;
  stack_t stack{};
  stack.ss_sp = base;
  stack.ss_size = kSize;
  if (::sigaltstack(&stack, nullptr) != 0) {
    ::munmap(base, kSize);
    return;
  }
  t_stack.base = base;
  t_stack.size = kSize;
}

const char* signal_name(int signal) noexcept {
  switch (signal) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGABRT: return "SIGABRT";
    default: return "a fatal signal";
  }
}

const char* signal_meaning(int signal) noexcept {
  switch (signal) {
    case SIGSEGV: return "segmentation fault: an access to memory the reactor may not touch";
    case SIGBUS: return "bus error";
    case SIGFPE: return "arithmetic exception";
    case SIGILL: return "illegal instruction";
    case SIGABRT: return "abort";
    default: return "fatal signal";
  }
}

}  // namespace reheap::detail::recording
