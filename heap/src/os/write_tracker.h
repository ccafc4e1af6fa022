// WriteTracker: which pages of a range were written since the last look, as the kernel saw it.
//
// Incremental snapshots write only the pages changed since the previous snapshot. The kernel
// keeps that record for us, per page-table entry, with userfaultfd write protection in
// asynchronous mode (UFFD_FEATURE_WP_ASYNC, Linux 6.7):
//
//   track(r)     registers r with the process's userfaultfd (UFFDIO_REGISTER_MODE_WP) and
//                write-protects all of it (UFFDIO_WRITEPROTECT). With
//                UFFD_FEATURE_WP_UNPOPULATED even never-touched pages are protected: the kernel
//                fills their empty entries with "uffd-wp" markers, allocating the page tables of
//                the whole range (2 MiB of page tables per GiB tracked, 128 KiB per 64 MiB chunk).
//   a store      to a protected page faults once; in async mode the kernel resolves the fault
//                itself by clearing the page's protection bit (no message, no handler thread),
//                and the store completes. Later stores to the page cost nothing.
//   collect(r)   walks r's page tables with the PAGEMAP_SCAN ioctl on /proc/self/pagemap,
//                reporting every unprotected entry ("PAGE_IS_WRITTEN") and protecting it again
//                in the same walk, under the page-table lock (PM_SCAN_WP_MATCHING). A store racing
//                with the walk either lands before its page is scanned (reported now) or faults
//                on the fresh protection (reported next time): none is lost.
//
// Rejected alternatives, measured by tools/bench/dirty_tracking: soft-dirty bits (clear_refs
// "4", pagemap bit 55) are compiled out of the kernels we run on; mprotect(PROT_READ) with a
// SIGSEGV handler splits a VMA per written page and fails at vm.max_map_count (65530) after
// ~32k scattered pages; and the allocator cannot see stores into live blocks at all.
//
// What counts as written (tests/heap/write_tracker_test.cpp is the specification):
//   * any store, from user space or from the kernel on the process's behalf (read(2) into the
//     range), to a page, populated or never touched;
//   * not a read: reading a never-touched page maps the shared zero page, still protected;
//   * a discard. MADV_DONTNEED on anonymous memory empties the page's entry and drops its
//     protection with it (no marker is kept). A discarded page written again is always
//     reported: the fresh page is mapped unprotected. A discarded page left alone reads as zero,
//     so its content did change, and collect() reports it too: an empty entry in a page table
//     counts as written. A discard of a whole 2 MiB page table's worth frees the page table
//     (CONFIG_PT_RECLAIM, since Linux 6.14), leaving a hole. The kernels here (6.18.44) report
//     such a hole as written as well: pagemap_scan_pte_hole() treats holes in a uffd-wp VMA as
//     written since a recent fix of UFFD_FEATURE_WP_UNPOPULATED (2026, Cc stable). Kernels
//     without it do not report the hole until a page in it is touched, so there whoever
//     discards tracked memory must record the discard for the next snapshot itself. Either way
//     collect() re-protects what it reports, so the next collect() sees the pages clean.
//   * a read of a discarded page maps the zero page unprotected and is reported (harmless: it
//     does read differently from before the discard).
//
// Costs on the machines here (tools/bench/dirty_tracking): the first write to a protected
// populated page 0.8-1.1 us; to a never-touched page 2.2 us against 1.4 us for an untracked first
// touch; track() 0.4 ms per 64 MiB plus the page tables of the whole range, touched or not
// (128 KiB per 64 MiB chunk, 2 MiB per GiB); collect() of 1 GiB 0.5 ms with nothing dirty, 1 ms
// at 1%, 3 ms at 10% scattered; untrack() 20-24 ms per GiB (it clears every entry's protection).
//
// Ownership and threads. One userfaultfd and one /proc/self/pagemap descriptor serve every
// tracker in the process; both are opened once (std::call_once) and only read afterwards, and
// the kernel serialises the ioctls per page table, so trackers of different heaps may run on
// different threads at once. Sharing one userfaultfd also lets the kernel keep adjacent tracked
// chunks in one VMA (VMAs with different userfaultfd contexts never merge). One tracker is used
// by one thread at a time. Ranges of different trackers must not overlap.
//
// Fork. The descriptors keep naming the process that opened them: userfaultfd ioctls act on the
// context's address space, not the caller's, and /proc/self/pagemap was resolved at open. So in
// a forked child track() and collect() fail, and untrack() and the destructor only forget their
// ranges; otherwise the child would unregister or re-protect the parent's pages and the parent
// would lose their writes. The child's copies of tracked ranges are not tracked (the kernel drops
// the registration on fork).
//
// Process checkpoints. A whole-process checkpointer (CRIU) cannot dump a userfaultfd, so
// suspend_all() (behind reheap/write_tracking.h) unregisters every range of every tracker and
// closes both descriptors; each tracker is then "lost": its next collect() protects its range
// again and fails once, saying why, so that its user takes a full snapshot. resume_all() opens
// fresh descriptors and registers every range again, unprotected (every page reads as written),
// leaving the protecting walk to that collect(): the checkpoint's pause pays the unregistering
// only. Both need every tracker idle (no call in progress on any thread).
//
// Memory. The tracker may run while a reheap heap is current, where plain `new` would allocate
// in that heap. Its own list of tracked ranges therefore lives in malloc'ed storage (a sorted
// array grown by doubling) and the scan buffer on the stack (kRegionsPerScan regions, 12 KiB).
// Only the caller's objects grow through operator new, i.e. in the current heap: `written`,
// `error` and `why`; call with the heap that owns them current, or with none.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace reheap::detail::os {

