#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <stdexcept>
#include <string>
#include <system_error>

#include "os.h"
#include "report.h"
#include "zone_impl.h"

namespace reheap {
namespace detail {

constinit ZoneBounds g_zone;

ZoneImpl& zone() noexcept {
  // Placement-constructed in static storage and never destroyed: see zone_impl.h.
  alignas(ZoneImpl) static unsigned char storage[sizeof(ZoneImpl)];
  static ZoneImpl* const instance = new (storage) ZoneImpl();
  return *instance;
}

namespace {

std::uintptr_t env_number(const char* name, std::uintptr_t fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  errno = 0;
  unsigned long long value = std::strtoull(text, &end, 0);
  if (errno != 0 || end == text || *end != '\0') {
    throw std::invalid_argument(std::string("reheap: ") + name + "=" + text +
                                " is not a number (use decimal or 0x-prefixed hex)");
  }
  return static_cast<std::uintptr_t>(value);
}

void validate(const ZoneConfig& c) {
  if (c.base % kChunkSize != 0) {
    throw std::logic_error("reheap: zone base must be a multiple of 64 MiB");
  }
  if (c.size < 4 * kChunkSize || c.size % (2 * kChunkSize) != 0) {
    throw std::logic_error("reheap: zone size must be a multiple of 128 MiB and at least 256 MiB");
  }
  if (c.base == 0 || c.base + c.size < c.base || c.base + c.size > (std::uintptr_t{1} << 47)) {
    throw std::logic_error("reheap: zone range must lie in the 47-bit user address space");
  }
}

}  // namespace

void ZoneImpl::configure(const ZoneConfig& config) {
  std::lock_guard lock(mutex_);
  if (reserved()) throw std::logic_error("reheap: Zone::configure called after the zone was reserved");
  ZoneConfig c = config;
  const ZoneConfig d = Zone::default_config();
  if (c.base == 0) c.base = d.base;
  if (c.size == 0) c.size = d.size;
  validate(c);
  config_ = c;
}

void ZoneImpl::ensure_reserved() {
  if (reserved()) return;
  std::lock_guard lock(mutex_);
  if (!reserved()) reserve_locked();
}

void ZoneImpl::reserve_locked() {
  ZoneConfig c = config_;
  if (c.base == 0) c.base = env_number("REHEAP_ZONE_BASE", Zone::default_config().base);
  if (c.size == 0) c.size = env_number("REHEAP_ZONE_SIZE", Zone::default_config().size);
  validate(c);
  if (os::page_size() != kPageSize) {
    throw std::runtime_error("reheap: the heap needs 4 KiB pages; this system uses " +
                             std::to_string(os::page_size()));
  }
  chunks_ = c.size / kChunkSize;
  class_chunks_ = chunks_ / 2;
  auto* owners = static_cast<std::atomic<std::uint32_t>*>(
      os::map_table(chunks_ * sizeof(std::atomic<std::uint32_t>)));
  used_ = static_cast<std::uint64_t*>(os::map_table(align_up(chunks_, 64) / 8));
  observers_ = static_cast<std::atomic<ChunkObserver*>*>(
      os::map_table(chunks_ * sizeof(std::atomic<ChunkObserver*>)));
  if (owners == nullptr || used_ == nullptr || observers_ == nullptr) {
    throw std::system_error(ENOMEM, std::generic_category(), "reheap: zone tables");
  }
  if (int err = os::reserve_fixed(c.base, c.size)) {
    char where[160];
    std::snprintf(where, sizeof where,
                  "reheap: cannot reserve the zone [%#lx, %#lx) (set REHEAP_ZONE_BASE / "
                  "REHEAP_ZONE_SIZE or call reheap::Zone::configure to move it)",
                  static_cast<unsigned long>(c.base), static_cast<unsigned long>(c.base + c.size));
    throw std::system_error(err, std::generic_category(), where);
  }
  config_ = c;
  hint_[0] = 0;
  hint_[1] = class_chunks_;
  accessible_end_[0] = 0;
  accessible_end_[1] = class_chunks_;
  g_zone.owners.store(owners, std::memory_order_relaxed);
  g_zone.size.store(c.size, std::memory_order_relaxed);
  g_zone.class_span.store(class_chunks_ * kChunkSize, std::memory_order_relaxed);
  g_zone.base.store(c.base, std::memory_order_release);
  reserved_.store(true, std::memory_order_release);
}

bool ZoneImpl::run_is_free(std::size_t first, std::size_t count) const noexcept {
  for (std::size_t i = first; i < first + count; ++i) {
    if (used_[i / 64] & (std::uint64_t{1} << (i % 64))) return false;
  }
  return true;
}

void ZoneImpl::mark(std::size_t first, std::size_t count, bool used) noexcept {
  for (std::size_t i = first; i < first + count; ++i) {
    if (used) {
      used_[i / 64] |= std::uint64_t{1} << (i % 64);
    } else {
      used_[i / 64] &= ~(std::uint64_t{1} << (i % 64));
    }
  }
}

std::uintptr_t ZoneImpl::acquire(Half half, std::size_t count, std::uint32_t owner,
                                 std::uint64_t* mprotect_calls) noexcept {
  const int h = half == Half::kClass ? 0 : 1;
  const std::size_t end = h == 0 ? class_chunks_ : chunks_;
  std::lock_guard lock(mutex_);
  if (!reserved()) return 0;
  // Lowest-address first fit. Whole 64-chunk words that are full are skipped at once.
  std::size_t i = hint_[h];
  while (i + count <= end) {
    if (i % 64 == 0 && used_[i / 64] == ~std::uint64_t{0}) {
      i += 64;
      continue;
    }
    if (run_is_free(i, count)) break;
    ++i;
  }
  if (i + count > end) return 0;
  if (count == 1 || i == hint_[h]) hint_[h] = i + (count == 1 ? 1 : 0);
  if (!make_accessible_locked(h, i + count, mprotect_calls)) return 0;
  take_locked(h, i, count, owner != 0 ? owner : static_cast<std::uint32_t>(i + 1));
  return chunk_address(static_cast<std::uint32_t>(i));
}

bool ZoneImpl::acquire_at(std::size_t first, std::size_t count, std::uint32_t owner,
                          std::uint64_t* mprotect_calls) noexcept {
  std::lock_guard lock(mutex_);
  if (!reserved() || count == 0 || first + count > chunks_ || first + count < first) return false;
  const int h = first < class_chunks_ ? 0 : 1;
  if (h == 0 && first + count > class_chunks_) return false;
  if (!run_is_free(first, count)) return false;
  if (!make_accessible_locked(h, first + count, mprotect_calls)) return false;
  take_locked(h, first, count, owner);
  return true;
}

bool ZoneImpl::make_accessible_locked(int h, std::size_t need_end, std::uint64_t* mprotect_calls) noexcept {
  if (need_end <= accessible_end_[h]) return true;
  const std::size_t end = h == 0 ? class_chunks_ : chunks_;
  std::size_t new_end = align_up(need_end, kProtectStep);
  if (new_end > end) new_end = end;
  const std::uintptr_t from = ZoneImpl::chunk_address(static_cast<std::uint32_t>(accessible_end_[h]));
  if (os::make_accessible(from, (new_end - accessible_end_[h]) * kChunkSize) != 0) return false;
  ++*mprotect_calls;
  accessible_end_[h] = new_end;
  return true;
}

void ZoneImpl::take_locked(int h, std::size_t first, std::size_t count, std::uint32_t owner) noexcept {
  mark(first, count, true);
  in_use_[h] += count;
  auto* owners = g_zone.owners.load(std::memory_order_relaxed);
  for (std::size_t k = first; k < first + count; ++k) owners[k].store(owner, std::memory_order_relaxed);
}

void ZoneImpl::release(std::uintptr_t first, std::size_t count, std::uint32_t freed_by) noexcept {
  const std::size_t index = (first - config_.base) >> kChunkShift;
  const int h = index < class_chunks_ ? 0 : 1;
  std::lock_guard lock(mutex_);
  auto* owners = g_zone.owners.load(std::memory_order_relaxed);
  const std::uint32_t entry = freed_by != 0 ? (freed_by | kTombstone) : 0;
  for (std::size_t k = index; k < index + count; ++k) owners[k].store(entry, std::memory_order_relaxed);
  mark(index, count, false);
  in_use_[h] -= count;
  if (index < hint_[h]) hint_[h] = index;
}

ZoneStats ZoneImpl::stats() const noexcept {
  std::lock_guard lock(mutex_);
  ZoneStats s;
  s.base = config_.base;
  s.size = config_.size;
  s.chunk_size = kChunkSize;
  s.class_chunks_in_use = in_use_[0];
  s.large_chunks_in_use = in_use_[1];
  s.live_heaps = live_heaps_.load(std::memory_order_relaxed);
  s.ignored_frees = ignored_frees_.load(std::memory_order_relaxed);
  return s;
}

}  // namespace detail

void Zone::configure(const ZoneConfig& config) { detail::zone().configure(config); }

ZoneConfig Zone::default_config() noexcept {
#if defined(__SANITIZE_THREAD__)
  // ThreadSanitizer only lets programs map [4 GiB, 512 GiB) below its shadow.
  return ZoneConfig{std::uintptr_t{0x10} << 32, std::size_t{448} << 30};
#else
  // 17 TiB: above AddressSanitizer's shadow (which ends below 16.01 TiB) and far below where
  // Linux places PIE executables (~85 TiB) and shared libraries (~127 TiB).
  return ZoneConfig{std::uintptr_t{0x110} << 36, std::size_t{64} << 40};
#endif
}

bool Zone::reserved() noexcept { return detail::zone().reserved(); }

ZoneStats Zone::stats() noexcept { return detail::zone().stats(); }

}  // namespace reheap
