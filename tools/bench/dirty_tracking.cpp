// dirty_tracking: which page write-tracking mechanisms this kernel offers, and what they cost.
//
// Incremental snapshots write only the pages written since the previous snapshot. This program
// measures the candidates on the machine it runs on and prints one table:
//   (a) soft-dirty bits: clear_refs "4", then pagemap bit 55 on a written page;
//   (b) userfaultfd write protection in async mode + PAGEMAP_SCAN (heap/src/os/write_tracker):
//       the cost of the first write to a protected page, populated or never touched, and of
//       collecting and re-protecting 1 GiB at 0.1%, 1% and 10% scattered dirty pages;
//   (c) mprotect(PROT_READ) + a SIGSEGV handler that makes each written page writable again:
//       the cost of the first write and how many scattered pages it takes until mprotect fails
//       (each written page splits a VMA; vm.max_map_count bounds the VMAs);
//   (d) allocator-level tracking, which cannot see stores into live blocks (a note, no numbers).
// Times are medians with the 10th-90th percentile spread; single stores are timed with the TSC
// (fenced rdtsc, converted with the TSC rate measured against CLOCK_MONOTONIC). Runs in well
// under a minute.
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "bench_clock.h"
#include "os/write_tracker.h"
#include "process_memory.h"

namespace {

using reheap::detail::os::PageRange;
using reheap::detail::os::WriteTracker;

const std::size_t kPage = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
constexpr std::size_t kGiB = std::size_t{1} << 30;
double g_tsc_per_ns = 1.0;

// ---------------------------------------------------------------------------------------------
// Small helpers: memory, statistics, /proc.

struct Mapping {
  char* base = nullptr;
  std::size_t bytes = 0;
  explicit Mapping(std::size_t n) : bytes(n) {
    void* p = ::mmap(nullptr, n, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
      std::perror("mmap");
      std::exit(1);
    }
    base = static_cast<char*>(p);
    ::madvise(base, n, MADV_NOHUGEPAGE);  // as the reheap zone
  }
  ~Mapping() { ::munmap(base, bytes); }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  PageRange range() const {
    const auto b = reinterpret_cast<std::uintptr_t>(base);
    return {b, b + bytes};
  }
  std::size_t pages() const { return bytes / kPage; }
  void touch(std::size_t page) const { *static_cast<volatile char*>(base + page * kPage) = 1; }
};

struct Spread {
  double median = 0, p10 = 0, p90 = 0;
};

Spread spread(std::vector<double> v) {
  if (v.empty()) return {};
  std::sort(v.begin(), v.end());
  auto at = [&](double q) {
    return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1))];
  };
  return {at(0.5), at(0.1), at(0.9)};
}

std::string fmt(const char* f, double a, double b = 0, double c = 0) {
  char buf[128];
  std::snprintf(buf, sizeof buf, f, a, b, c);
  return buf;
}

// Times one store to each page of `order`, in TSC ticks converted to nanoseconds.
std::vector<double> time_first_stores(const Mapping& m, const std::vector<std::size_t>& order) {
  std::vector<double> ns;
  ns.reserve(order.size());
  for (std::size_t page : order) {
    volatile char* p = m.base + page * kPage;
    const std::uint64_t t0 = bench::tsc_now();
    *p = 2;
    const std::uint64_t t1 = bench::tsc_now();
    ns.push_back(static_cast<double>(t1 - t0) / g_tsc_per_ns);
  }
  return ns;
}

std::vector<std::size_t> shuffled_pages(std::size_t n, unsigned seed) {
  std::vector<std::size_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = i;
  std::shuffle(v.begin(), v.end(), std::mt19937_64(seed));
  return v;
}

long read_long(const char* path) {
  std::ifstream in(path);
  long v = -1;
  in >> v;
  return v;
}

// VMAs (lines of /proc/self/maps) that overlap [begin, end).
int vmas_in(std::uintptr_t begin, std::uintptr_t end) {
  std::ifstream in("/proc/self/maps");
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx", &lo, &hi) == 2 && lo < end && hi > begin) ++n;
  }
  return n;
}

int total_vmas() { return vmas_in(0, ~std::uintptr_t{0}); }

double ms_since(const bench::Stopwatch& sw) { return static_cast<double>(sw.elapsed().ns) / 1e6; }

// One row of the final table.
struct Row {
  std::string mechanism, available, first_write, collect, limit;
};
std::vector<Row> g_rows;

// ---------------------------------------------------------------------------------------------
// (a) soft-dirty

