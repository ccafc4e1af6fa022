// The message type registry: which type owns each message type id in this process (message.h).
//
// Ids are hashes of type names, and a name does not always name one type: types in anonymous
// namespaces of two files, or one reheap_message_name given to two types. Without this registry
// such a message would be delivered to the other type's handler, reading its bytes as another
// layout. A type registers on its first handle<>() or send (message_type_owns_id caches the
// answer per type), so the registry's lock is taken once per type, never per message.
//
// Names are a second, separate list: every message type whose handling or sending code is in the
// program is noted at program start (MessageTypeNameNote), so that a report of a recorded message
// can name its type in a process that never handled or sent it (a replay). A note owns nothing:
// ownership, and so which type is refused, stays with the first type handled or sent.
#include <algorithm>
#include <cstdio>
#include <mutex>
#include <stdexcept>
#include <string>
#include <typeinfo>
#include <unordered_map>
#include <vector>

#include "reactor/type_name.h"
#include "reheap/heap_scope.h"
#include "reheap/message.h"

namespace reheap::detail {
namespace {

struct TypeRegistry {
  std::mutex mutex;
  std::unordered_map<std::uint64_t, const std::type_info*> owners;
  // Every distinct type of each id the program holds, in the order noted (usually one).
  std::unordered_map<std::uint64_t, std::vector<const std::type_info*>> noted;
};

// Made on first use and never destroyed: a send during static destruction still finds it.
TypeRegistry& registry() {
  static TypeRegistry* r = new TypeRegistry;
  return *r;
}

}  // namespace

bool claim_message_type(std::uint64_t id, const std::type_info& type) noexcept {
  HeapScope system(nullptr);  // the registry is the process's, not the current reactor's
  TypeRegistry& r = registry();
  std::lock_guard lock(r.mutex);
  try {
    const auto [it, inserted] = r.owners.try_emplace(id, &type);
    // type_info's == is the language's type identity: one type seen from two shared libraries
    // compares equal, two anonymous-namespace types of one name do not.
    return inserted || *it->second == type;
  } catch (const std::bad_alloc&) {
    return false;  // cannot record an owner: refuse rather than risk a clash going unseen
  }
}

bool note_message_type_name(std::uint64_t id, const std::type_info& type) noexcept {
  HeapScope system(nullptr);
  TypeRegistry& r = registry();
  std::lock_guard lock(r.mutex);
  try {
    std::vector<const std::type_info*>& types = r.noted[id];
    const bool known = std::any_of(types.begin(), types.end(), [&](const std::type_info* t) { return *t == type; });
    if (!known) types.push_back(&type);
    return true;
  } catch (const std::bad_alloc&) {
    return false;  // the type goes unnamed in reports; nothing else depends on the note
  }
}

std::string message_type_name_of(std::uint64_t id) {
  HeapScope system(nullptr);
  std::vector<const std::type_info*> types;
  {
    TypeRegistry& r = registry();
    std::lock_guard lock(r.mutex);
    if (const auto owner = r.owners.find(id); owner != r.owners.end()) {
      types.push_back(owner->second);
    } else if (const auto noted = r.noted.find(id); noted != r.noted.end()) {
      types = noted->second;
    }
  }
  // Sorted, so that a report reads the same whatever order the program's parts were loaded in.
  std::vector<std::string> names;
  for (const std::type_info* type : types) names.push_back(type_name(*type));
  std::sort(names.begin(), names.end());
  std::string joined;
  for (const std::string& name : names) joined += (joined.empty() ? "" : " or ") + name;
  return joined;
}

void throw_message_type_clash(std::uint64_t id, std::string_view name) {
  HeapScope system(nullptr);  // the exception's text must not land in the current reactor's heap
  char hex[24];
  std::snprintf(hex, sizeof hex, "%#llx", static_cast<unsigned long long>(id));
  throw std::logic_error("reheap: message type '" + std::string(name) + "' (id " + hex +
                         ") names another type of this program that was handled or sent first "
                         "(types in anonymous namespaces of two files, or one "
                         "reheap_message_name given twice): message type ids are hashes of "
                         "names, so give one of them a reheap_message_name or a named namespace");
}

}  // namespace reheap::detail
