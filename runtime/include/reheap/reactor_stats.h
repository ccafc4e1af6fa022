// Per-reactor statistics, read with Runtime::stats (between two of the reactor's events).
#pragma once

#include <cstddef>
#include <cstdint>

namespace reheap {

struct ReactorStats {
  int worker = -1;                    // the worker thread it runs on
  std::size_t heap_committed_bytes = 0;  // HeapStats::committed_bytes of its heap
  std::size_t heap_live_bytes = 0;       // HeapStats::live_bytes
  std::uint64_t messages_in = 0;      // delivered to a handler
  std::uint64_t messages_out = 0;     // sent by it (successful sends)
  std::uint32_t queue_length = 0;     // waiting in its mailbox now
  std::uint32_t queue_high_water = 0; // the longest its mailbox has been
  std::uint64_t rejected = 0;         // sends refused by its bounded mailbox
  std::uint64_t dropped = 0;          // dropped by kDropOldest
  std::uint64_t decode_errors = 0;    // messages its typed handlers could not decode
  std::uint64_t unhandled = 0;        // messages no handler took
  std::uint64_t late_replies = 0;     // replies dropped: their request had timed out (request.h)
  std::uint64_t events = 0;           // handler calls of every kind
  std::uint64_t handler_ns = 0;       // time spent in its handlers
  std::uint64_t max_handler_ns = 0;   // the longest run of consecutive handler calls
  std::uint32_t restarts = 0;
  std::uint32_t moves = 0;            // to another worker: Runtime::move or the placement policy
  std::uint32_t recording_errors = 0;  // its recording stopped after an error (recording.h)
};

}  // namespace reheap
