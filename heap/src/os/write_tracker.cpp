#include "write_tracker.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <atomic>
#include <mutex>
#include <new>

// Definitions from the Linux 6.7 uapi headers (include/uapi/linux/userfaultfd.h and fs.h) that
// older userland headers (Debian 12 ships 6.1's) lack. The kernel decides at run time whether it
// knows them; available() asks it.
#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif
#ifndef UFFD_FEATURE_WP_UNPOPULATED
#define UFFD_FEATURE_WP_UNPOPULATED (1 << 13)
#endif
#ifndef UFFD_FEATURE_WP_ASYNC
#define UFFD_FEATURE_WP_ASYNC (1 << 15)
#endif
#ifndef PAGEMAP_SCAN
struct page_region {
  __u64 start;
  __u64 end;  // exclusive
  __u64 categories;
};
struct pm_scan_arg {
  __u64 size;
  __u64 flags;
  __u64 start;
  __u64 end;
  __u64 walk_end;  // written by the kernel: where the walk stopped
  __u64 vec;
  __u64 vec_len;
  __u64 max_pages;
  __u64 category_inverted;
  __u64 category_mask;
  __u64 category_anyof_mask;
  __u64 return_mask;
};
#define PAGEMAP_SCAN _IOWR('f', 16, struct pm_scan_arg)
#define PAGE_IS_WPALLOWED (1 << 0)
#define PAGE_IS_WRITTEN (1 << 1)
#define PM_SCAN_WP_MATCHING (1 << 0)
#define PM_SCAN_CHECK_WPASYNC (1 << 1)
#endif

