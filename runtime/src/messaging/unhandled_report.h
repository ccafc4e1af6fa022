// UnhandledReport: a message no handler took is reported once per (reactor type, message type)
// and runtime, to RuntimeConfig::on_unhandled or, without one, as one line on stderr. Later ones
// of the same pair are only counted (ReactorStats::unhandled): a reactor that ignores a type on
// purpose costs one line, not one per message. The model is CAF's default handler, which prints
// the unexpected message; printing every one would flood a log under load.
#pragma once

#include <cstdint>
#include <mutex>
#include <set>
#include <string>
#include <typeindex>
#include <utility>

#include "reheap/actor_ref.h"

namespace reheap {
class Reactor;
struct RuntimeConfig;
}  // namespace reheap

namespace reheap::detail {

class UnhandledReport {
 public:
  // On the reactor's worker, with no heap current; the first time for its pair only.
  void note(const RuntimeConfig& config, const Reactor& reactor, ActorRef ref,
            std::uint64_t message_type) noexcept;

 private:
  std::mutex mutex_;
  std::set<std::pair<std::type_index, std::uint64_t>> reported_;
};

}  // namespace reheap::detail
