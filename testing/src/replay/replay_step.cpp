// Replay: one recorded event delivered, checked and, when it departs from the recording,
// reported (see replay.h, "Divergence" and "Failures").
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <new>
#include <typeinfo>

#include "../caught_exception.h"
#include "messaging/envelope.h"        // runtime/src
#include "reactor/reactor_access.h"  // runtime/src
#include "reheap/heap_digest.h"
#include "reheap/heap_scope.h"
#include "replay/record_text.h"  // runtime/src
#include "replay_impl.h"
#include "state_diff.h"

namespace reheap::testing {

using reheap::detail::ReactorAccess;

namespace {

constexpr std::size_t kPagesListed = 16;  // in a state divergence's report

DivergenceKind divergence_kind(detail::CallMismatch m) noexcept {
  switch (m) {
    case detail::CallMismatch::kOutput:
      return DivergenceKind::kOutput;
    case detail::CallMismatch::kMissingOutput:
      return DivergenceKind::kMissingOutput;
    case detail::CallMismatch::kExtraOutput:
      return DivergenceKind::kExtraOutput;
  }
  return DivergenceKind::kOutput;
}

std::string digest_text(std::uint64_t d) {
  char text[40];
  std::snprintf(text, sizeof text, "heap digest 0x%016llx", static_cast<unsigned long long>(d));
  return text;
}

}  // namespace

std::string Replay::Impl::state_line() const {
  if (!compare_state) return state_note;
  if (last_state_match) {
    return "the heap matched the recording after event " + std::to_string(*last_state_match) +
           " (the last state digest compared before this event)";
  }
  return "no state digest was compared before this event";
}

std::string Replay::Impl::page_differences(std::uint64_t event) {
  for (const detail::StartPoint& start : starts) {
    if (start.events != event) continue;
    try {
      return detail::describe_page_differences(start.file, *heap, kPagesListed);
    } catch (const std::exception& x) {
      return "the recorded snapshot " + start.file.string() + " could not be compared: " + x.what();
    }
  }
  return "not known: no snapshot of the recorded run after event " + std::to_string(event) +
         " was given (ReplayOptions::snapshots); with one, the differing pages and offsets are listed here";
}

void Replay::Impl::throw_divergence(DivergenceKind kind, const std::string& expected, const std::string& actual,
                                    const detail::RecordedLogEvent& e) {
  const HeapScope system(nullptr);
  const std::string event = "event " + std::to_string(e.index) + " (" + detail::describe_input(e.input) + ")";
  std::string report = "reheap::testing::Replay of " + path.string() + " diverged at " + event + ": " +
                       to_string(kind) + "\n  expected (recorded): " + expected +
                       "\n  actual (replayed):   " + actual;
  if (kind == DivergenceKind::kState) {
    report += "\n  state: the heap after event " + std::to_string(e.index) + " differs from the recorded one; " +
              (last_state_match ? "it matched after event " + std::to_string(*last_state_match)
                                : std::string("no earlier digest was compared")) + ".\n  pages: " +
              page_differences(e.index);
  } else {
    report += "\n  state: " + state_line();
  }
  report += "\n  reproduce: reheap::testing::Replay::open(\"" + path.string() + "\"), run_to(" +
            std::to_string(e.index - 1) + ") to stand just before it, then step()";
  stopped = "diverged at event " + std::to_string(e.index);
  throw Divergence(kind, e.index, static_cast<EventKind>(e.input.kind), expected, actual, report);
}

void Replay::Impl::take_sends() {
  const HeapScope system(nullptr);
  for (detail::SentMessage& s : host->sends()) {
    sends.push_back(ReplayedSend{s.event, s.to, s.type_id, s.encoding, std::move(s.payload), s.result});
  }
  host->sends().clear();
}

void Replay::Impl::deliver_next() {
  const detail::RecordedLogEvent& e = log.at(position + 1);
  const LogRecord& in = e.input;
  const detail::RecordedInput input(in);
  if (in.kind == RecordKind::kTimer) {
    // A one-shot timer is spent once it fires; a periodic one is re-armed for a period.
    const HeapScope system(nullptr);
    auto& armed = host->armed_timers();
    const auto it = armed.find(in.id);
    if (it != armed.end()) {
      if (it->second.period.count() == 0) {
        armed.erase(it);
      } else {
        it->second.delay = it->second.period;
      }
    }
  }

  const bool lenient = !options.check_outputs || e.failed;
  host->begin(e, *reactor, lenient);
  chunks->begin(e);
  if (in.kind == RecordKind::kAccept) host->socket_seen(in.connection);  // the runtime minted it
  std::optional<detail::CaughtException> threw;
  {
    const HeapScope current(*heap);
    const HostScope door(host.get(), reactor);
    ReactorAccess::events(*reactor)++;
    try {
      deliver_to(*reactor, input.event());
    } catch (const detail::AbortEvent&) {
      // A divergence: the host wrote it down.
    } catch (...) {
      // The exception may live in the reactor's heap: copy its text out and let it go here.
      const HeapScope system(nullptr);
      threw = detail::caught_exception();
    }
  }
  position = e.index;
  // The recorded digest was taken right after the hook, before the runtime wrote into the heap
  // for a snapshot (outside_state), which comes next as it came in the recording.
  std::optional<std::uint64_t> digest;
  if (compare_state && e.state_digest) digest = portable_digests ? state_digest(*heap) : used_pages_digest(*heap);
  if (!threw && !host->divergence() && !e.outside.empty()) {
    const HeapScope current(*heap);
    for (const LogRecord& outside : e.outside) detail::rewrite_outside_state(*reactor, outside);
  }
  chunks->end();
  {
    const HeapScope system(nullptr);
    for (std::string& note : chunks->take_notes()) {
      if (std::find(warnings.begin(), warnings.end(), note) == warnings.end()) warnings.push_back(std::move(note));
    }
  }
  // Before anything the hook did after it: the allocation that asked for the chunk failed.
  if (const auto& refusal = chunks->refusal()) {
    stopped = "the recorded chunks could not be taken at event " + std::to_string(e.index);
    detail::throw_refusal(*refusal, log.where, heap->id());
  }
  if (!host->divergence() && !threw) host->finish();
  take_sends();
  if (const auto& note = host->divergence()) throw_divergence(divergence_kind(note->kind), note->expected, note->actual, e);

  const HeapScope system(nullptr);
  if (threw) {
    if (e.failed) {
      stopped = "the recorded failure recurred at event " + std::to_string(e.index);
      throw ReplayedFailure(ReactorFailure::Details{.reactor = log.header.actor,
                                                    .name = {},  // a recording does not keep it
                                                    .reactor_type = detail::type_name(typeid(*reactor)),
                                                    .hook = hook_name(input.event().kind),
                                                    .exception_type = threw->type,
                                                    .what = threw->what},
                            e.index, e.failed_hook, e.failed_what);
    }
    throw_divergence(DivergenceKind::kFailure, "the hook returned",
                     std::string(hook_name(input.event().kind)) + " threw" +
                                                (threw->type.empty() ? "" : " " + threw->type) + ": " + threw->what,
                     e);
  }
  if (digest) {
    if (*digest != *e.state_digest) {
      throw_divergence(DivergenceKind::kState, digest_text(*e.state_digest), digest_text(*digest), e);
    }
    last_state_match = e.index;
  }
}

}  // namespace reheap::testing