namespace reheap::detail::os {
namespace {

static_assert(sizeof(page_region) == 24, "struct page_region layout (uapi)");
static_assert(sizeof(pm_scan_arg) == 96, "struct pm_scan_arg layout (uapi)");

// UFFDIO_REGISTER answers with the ioctls the range supports, one bit per ioctl number.
constexpr std::uint64_t kWriteProtectIoctl = std::uint64_t{1} << _UFFDIO_WRITEPROTECT;
constexpr std::uint64_t kFeatures = UFFD_FEATURE_WP_ASYNC | UFFD_FEATURE_WP_UNPOPULATED;

// The process-wide kernel handles. Written once inside std::call_once, read-only afterwards
// (call_once orders the writes before every later reader), except that suspend_all and
// resume_all close and reopen the descriptors: they run only while no tracker is in use, under
// g_registry_mutex, and their callers order them against the trackers' users (the runtime's
// checkpoint barrier).
struct KernelHandles {
  int uffd = -1;
  int pagemap = -1;
  pid_t pid = 0;  // the process that opened them
  std::uintptr_t page_size = 0;
  bool ok = false;
  char why[192] = {};  // the reason when !ok; a fixed buffer, so the probe allocates nothing
};
constinit KernelHandles g_kernel;
constinit std::once_flag g_probe_once;

// The trackers tracking at least one range (a doubly linked list through the trackers), for
// suspend_all and resume_all.
constinit std::mutex g_registry_mutex;
constinit WriteTracker* g_registry = nullptr;
constinit std::atomic<bool> g_suspended{false};

// strerror is not thread-safe; the GNU strerror_r returns a pointer to a static message or into
// `buf`.
const char* error_text(int err, char* buf, std::size_t size) noexcept {
  return ::strerror_r(err, buf, size);
}

void set_why(const char* what, int err) noexcept {
  char buf[96];
  if (err != 0) {
    std::snprintf(g_kernel.why, sizeof g_kernel.why, "%s: %s", what,
                  error_text(err, buf, sizeof buf));
  } else {
    std::snprintf(g_kernel.why, sizeof g_kernel.why, "%s", what);
  }
}

void set_error(std::string* error, const char* what, int err) {
  if (error == nullptr) return;
  char buf[96];
  error->assign(what);
  if (err != 0) {
    error->append(": ");
    error->append(error_text(err, buf, sizeof buf));
  }
}

// ioctl, restarted when a signal interrupts it.
int ioctl_retry(int fd, unsigned long request, void* arg) noexcept {
  int r;
  do {
    r = ::ioctl(fd, request, arg);
  } while (r < 0 && errno == EINTR);
  return r;
}

int register_wp(std::uintptr_t begin, std::uintptr_t end, std::uint64_t* ioctls) noexcept {
  uffdio_register reg{};
  reg.range.start = begin;
  reg.range.len = end - begin;
  reg.mode = UFFDIO_REGISTER_MODE_WP;
  if (ioctl_retry(g_kernel.uffd, UFFDIO_REGISTER, &reg) != 0) return errno;
  *ioctls = reg.ioctls;
  return 0;
}

void unregister(std::uintptr_t begin, std::uintptr_t end) noexcept {
  // Unregistering also removes what protection is left. It fails only for a range that is no
  // longer (all) mapped, which leaves nothing registered to undo.
  uffdio_range range{begin, end - begin};
  ioctl_retry(g_kernel.uffd, UFFDIO_UNREGISTER, &range);
}

int write_protect(std::uintptr_t begin, std::uintptr_t end) noexcept {
  uffdio_writeprotect wp{};
  wp.range.start = begin;
  wp.range.len = end - begin;
  wp.mode = UFFDIO_WRITEPROTECT_MODE_WP;
  // EAGAIN means the address space was changing under a non-cooperative monitor (fork/mremap
  // events, which we do not ask for); retrying is what the kernel asks.
  for (int attempt = 0;; ++attempt) {
    if (ioctl_retry(g_kernel.uffd, UFFDIO_WRITEPROTECT, &wp) == 0) return 0;
    if (errno != EAGAIN || attempt == 100) return errno;
  }
}

// One PAGEMAP_SCAN call over [start, end): reports written pages into `out` and protects them
// again. Returns the number of regions (>= 0) or -errno; `*walk_end` is where the walk stopped.
long scan_written(std::uintptr_t start, std::uintptr_t end, page_region* out, std::size_t out_len,
                  std::uintptr_t* walk_end) noexcept {
  pm_scan_arg arg{};
  arg.size = sizeof arg;
  arg.flags = PM_SCAN_WP_MATCHING | PM_SCAN_CHECK_WPASYNC;
  arg.start = start;
  arg.end = end;
  arg.vec = reinterpret_cast<std::uintptr_t>(out);
  arg.vec_len = out_len;
  arg.category_mask = PAGE_IS_WRITTEN;
  arg.return_mask = PAGE_IS_WRITTEN;
  const int r = ioctl_retry(g_kernel.pagemap, PAGEMAP_SCAN, &arg);
  if (r < 0) return -errno;
  *walk_end = arg.walk_end;
  return r;
}

// Opens the userfaultfd (with the API handshake) and /proc/self/pagemap into g_kernel. On failure
// sets g_kernel.why, leaves nothing open and returns false.
bool open_descriptors() noexcept {
  // Unprivileged processes may only trap faults raised in user mode (vm.unprivileged_userfaultfd
  // = 0). Async write protection never traps (the kernel resolves the fault itself, in kernel mode
  // too), so the restriction costs nothing; the full descriptor is still preferred when allowed.
  int uffd = static_cast<int>(::syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK));
  if (uffd < 0 && errno == EPERM) {
    uffd =
        static_cast<int>(::syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY));
  }
  if (uffd < 0) {
    set_why("userfaultfd", errno);
    return false;
  }
  uffdio_api api{};
  api.api = UFFD_API;
  api.features = kFeatures;
  // The kernel refuses (EINVAL) a handshake asking for features it lacks.
  const int api_err = ioctl_retry(uffd, UFFDIO_API, &api) == 0 ? 0 : errno;
  if (api_err != 0 || (api.features & kFeatures) != kFeatures) {
    ::close(uffd);
    if (api_err == 0 || api_err == EINVAL) {
      set_why("userfaultfd: UFFD_FEATURE_WP_ASYNC not supported by this kernel (needs Linux 6.7)",
              0);
    } else {
      set_why("userfaultfd: UFFDIO_API", api_err);
    }
    return false;
  }
  const int pagemap = ::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  if (pagemap < 0) {
    set_why("/proc/self/pagemap", errno);
    ::close(uffd);
    return false;
  }
  g_kernel.uffd = uffd;
  g_kernel.pagemap = pagemap;
  g_kernel.pid = ::getpid();
  return true;
}

