// TestRuntime's checks: expect and expect_none, and the text of what they found (see
// message_check.h for the choice of semantics, test_runtime.h "Checks" for the order).
#include "reheap/testing/message_check.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "messaging/envelope.h"   // runtime/src
#include "replay/record_text.h"  // runtime/src: render_payload
#include "reheap/heap_scope.h"
#include "reheap/testing/test_runtime.h"
#include "test_runtime_impl.h"
#include "reactor/type_name.h"  // runtime/src

namespace reheap::testing {

using detail::Entry;
using detail::PendingMessage;
using reheap::detail::MessageAccess;

namespace detail {
std::string payload_text(Encoding encoding, const void* data, std::size_t size) {
  return reheap::detail::replay::render_payload(encoding, data, size);
}
}  // namespace detail

namespace {

constexpr std::size_t kListed = 10;  // messages listed in one failure message, at most

// "150 ms", "2 s", "1500 us", "7 ns": the largest unit that divides it.
std::string span_text(std::chrono::nanoseconds span) {
  const long long ns = span.count();
  if (ns != 0 && ns % 1000000000 == 0) return std::to_string(ns / 1000000000) + " s";
  if (ns != 0 && ns % 1000000 == 0) return std::to_string(ns / 1000000) + " ms";
  if (ns != 0 && ns % 1000 == 0) return std::to_string(ns / 1000) + " us";
  return std::to_string(ns) + " ns";
}

// A message type by its C++ name, or by its id when this program has no type of that id.
std::string type_text(std::uint64_t type_id) {
  std::string name = reheap::detail::message_type_name_of(type_id);
  return name.empty() ? reheap::detail::replay::type_text(type_id) : name;
}

}  // namespace

// The checks' code: a friend of TestRuntime, so that it reads the queues and names the reactors.
class detail::MessageChecks {
 public:
  using Impl = TestRuntime::Impl;
  static detail::CheckOutcome next(Impl& rt, const detail::CheckSpec& spec, bool timed, std::chrono::nanoseconds within);
  static detail::CheckOutcome none(Impl& rt, const detail::CheckSpec& spec, std::chrono::nanoseconds within);

 private:
  class Describer;
  class Watch;
};

namespace {
bool fits_addresses(const detail::CheckSpec& spec, const PendingMessage& m);
bool fits_content(const detail::CheckSpec& spec, const Message& message, void* value, std::string* why);
std::string listing(const std::vector<std::string>& lines, std::size_t total);
}  // namespace

// The things a check names, with the runtime's reactors at hand.
class detail::MessageChecks::Describer {
 public:
  explicit Describer(Impl& rt) : rt_(rt) {}

  // "the test", or "reactor 4294967297 (bank::Bank "main")".
  std::string ref(ActorRef r) const {
    if (!r) return "the test";
    std::string out = "reactor " + std::to_string(r.value());
    const Entry* e = rt_.find(r);
    if (e == nullptr || e->reactor == nullptr) return out;
    out += " (" + reheap::detail::type_name(typeid(*e->reactor));
    if (!e->options.name.empty()) out += " \"" + e->options.name + "\"";
    return out + ")";
  }

  // "bank::Receipt [\"alice\",500] from reactor ... to reactor ..."
  std::string message(const PendingMessage& m) const {
    if (m.envelope == nullptr) return "the test's stop request (TestRuntime::stop) for " + ref(m.to);
    const Message message = MessageAccess::of(*m.envelope);
    return type_text(message.type_id()) + " " + detail::payload_text(message.encoding(), message.data(), message.size()) +
           " from " + ref(m.from) + " to " + ref(m.to);
  }

  // "bank::Receipt from S to R satisfying a predicate", "message to R" (of any type)
  std::string expected(const detail::CheckSpec& spec) const {
    std::string out = spec.any_type ? "message" : type_text(spec.type_id);
    if (spec.from) out += " from " + ref(*spec.from);
    if (spec.to) out += " to " + ref(*spec.to);
    if (spec.predicate_text != nullptr && !spec.predicate_text->empty()) out += " " + *spec.predicate_text;
    return out;
  }

  // The time since `start`, as a listing shows it: "+100 ms".
  std::string at(std::chrono::nanoseconds start) const {
    std::string out = "+";  // appended, not `"+" + text`: GCC 12 warns wrongly on that (bug 105329)
    out += span_text(rt_.clock.elapsed() - start);
    return out;
  }

 private:
  Impl& rt_;
};

namespace {

bool fits_addresses(const detail::CheckSpec& spec, const PendingMessage& m) {
  return (!spec.from || *spec.from == m.from) && (!spec.to || *spec.to == m.to);
}

// Whether a message fits the pattern's type and predicate; why not in `*why`. A predicate that
// throws is a message that does not fit, and says so.
bool fits_content(const detail::CheckSpec& spec, const Message& message, void* value, std::string* why) {
  if (spec.any_type) return true;
  if (message.type_id() != spec.type_id) {
    *why = "its type is not " + type_text(spec.type_id);
    return false;
  }
  try {
    return spec.accepts(spec.pattern, message, value, why);
  } catch (const std::exception& e) {
    *why = std::string("the predicate threw ") + reheap::detail::type_name(typeid(e)) + ": " + e.what();
    return false;
  }
}

std::string listing(const std::vector<std::string>& lines, std::size_t total) {
  std::string out;
  for (const std::string& line : lines) out += "\n  " + line;
  if (total > lines.size()) out += "\n  ... and " + std::to_string(total - lines.size()) + " more";
  return out;
}

}  // namespace

// Sits in Impl::watch while a check runs, so that every message delivered meanwhile is seen:
// expect lists them when the message it looks for does not come, expect_none keeps those that
// fit its pattern.
class detail::MessageChecks::Watch final : public detail::DeliveryWatch {
 public:
  Watch(Impl& rt, const Describer& describe, const detail::CheckSpec* only)
      : rt_(rt), describe_(describe), only_(only), start_(rt.clock.elapsed()) {
    rt_.watch = this;
  }
  ~Watch() { rt_.watch = nullptr; }
  Watch(const Watch&) = delete;
  Watch& operator=(const Watch&) = delete;

