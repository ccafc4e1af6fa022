// FatalFlush: when a fatal signal ends the process, every recorded reactor's log is written up to
// its last completed event, and every ring recording is written out.
//
// The failing reactor writes its crash bundle (fatal_bundle.h). The others are elsewhere: between
// two events, or in the middle of one on another worker thread; their recorders hold the block
// they are building in process memory, which dies with the process. So every recorder takes a
// slot here, in memory that is never freed, and the handler of a fatal signal that is about to end
// the process claims each slot and has its recorder write the events it closed (LogWriter::
// committed()) with async-signal-safe calls: a block appended to its file segment, or, for a ring,
// the anchor and the log into a directory of their own.
//
// Exclusion. The handler reads buffers a recorder's own thread may be changing. The slot is the
// lock between them: the owner locks it around everything that moves, frees or rewrites what the
// handler reads (handing a block to the sink, growing the block's buffer, a new anchor, a new
// segment, stopping) and nothing else; appending records after the committed ones needs no lock.
// The handler claims a slot for good: a slot its owner holds at that moment is left alone (its
// log ends at its last written block), and an owner that comes to lock a claimed slot waits for
// the process to end, never touching the buffers again. Claims are made only when handing the
// signal on ends the process (fatal_signal.cpp), so that wait is short.
#pragma once

#include <atomic>
#include <cstdint>

namespace reheap::detail::recording {

class FatalFlushable {
 public:
  // In the handler of a fatal signal, the slot claimed: writes what the recorder holds. Async-
  // signal-safe. Returns whether anything was written.
  virtual bool flush_in_signal_handler() noexcept = 0;

 protected:
  ~FatalFlushable() = default;
};

class FatalFlushSlot {
 public:
  // Owner thread. Blocks for good once a fatal signal's handler has claimed the slot.
  void lock() noexcept;
  void unlock() noexcept { state_.fetch_and(~kOwner, std::memory_order_release); }

  // Owner thread, slot locked: who the handler asks to flush (null: nothing to flush, e.g. a
  // recording that stopped).
  void set_owner(FatalFlushable* owner) noexcept { owner_.store(owner, std::memory_order_relaxed); }

  class Locked {
   public:
    explicit Locked(FatalFlushSlot& slot) noexcept : slot_(slot) { slot_.lock(); }
    ~Locked() { slot_.unlock(); }
    Locked(const Locked&) = delete;
    Locked& operator=(const Locked&) = delete;

   private:
    FatalFlushSlot& slot_;
  };

 private:
  friend FatalFlushSlot* take_fatal_flush_slot(FatalFlushable* owner);
  friend void give_back_fatal_flush_slot(FatalFlushSlot* slot) noexcept;
  friend std::uint64_t flush_every_recorder_in_signal_handler(const FatalFlushSlot* except) noexcept;
  static constexpr std::uint32_t kOwner = 1;
  static constexpr std::uint32_t kClaimed = 2;

  std::atomic<std::uint32_t> state_{0};
  std::atomic<FatalFlushable*> owner_{nullptr};
  FatalFlushSlot* next_free_ = nullptr;  // while free (under the registry's mutex)
};

// Ordinary code: a slot for `owner` (never null; throws std::bad_alloc).
FatalFlushSlot* take_fatal_flush_slot(FatalFlushable* owner);
// Owner thread: the recorder is going away. Blocks for good if the slot was claimed.
void give_back_fatal_flush_slot(FatalFlushSlot* slot) noexcept;

// In the handler of a fatal signal that is about to end the process: claims every slot but
// `except` (the failing reactor's, which writes its crash bundle itself) and flushes its owner.
// Returns how many recorders wrote something. Async-signal-safe.
std::uint64_t flush_every_recorder_in_signal_handler(const FatalFlushSlot* except) noexcept;

}  // namespace reheap::detail::recording
