// Keyspace: construction, dispatch, the table's helpers and the expiry that all families share.
#include "keyspace.h"

#include "reply.h"

namespace kv {

Keyspace::Keyspace(std::uint32_t shard, std::uint32_t shard_count)
    : shard_(shard), shard_count_(shard_count == 0 ? 1 : shard_count) {
  // Any fixed function of the arguments will do, as long as the state is never zero (xorshift's
  // one fixed point). Different shards draw different sequences.
  random_state_ = detail::mix((std::uint64_t{shard} << 32) ^ shard_count_ ^ detail::kHashSeed) | 1;
}

void Keyspace::execute(Args args, std::int64_t now_ms, std::string& out) {
  if (args.empty()) {
    append_error(out, "ERR empty command");
    return;
  }
  const CommandSpec* spec = find_command(args[0]);
  if (spec == nullptr) {
    out += "-ERR unknown command '";
    out += args[0];
    out += "', with args beginning with: ";
    for (std::size_t i = 1; i < args.size(); ++i) {
      out += '\'';
      out += args[i];
      out += "' ";
    }
    out += "\r\n";
    return;
  }
  if (!arity_ok(*spec, args.size())) {
    append_wrong_arity(out, spec->name);
    return;
  }
  const Call call{args, now_ms, out};
  switch (spec->id) {
    case CommandId::kGet: return get(call);
    case CommandId::kSet: return set(call);
    case CommandId::kSetnx: return setnx(call);
    case CommandId::kSetex: return setex(call, 1000);
    case CommandId::kPsetex: return setex(call, 1);
    case CommandId::kGetset: return getset(call);
    case CommandId::kGetdel: return getdel(call);
    case CommandId::kMget: return mget(call);
    case CommandId::kMset: return mset(call);
    case CommandId::kMsetnx: return msetnx(call);
    case CommandId::kAppend: return append(call);
    case CommandId::kStrlen: return strlen(call);
    case CommandId::kIncr: return incr_by(call, 1);
    case CommandId::kDecr: return incr_by(call, -1);
    case CommandId::kIncrby: return incr_by_argument(call, false);
    case CommandId::kDecrby: return incr_by_argument(call, true);

    case CommandId::kDel:
    case CommandId::kUnlink: return del(call);
    case CommandId::kExists:
    case CommandId::kTouch: return exists(call);
    case CommandId::kType: return type(call);
    case CommandId::kExpire: return expire(call, 1000, false);
    case CommandId::kPexpire: return expire(call, 1, false);
    case CommandId::kExpireat: return expire(call, 1000, true);
    case CommandId::kPexpireat: return expire(call, 1, true);
    case CommandId::kTtl: return ttl(call, 1000);
    case CommandId::kPttl: return ttl(call, 1);
    case CommandId::kPersist: return persist(call);
    case CommandId::kKeys: return keys(call);
    case CommandId::kScan: return scan(call);
    case CommandId::kDbsize: return append_integer(out, static_cast<std::int64_t>(key_count()));
    case CommandId::kFlushdb:
    case CommandId::kFlushall: return flush(call);
    case CommandId::kRandomkey: return randomkey(call);
    case CommandId::kRename: return rename(call);
    case CommandId::kDebug: return debug(call);

    case CommandId::kLpush: return push(call, true, false);
    case CommandId::kRpush: return push(call, false, false);
    case CommandId::kLpushx: return push(call, true, true);
    case CommandId::kRpushx: return push(call, false, true);
    case CommandId::kLpop: return pop(call, true);
    case CommandId::kRpop: return pop(call, false);
    case CommandId::kLlen: return llen(call);
    case CommandId::kLrange: return lrange(call);
    case CommandId::kLindex: return lindex(call);
    case CommandId::kLset: return lset(call);
    case CommandId::kLrem: return lrem(call);
    case CommandId::kLtrim: return ltrim(call);

    case CommandId::kSadd: return sadd(call);
    case CommandId::kSrem: return srem(call);
    case CommandId::kScard: return scard(call);
    case CommandId::kSismember: return sismember(call);
    case CommandId::kSmembers: return smembers(call);
    case CommandId::kSpop: return spop(call);
    case CommandId::kSrandmember: return srandmember(call);

    case CommandId::kHset: return hset(call, false);
    case CommandId::kHmset: return hset(call, true);
    case CommandId::kHsetnx: return hsetnx(call);
    case CommandId::kHget: return hget(call);
    case CommandId::kHmget: return hmget(call);
    case CommandId::kHdel: return hdel(call);
    case CommandId::kHlen: return hlen(call);
    case CommandId::kHstrlen: return hget(call, true);
    case CommandId::kHgetall: return hgetall(call, true, true);
    case CommandId::kHkeys: return hgetall(call, true, false);
    case CommandId::kHvals: return hgetall(call, false, true);
    case CommandId::kHexists: return hexists(call);
    case CommandId::kHincrby: return hincrby(call);

    case CommandId::kZadd: return zadd(call);
    case CommandId::kZincrby: return zincrby(call);
    case CommandId::kZscore: return zscore(call);
    case CommandId::kZcard: return zcard(call);
    case CommandId::kZrange: return zrange(call);
    case CommandId::kZrem: return zrem(call);
    case CommandId::kZpopmin: return zpop(call, false);
    case CommandId::kZpopmax: return zpop(call, true);
    case CommandId::kZrank: return zrank(call);

    case CommandId::kBgsave: case CommandId::kClient: case CommandId::kCommand:
    case CommandId::kConfig: case CommandId::kEcho: case CommandId::kHello:
    case CommandId::kInfo: case CommandId::kLastsave: case CommandId::kPing:
    case CommandId::kQuit: case CommandId::kSave: case CommandId::kSelect:
      break;
  }
  out += "-ERR '";
  out += spec->name;
  out += "' is answered by the connection, not by a shard\r\n";
}

Keyspace::Table::iterator Keyspace::find_live(std::string_view key, std::int64_t now_ms) {
  auto it = table_.find(key);
  if (it != table_.end() && it->second.expire_at_ms <= now_ms) [[unlikely]] {
    erase(it);
    ++changes_;
    return table_.end();
  }
  return it;
}

Keyspace::Table::iterator Keyspace::find_typed(std::string_view key, ValueType type,
                                               const Call& call, bool& wrong) {
  auto it = find_live(key, call.now_ms);
  wrong = it != table_.end() && it->second.type() != type;
  if (wrong) append_error(call.out, kWrongTypeError);
  return it;
}

Keyspace::Table::iterator Keyspace::insert_new(std::string_view key, ValueType type) {
  Entry entry;
  switch (type) {
    case ValueType::kString: break;
    case ValueType::kList: entry.value = std::make_unique<List>(); break;
    case ValueType::kSet: entry.value = std::make_unique<Set>(); break;
    case ValueType::kHash: entry.value = std::make_unique<Hash>(); break;
    case ValueType::kSortedSet: entry.value = std::make_unique<SortedSet>(); break;
  }
  return table_.emplace(std::string(key), std::move(entry)).first;
}

void Keyspace::erase(Table::iterator it) {
  if (it->second.expire_at_ms != kNoExpiry) {
    expiry_order_.erase({it->second.expire_at_ms, std::string_view(it->first)});
  }
  table_.erase(it);
}

bool Keyspace::erase_key(std::string_view key) {
  auto it = table_.find(key);
  if (it == table_.end()) return false;
  erase(it);
  return true;
}

void Keyspace::set_expiry(Table::iterator it, std::int64_t expire_at_ms) {
  Entry& entry = it->second;
  if (entry.expire_at_ms == expire_at_ms) return;
  const std::string_view key(it->first);
  if (entry.expire_at_ms != kNoExpiry) expiry_order_.erase({entry.expire_at_ms, key});
  entry.expire_at_ms = expire_at_ms;
  if (expire_at_ms != kNoExpiry) expiry_order_.emplace(expire_at_ms, key);
}

void Keyspace::erase_if_empty(Table::iterator it) {
  bool empty = false;
  switch (it->second.type()) {
    case ValueType::kString: break;
    case ValueType::kList: empty = it->second.list().empty(); break;
    case ValueType::kSet: empty = it->second.set().empty(); break;
    case ValueType::kHash: empty = it->second.hash().empty(); break;
    case ValueType::kSortedSet: empty = it->second.zset().size() == 0; break;
  }
  if (empty) erase(it);
}

std::uint64_t Keyspace::next_random() {
  // xorshift64*: small, fast, and its whole state is one word inside the object.
  random_state_ ^= random_state_ >> 12;
  random_state_ ^= random_state_ << 25;
  random_state_ ^= random_state_ >> 27;
  return random_state_ * 0x2545f4914f6cdd1dULL;
}

bool Keyspace::is_mine(std::string_view key) const { return shard_of(key, shard_count_) == shard_; }

std::size_t Keyspace::expire_due(std::int64_t now_ms, std::size_t budget) {
  std::size_t deleted = 0;
  while (deleted < budget && !expiry_order_.empty() && expiry_order_.begin()->first <= now_ms) {
    const std::string_view key = expiry_order_.begin()->second;
    erase_key(key);  // also removes the expiry_order_ entry
    ++deleted;
  }
  changes_ += deleted;
  return deleted;
}

std::int64_t Keyspace::next_expiry() const {
  return expiry_order_.empty() ? kNoExpiry : expiry_order_.begin()->first;
}

std::uint64_t Keyspace::used_bytes_estimate() const {
  // Node: next pointer + key string + entry + cached hash, plus one malloc header each; a string
  // counts its heap buffer only when it is longer than the in-place capacity.
  constexpr std::uint64_t kNodeBytes = sizeof(void*) + sizeof(std::string) + sizeof(Entry) + 16;
  constexpr std::uint64_t kElementBytes = sizeof(void*) + sizeof(std::string) + 16;
  auto heap_bytes = [](const std::string& s) -> std::uint64_t {
    return s.capacity() > 15 ? s.capacity() + 1 + 8 : 0;
  };
  std::uint64_t total = table_.bucket_count() * sizeof(void*) + expiry_order_.size() * 64;
  for (const auto& [key, entry] : table_) {
    total += kNodeBytes + heap_bytes(key);
    switch (entry.type()) {
      case ValueType::kString:
        total += heap_bytes(std::get<std::string>(entry.value));
        break;
      case ValueType::kList:
        for (const auto& s : *std::get<std::unique_ptr<List>>(entry.value)) {
          total += sizeof(std::string) + heap_bytes(s);
        }
        break;
      case ValueType::kSet:
        for (const auto& s : *std::get<std::unique_ptr<Set>>(entry.value)) {
          total += kElementBytes + heap_bytes(s);
        }
        break;
      case ValueType::kHash:
        for (const auto& [field, value] : *std::get<std::unique_ptr<Hash>>(entry.value)) {
          total += kElementBytes + sizeof(std::string) + heap_bytes(field) + heap_bytes(value);
        }
        break;
      case ValueType::kSortedSet:
        for (const auto& [member, score] : std::get<std::unique_ptr<SortedSet>>(entry.value)->scores) {
          (void)score;
          total += 2 * (kElementBytes + sizeof(double)) + 2 * heap_bytes(member) + 32;
        }
        break;
    }
  }
  return total;
}

}  // namespace kv
