// TestRuntime: spawning, the door every event goes through, and the order of delivery (see
// test_runtime.h).
#include "reheap/testing/test_runtime.h"

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <utility>

#include "reactor/reactor_access.h"  // runtime/src: self()
#include "reheap/heap_scope.h"
#include "test_runtime_impl.h"

namespace reheap::testing {

using detail::Entry;
using detail::ReactorState;
using reheap::detail::Envelope;
using reheap::detail::ReactorAccess;

namespace {

// The two streams of one seed: the constants only make them differ from each other.
constexpr std::uint64_t kEntropyStream = 0x656E74726F707921ull;
constexpr std::uint64_t kShuffleStream = 0x73687566666C6521ull;

// Frees a message when the step that took it is over, thrown out of or not.
struct EnvelopeOwner {
  Envelope* envelope;
  ~EnvelopeOwner() {
    if (envelope != nullptr) reheap::detail::free_envelope(envelope);
  }
};

}  // namespace

TestRuntime::Impl::Impl(const TestRuntimeConfig& c)
    : config(c),
      clock(c.system_epoch, c.steady_epoch),
      entropy(c.seed ^ kEntropyStream),
      shuffle(c.seed ^ kShuffleStream),
      host(clock, entropy, *this) {}

namespace {
bool minted_here(ActorRef ref, std::uint32_t origin) noexcept {
  return ref.origin() == (origin & ((1u << ActorRef::kOriginBits) - 1)) && ref.generation() == 1 && ref.slot() != 0;
}
}  // namespace

Entry* TestRuntime::Impl::find(ActorRef ref) noexcept {
  if (!restored.empty()) [[unlikely]] {
    if (auto it = restored.find(ref.value()); it != restored.end()) return entries[it->second].get();
  }
  if (!minted_here(ref, config.origin)) return nullptr;
  const std::uint32_t slot = ref.slot();
  if (slot > entries.size()) return nullptr;
  Entry* e = entries[slot - 1].get();
  return e != nullptr && e->ref == ref ? e : nullptr;
}

void TestRuntime::Impl::deliver(Entry& e, const Event& event, ActorRef sender) {
  std::optional<ReactorFailure> failure = host.deliver(*e.heap, *e.reactor, e.ref, e.options.name, event, sender);
  ++events;
  // Snapshots asked for during the hook are taken now that it has returned, so that a reactor
  // snapshotting itself is saved between two of its events, as on a worker.
  run_snapshot_jobs();
  if (failure) [[unlikely]] {
    // As the runtime's kStop: no on_stop, its state is suspect. A failing on_stop still stops.
    if (event.kind == EventKind::kStop) {
      destroy(e, true);
    } else {
      e.state = ReactorState::kFailed;
      drop_timers(e.ref);
    }
    if (config.failures == FailurePolicy::kRethrow) throw *failure;
    failures.push_back(std::move(*failure));
    return;
  }
  if (event.kind == EventKind::kStop) destroy(e, true);
}

void TestRuntime::Impl::destroy(Entry& e, bool run_destructor) noexcept {
  drop_timers(e.ref);
  if (e.reactor != nullptr && run_destructor) {
    const HeapScope heap(e.heap.get());
    try {
      delete e.reactor;
    } catch (...) {
      // A throwing destructor: the heap goes anyway.
    }
  }
  e.reactor = nullptr;
  e.snapshotter.reset();
  e.heap.reset();
  e.state = ReactorState::kStopped;
}

void TestRuntime::Impl::drop_timers(ActorRef owner) noexcept {
  std::erase_if(timers, [owner](const detail::Timer& t) { return t.owner == owner; });
}

std::size_t TestRuntime::Impl::pick_message() {
  if (config.order == MessageOrder::kFifo || messages.size() == 1) return 0;
  // The candidates are the heads of the (sender, receiver) channels, in send order: the oldest
  // message of each, since taking any other would overtake one of its own channel. A scan of the
  // whole queue per message: a test's queues are short, and the order is plain to read.
  std::vector<std::size_t> heads;
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const detail::PendingMessage& m = messages[i];
    const bool seen = std::any_of(heads.begin(), heads.end(), [&](std::size_t h) {
      return messages[h].from == m.from && messages[h].to == m.to;
    });
    if (!seen) heads.push_back(i);
  }
  if (heads.size() == 1) return heads.front();
  return heads[shuffle.below(heads.size())];
}

bool TestRuntime::Impl::step() { return step_start_or_stop() || step_message(); }

