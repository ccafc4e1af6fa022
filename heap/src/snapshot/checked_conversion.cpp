// The flavour conversion of a restored heap (checked_conversion.h): the checked build's free-block
// shadow rebuilt from the free lists, or discarded.
#include "checked_conversion.h"

#include "../os/memory.h"

namespace reheap::detail::snapshot {
namespace {

// Gives back the shadow of every class chunk (group 0's shadow lane and the shadow group): it
// reads as zero afterwards. The whole shadow, not only the bits of lanes the cursors reached: a
// file may hold bytes anywhere in its chunks, and a bit left set ahead of a cursor would report a
// false double free once blocks are carved there. Discarding pages that were never touched
// commits nothing.
void discard_shadow(const HeapState* h) noexcept {
  for (const ChunkHeader* c = h->class_head; c != nullptr; c = c->next) {
    const std::uintptr_t chunk = chunk_of(c, true);
    os::discard(chunk + shadow_offset(0), kLaneSize);
    os::discard(chunk + std::uintptr_t{kShadowGroup} * kGroupSize, kGroupSize);
  }
}

}  // namespace

void convert_build_flavour(const SnapshotHeader& h, HeapState* heap) noexcept {
  if (!needs_conversion(h)) return;
  // A release build never reads the shadow; discarding it keeps the restored heap from holding
  // (and its next full snapshot from ever meeting) pages that mean nothing here. Its used pages
  // (used_pages.cpp) do not include the shadow, so no snapshot of this heap will carry it.
  discard_shadow(heap);
  if constexpr (kChecks) {
    // A free block's bit is set, every other bit clear (class_lanes.cpp). The state check has
    // proved each list a chain of at most `carved` distinct carved blocks of its class; the bound
    // stays here anyway, so that this walk never depends on a check elsewhere to end.
    for (unsigned cls = 0; cls < kNumClasses; ++cls) {
      std::uint64_t left = heap->cursor[cls].carved;
      for (void* p = heap->free[cls]; p != nullptr && left > 0; p = *static_cast<void**>(p), --left) {
        mark_class_free(p);
      }
    }
  }
}

std::string conversion_obstacle(const SnapshotHeader& h) {
  if (!needs_conversion(h)) return std::string();
  return std::string("the heap was restored from a snapshot saved by a build ") + checks_phrase(h.checked_build) +
         " REHEAP_CHECKS and converted for this one (" + checks_phrase(kChecks) +
         "), so memory differs from that file's free-block shadow; a chain holds one build's files";
}

}  // namespace reheap::detail::snapshot