  void delivering(const PendingMessage& m, const Message& message) override {
    const HeapScope system(nullptr);
    if (only_ != nullptr) {
      std::string why;
      if (!fits_addresses(*only_, m) || !fits_content(*only_, message, nullptr, &why)) {
        ++others_;
        return;
      }
    }
    if (seen_.size() < kListed) seen_.push_back(describe_.message(m) + " at " + describe_.at(start_));
    ++count_;
  }
  void detach() noexcept { rt_.watch = nullptr; }

  const std::vector<std::string>& seen() const noexcept { return seen_; }
  std::size_t count() const noexcept { return count_; }
  std::size_t others() const noexcept { return others_; }

 private:
  Impl& rt_;
  const Describer& describe_;
  const detail::CheckSpec* only_;  // expect_none's pattern; null: every message
  std::chrono::nanoseconds start_;
  std::vector<std::string> seen_;  // the first kListed, described
  std::size_t count_ = 0;
  std::size_t others_ = 0;
};

detail::CheckOutcome TestRuntime::check_next(const CheckSpec& spec, bool timed, std::chrono::nanoseconds within) {
  detail::ExclusiveUse::Scope use(impl_->use, "TestRuntime::expect");
  return detail::MessageChecks::next(*impl_, spec, timed, within);
}

detail::CheckOutcome TestRuntime::check_none(const CheckSpec& spec, std::chrono::nanoseconds within) {
  detail::ExclusiveUse::Scope use(impl_->use, "TestRuntime::expect_none");
  return detail::MessageChecks::none(*impl_, spec, within);
}

detail::CheckOutcome detail::MessageChecks::next(Impl& rt, const CheckSpec& spec, bool timed,
                                                 std::chrono::nanoseconds within) {
  const HeapScope system(nullptr);
  const Describer describe(rt);
  const std::chrono::nanoseconds deadline = rt.clock.elapsed() + within;
  Watch meanwhile(rt, describe, nullptr);
  const std::string expected = (spec.any_type ? "expected a " : "expected ") + describe.expected(spec);
  for (;;) {
    if (rt.step_start_or_stop()) continue;
    const auto it = std::find_if(rt.messages.begin(), rt.messages.end(),
                                 [&](const PendingMessage& m) { return fits_addresses(spec, m); });
    if (it != rt.messages.end()) {
      const PendingMessage m = *it;
      const std::string found = describe.message(m);
      std::string why = "the test's stop request comes first";
      const bool fits = m.envelope != nullptr && fits_content(spec, MessageAccess::of(*m.envelope), spec.value, &why);
      std::string before;
      if (meanwhile.count() > 0) {
        before = "\nbefore it, these " + std::to_string(meanwhile.count()) + " arrived:" +
                 listing(meanwhile.seen(), meanwhile.count());
      }
      if (!fits) return {false, expected + "\nthe next one is " + found + ": " + why + before, m.from, m.to};
      meanwhile.detach();  // the message looked for is no "meanwhile"
      if (!rt.deliver_message(static_cast<std::size_t>(it - rt.messages.begin()))) {
        return {false, expected + "\nthe next one fits, " + found + ", but its receiver is gone: a dead letter" + before,
                m.from, m.to};
      }
      return {true, "delivered " + found, m.from, m.to};
    }
    if (rt.step_message()) continue;
    if (timed && rt.fire_next_timer(deadline, nullptr)) continue;
    if (timed) rt.clock.advance_to(deadline);
    std::string text = expected + (timed ? " within " + span_text(within) : std::string()) + "\nno such message";
    if (!timed && !rt.timers.empty()) text += " (timers are armed: give expect a span to let them fire)";
    if (meanwhile.count() == 0) return {false, text + "; nothing arrived instead", {}, {}};
    return {false,
            text + "; these " + std::to_string(meanwhile.count()) + " arrived instead:" +
                listing(meanwhile.seen(), meanwhile.count()),
            {},
            {}};
  }
}

detail::CheckOutcome detail::MessageChecks::none(Impl& rt, const CheckSpec& spec, std::chrono::nanoseconds within) {
  const HeapScope system(nullptr);
  const Describer describe(rt);
  const std::string expected = "expected no " + describe.expected(spec) + " within " + span_text(within);
  Watch fitting(rt, describe, &spec);
  rt.advance_to(rt.clock.elapsed() + within);
  const std::string others = std::to_string(fitting.others()) + " other message" + (fitting.others() == 1 ? "" : "s");
  if (fitting.count() == 0) return {true, expected + ": none came (" + others + " did)", {}, {}};
  return {false,
          expected + "\n" + std::to_string(fitting.count()) + " came (and " + others + "):" +
              listing(fitting.seen(), fitting.count()),
          {},
          {}};
}

}  // namespace reheap::testing
