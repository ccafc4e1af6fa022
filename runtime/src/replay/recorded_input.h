// RecordedInput: a recorded input record turned back into the Event its hook was called with.
//
// A replay (the test kit's Replay, an exact restart) delivers the log's events as the runtime
// delivered them: a message arrives in an envelope of the message allocator, as a received one
// does, so that the reactor cannot tell a replayed message from a live one; a TCP event carries
// the socket, the bytes and the error the log holds. Built outside any reactor's heap.
#pragma once

#include <optional>

#include "reheap/event.h"
#include "reheap/message.h"
#include "reheap/recording_log.h"

namespace reheap::detail {
struct Envelope;
}

namespace reheap::detail::replay {

class RecordedInput {
 public:
  // Throws std::bad_alloc when the message allocator has no room for the message.
  explicit RecordedInput(const LogRecord& input);
  ~RecordedInput();
  RecordedInput(const RecordedInput&) = delete;
  RecordedInput& operator=(const RecordedInput&) = delete;

  // The event to deliver; its message, if any, lives as long as this.
  const Event& event() const noexcept { return event_; }

 private:
  Envelope* envelope_ = nullptr;
  std::optional<Message> message_;
  Event event_;
};

}  // namespace reheap::detail::replay