bool soft_dirty_bit(int pagemap, const void* p) {
  std::uint64_t entry = 0;
  const off_t off = static_cast<off_t>(reinterpret_cast<std::uintptr_t>(p) / kPage * 8);
  if (::pread(pagemap, &entry, sizeof entry, off) != static_cast<ssize_t>(sizeof entry))
    return false;
  return (entry >> 55) & 1;
}

bool clear_soft_dirty() {
  const int fd = ::open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::write(fd, "4", 1) == 1;
  ::close(fd);
  return ok;
}

void measure_soft_dirty() {
  std::printf("\n(a) soft-dirty (clear_refs \"4\", pagemap bit 55)\n");
  Row row{"soft-dirty", "", "-", "-", "-"};
  const int pagemap = ::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  Mapping m(64 * kPage);
  m.touch(0);
  const bool cleared = clear_soft_dirty();
  const bool clean_after_clear = pagemap >= 0 && !soft_dirty_bit(pagemap, m.base);
  m.touch(0);
  const bool set_after_write = pagemap >= 0 && soft_dirty_bit(pagemap, m.base);
  std::printf("    clear_refs \"4\" %s; bit 55 after clear: %d; after a write: %d\n",
              cleared ? "accepted" : "refused", clean_after_clear ? 0 : 1, set_after_write ? 1 : 0);
  if (!cleared || !clean_after_clear || !set_after_write) {
    row.available = "no: bit 55 never set";
    std::printf(
        "    not available: the kernel accepts the clear but never sets the bit "
        "(CONFIG_MEM_SOFT_DIRTY off)\n");
    if (pagemap >= 0) ::close(pagemap);
    g_rows.push_back(row);
    return;
  }
  // Available: the first write after a clear faults (the clear write-protects every page of the
  // process); reading the bits back means reading 8 bytes of pagemap per page.
  row.available = "yes";
  Mapping big(kGiB);
  for (std::size_t i = 0; i < big.pages(); i += 64) big.touch(i);
  clear_soft_dirty();
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < big.pages(); i += 64) order.push_back(i);
  const Spread w = spread(time_first_stores(big, order));
  std::vector<std::uint64_t> entries(big.pages());
  bench::Stopwatch sw;
  clear_soft_dirty();
  const double clear_ms = ms_since(sw);
  bench::Stopwatch sw2;
  const off_t off = static_cast<off_t>(reinterpret_cast<std::uintptr_t>(big.base) / kPage * 8);
  const ssize_t got = ::pread(pagemap, entries.data(), entries.size() * 8, off);
  const double read_ms = ms_since(sw2);
  std::printf(
      "    first write %.0f ns (p10 %.0f, p90 %.0f); clear_refs %.2f ms (whole process); "
      "read 1 GiB of pagemap %.2f ms (%zd bytes)\n",
      w.median, w.p10, w.p90, clear_ms, read_ms, got);
  row.first_write = fmt("%.0f ns", w.median);
  row.collect = fmt("%.2f ms (any %%)", clear_ms + read_ms);
  row.limit = "clear_refs is process-wide";
  ::close(pagemap);
  g_rows.push_back(row);
}

// ---------------------------------------------------------------------------------------------
// (b) userfaultfd write protection, async, + PAGEMAP_SCAN

