// RecordedInput (see recorded_input.h).
#include "replay/recorded_input.h"

#include <cstring>
#include <new>

#include "messaging/envelope.h"
#include "reheap/heap_scope.h"

namespace reheap::detail::replay {
namespace {

std::error_code recorded_error(const LogRecord& r) {
  switch (r.error_category) {
    case ErrorCategory::kNone:
      return {};
    case ErrorCategory::kGeneric:
      return {r.error_value, std::generic_category()};
    case ErrorCategory::kSystem:
      return {r.error_value, std::system_category()};
  }
  return {};
}

}  // namespace

RecordedInput::RecordedInput(const LogRecord& in) {
  const HeapScope system(nullptr);
  event_.kind = static_cast<EventKind>(in.kind);
  switch (in.kind) {
    case RecordKind::kMessage:
      envelope_ = allocate_envelope(in.bytes.size());
      if (envelope_ == nullptr) throw std::bad_alloc();
      std::memset(static_cast<void*>(envelope_), 0, sizeof(*envelope_));
      envelope_->sender = in.ref.value();
      envelope_->type_id = in.type_id;
      envelope_->size = static_cast<std::uint32_t>(in.bytes.size());
      envelope_->encoding = in.encoding;
      envelope_->exchange = in.result;
      envelope_->correlation = in.id;
      if (!in.bytes.empty()) std::memcpy(envelope_->payload(), in.bytes.data(), in.bytes.size());
      message_.emplace(MessageAccess::of(*envelope_));
      event_.message = &*message_;
      break;
    case RecordKind::kTimer:
      event_.timer = in.id;
      break;
    case RecordKind::kAccept:
      event_.socket = in.id;
      event_.connection = in.connection;
      break;
    case RecordKind::kConnect:
    case RecordKind::kClosed:
    case RecordKind::kAcceptError:
      event_.socket = in.id;
      event_.error = recorded_error(in);
      break;
    case RecordKind::kEnd:
    case RecordKind::kDrained:
      event_.socket = in.id;
      break;
    case RecordKind::kData:
      event_.socket = in.id;
      event_.data = std::span<const char>(in.bytes.data(), in.bytes.size());
      break;
    default:
      break;
  }
}

RecordedInput::~RecordedInput() {
  message_.reset();
  if (envelope_ != nullptr) free_envelope(envelope_);
}

}  // namespace reheap::detail::replay