bool TestRuntime::Impl::step_start_or_stop() {
  while (!stops.empty()) {
    const ActorRef ref = stops.front();
    stops.pop_front();
    Entry* e = find(ref);
    if (e == nullptr || e->state != ReactorState::kStopping) continue;
    deliver(*e, Event{.kind = EventKind::kStop}, ActorRef());
    return true;
  }
  while (!starts.empty()) {
    const ActorRef ref = starts.front();
    starts.pop_front();
    Entry* e = find(ref);
    if (e == nullptr || e->state != ReactorState::kUnstarted) continue;
    e->state = ReactorState::kLive;
    if (e->restored) {
      start_restored(*e);
    } else {
      deliver(*e, Event{.kind = EventKind::kStart}, ActorRef());
    }
    return true;
  }
  return false;
}

bool TestRuntime::Impl::step_message() {
  while (!messages.empty()) {
    if (deliver_message(pick_message())) return true;
  }
  return false;
}

bool TestRuntime::Impl::deliver_message(std::size_t index) {
  const detail::PendingMessage m = messages[index];
  messages.erase(messages.begin() + static_cast<std::ptrdiff_t>(index));
  const EnvelopeOwner owner{m.envelope};
  Entry* e = find(m.to);
  if (e == nullptr || e->state != ReactorState::kLive) {
    if (m.envelope != nullptr) ++dead_letters;  // a stop request for a reactor gone is no loss
    return false;
  }
  if (m.envelope == nullptr) {  // the test's stop request
    e->state = ReactorState::kStopping;
    deliver(*e, Event{.kind = EventKind::kStop}, ActorRef());
    return true;
  }
  const Message message = reheap::detail::MessageAccess::of(*m.envelope);
  if (watch != nullptr) [[unlikely]] watch->delivering(m, message);
  deliver(*e, Event{.kind = EventKind::kMessage, .message = &message}, m.from);
  return true;
}

bool TestRuntime::Impl::fire_next_timer(std::chrono::nanoseconds limit, std::size_t* delivered) {
  if (timers.empty() || timers.begin()->due > limit) return false;
  detail::Timer t = *timers.begin();
  timers.erase(timers.begin());
  clock.advance_to(t.due);
  if (t.period.count() > 0) {
    // Re-armed before the hook, so that the hook may cancel it.
    detail::Timer next = t;
    next.due += t.period;
    timers.insert(next);
  }
  Entry* e = find(t.owner);
  if (e != nullptr && e->state == ReactorState::kLive) {
    deliver(*e, Event{.kind = EventKind::kTimer, .timer = t.id}, ActorRef());
    if (delivered != nullptr) ++*delivered;
  }
  return true;
}

std::size_t TestRuntime::Impl::advance_to(std::chrono::nanoseconds target) {
  if (target < clock.elapsed()) throw std::logic_error("reheap::testing::TestRuntime::advance: time cannot go backwards");
  std::size_t n = 0;
  while (step()) ++n;
  while (fire_next_timer(target, &n)) {
    while (step()) ++n;
  }
  clock.advance_to(target);
  return n;
}

// ---- HostOutputs: called from inside hooks ----

SendResult TestRuntime::Impl::send(ActorRef self, ActorRef to, Envelope* envelope) {
  const HeapScope system(nullptr);
  Entry* e = find(to);
  if (e == nullptr || e->state == ReactorState::kStopped || e->state == ReactorState::kFailed) {
    reheap::detail::free_envelope(envelope);
    return SendResult::kNoSuchReactor;
  }
  envelope->next = nullptr;
  envelope->sender = self.value();
  envelope->receiver = to.value();
  try {
    messages.push_back(detail::PendingMessage{self, to, envelope});
  } catch (...) {
    reheap::detail::free_envelope(envelope);
    return SendResult::kNoMemory;
  }
  return SendResult::kOk;
}

ActorRef TestRuntime::Impl::spawn(ActorRef, const SpawnOptions& options, ReactorHost::Construct construct,
                                  void* arguments) {
  HeapPtr heap;
  {
    const HeapScope system(nullptr);
    if (entries.size() >= (std::size_t{1} << ActorRef::kSlotBits) - 1) {
      throw std::length_error("reheap::testing::TestRuntime::spawn: no slot left");
    }
    entries.reserve(entries.size() + 1);  // so that the push_back below cannot throw
    heap = Heap::create(HeapConfig{options.heap_limit});
  }
  Reactor* reactor = nullptr;
  try {
    const HeapScope scope(heap.get());
    reactor = construct(arguments);
  } catch (...) {
    const HeapScope system(nullptr);
    if (heap->stats().live_bytes != 0) abandoned.push_back(std::move(heap));
    throw;
  }
  reheap::detail::require_reactor_in_heap(heap, reactor, "reheap::testing::TestRuntime::spawn");
  return admit(std::move(heap), reactor, options, false);
}

