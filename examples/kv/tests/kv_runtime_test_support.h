// Test support for the kv tests that run shards and the saver in a real reheap::Runtime: a proxy
// reactor that forwards the test thread's commands to shards (or the saver) and hands their replies
// back, a sink the replies land in, temporary directories, and small RESP helpers.
//
// The sink lives in the test's memory, outside every reactor heap: the proxy copies each reply
// into it under the system allocator (HeapScope(nullptr)), so the test may read and free them
// after the reactors are gone. The proxy is never snapshotted, so its raw pointer to the sink is
// fine here (it would not be in a reactor restored in another process).
#pragma once

#include <stdlib.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <msgpack.hpp>

#include "key_hash.h"
#include "manifest.h"
#include "protocol.h"
#include "reheap/heap_scope.h"
#include "reheap/runtime.h"

namespace kv::testing {

// Sanitized builds run about ten times slower: every wait below is a bound, not a pace.
inline constexpr std::chrono::seconds kPatience{60};

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "reheap-kv-test-XXXXXX").string();
    if (::mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// The replies the proxy got, by the id of the call they answer.
class ReplySink {
 public:
  void add(std::uint64_t id, std::string_view reply) {
    reheap::HeapScope system(nullptr);  // called from the proxy's hook: not in its heap
    std::lock_guard lock(mutex_);
    replies_[id] = std::string(reply);
    cv_.notify_all();
  }
  bool wait_count(std::size_t n, std::chrono::milliseconds timeout = kPatience) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, timeout, [&] { return replies_.size() >= n; });
  }
  bool wait_id(std::uint64_t id, std::chrono::milliseconds timeout = kPatience) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, timeout, [&] { return replies_.count(id) != 0; });
  }
  std::string reply(std::uint64_t id) {
    std::lock_guard lock(mutex_);
    const auto it = replies_.find(id);
    return it == replies_.end() ? std::string("<no reply>") : it->second;
  }
  std::map<std::uint64_t, std::string> replies() {
    std::lock_guard lock(mutex_);
    return replies_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::map<std::uint64_t, std::string> replies_;
};

// What the test thread asks the proxy: send `args` to `target` as ShardRequest `id`.
struct Call {
  static constexpr std::string_view reheap_message_name = "kv::testing::Call";
  std::uint64_t id = 0;
  reheap::ActorRef target;
  std::vector<std::string> args;
  MSGPACK_DEFINE(id, target, args)
};

// Plays a gateway: forwards each Call in the order it came (so per-target FIFO holds from the
// test's order of calls) and puts every ShardReply in the sink.
class Proxy : public reheap::Reactor {
 public:
  explicit Proxy(ReplySink* sink) : sink_(sink) {
    handle<&Proxy::on_call>();
    handle<&Proxy::on_reply>();
  }

 private:
  void on_call(const Call& call) { send(call.target, ShardRequest{.request = call.id, .args = call.args}); }
  void on_reply(const ShardReply& reply) { sink_->add(reply.request, reply.reply); }

  ReplySink* sink_;
};

// The key written by write `w` of a stream, and its value.
inline std::string stream_key(std::uint64_t w) { return "k" + std::to_string(w % 64); }
inline std::string stream_value(std::uint64_t w) { return std::to_string(w); }
inline constexpr std::uint32_t kStreamKeys = 64;

// "$3\r\nabc\r\n" -> "abc"; "$-1\r\n" -> nothing (kMissing); anything else -> "<bad: ...>".
inline constexpr std::string_view kMissing = "<missing>";
inline std::string bulk_value(std::string_view reply) {
  if (reply == "$-1\r\n") return std::string(kMissing);
  const std::size_t eol = reply.find("\r\n");
  if (reply.empty() || reply[0] != '$' || eol == std::string_view::npos) return "<bad: " + std::string(reply) + ">";
  const std::size_t length = std::stoul(std::string(reply.substr(1, eol - 1)));
  if (reply.size() != eol + 2 + length + 2) return "<bad: " + std::string(reply) + ">";
  return std::string(reply.substr(eol + 2, length));
}

// Restores each shard of the saved set in `dir` (as main.cpp does: the last file of each chain).
inline std::vector<reheap::ActorRef> restore_saved_set(reheap::Runtime& rt, const std::filesystem::path& dir,
                                                       std::uint32_t shard_count) {
  std::vector<reheap::ActorRef> shards;
  const std::optional<Manifest> manifest = read_manifest(dir);
  if (!manifest || manifest->shards != shard_count) return shards;
  for (std::uint32_t i = 0; i < manifest->shards; ++i) {
    reheap::ReactorRestoreOptions options;
    options.worker = static_cast<int>(i % 2);
    options.spawn.name = "shard " + std::to_string(i);
    shards.push_back(rt.restore(dir / manifest->chains[i].back(), options));
  }
  return shards;
}

// The shard files (shard-*.snap) in `dir`.
inline std::set<std::string> shard_files_in(const std::filesystem::path& dir) {
  std::set<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("shard-", 0) == 0 && entry.path().extension() == ".snap") names.insert(name);
  }
  return names;
}

}  // namespace kv::testing