struct PageRange {
  std::uintptr_t begin;
  std::uintptr_t end;  // page-aligned, end exclusive
};

class WriteTracker {
 public:
  // Whether this process can track writes (probed once, thread-safe: the probe opens the shared
  // descriptors and checks, on a scratch page, that a write is reported). When not, `why` says
  // what is missing, e.g. "userfaultfd: Operation not permitted" or "PAGEMAP_SCAN not supported
  // by this kernel (needs Linux 6.7)".
  static bool available(std::string* why = nullptr);

  // The mechanism's name for reports.
  static const char* mechanism() noexcept;

  WriteTracker() = default;  // tracks nothing; cheap
  ~WriteTracker();           // stops tracking every range it tracks
  WriteTracker(const WriteTracker&) = delete;
  WriteTracker& operator=(const WriteTracker&) = delete;

  // Starts tracking `r`, which must lie in an anonymous private read-write mapping and not
  // overlap a range this tracker tracks: from now on its pages count as clean. Returns false
  // with a message on failure, having registered nothing.
  bool track(PageRange r, std::string* error);

  // Stops tracking `r` (exactly a range given to track; anything else is ignored). Must be called
  // before the range is unmapped, or discarded and handed to someone else.
  void untrack(PageRange r) noexcept;

  // Appends to `written` the pages of the tracked range `r` written since track() or the
  // previous collect() of `r`, as maximal page-aligned runs in ascending order (runs are merged
  // only among the ones this call appends), and marks them clean again in the same kernel walk:
  // a page written after its scan shows up next time. Returns false with a message on failure;
  // `written` then holds the runs found before the failure, already marked clean (pages not yet
  // scanned stay dirty), so a caller that drops them must take a full snapshot of `r` next time.
  // `written` grows before each kernel call, so running out of memory is such a failure and
  // never loses a reported run.
  bool collect(PageRange r, std::vector<PageRange>& written, std::string* error);

  bool tracking(PageRange r) const noexcept;

  // True between a suspend_all() and the first collect() after it: what was written meanwhile is
  // unknown, so the next save must take every page.
  bool lost() const noexcept { return lost_; }

  // See "Process checkpoints" above. suspend_all() returns the trackers and ranges it
  // unregistered, resume_all() those it registered again; a range it could not register again is
  // forgotten (its tracker stays lost) and `error` says why. Neither may run twice in a row.
  struct Census {
    std::size_t trackers = 0;
    std::size_t ranges = 0;
  };
  static Census suspend_all();
  static Census resume_all(std::string* error);
  static bool suspended() noexcept;

  // Regions asked of one PAGEMAP_SCAN call. Output buffers of more than 512 regions were seen to
  // return a stale walk_end on Linux 6.18 (reproduced with 1024 and 4096), so the scan loops
  // over walk_end in steps of at most this many.
  static constexpr std::size_t kRegionsPerScan = 512;

 private:
  // Index of the first tracked range whose begin is >= `begin`.
  std::size_t lower_bound(std::uintptr_t begin) const noexcept;
  // Index of exactly `r`, or count_.
  std::size_t find(PageRange r) const noexcept;
  bool reserve_one_more() noexcept;
  void enlist() noexcept;  // into the registry suspend_all walks, with the first range
  void delist() noexcept;

  PageRange* ranges_ = nullptr;  // malloc'ed; sorted by begin; disjoint
  std::size_t count_ = 0;
  std::size_t capacity_ = 0;
  bool lost_ = false;
  bool enlisted_ = false;
  WriteTracker* prev_ = nullptr;  // the registry: trackers tracking at least one range
  WriteTracker* next_ = nullptr;
};

}  // namespace reheap::detail::os