// Opens the shared descriptors and proves the mechanism on a scratch mapping: a write to a
// protected page must be reported, and only that page. Any failure leaves g_kernel.ok false
// with the reason in g_kernel.why and no descriptor open.
void probe() noexcept {
  g_kernel.page_size = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  if (!open_descriptors()) return;

  const std::uintptr_t page = g_kernel.page_size;
  void* scratch = ::mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  bool proven = false;
  if (scratch == MAP_FAILED) {
    set_why("write tracking probe: mmap", errno);
  } else {
    const auto begin = reinterpret_cast<std::uintptr_t>(scratch);
    const std::uintptr_t end = begin + 2 * page;
    std::uint64_t ioctls = 0;
    int err = register_wp(begin, end, &ioctls);
    if (err != 0) {
      set_why("userfaultfd: UFFDIO_REGISTER (write-protect mode)", err);
    } else if ((ioctls & kWriteProtectIoctl) == 0) {
      set_why("userfaultfd: write protection not offered for anonymous memory", 0);
    } else if ((err = write_protect(begin, end)) != 0) {
      set_why("userfaultfd: UFFDIO_WRITEPROTECT", err);
    } else {
      static_cast<volatile char*>(scratch)[page] = 1;
      page_region regions[2];
      std::uintptr_t walk_end = 0;
      const long n = scan_written(begin, end, regions, 2, &walk_end);
      if (n == -ENOTTY || n == -EINVAL) {
        set_why("PAGEMAP_SCAN not supported by this kernel (needs Linux 6.7)", 0);
      } else if (n < 0) {
        set_why("PAGEMAP_SCAN", static_cast<int>(-n));
      } else if (n != 1 || regions[0].start != begin + page || regions[0].end != end ||
                 walk_end != end) {
        set_why("PAGEMAP_SCAN did not report exactly the one page written (write tracking broken)",
                0);
      } else {
        proven = true;
      }
    }
    // Unmapping a registered range unregisters it.
    ::munmap(scratch, 2 * page);
  }
  if (!proven) {
    ::close(g_kernel.pagemap);
    ::close(g_kernel.uffd);
    g_kernel.uffd = g_kernel.pagemap = -1;
    return;
  }
  g_kernel.ok = true;
}

// Whether this is the process that opened the descriptors. A forked child inherits them, but
// they keep naming the parent: the userfaultfd ioctls act on the context's address space, not the
// caller's, and /proc/self/pagemap was resolved at open. A child using them would unregister or
// scan (and re-protect) the parent's pages, and the parent would lose their writes.
bool in_opening_process() noexcept { return ::getpid() == g_kernel.pid; }

bool ready(std::string* error) {
  if (g_suspended.load(std::memory_order_acquire)) {
    set_error(error, "write tracking is suspended for a process checkpoint", 0);
    return false;
  }
  std::call_once(g_probe_once, probe);
  if (!g_kernel.ok) {
    if (error != nullptr) {
      error->assign("write tracking unavailable: ");
      error->append(g_kernel.why);
    }
    return false;
  }
  if (!in_opening_process()) {
    set_error(error, "write tracking does not survive fork (descriptors belong to the parent)", 0);
    return false;
  }
  return true;
}

}  // namespace

bool WriteTracker::available(std::string* why) {
  std::call_once(g_probe_once, probe);
  if (!g_kernel.ok && why != nullptr) why->assign(g_kernel.why);
  return g_kernel.ok;
}

const char* WriteTracker::mechanism() noexcept { return "userfaultfd-wp-async+PAGEMAP_SCAN"; }

WriteTracker::~WriteTracker() {
  delist();
  // A tracker that tracks anything has seen the probe succeed, so g_kernel is settled. While
  // tracking is suspended nothing of it is registered.
  if (count_ > 0 && in_opening_process() && !g_suspended.load(std::memory_order_acquire)) {
    for (std::size_t i = 0; i < count_; ++i) unregister(ranges_[i].begin, ranges_[i].end);
  }
  std::free(ranges_);
}

