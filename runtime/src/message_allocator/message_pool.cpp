// Pools and threads: which pool a thread uses, what happens to it when the thread exits, and
// the registry of every pool (for adoption, trim() and statistics).
//
// Thread exit is seen through a pthread key whose destructor runs after the thread's C++
// thread_local destructors, so those may still allocate and free messages. The destructor gives
// the pool's cached blocks and free slabs back and leaves the pool orphaned. Past that point a
// free goes straight back to its slab (no pool is attached for it); an allocation attaches a
// pool again and glibc runs the destructor once more (up to PTHREAD_DESTRUCTOR_ITERATIONS
// rounds; a pool attached in the last round is never orphaned, though its blocks stay valid).
// The main thread's pool is never orphaned: exit() runs no key destructors, and the pool stays
// usable through static destruction.
#include <pthread.h>

#include <mutex>
#include <new>
#include <type_traits>

#include "message_allocator/message_pool.h"
#include "os/message_os.h"

namespace reheap::detail::msg {

constinit Pool g_empty_pool;
constinit thread_local Pool* t_pool [[gnu::tls_model("initial-exec")]] = &g_empty_pool;

namespace {
// Set once the thread's exit hook has run: from then on a free needs no pool of its own.
constinit thread_local bool t_exited = false;
}  // namespace

namespace {

static_assert(std::is_trivially_destructible_v<Pool>, "pools outlive every destructor");
static_assert(std::is_trivially_destructible_v<std::mutex>);

// New pools are placed in mappings of this size, a few dozen at a time.
inline constexpr std::size_t kPoolMapping = 64 * 1024;
static_assert(sizeof(Pool) <= kPoolMapping);

struct Registry {
  std::mutex lock;
  std::atomic<Pool*> all{nullptr};  // every pool ever made, newest first; never shrinks
  Pool* orphans = nullptr;
  char* spare = nullptr;            // the unused rest of the last pool mapping
  std::size_t spare_bytes = 0;
  bool key_made = false;
  bool key_ok = false;
  pthread_key_t key{};
  std::atomic<std::size_t> orphan_count{0};
  std::atomic<std::size_t> pool_count{0};
  std::atomic<std::uint64_t> adopted_slabs{0};
};

constinit Registry g_registry;

void on_thread_exit(void* arg) {
  Pool* pool = static_cast<Pool*>(arg);
  trim_pool(pool, false);
  t_pool = &g_empty_pool;
  t_exited = true;
  Registry& r = g_registry;
  std::lock_guard<std::mutex> guard(r.lock);
  pool->next_orphan = r.orphans;
  r.orphans = pool;
  r.orphan_count.fetch_add(1, std::memory_order_relaxed);
}

// A pool for the calling thread, under the registry lock: an orphan if there is one.
Pool* take_pool(Registry& r) noexcept {
  if (Pool* pool = r.orphans) {
    r.orphans = pool->next_orphan;
    pool->next_orphan = nullptr;
    r.orphan_count.fetch_sub(1, std::memory_order_relaxed);
    r.adopted_slabs.fetch_add(pool->slabs.get(), std::memory_order_relaxed);
    return pool;
  }
  if (r.spare_bytes < sizeof(Pool)) {
    void* mapping = os::map(kPoolMapping);
    if (mapping == nullptr) return nullptr;
    r.spare = static_cast<char*>(mapping);
    r.spare_bytes = kPoolMapping;
  }
  Pool* pool = new (r.spare) Pool{};
  for (unsigned cls = 0; cls < kNumClasses; ++cls) pool->bins[cls].limit = bin_limit(cls);
  r.spare += sizeof(Pool);
  r.spare_bytes -= sizeof(Pool);
  pool->next_pool = r.all.load(std::memory_order_relaxed);
  r.all.store(pool, std::memory_order_release);
  r.pool_count.fetch_add(1, std::memory_order_relaxed);
  return pool;
}

}  // namespace

Pool* attach_pool(bool for_free) noexcept {
  // A thread past its exit hook gets a pool again only to allocate; its frees go straight back
  // to their slabs, so nothing is cached in a pool that may never be orphaned (see above).
  if (for_free && t_exited) return nullptr;
  Registry& r = g_registry;
  Pool* pool = nullptr;
  {
    std::lock_guard<std::mutex> guard(r.lock);
    if (!r.key_made) {
      r.key_made = true;
      r.key_ok = pthread_key_create(&r.key, on_thread_exit) == 0;
    }
    pool = take_pool(r);
  }
  if (pool == nullptr) return nullptr;
  t_pool = pool;
  // Without the key (no key left in the process) the pool is never orphaned: it stays valid and
  // its blocks can still be freed, but no other thread adopts it.
  if (r.key_ok) pthread_setspecific(r.key, pool);
  return pool;
}

void trim_orphans() noexcept {
  Registry& r = g_registry;
  std::lock_guard<std::mutex> guard(r.lock);
  for (Pool* pool = r.orphans; pool != nullptr; pool = pool->next_orphan) trim_pool(pool, true);
}

Pool* first_pool() noexcept { return g_registry.all.load(std::memory_order_acquire); }

std::size_t orphaned_pool_count() noexcept {
  return g_registry.orphan_count.load(std::memory_order_relaxed);
}

std::uint64_t adopted_slab_count() noexcept {
  return g_registry.adopted_slabs.load(std::memory_order_relaxed);
}

}  // namespace reheap::detail::msg