ActorRef TestRuntime::Impl::admit(HeapPtr heap, Reactor* reactor, const SpawnOptions& options, bool is_restored) {
  const HeapScope system(nullptr);
  auto entry = std::make_unique<Entry>();
  if (is_restored) {
    // A restored reactor keeps its reference. One this runtime could have minted takes its own
    // slot (padding the table), so that no later spawn mints it again; any other is found
    // through `restored`. Either way, two reactors with one reference are refused.
    entry->ref = ReactorAccess::self(*reactor);
    const std::uint32_t slot = entry->ref.slot();
    if (find(entry->ref) != nullptr || (minted_here(entry->ref, config.origin) && slot <= entries.size())) {
      throw std::logic_error("reheap::testing::TestRuntime::restore: reference " +
                             std::to_string(entry->ref.value()) + " is taken in this runtime");
    }
    if (minted_here(entry->ref, config.origin)) {
      entries.resize(slot - 1);
    } else {
      restored.emplace(entry->ref.value(), entries.size());
    }
  } else {
    entry->ref = ActorRef::make(config.origin, static_cast<std::uint32_t>(entries.size() + 1), 1);
    ReactorAccess::self(*reactor) = entry->ref;
    heap->set_root(reactor);
  }
  entry->options = options;
  entry->restored = is_restored;
  entry->heap = std::move(heap);
  entry->reactor = reactor;
  const ActorRef ref = entry->ref;
  entries.push_back(std::move(entry));
  starts.push_back(ref);
  return ref;
}

void TestRuntime::Impl::stop(ActorRef self) {
  const HeapScope system(nullptr);
  Entry* e = find(self);
  if (e == nullptr || e->state != ReactorState::kLive) return;
  e->state = ReactorState::kStopping;
  stops.push_back(self);
}

void TestRuntime::Impl::start_timer(ActorRef self, TimerId id, std::chrono::nanoseconds delay,
                                    std::chrono::nanoseconds period) {
  const HeapScope system(nullptr);
  timers.insert(detail::Timer{clock.elapsed() + delay, id, self, period});
}

void TestRuntime::Impl::cancel_timer(ActorRef self, TimerId id) {
  const HeapScope system(nullptr);
  std::erase_if(timers, [&](const detail::Timer& t) { return t.owner == self && t.id == id; });
}

// ---- TestRuntime ----

TestRuntime::TestRuntime(TestRuntimeConfig config) : impl_(std::make_unique<Impl>(config)) {}

TestRuntime::~TestRuntime() {
  // on_stop in spawn order for every started reactor; failures are collected, never thrown here.
  impl_->config.failures = FailurePolicy::kCollect;
  // By index: an on_stop may still spawn, which grows the table (the child is destroyed below,
  // never started).
  auto& entries = impl_->entries;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    Entry* e = entries[i].get();
    if (e == nullptr) continue;  // a slot left free before a restored reactor
    if (e->state == ReactorState::kLive || e->state == ReactorState::kStopping) {
      e->state = ReactorState::kStopping;
      impl_->deliver(*e, Event{.kind = EventKind::kStop}, ActorRef());
    }
  }
  for (auto& e : entries) {
    if (e == nullptr) continue;
    // A failed reactor's state is suspect: its heap goes without its destructor, as on a worker.
    impl_->destroy(*e, e->state != ReactorState::kFailed);
  }
  for (const detail::PendingMessage& m : impl_->messages) {
    if (m.envelope != nullptr) reheap::detail::free_envelope(m.envelope);
  }
}

using Use = detail::ExclusiveUse::Scope;

ActorRef TestRuntime::spawn_constructed(const SpawnOptions& options, ReactorHost::Construct construct,
                                        void* arguments) {
  Use use(impl_->use, "TestRuntime::spawn");
  return impl_->spawn(ActorRef(), options, construct, arguments);
}

SendResult TestRuntime::send_envelope(ActorRef from, ActorRef to, Envelope* envelope) {
  std::optional<Use> use;
  try {
    use.emplace(impl_->use, "TestRuntime::send");
  } catch (...) {
    reheap::detail::free_envelope(envelope);  // refused before it was sent: the message is ours
    throw;
  }
  return impl_->send(from, to, envelope);
}

bool TestRuntime::step() {
  Use use(impl_->use, "TestRuntime::step");
  return impl_->step();
}

std::size_t TestRuntime::run() {
  Use use(impl_->use, "TestRuntime::run");
  std::size_t n = 0;
  while (impl_->step()) ++n;
  return n;
}

