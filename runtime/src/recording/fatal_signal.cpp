// Fatal signals of recorded reactors (see fatal_signal.h).
#include "recording/fatal_signal.h"

#include <dlfcn.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>

namespace reheap::detail::recording {
namespace {

constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
constexpr std::size_t kCount = sizeof kFatalSignals / sizeof kFatalSignals[0];

// The action each signal had before ours, and the sanitizer handler found at the end of its
// chain when ours was installed (null if none): handing a signal on to that, or to the default
// action, ends the process; to the program's own handler, maybe not.
struct sigaction g_previous[kCount];
const void* g_sanitizer[kCount] = {};
std::atomic<bool> g_installed{false};
// Bundles being written now, on any thread: the first thread to hand a signal on to the default
// action would end the process under the others.
std::atomic<int> g_writing{0};

// Initial-exec: the handler reads it, and a first access to dynamic TLS may allocate.
__attribute__((tls_model("initial-exec"))) thread_local FatalSignalWitness* t_witness = nullptr;
__attribute__((tls_model("initial-exec"))) thread_local bool t_in_handler = false;
// The last fault this thread handed on to the program's own handler, to tell a fault it repaired
// (it does not come back) from one it did not (the same fault comes back: a crash after all).
struct Fault {
  int signal = 0;
  const void* address = nullptr;
  const FatalSignalWitness* witness = nullptr;
  std::uint64_t event = 0;
  bool operator==(const Fault&) const = default;
};
__attribute__((tls_model("initial-exec"))) thread_local Fault t_handed_on;
// The event this thread last wrote a bundle for. One per event: a program handler that keeps
// returning without repairing a fault brings it back for ever, and a sanitizer that reports the
// fault may then abort() (abort_on_error), a second signal in the same event; the log's last
// block was sealed and written already, and writing it twice would break the log.
struct Bundled {
  const FatalSignalWitness* witness = nullptr;
  std::uint64_t event = 0;
  bool operator==(const Bundled&) const = default;
};
__attribute__((tls_model("initial-exec"))) thread_local Bundled t_bundled;

std::size_t index_of(int signal) noexcept {
  for (std::size_t i = 0; i < kCount; ++i) {
    if (kFatalSignals[i] == signal) return i;
  }
  return 0;
}

const void* handler_address(const struct sigaction& action) noexcept {
  return (action.sa_flags & SA_SIGINFO) != 0 ? reinterpret_cast<const void*>(action.sa_sigaction)
                                             : reinterpret_cast<const void*>(action.sa_handler);
}

// The action a signal reaches after reheap's own reporting handlers (reheap/internal/signal_chain.h).
const struct sigaction& final_action(const struct sigaction& action) noexcept {
  const struct sigaction* a = &action;
  while (const struct sigaction* next = reheap_handler_hands_on_to(*a)) a = next;
  return *a;
}

// A sanitizer's handler reports the signal and ends the process. At install time: dladdr is not
// async-signal-safe.
const void* sanitizer_handler(const struct sigaction& action) noexcept {
  if (!runs_handler(action)) return nullptr;
  Dl_info where{};
  if (::dladdr(handler_address(action), &where) == 0 || where.dli_fname == nullptr) return nullptr;
  for (const char* runtime : {"libasan", "libtsan", "libubsan", "liblsan", "libhwasan"}) {
    if (std::strstr(where.dli_fname, runtime) != nullptr) return handler_address(action);
  }
  return nullptr;
}

// Whether handing signal `i` on now ends the process: the default action (or ignoring a fault,
// which the kernel then kills for), or a sanitizer's report, once past reheap's own reporters. An
// SA_RESETHAND handler that has run is the default action by now (forward_signal).
bool hand_on_ends_process(std::size_t i) noexcept {
  const struct sigaction& action = final_action(g_previous[i]);
  return !runs_handler(action) || handler_address(action) == g_sanitizer[i];
}

// Waits, up to two seconds, for bundles other threads are writing.
void wait_for_other_bundles() noexcept {
  for (int waited_ms = 0; g_writing.load(std::memory_order_acquire) > 0 && waited_ms < 2000; ++waited_ms) {
    const struct timespec millisecond {0, 1000000};
    ::nanosleep(&millisecond, nullptr);
  }
}

// Every other recorder's log, up to its last whole event (fatal_flush.h), and one line saying so.
void flush_other_recorders(int signal, const FatalSignalWitness* witness) noexcept {
  const std::uint64_t flushed =
      flush_every_recorder_in_signal_handler(witness != nullptr ? witness->fatal_flush_slot() : nullptr);
  if (flushed == 0) return;
  SignalText<256>()
      .text("reheap: ")
      .text(signal_name(signal))
      .text(": the recordings of ")
      .number(flushed)
      .text(flushed == 1 ? " other reactor were" : " other reactors were")
      .text(" written up to their last whole event")
      .write_line(STDERR_FILENO);
}

void on_fatal_signal(int signal, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  const std::size_t i = index_of(signal);
  FatalSignalWitness* const witness = t_witness;
  const bool ends_process = hand_on_ends_process(i);
  bool crash = ends_process;
  if (witness != nullptr && !t_in_handler) {
    const Fault fault{signal, info->si_addr, witness, witness->fatal_event()};
    const bool came_back = t_handed_on == fault;
    crash = crash || came_back;
    if (t_bundled == Bundled{fault.witness, fault.event}) {
      // Written already; only hand on.
    } else if (ends_process || came_back) {
      // A crash: a fault (re-)raised here would end the process (a program handler that let the
      // same fault come back did not repair it). A fault while writing comes back here: the
      // second time, only hand on.
      t_in_handler = true;
      g_writing.fetch_add(1, std::memory_order_acq_rel);
      witness->on_fatal_signal(signal, *info);
      g_writing.fetch_sub(1, std::memory_order_acq_rel);
      t_bundled = Bundled{fault.witness, fault.event};
      t_in_handler = false;  // a previous handler may still recover (siglongjmp) and go on
    } else {
      // The program's own handler first: it may repair the fault (map a guard page) and return,
      // and then this was no crash, and the recording must not say it was.
      t_handed_on = fault;
    }
  }
  if (crash && !t_in_handler) {
    t_in_handler = true;
    g_writing.fetch_add(1, std::memory_order_acq_rel);
    flush_other_recorders(signal, witness);
    g_writing.fetch_sub(1, std::memory_order_acq_rel);
    t_in_handler = false;
  }
  errno = saved_errno;
  if (ends_process) wait_for_other_bundles();
  forward_signal(g_previous[i], signal, info, context);
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
    g_sanitizer[i] = sanitizer_handler(final_action(g_previous[i]));
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
