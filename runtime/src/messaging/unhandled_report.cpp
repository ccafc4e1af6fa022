// UnhandledReport (see unhandled_report.h), and LiveHost::count_unhandled, which feeds it.
#include "messaging/unhandled_report.h"

#include <cxxabi.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>

#include "reactor/live_host.h"
#include "reheap/heap_scope.h"
#include "reheap/runtime.h"
#include "runtime_impl.h"
#include "scheduling/worker.h"

namespace reheap::detail {
namespace {

std::string demangled(const char* name) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(name, nullptr, nullptr, &status),
                                             std::free);
  return status == 0 && out ? std::string(out.get()) : std::string(name);
}

}  // namespace

void UnhandledReport::note(const RuntimeConfig& config, const Reactor& reactor, ActorRef ref,
                           std::uint64_t message_type) noexcept {
  const std::type_index reactor_type(typeid(reactor));
  {
    std::lock_guard lock(mutex_);
    try {
      if (!reported_.emplace(reactor_type, message_type).second) return;
    } catch (...) {
      return;  // out of memory: the count still holds it
    }
  }
  try {
    UnhandledMessage report;
    report.reactor = ref;
    report.reactor_type = demangled(reactor_type.name());
    report.message_type_id = message_type;
    report.message_type = message_type_name_of(message_type);
    if (report.message_type.empty()) {
      char id[32];
      std::snprintf(id, sizeof id, "type id 0x%016llx", static_cast<unsigned long long>(message_type));
      report.message_type = id;
    }
    if (config.on_unhandled) {
      config.on_unhandled(report);
    } else {
      std::fprintf(stderr,
                   "reheap: reactor %s (ActorRef 0x%llx) has no handler for messages of type %s; they are "
                   "counted in ReactorStats::unhandled (reported once per reactor and message type)\n",
                   report.reactor_type.c_str(), static_cast<unsigned long long>(ref.value()),
                   report.message_type.c_str());
    }
  } catch (...) {
    // A report that cannot be built or whose hook throws must not fail the reactor.
  }
}

void LiveHost::count_unhandled(const Reactor& reactor, const Message& message) noexcept {
  cell_->stats.unhandled++;
  HeapScope system(nullptr);  // the report is process memory, not the reactor's
  worker_.runtime().unhandled.note(worker_.runtime().config, reactor,
                                   ActorRef(cell_->id.load(std::memory_order_relaxed)),
                                   message.type_id());
}

}  // namespace reheap::detail