bool TestRuntime::run_until(const std::function<bool()>& pred) {
  Use use(impl_->use, "TestRuntime::run_until");
  for (;;) {
    if (pred()) return true;
    if (!impl_->step()) return pred();
  }
}

bool TestRuntime::deliver(ActorRef ref, const Event& event) {
  Use use(impl_->use, "TestRuntime::deliver");
  Entry* e = impl_->find(ref);
  if (e == nullptr || e->state != ReactorState::kLive) return false;
  const ActorRef sender = event.kind == EventKind::kMessage && event.message != nullptr ? event.message->sender() : ActorRef();
  impl_->deliver(*e, event, sender);
  return true;
}

bool TestRuntime::stop(ActorRef ref) {
  Use use(impl_->use, "TestRuntime::stop");
  Entry* e = impl_->find(ref);
  if (e == nullptr) return false;
  if (e->state == ReactorState::kUnstarted) {
    // Never started: nothing to tell it, as on a worker.
    impl_->destroy(*e, true);
    return true;
  }
  if (e->state != ReactorState::kLive) return false;
  // In the order of the test's messages to it, as Runtime::stop's system message is.
  impl_->messages.push_back(detail::PendingMessage{ActorRef(), ref, nullptr});
  return true;
}

std::chrono::system_clock::time_point TestRuntime::now() const noexcept { return impl_->clock.system_now(); }
std::chrono::steady_clock::time_point TestRuntime::steady_now() const noexcept {
  return impl_->clock.steady_now();
}

std::size_t TestRuntime::advance(std::chrono::nanoseconds duration) {
  Use use(impl_->use, "TestRuntime::advance");
  return impl_->advance_to(impl_->clock.elapsed() + duration);
}

std::size_t TestRuntime::advance_to(std::chrono::steady_clock::time_point when) {
  Use use(impl_->use, "TestRuntime::advance_to");
  return impl_->advance_to(std::chrono::duration_cast<std::chrono::nanoseconds>(when - impl_->config.steady_epoch));
}

std::optional<std::chrono::steady_clock::time_point> TestRuntime::next_timer() const {
  if (impl_->timers.empty()) return std::nullopt;
  return impl_->config.steady_epoch +
         std::chrono::duration_cast<std::chrono::steady_clock::duration>(impl_->timers.begin()->due);
}

void TestRuntime::run_until_received(ActorRef probe, std::uint64_t type_id, std::chrono::nanoseconds timeout) {
  Use use(impl_->use, "TestRuntime::run_until_received");
  const std::chrono::nanoseconds deadline = impl_->clock.elapsed() + timeout;
  auto received = [&] {
    const auto& records = reactor<Probe>(probe).records();
    return std::any_of(records.begin(), records.end(),
                       [type_id](const Probe::Record& r) { return r.type_id == type_id; });
  };
  for (;;) {
    if (run_until(received)) return;
    if (impl_->timers.empty() || impl_->timers.begin()->due > deadline) {
      impl_->advance_to(deadline);
      return;
    }
    impl_->advance_to(impl_->timers.begin()->due);
  }
}

void TestRuntime::retire(ActorRef ref) {
  Use use(impl_->use, "TestRuntime::retire");
  if (Entry* e = impl_->find(ref)) impl_->destroy(*e, true);
}

Reactor& TestRuntime::reactor_base(ActorRef ref) {
  Entry* e = impl_->find(ref);
  if (e == nullptr || e->reactor == nullptr) {
    throw std::out_of_range("reheap::testing::TestRuntime: no reactor " + std::to_string(ref.value()));
  }
  return *e->reactor;
}

Heap& TestRuntime::heap(ActorRef ref) {
  Entry* e = impl_->find(ref);
  if (e == nullptr || !e->heap) {
    throw std::out_of_range("reheap::testing::TestRuntime: no heap for " + std::to_string(ref.value()));
  }
  return *e->heap;
}

bool TestRuntime::alive(ActorRef ref) const noexcept {
  const Entry* e = impl_->find(ref);
  return e != nullptr && (e->state == ReactorState::kUnstarted || e->state == ReactorState::kLive ||
                          e->state == ReactorState::kStopping);
}

std::size_t TestRuntime::pending() const noexcept {
  return impl_->starts.size() + impl_->stops.size() + impl_->messages.size();
}

std::uint64_t TestRuntime::events_delivered() const noexcept { return impl_->events; }
std::uint64_t TestRuntime::dead_letters() const noexcept { return impl_->dead_letters; }
const std::vector<ReactorFailure>& TestRuntime::failures() const noexcept { return impl_->failures; }

}  // namespace reheap::testing