void measure_uffd() {
  std::printf("\n(b) %s\n", WriteTracker::mechanism());
  Row row{WriteTracker::mechanism(), "", "", "", ""};
  std::string why;
  if (!WriteTracker::available(&why)) {
    row.available = "no: " + why;
    std::printf("    not available: %s\n", why.c_str());
    row.first_write = row.collect = row.limit = "-";
    g_rows.push_back(row);
    return;
  }
  row.available = "yes";
  std::string error;
  auto must = [&](bool ok) {
    if (!ok) {
      std::fprintf(stderr, "dirty_tracking: %s\n", error.c_str());
      std::exit(1);
    }
  };

  // First writes: 64 MiB, every page once, in random order.
  constexpr std::size_t kFirstWriteBytes = 64 << 20;
  const std::vector<std::size_t> order = shuffled_pages(kFirstWriteBytes / kPage, 1);
  Spread populated, populated_base, fresh, fresh_base;
  {
    Mapping m(kFirstWriteBytes);
    for (std::size_t i = 0; i < m.pages(); ++i) m.touch(i);
    populated_base = spread(time_first_stores(m, order));  // no fault: the timing floor
    WriteTracker t;
    must(t.track(m.range(), &error));
    populated = spread(time_first_stores(m, order));
  }
  {
    Mapping m(kFirstWriteBytes);
    fresh_base = spread(time_first_stores(m, order));  // plain first-touch fault, untracked
  }
  {
    Mapping m(kFirstWriteBytes);
    WriteTracker t;
    must(t.track(m.range(), &error));
    fresh = spread(time_first_stores(m, order));
  }
  std::printf(
      "    first write to a protected page, 64 MiB in random order (ns: median, p10-p90):\n"
      "      populated page      %6.0f  (%.0f-%.0f)   vs the same store unprotected %.0f\n"
      "      never-touched page  %6.0f  (%.0f-%.0f)   vs an untracked first touch   %.0f\n",
      populated.median, populated.p10, populated.p90, populated_base.median, fresh.median,
      fresh.p10, fresh.p90, fresh_base.median);

  // Registration: time and page tables (WP_UNPOPULATED fills every entry with a marker).
  double track64_ms = 0, track1g_ms = 0, untrack1g_ms = 0;
  long pte64 = 0, pte1g = 0;
  {
    Mapping m(64 << 20);
    const long pte0 = static_cast<long>(bench::page_table_bytes() / 1024);
    WriteTracker t;
    bench::Stopwatch sw;
    must(t.track(m.range(), &error));
    track64_ms = ms_since(sw);
    pte64 = static_cast<long>(bench::page_table_bytes() / 1024) - pte0;
  }
  Mapping g(kGiB);
  WriteTracker tracker;
  {
    const long pte0 = static_cast<long>(bench::page_table_bytes() / 1024);
    bench::Stopwatch sw;
    must(tracker.track(g.range(), &error));
    track1g_ms = ms_since(sw);
    pte1g = static_cast<long>(bench::page_table_bytes() / 1024) - pte0;
  }
  std::printf(
      "    track(): 64 MiB %.3f ms, +%ld KiB page tables; 1 GiB %.2f ms, +%ld KiB page "
      "tables (never-touched ranges included)\n",
      track64_ms, pte64, track1g_ms, pte1g);

  // Collect + re-protect 1 GiB at several dirty fractions.
  std::printf("    collect+re-protect 1 GiB (ms: median, p10-p90 of 7), scattered random pages:\n");
  std::mt19937_64 rng(7);
  std::vector<PageRange> written;
  written.reserve(g.pages() / 8);
  std::string collect_cell;
  for (double fraction : {0.0, 0.001, 0.01, 0.1}) {
    const std::size_t n = static_cast<std::size_t>(fraction * static_cast<double>(g.pages()));
    std::vector<double> ms;
    std::size_t runs = 0;
    for (int rep = 0; rep < 7; ++rep) {
      for (std::size_t i = 0; i < n; ++i) g.touch(rng() % g.pages());
      written.clear();
      bench::Stopwatch sw;
      must(tracker.collect(g.range(), written, &error));
      ms.push_back(ms_since(sw));
      runs = written.size();
    }
    const Spread s = spread(ms);
    std::printf("      %5.1f%% dirty (%6zu writes, %6zu runs): %7.3f  (%.3f-%.3f)\n",
                fraction * 100, n, runs, s.median, s.p10, s.p90);
    if (fraction > 0) {
      if (!collect_cell.empty()) collect_cell += " / ";
      collect_cell += fmt("%.2f", s.median);
    }
  }
  {
    bench::Stopwatch sw;
    tracker.untrack(g.range());
    untrack1g_ms = ms_since(sw);
  }
  std::printf("    untrack(1 GiB) %.2f ms\n", untrack1g_ms);

  // VMAs: one userfaultfd for the process lets adjacent tracked ranges share a VMA.
  {
    Mapping m(kGiB);
    const auto b = reinterpret_cast<std::uintptr_t>(m.base);
    constexpr std::size_t kChunk = 64 << 20;
    WriteTracker all[16];
    for (std::size_t i = 0; i < 16; ++i)
      must(all[i].track({b + i * kChunk, b + (i + 1) * kChunk}, &error));
    const int adjacent = vmas_in(b, b + kGiB);
    for (std::size_t i = 1; i < 16; i += 2) all[i].untrack({b + i * kChunk, b + (i + 1) * kChunk});
    const int alternate = vmas_in(b, b + kGiB);
    std::printf(
        "    VMAs of a 1 GiB mapping with 16 adjacent 64 MiB chunks tracked by 16 trackers: "
        "%d; with every other chunk untracked: %d\n",
        adjacent, alternate);
  }
  row.first_write = fmt("%.0f ns; never-touched %.0f (untracked: %.0f)", populated.median,
                        fresh.median, fresh_base.median);
  row.collect = collect_cell + " ms";
  row.limit = std::to_string(pte1g) + " KiB page tables per GiB tracked; untrack " +
              fmt("%.0f ms/GiB", untrack1g_ms);
  g_rows.push_back(row);
}

