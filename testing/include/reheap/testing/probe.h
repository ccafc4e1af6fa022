// Probe: a reactor that records every message it receives, for a test to read back.
//
// A test that wants to see what a reactor sends gives it a probe's reference as the destination
// (or as the sender of a request: TestRuntime::ask uses one) and reads the probe between steps:
// received<T>() decodes every message of type T in arrival order, last<T>() the newest one, count()
// and count<T>() say how many arrived, records() lists type ids and senders of all of them.
//
// The records live in the probe's own heap, as any reactor state does: each holds the type id, the
// sender, the encoding and a copy of the payload bytes, and is decoded only when asked, into the
// caller's heap, by the same checked decoder a handler uses (Message::get: a type mismatch or a
// malformed payload throws MessageError). Decoding on demand is what lets one probe collect
// messages of any types without being told them in advance.
//
// A probe is meant for TestRuntime, where the test reads it between steps on the same thread. In a
// reheap::Runtime the records are written on a worker thread while the test would read them on
// its own: it is not synchronised for that and must not be read while the runtime runs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "reheap/actor_ref.h"
#include "reheap/message.h"
#include "reheap/reactor.h"

namespace reheap::testing {

class Probe : public Reactor {
 public:
  struct Record {
    std::uint64_t type_id;
    ActorRef sender;
    Encoding encoding;
    std::vector<char> payload;  // in the probe's heap
  };

  void on_message(const Message& message) override;

  const std::vector<Record>& records() const noexcept { return records_; }
  std::size_t count() const noexcept { return records_.size(); }
  template <class T>
  std::size_t count() const noexcept {
    std::size_t n = 0;
    for (const Record& r : records_) n += r.type_id == message_type_id<T>() ? 1 : 0;
    return n;
  }

  // Every message of type T received so far, decoded, oldest first.
  template <class T>
  std::vector<T> received() const {
    std::vector<T> out;
    for (const Record& r : records_) {
      if (r.type_id == message_type_id<T>()) decode(r, &append<T>, &out);
    }
    return out;
  }
  // The newest message of type T, decoded; nullopt if none arrived.
  template <class T>
  std::optional<T> last() const {
    for (auto it = records_.rbegin(); it != records_.rend(); ++it) {
      if (it->type_id != message_type_id<T>()) continue;
      std::vector<T> one;
      decode(*it, &append<T>, &one);
      return std::move(one.front());
    }
    return std::nullopt;
  }

  // Forgets what was received (from a hook or from the test).
  void clear() noexcept;

 private:
  using Sink = void (*)(const Message&, void* out);
  template <class T>
  static void append(const Message& m, void* out) {
    static_cast<std::vector<T>*>(out)->push_back(m.get<T>());
  }
  // Rebuilds the message of `record` in a temporary envelope and hands it to `sink`.
  static void decode(const Record& record, Sink sink, void* out);

  std::vector<Record> records_;
};

}  // namespace reheap::testing
