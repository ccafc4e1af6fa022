// Snapshot requests: sending one, running it on the target, and answering it however it ends
// (see snapshot_request.h, and reheap/snapshot_request.h for the promises).
#include "checkpoint/snapshot_request.h"

#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <string_view>

#include "checkpoint/reactor_snapshot.h"
#include "reheap/heap_scope.h"
#include "runtime_impl.h"

namespace reheap {

const char* to_string(SnapshotStatus s) noexcept {
  switch (s) {
    case SnapshotStatus::kSaved: return "saved";
    case SnapshotStatus::kSnapshotError: return "snapshot error";
    case SnapshotStatus::kNoSuchReactor: return "no such reactor";
    case SnapshotStatus::kTargetStopped: return "target stopped";
    case SnapshotStatus::kShuttingDown: return "runtime shutting down";
    case SnapshotStatus::kFailed: return "failed";
  }
  return "unknown";
}

void SnapshotDone::set_saved(const SnapshotInfo& i) {
  status = static_cast<std::uint8_t>(SnapshotStatus::kSaved);
  kind = static_cast<std::uint8_t>(i.kind);
  id = i.id;
  parent_id = i.parent_id;
  generation = i.generation;
  pages_written = i.pages_written;
  zero_pages = i.zero_pages;
  bytes_written = i.bytes_written;
  tracking = i.tracking;
  fallback_reason = i.fallback_reason;
}

void SnapshotDone::set_failure(std::exception_ptr thrown) {
  try {
    std::rethrow_exception(thrown);
  } catch (const SnapshotError& x) {
    status = static_cast<std::uint8_t>(SnapshotStatus::kSnapshotError);
    error_code = static_cast<std::uint8_t>(x.code());
    error = x.what();
  } catch (const std::exception& x) {
    status = static_cast<std::uint8_t>(SnapshotStatus::kFailed);
    error = x.what();
  } catch (...) {
    status = static_cast<std::uint8_t>(SnapshotStatus::kFailed);
    error = "reheap: the snapshot threw an exception not derived from std::exception";
  }
}

namespace detail {
namespace {

const SnapshotRequest& request_of(const Envelope& e) noexcept {
  return *static_cast<const SnapshotRequest*>(e.payload());
}

std::string_view file_of(const Envelope& e) noexcept {
  const SnapshotRequest& r = request_of(e);
  return {reinterpret_cast<const char*>(&r + 1), r.file_size};
}

// Sends `done` to the requester in the target's name. An answer that cannot be delivered (the
// requester is gone, its bounded mailbox refuses, the runtime stops the reactors) is a dead letter.
void answer(RuntimeImpl& rt, ActorRef requester, const SnapshotDone& done) noexcept {
  SendResult result = SendResult::kOk;
  Envelope* e = encode(done, &result);
  if (send_as(rt, done.target, requester, e, result) != SendResult::kOk) {
    rt.dead_letters.fetch_add(1, std::memory_order_relaxed);
  }
}

// An answer for a request that never reached a save. System scope: the strings are process
// memory, whatever hook is running.
void answer_unsaved(RuntimeImpl& rt, ActorRef requester, SnapshotRequestId id, ActorRef target,
                    std::string_view file, SnapshotStatus status, std::string_view why) noexcept {
  HeapScope system(nullptr);
  try {
    SnapshotDone done;
    done.request = id;
    done.target = target;
    done.file = file;
    done.status = static_cast<std::uint8_t>(status);
    done.error = why;
    answer(rt, requester, done);
  } catch (...) {
    // No memory for the answer's strings: it is lost like an undeliverable one.
    rt.dead_letters.fetch_add(1, std::memory_order_relaxed);
  }
}

SnapshotStatus status_of(SendResult r) noexcept {
  switch (r) {
    case SendResult::kNoSuchReactor: return SnapshotStatus::kNoSuchReactor;
    case SendResult::kShuttingDown: return SnapshotStatus::kShuttingDown;
    default: return SnapshotStatus::kFailed;
  }
}

}  // namespace

void send_snapshot_request(Cell* requester, SnapshotRequestId id, ActorRef target,
                           const std::filesystem::path& file, SnapshotKind kind) noexcept {
  HeapScope system(nullptr);
  RuntimeImpl& rt = runtime_of(requester);
  const std::string& name = file.native();
  SendResult result = SendResult::kOk;
  Envelope* e = nullptr;
  if (name.size() > UINT32_MAX - sizeof(SnapshotRequest)) {
    result = SendResult::kEncodeFailed;
  } else {
    const std::size_t size = sizeof(SnapshotRequest) + name.size();
    e = allocate_envelope(size);
    if (e == nullptr) {
      result = SendResult::kNoMemory;
    } else {
      e->next = nullptr;
      e->receiver = 0;
      e->sender = 0;
      e->exchange = kPlainMessage;
      e->correlation = 0;
      e->type_id = static_cast<std::uint64_t>(SystemMessage::kSnapshot);
      e->size = static_cast<std::uint32_t>(size);
      e->encoding = Encoding::kSystem;
      auto* r = new (e->payload()) SnapshotRequest{&rt, requester->id.load(std::memory_order_relaxed),
                                                   id, static_cast<std::uint32_t>(name.size()), kind};
      if (!name.empty()) std::memcpy(r + 1, name.data(), name.size());
    }
  }
  result = send_envelope(requester, target, e, result);
  if (result == SendResult::kOk) return;
  answer_unsaved(rt, requester->ref(), id, target, name, status_of(result),
                 std::string("reheap: the snapshot request was not sent: ") + to_string(result));
}

void run_snapshot_request(Cell* target, const Envelope& e) noexcept {
  HeapScope system(nullptr);
  const SnapshotRequest& r = request_of(e);
  RuntimeImpl& rt = *r.runtime;
  try {
    SnapshotDone done;
    done.request = r.id;
    done.target = target->ref();
    done.file = file_of(e);
    try {
      done.set_saved(save_reactor(target, done.file, r.kind == SnapshotKind::kIncremental));
    } catch (...) {
      done.set_failure(std::current_exception());
    }
    answer(rt, ActorRef(r.requester), done);
  } catch (...) {
    rt.dead_letters.fetch_add(1, std::memory_order_relaxed);  // no memory for the answer
  }
}

void abandon_if_snapshot_request(const Envelope& e) noexcept {
  if (e.encoding != Encoding::kSystem ||
      e.type_id != static_cast<std::uint64_t>(SystemMessage::kSnapshot)) {
    return;
  }
  const SnapshotRequest& r = request_of(e);
  answer_unsaved(*r.runtime, ActorRef(r.requester), r.id, ActorRef(e.receiver), file_of(e),
                 SnapshotStatus::kTargetStopped,
                 "reheap: the target stopped before it reached the snapshot request");
}

}  // namespace detail
}  // namespace reheap