// ---------------------------------------------------------------------------------------------
// (c) mprotect + SIGSEGV

// Shared with the signal handler: plain values written before the handler is installed, and
// lock-free atomics.
char* g_mp_base = nullptr;
std::size_t g_mp_bytes = 0;
std::atomic<std::size_t> g_mp_faults{0};
std::atomic<int> g_mp_errno{0};

void on_segv(int, siginfo_t* info, void*) {
  const auto a = reinterpret_cast<std::uintptr_t>(info->si_addr);
  const auto b = reinterpret_cast<std::uintptr_t>(g_mp_base);
  if (a < b || a >= b + g_mp_bytes) {
    // Not ours: a real crash. Let it happen with the default action.
    ::signal(SIGSEGV, SIG_DFL);
    return;
  }
  void* page = reinterpret_cast<void*>(a & ~(kPage - 1));
  if (::mprotect(page, kPage, PROT_READ | PROT_WRITE) == 0) {
    g_mp_faults.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  // The VMA limit: give up tracking so that the store can complete.
  g_mp_errno.store(errno, std::memory_order_relaxed);
  ::mprotect(g_mp_base, g_mp_bytes, PROT_READ | PROT_WRITE);
}

void measure_mprotect() {
  const long max_map_count = read_long("/proc/sys/vm/max_map_count");
  std::printf("\n(c) mprotect(PROT_READ) + SIGSEGV handler (vm.max_map_count = %ld)\n",
              max_map_count);
  Row row{"mprotect+SIGSEGV", "yes", "", "", ""};
  struct sigaction sa {};
  sa.sa_sigaction = on_segv;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  struct sigaction old {};
  ::sigaction(SIGSEGV, &sa, &old);

  // Collecting is the handler's own list plus one mprotect(PROT_READ) of the whole range, which
  // merges the VMAs the faults split; timed for 1 GiB as in (b).
  {
    Mapping g(kGiB);
    g_mp_base = g.base;
    g_mp_bytes = g.bytes;
    std::mt19937_64 rng(7);
    std::printf(
        "    re-protect 1 GiB with mprotect (ms: median, p10-p90 of 3), scattered random pages:\n");
    for (double fraction : {0.001, 0.01, 0.1}) {
      const std::size_t n = static_cast<std::size_t>(fraction * static_cast<double>(g.pages()));
      std::vector<double> ms;
      for (int rep = 0; rep < 3 && g_mp_errno.load() == 0; ++rep) {
        ::mprotect(g.base, g.bytes, PROT_READ);
        for (std::size_t i = 0; i < n; ++i) g.touch(rng() % g.pages());
        const int vmas = vmas_in(g.range().begin, g.range().end);
        bench::Stopwatch sw;
        ::mprotect(g.base, g.bytes, PROT_READ);
        ms.push_back(ms_since(sw));
        if (rep == 0)
          std::printf("      %5.1f%% dirty: %d VMAs before re-protecting, ", fraction * 100, vmas);
      }
      if (g_mp_errno.load() != 0) {
        std::printf("mprotect failed: %s\n", std::strerror(g_mp_errno.load()));
        if (!row.collect.empty()) row.collect += " / ";
        row.collect += "fails";
        g_mp_errno.store(0);
        continue;
      }
      const Spread sp = spread(ms);
      std::printf("%.3f  (%.3f-%.3f)\n", sp.median, sp.p10, sp.p90);
      if (!row.collect.empty()) row.collect += " / ";
      row.collect += fmt("%.2f", sp.median);
    }
    row.collect += " ms";
  }
  g_mp_faults.store(0);
  // Every other page of a range large enough to exceed the limit, so that no two written pages
  // are adjacent (adjacent writable pages would merge into one VMA).
  const std::size_t attempts =
      static_cast<std::size_t>(max_map_count > 0 ? max_map_count : 65530) / 2 + 8192;
  Mapping m(2 * attempts * kPage);
  for (std::size_t i = 0; i < m.pages(); i += 2) m.touch(i);  // populated: measure the protection
  g_mp_base = m.base;
  g_mp_bytes = m.bytes;
  const int vmas_before = total_vmas();
  if (::mprotect(m.base, m.bytes, PROT_READ) != 0) {
    std::perror("mprotect");
    std::exit(1);
  }
  std::vector<double> ns;
  ns.reserve(attempts);
  bench::Stopwatch sw;
  for (std::size_t k = 0; k < attempts && g_mp_errno.load() == 0; ++k) {
    volatile char* p = m.base + 2 * k * kPage;
    const std::uint64_t t0 = bench::tsc_now();
    *p = 3;
    const std::uint64_t t1 = bench::tsc_now();
    ns.push_back(static_cast<double>(t1 - t0) / g_tsc_per_ns);
  }
  const double total_ms = ms_since(sw);
  const std::size_t faults = g_mp_faults.load();
  const int err = g_mp_errno.load();
  ::sigaction(SIGSEGV, &old, nullptr);
  // The first 2000 faults (few VMAs) and the last 2000 that succeeded (tens of thousands).
  const std::size_t n = std::min(ns.size(), faults);
  const std::size_t w = std::min<std::size_t>(2000, n);
  const Spread e = spread({ns.begin(), ns.begin() + static_cast<std::ptrdiff_t>(w)});
  const Spread l = spread({ns.begin() + static_cast<std::ptrdiff_t>(n - w),
                           ns.begin() + static_cast<std::ptrdiff_t>(n)});
  std::printf(
      "    first write: %.0f ns (p10 %.0f, p90 %.0f) over the first %zu pages, %.0f ns "
      "(p10 %.0f, p90 %.0f) over the last %zu before the limit\n",
      e.median, e.p10, e.p90, w, l.median, l.p10, l.p90, w);
  std::printf(
      "    process had %d VMAs before; %zu scattered pages made writable, then mprotect: %s "
      "(%.0f ms in all)\n",
      vmas_before, faults, err != 0 ? std::strerror(err) : "no failure", total_ms);
  row.first_write = fmt("%.0f ns", e.median);
  row.limit = err != 0 ? "fails after " + std::to_string(faults) + " scattered pages (" +
                             std::strerror(err) + ")"
                       : "no failure within " + std::to_string(faults) + " pages";
  g_rows.push_back(row);
}

// ---------------------------------------------------------------------------------------------

void print_machine() {
  utsname u{};
  ::uname(&u);
  std::ifstream cpu("/proc/cpuinfo");
  std::string line, model = "?";
  while (std::getline(cpu, line)) {
    if (line.rfind("model name", 0) == 0) {
      model = line.substr(line.find(':') + 2);
      break;
    }
  }
  std::printf(
      "machine: %s, %ld CPUs, Linux %s, page %zu B, TSC %.2f GHz, uid %d, "
      "vm.unprivileged_userfaultfd=%ld\n",
      model.c_str(), ::sysconf(_SC_NPROCESSORS_ONLN), u.release, kPage, g_tsc_per_ns,
      static_cast<int>(::getuid()), read_long("/proc/sys/vm/unprivileged_userfaultfd"));
}

void print_table() {
  std::printf(
      "\n| mechanism | available | first write to a clean page (median) | collect+re-protect "
      "1 GiB at 0.1%% / 1%% / 10%% dirty | limit |\n| --- | --- | ---: | ---: | --- |\n");
  for (const Row& r : g_rows) {
    std::printf("| %s | %s | %s | %s | %s |\n", r.mechanism.c_str(), r.available.c_str(),
                r.first_write.c_str(), r.collect.c_str(), r.limit.c_str());
  }
  std::printf("| allocator-level | n/a | - | - | cannot see stores into live blocks (see (d)) |\n");
}

}  // namespace

