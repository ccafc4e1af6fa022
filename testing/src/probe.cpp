// Probe: records in its heap, decoded on demand (see probe.h).
#include "reheap/testing/probe.h"

#include <cstring>

#include "messaging/envelope.h"  // runtime/src
#include "reheap/heap_scope.h"

namespace reheap::testing {

void Probe::on_message(const Message& message) {
  const auto* bytes = static_cast<const char*>(message.data());
  records_.push_back(Record{message.type_id(), message.sender(), message.encoding(),
                            std::vector<char>(bytes, bytes + message.size())});
}

void Probe::clear() noexcept {
  // The records live in this probe's heap: they go with it current, whoever calls.
  const HeapScope heap(Heap::owner_of(this));
  records_.clear();
}

void Probe::decode(const Record& record, Sink sink, void* out) {
  // A Message reads an envelope: rebuild one around a copy of the payload. It comes from the
  // message allocator, like every envelope, so the payload is aligned as a received one is.
  reheap::detail::Envelope* e = reheap::detail::allocate_envelope(record.payload.size());
  if (e == nullptr) throw std::bad_alloc();
  struct Release {
    reheap::detail::Envelope* e;
    ~Release() { reheap::detail::free_envelope(e); }
  } release{e};
  std::memset(static_cast<void*>(e), 0, sizeof(*e));
  e->sender = record.sender.value();
  e->type_id = record.type_id;
  e->size = static_cast<std::uint32_t>(record.payload.size());
  e->encoding = record.encoding;
  if (!record.payload.empty()) std::memcpy(e->payload(), record.payload.data(), record.payload.size());
  sink(reheap::detail::MessageAccess::of(*e), out);
}

}  // namespace reheap::testing