std::size_t WriteTracker::lower_bound(std::uintptr_t begin) const noexcept {
  std::size_t lo = 0, hi = count_;
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    if (ranges_[mid].begin < begin) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

std::size_t WriteTracker::find(PageRange r) const noexcept {
  const std::size_t i = lower_bound(r.begin);
  return i < count_ && ranges_[i].begin == r.begin && ranges_[i].end == r.end ? i : count_;
}

bool WriteTracker::tracking(PageRange r) const noexcept { return find(r) != count_; }

bool WriteTracker::reserve_one_more() noexcept {
  if (count_ < capacity_) return true;
  const std::size_t capacity = capacity_ == 0 ? 4 : capacity_ * 2;
  void* grown = std::realloc(static_cast<void*>(ranges_), capacity * sizeof(PageRange));
  if (grown == nullptr) return false;
  ranges_ = static_cast<PageRange*>(grown);
  capacity_ = capacity;
  return true;
}

bool WriteTracker::track(PageRange r, std::string* error) {
  if (!ready(error)) return false;
  const std::uintptr_t page_mask = g_kernel.page_size - 1;
  if (r.begin >= r.end || ((r.begin | r.end) & page_mask) != 0) {
    set_error(error, "track: the range must be non-empty and page-aligned", 0);
    return false;
  }
  const std::size_t at = lower_bound(r.begin);
  if ((at < count_ && ranges_[at].begin < r.end) || (at > 0 && ranges_[at - 1].end > r.begin)) {
    set_error(error, "track: the range overlaps a range this tracker already tracks", 0);
    return false;
  }
  // The bookkeeping slot is taken first, so that nothing can fail once the kernel state exists.
  if (!reserve_one_more()) {
    set_error(error, "track: out of memory for the list of tracked ranges", ENOMEM);
    return false;
  }
  std::uint64_t ioctls = 0;
  if (const int err = register_wp(r.begin, r.end, &ioctls); err != 0) {
    set_error(error, "track: UFFDIO_REGISTER (needs an anonymous private read-write mapping)", err);
    return false;
  }
  if ((ioctls & kWriteProtectIoctl) == 0) {
    unregister(r.begin, r.end);
    set_error(error, "track: the kernel offers no write protection for this mapping", 0);
    return false;
  }
  if (const int err = write_protect(r.begin, r.end); err != 0) {
    unregister(r.begin, r.end);
    set_error(error, "track: UFFDIO_WRITEPROTECT", err);
    return false;
  }
  std::memmove(static_cast<void*>(ranges_ + at + 1), static_cast<const void*>(ranges_ + at),
               (count_ - at) * sizeof(PageRange));
  ranges_[at] = r;
  ++count_;
  if (!enlisted_) enlist();
  return true;
}

void WriteTracker::untrack(PageRange r) noexcept {
  const std::size_t at = find(r);
  if (at == count_) return;
  // A forked child only forgets the range; so does a suspended tracker (nothing is registered).
  if (in_opening_process() && !g_suspended.load(std::memory_order_acquire)) unregister(r.begin, r.end);
  std::memmove(static_cast<void*>(ranges_ + at), static_cast<const void*>(ranges_ + at + 1),
               (count_ - at - 1) * sizeof(PageRange));
  --count_;
}

bool WriteTracker::collect(PageRange r, std::vector<PageRange>& written, std::string* error) {
  if (!tracking(r)) {
    set_error(error, "collect: the range is not tracked by this tracker", 0);
    return false;
  }
  if (!ready(error)) return false;
  // After a suspension the range is registered but unprotected (resume_all leaves the walk that
  // protects it to this scan, off the checkpoint's pause): the scan below protects it, and the
  // failure reported after it makes the caller take every page once.
  const bool lost = lost_;
  lost_ = false;
  const std::size_t first_appended = written.size();
  page_region regions[kRegionsPerScan];
  std::uintptr_t start = r.begin;
  while (start < r.end) {
    // Room for a full buffer is made before the kernel marks anything clean, so that no run it
    // reports can be dropped for want of memory. Capacity grows geometrically.
    if (written.capacity() - written.size() < kRegionsPerScan) {
      try {
        written.reserve(std::max(2 * written.capacity(), written.size() + kRegionsPerScan));
      } catch (const std::bad_alloc&) {
        set_error(error, "collect: out of memory for the written runs", ENOMEM);
        return false;
      }
    }
    std::uintptr_t walk_end = 0;
    const long n = scan_written(start, r.end, regions, kRegionsPerScan, &walk_end);
    if (n < 0) {
      set_error(error, "collect: PAGEMAP_SCAN", static_cast<int>(-n));
      return false;
    }
    std::uintptr_t scanned_to = start;
    for (long i = 0; i < n; ++i) {
      const PageRange run{static_cast<std::uintptr_t>(regions[i].start),
                          static_cast<std::uintptr_t>(regions[i].end)};
      // A run cut by the end of one call's buffer continues at the start of the next call's.
      if (written.size() > first_appended && written.back().end == run.begin) {
        written.back().end = run.end;
      } else {
        written.push_back(run);
      }
      scanned_to = run.end;
    }
    // The walk stops before the end only when the buffer is full. Output buffers of more than
    // 512 regions were seen to come back with a walk_end behind the last region reported; the
    // regions come in address order, so everything before the last one's end was scanned and
    // resuming there is safe whatever walk_end says. The walk must move forward, or the loop
    // would never end.
    const std::uintptr_t resume = walk_end > scanned_to ? walk_end : scanned_to;
    if (resume <= start || resume > r.end || (resume & (g_kernel.page_size - 1)) != 0) {
      set_error(error, "collect: PAGEMAP_SCAN returned an implausible walk_end", 0);
      return false;
    }
    start = resume;
  }
  if (lost) {
    set_error(error, "write tracking was suspended for a process checkpoint (writes made meanwhile are unknown)", 0);
    return false;
  }
  return true;
}

// ---- process checkpoints --------------------------------------------------------------------

void WriteTracker::enlist() noexcept {
  const std::lock_guard lock(g_registry_mutex);
  next_ = g_registry;
  if (g_registry != nullptr) g_registry->prev_ = this;
  g_registry = this;
  enlisted_ = true;
}

void WriteTracker::delist() noexcept {
  if (!enlisted_) return;
  const std::lock_guard lock(g_registry_mutex);
  if (prev_ != nullptr) {
    prev_->next_ = next_;
  } else {
    g_registry = next_;
  }
  if (next_ != nullptr) next_->prev_ = prev_;
  prev_ = next_ = nullptr;
  enlisted_ = false;
}

bool WriteTracker::suspended() noexcept { return g_suspended.load(std::memory_order_acquire); }

WriteTracker::Census WriteTracker::suspend_all() {
  // Settled first, so that nothing opens the descriptors again while suspended.
  std::call_once(g_probe_once, probe);
  const std::lock_guard lock(g_registry_mutex);
  Census census;
  if (g_suspended.load(std::memory_order_relaxed)) return census;
  const bool owner = in_opening_process();
  for (WriteTracker* t = g_registry; t != nullptr; t = t->next_) {
    if (owner) {
      for (std::size_t i = 0; i < t->count_; ++i) unregister(t->ranges_[i].begin, t->ranges_[i].end);
    }
    t->lost_ = true;
    ++census.trackers;
    census.ranges += t->count_;
  }
  // A forked child's descriptors are the parent's: closing the child's copies is still right,
  // since a checkpoint of the child must not hold them either.
  if (g_kernel.uffd >= 0) ::close(g_kernel.uffd);
  if (g_kernel.pagemap >= 0) ::close(g_kernel.pagemap);
  g_kernel.uffd = g_kernel.pagemap = -1;
  g_suspended.store(true, std::memory_order_release);
  return census;
}

WriteTracker::Census WriteTracker::resume_all(std::string* error) {
  const std::lock_guard lock(g_registry_mutex);
  Census census;
  if (!g_suspended.load(std::memory_order_relaxed)) return census;
  g_suspended.store(false, std::memory_order_release);
  // Without descriptors every tracker's track() and collect() fail with g_kernel.why, so their
  // users save full snapshots; the ranges are kept, to be forgotten by untrack() as usual.
  if (g_kernel.ok && !open_descriptors()) {
    g_kernel.ok = false;
    set_error(error, g_kernel.why, 0);
    return census;
  }
  if (!g_kernel.ok) return census;
  for (WriteTracker* t = g_registry; t != nullptr; t = t->next_) {
    ++census.trackers;
    for (std::size_t i = 0; i < t->count_;) {
      const PageRange r = t->ranges_[i];
      // Registered, not protected: every page reads as written until the tracker's next
      // collect() protects it, which the lost flag turns into one full snapshot anyway.
      std::uint64_t ioctls = 0;
      const int err = register_wp(r.begin, r.end, &ioctls);
      if (err == 0) {
        ++census.ranges;
        ++i;
        continue;
      }
      if (error != nullptr && error->empty()) set_error(error, "resume: UFFDIO_REGISTER", err);
      std::memmove(static_cast<void*>(t->ranges_ + i), static_cast<const void*>(t->ranges_ + i + 1),
                   (t->count_ - i - 1) * sizeof(PageRange));
      --t->count_;
    }
  }
  return census;
}

}  // namespace reheap::detail::os