int main() {
  g_tsc_per_ns = bench::estimate_tsc_hz(200) / 1e9;
  print_machine();
  measure_soft_dirty();
  measure_uffd();
  measure_mprotect();

  std::printf(
      "\n(d) allocator-level tracking\n"
      "    The allocator is called on allocate and free only. A store into a live block -- an\n"
      "    object mutated in place, a vector element, a hash-map slot, a memcpy by a library, a\n"
      "    read(2) by the kernel -- calls nothing, so those pages would be missed and the "
      "snapshot\n"
      "    would silently hold stale data. Marking the pages of every live block dirty is a full\n"
      "    snapshot; instrumenting every store (a GC-style write barrier) costs on every store,\n"
      "    needs every library recompiled, and still misses the kernel's writes.\n");

  print_table();

  std::string why;
  if (WriteTracker::available(&why)) {
    std::printf(
        "\nchosen: %s\n"
        "because the kernel records writes per page-table entry, populated or not, from user\n"
        "space and the kernel alike; a clean page costs nothing until its first write (one\n"
        "fault resolved in the kernel, no handler thread, no signal); collect walks only the page\n"
        "tables and re-protects in the same walk, so no write is lost; it needs no VMA per page\n"
        "(no max_map_count limit) and works unprivileged with UFFD_USER_MODE_ONLY.\n",
        WriteTracker::mechanism());
  } else {
    std::printf("\nchosen: none available here (%s); snapshots must be full.\n", why.c_str());
  }
  return 0;
}
