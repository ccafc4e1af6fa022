// The sorted set commands: ZADD (NX XX GT LT CH INCR) ZINCRBY ZSCORE ZCARD ZRANGE (by index,
// BYSCORE or BYLEX; REV, LIMIT, WITHSCORES) ZREM ZPOPMIN ZPOPMAX ZRANK (WITHSCORE).
//
// Every change goes through set_score / remove_member below, which keep the two views of
// SortedSet (value.h) equal.
#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <vector>

#include "command_args.h"
#include "keyspace.h"
#include "reply.h"

namespace kv {

using detail::equals_ignoring_case;
using detail::parse_double;
using detail::parse_int64;
using detail::parse_index_pair;
using detail::parse_pop_count;

namespace {

void append_score(std::string& out, double score) {
  std::string text;
  detail::append_double_text(text, score);
  append_bulk(out, text);
}

// Inserts `member` with `score`, or moves it to `score`.
void set_score(SortedSet& zset, std::string_view member, double score) {
  auto it = zset.scores.find(member);
  if (it == zset.scores.end()) {
    it = zset.scores.emplace(std::string(member), score).first;
  } else {
    if (it->second == score) return;
    zset.order.erase({it->second, it->first});
    it->second = score;
  }
  zset.order.emplace(score, it->first);
}

bool remove_member(SortedSet& zset, std::string_view member) {
  auto it = zset.scores.find(member);
  if (it == zset.scores.end()) return false;
  zset.order.erase({it->second, it->first});
  zset.scores.erase(it);
  return true;
}

constexpr std::string_view kNanScoreError = "ERR resulting score is not a number (NaN)";

using Order = decltype(SortedSet::order);

// A BYSCORE bound: a score ("1.5", "-inf", "+inf"), exclusive with a '(' in front.
struct ScoreBound {
  double value = 0;
  bool exclusive = false;
};

bool parse_score_bound(std::string_view text, ScoreBound& bound) {
  bound.exclusive = !text.empty() && text[0] == '(';
  if (bound.exclusive) text.remove_prefix(1);
  return parse_double(text, bound.value);
}

bool score_range_is_empty(const ScoreBound& min, const ScoreBound& max) {
  return min.value > max.value || (min.value == max.value && (min.exclusive || max.exclusive));
}

// The first element of `order` inside `min`. Elements are ordered by score first, so it is a
// lookup of (the lowest score allowed, the lowest member); the lowest score above an exclusive
// bound is the next double up.
Order::const_iterator first_at_least(const Order& order, const ScoreBound& min) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (!min.exclusive) return order.lower_bound({min.value, std::string()});
  if (min.value == kInf) return order.end();
  return order.lower_bound({std::nextafter(min.value, kInf), std::string()});
}

// The first element of `order` past `max` (its end if none).
Order::const_iterator first_above(const Order& order, const ScoreBound& max) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (max.exclusive) return order.lower_bound({max.value, std::string()});
  if (max.value == kInf) return order.end();
  return order.lower_bound({std::nextafter(max.value, kInf), std::string()});
}

// A BYLEX bound: "-" and "+" (below and above every member), "[member" (inclusive) or
// "(member" (exclusive). Members compare as bytes (std::string_view compares as unsigned char,
// as Redis's memcmp does).
struct LexBound {
  std::string_view member;
  bool exclusive = false;
  int infinity = 0;  // -1 for "-", +1 for "+", 0 for a member
};

bool parse_lex_bound(std::string_view text, LexBound& bound) {
  if (text == "-" || text == "+") {
    bound.infinity = text == "-" ? -1 : 1;
    return true;
  }
  if (text.empty() || (text[0] != '[' && text[0] != '(')) return false;
  bound.exclusive = text[0] == '(';
  bound.member = text.substr(1);
  return true;
}

bool lex_at_least(std::string_view member, const LexBound& min) {
  if (min.infinity != 0) return min.infinity < 0;
  return min.exclusive ? member > min.member : member >= min.member;
}

bool lex_at_most(std::string_view member, const LexBound& max) {
  if (max.infinity != 0) return max.infinity > 0;
  return max.exclusive ? member < max.member : member <= max.member;
}

}  // namespace

void Keyspace::zadd(const Call& call) {
  bool nx = false, xx = false, gt = false, lt = false, ch = false, incr = false;
  std::size_t first_pair = 2;
  for (; first_pair < call.args.size(); ++first_pair) {
    const std::string_view flag = call.args[first_pair];
    if (equals_ignoring_case(flag, "nx")) nx = true;
    else if (equals_ignoring_case(flag, "xx")) xx = true;
    else if (equals_ignoring_case(flag, "gt")) gt = true;
    else if (equals_ignoring_case(flag, "lt")) lt = true;
    else if (equals_ignoring_case(flag, "ch")) ch = true;
    else if (equals_ignoring_case(flag, "incr")) incr = true;
    else break;
  }
  const std::size_t elements = call.args.size() - first_pair;
  if (elements == 0 || elements % 2 != 0) {
    append_error(call.out, kSyntaxError);
    return;
  }
  if (incr && elements > 2) {
    append_error(call.out, "ERR INCR option supports a single increment-element pair");
    return;
  }
  if (nx && xx) {
    append_error(call.out, "ERR XX and NX options at the same time are not compatible");
    return;
  }
  if ((gt && nx) || (lt && nx) || (gt && lt)) {
    append_error(call.out, "ERR GT, LT, and/or NX options at the same time are not compatible");
    return;
  }
  // All scores are checked before anything changes, so a bad one leaves the set untouched.
  std::vector<double> scores(elements / 2);
  for (std::size_t i = 0; i < scores.size(); ++i) {
    if (!parse_double(call.args[first_pair + 2 * i], scores[i])) {
      append_error(call.out, kNotFloatError);
      return;
    }
  }
  bool wrong = false;
  auto it = find_typed(call.args[1], ValueType::kSortedSet, call, wrong);
  if (wrong) return;
  if (it == table_.end()) {
    if (xx) {  // nothing can be added, so the key is not created
      if (incr) {
        append_null_bulk(call.out);
      } else {
        append_integer(call.out, 0);
      }
      return;
    }
    it = insert_new(call.args[1], ValueType::kSortedSet);
  }
  SortedSet& zset = it->second.zset();
  std::int64_t added = 0;
  std::int64_t updated = 0;
  bool incr_applied = false;
  double incr_result = 0;
  for (std::size_t i = 0; i < scores.size(); ++i) {
    const std::string_view member = call.args[first_pair + 2 * i + 1];
    double score = scores[i];
    auto current = zset.scores.find(member);
    if (current != zset.scores.end()) {
      if (nx) continue;
      const double old_score = current->second;
      if (incr) {
        score += old_score;
        if (std::isnan(score)) {
          append_error(call.out, kNanScoreError);
          erase_if_empty(it);
          return;
        }
      }
      if ((gt && score <= old_score) || (lt && score >= old_score)) continue;
      incr_applied = true;
      incr_result = score;
      if (score != old_score) {
        set_score(zset, member, score);
        ++updated;
      }
    } else {
      if (xx) continue;
      set_score(zset, member, score);
      ++added;
      incr_applied = true;
      incr_result = score;
    }
  }
  changes_ += static_cast<std::uint64_t>(added + updated);
  if (incr) {
    if (incr_applied) {
      append_score(call.out, incr_result);
    } else {
      append_null_bulk(call.out);
    }
  } else {
    append_integer(call.out, ch ? added + updated : added);
  }
  erase_if_empty(it);
}

void Keyspace::zincrby(const Call& call) {
  double delta = 0;
  if (!parse_double(call.args[2], delta)) {
    append_error(call.out, kNotFloatError);
    return;
  }
  bool wrong = false;
  auto it = find_typed(call.args[1], ValueType::kSortedSet, call, wrong);
  if (wrong) return;
  double score = delta;
  if (it != table_.end()) {
    const SortedSet& zset = it->second.zset();
    auto current = zset.scores.find(call.args[3]);
    if (current != zset.scores.end()) score += current->second;
  }
  if (std::isnan(score)) {
    append_error(call.out, kNanScoreError);
    return;
  }
  if (it == table_.end()) it = insert_new(call.args[1], ValueType::kSortedSet);
  set_score(it->second.zset(), call.args[3], score);
  ++changes_;
  append_score(call.out, score);
}

void Keyspace::zscore(const Call& call) {
  bool wrong = false;
  auto it = find_typed(call.args[1], ValueType::kSortedSet, call, wrong);
  if (wrong) return;
  if (it != table_.end()) {
    const SortedSet& zset = it->second.zset();
    auto current = zset.scores.find(call.args[2]);
    if (current != zset.scores.end()) {
      append_score(call.out, current->second);
      return;
    }
  }
  append_null_bulk(call.out);
}

void Keyspace::zcard(const Call& call) {
  bool wrong = false;
  auto it = find_typed(call.args[1], ValueType::kSortedSet, call, wrong);
  if (wrong) return;
  append_integer(call.out, it == table_.end() ? 0 : static_cast<std::int64_t>(it->second.zset().size()));
}

void Keyspace::zrange(const Call& call) {
  // The options as Redis 7.0 reads them: each once, LIMIT only with BYSCORE or BYLEX (its
  // defaults, LIMIT 0 -1, excepted) and WITHSCORES not with BYLEX.
  RangeBy by = RangeBy::kIndex;
  bool reverse = false;
  bool with_scores = false;
  std::int64_t offset = 0;
  std::int64_t count = -1;
  for (std::size_t i = 4; i < call.args.size(); ++i) {
    const std::string_view option = call.args[i];
    if (equals_ignoring_case(option, "withscores")) {
      with_scores = true;
    } else if (equals_ignoring_case(option, "limit") && i + 2 < call.args.size()) {
      if (!parse_int64(call.args[i + 1], offset) || !parse_int64(call.args[i + 2], count)) {
        append_error(call.out, kNotIntegerError);
        return;
      }
      i += 2;
    } else if (!reverse && equals_ignoring_case(option, "rev")) {
      reverse = true;
    } else if (by == RangeBy::kIndex && equals_ignoring_case(option, "byscore")) {
      by = RangeBy::kScore;
    } else if (by == RangeBy::kIndex && equals_ignoring_case(option, "bylex")) {
      by = RangeBy::kLex;
    } else {
      append_error(call.out, kSyntaxError);
      return;
    }
  }
  if (by == RangeBy::kIndex && (offset != 0 || count != -1)) {
    append_error(call.out, "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX");
    return;
  }
  if (by == RangeBy::kLex && with_scores) {
    append_error(call.out, "ERR syntax error, WITHSCORES not supported in combination with BYLEX");
    return;
  }
  if (by != RangeBy::kIndex) {
    zrange_by_value(call, by, reverse, with_scores, offset, count);
    return;
  }
  std::int64_t start = 0;
  std::int64_t stop = 0;
  if (!parse_index_pair(call.args, 2, call.out, start, stop)) return;
  bool wrong = false;
  auto it = find_typed(call.args[1], ValueType::kSortedSet, call, wrong);
  if (wrong) return;
  std::size_t first = 0;
  std::size_t last = 0;
  if (it == table_.end() ||
      !detail::resolve_range(start, stop, it->second.zset().size(), first, last)) {
    append_array_header(call.out, 0);
    return;
  }
  const SortedSet& zset = it->second.zset();
  const std::size_t n = last - first + 1;
  append_array_header(call.out, with_scores ? 2 * n : n);
  auto emit = [&](const std::pair<double, std::string>& element) {
    append_bulk(call.out, element.second);
    if (with_scores) append_score(call.out, element.first);
  };
  if (reverse) {
    auto rit = std::next(zset.order.rbegin(), static_cast<std::ptrdiff_t>(first));
    for (std::size_t i = 0; i < n; ++i, ++rit) emit(*rit);
  } else {
    auto fit = std::next(zset.order.begin(), static_cast<std::ptrdiff_t>(first));
    for (std::size_t i = 0; i < n; ++i, ++fit) emit(*fit);
  }
}

void Keyspace::zrange_by_value(const Call& call, RangeBy by, bool reverse, bool with_scores, std::int64_t offset,
                               std::int64_t count) {
  // REV takes the bounds the other way round: ZRANGE key max min BYSCORE REV.
  const std::string_view min_text = call.args[reverse ? 3 : 2];
  const std::string_view max_text = call.args[reverse ? 2 : 3];
  ScoreBound min_score{}, max_score{};
  LexBound min_lex{}, max_lex{};
  if (by == RangeBy::kScore &&
      (!parse_score_bound(min_text, min_score) || !parse_score_bound(max_text, max_score))) {
    append_error(call.out, "ERR min or max is not a float");
    return;
  }
  if (by == RangeBy::kLex && (!parse_lex_bound(min_text, min_lex) || !parse_lex_bound(max_text, max_lex))) {
    append_error(call.out, "ERR min or max not valid string range item");
    return;
  }
  bool wrong = false;
  auto it = find_typed(call.args[1], ValueType::kSortedSet, call, wrong);
  if (wrong) return;
  std::vector<const std::pair<double, std::string>*> picked;
  // [from, to) in the direction asked for: LIMIT skips `offset` of them and takes `count`, all
  // with a negative count; a negative offset is an empty range, as in Redis.
  const auto take = [&](auto from, auto to) {
    if (offset < 0) return;
    for (std::int64_t skip = offset; skip > 0 && from != to; --skip) ++from;
    for (std::int64_t left = count; from != to && left != 0; ++from, --left) picked.push_back(&*from);
  };
  if (it != table_.end()) {
    const Order& order = it->second.zset().order;
    if (by == RangeBy::kScore) {
      if (score_range_is_empty(min_score, max_score)) {
        append_array_header(call.out, 0);
        return;
      }
      const auto first = first_at_least(order, min_score);
      const auto last = first_above(order, max_score);
      if (reverse) {
        take(std::make_reverse_iterator(last), std::make_reverse_iterator(first));
      } else {
        take(first, last);
      }
    } else {
      // The members are in lexical order only among equal scores, which is what BYLEX is for (as
      // in Redis, a set of mixed scores gives an unspecified range); so the range is found by
      // walking, not by a lookup: the first member inside it, then up to the first outside.
      const auto at_least_min = [&](const auto& e) { return lex_at_least(e.second, min_lex); };
      const auto at_most_max = [&](const auto& e) { return lex_at_most(e.second, max_lex); };
      if (reverse) {
        const auto first = std::find_if(order.rbegin(), order.rend(), at_most_max);
        take(first, std::find_if_not(first, order.rend(), at_least_min));
      } else {
        const auto first = std::find_if(order.begin(), order.end(), at_least_min);
        take(first, std::find_if_not(first, order.end(), at_most_max));
      }
    }
  }
  append_array_header(call.out, with_scores ? 2 * picked.size() : picked.size());
  for (const std::pair<double, std::string>* element : picked) {
    append_bulk(call.out, element->second);
    if (with_scores) append_score(call.out, element->first);
  }
}

void Keyspace::zrem(const Call& call) {
  bool wrong = false;
  auto it = find_typed(call.args[1], ValueType::kSortedSet, call, wrong);
  if (wrong) return;
  std::int64_t removed = 0;
  if (it != table_.end()) {
    for (std::size_t i = 2; i < call.args.size(); ++i) {
      if (remove_member(it->second.zset(), call.args[i])) ++removed;
    }
    changes_ += static_cast<std::uint64_t>(removed);
    erase_if_empty(it);
  }
  append_integer(call.out, removed);
}

void Keyspace::zpop(const Call& call, bool max) {
  if (call.args.size() > 3) {
    append_error(call.out, kSyntaxError);
    return;
  }
  std::int64_t count = 1;
  if (!parse_pop_count(call.args, 2, call.out, count)) return;
  bool wrong = false;
  auto it = find_typed(call.args[1], ValueType::kSortedSet, call, wrong);
  if (wrong) return;
  if (it == table_.end()) {
    append_array_header(call.out, 0);
    return;
  }
  SortedSet& zset = it->second.zset();
  const std::size_t n = std::min(zset.size(), static_cast<std::size_t>(count));
  append_array_header(call.out, 2 * n);
  for (std::size_t i = 0; i < n; ++i) {
    auto element = max ? std::prev(zset.order.end()) : zset.order.begin();
    append_bulk(call.out, element->second);
    append_score(call.out, element->first);
    zset.scores.erase(element->second);
    zset.order.erase(element);
  }
  changes_ += n;
  erase_if_empty(it);
}

void Keyspace::zrank(const Call& call) {
  bool with_score = false;
  if (call.args.size() == 4 && equals_ignoring_case(call.args[3], "withscore")) {
    with_score = true;
  } else if (call.args.size() != 3) {
    append_error(call.out, kSyntaxError);
    return;
  }
  bool wrong = false;
  auto it = find_typed(call.args[1], ValueType::kSortedSet, call, wrong);
  if (wrong) return;
  if (it != table_.end()) {
    const SortedSet& zset = it->second.zset();
    auto current = zset.scores.find(call.args[2]);
    if (current != zset.scores.end()) {
      const auto position = zset.order.find({current->second, current->first});
      const auto rank = std::distance(zset.order.begin(), position);
      if (with_score) {
        append_array_header(call.out, 2);
        append_integer(call.out, rank);
        append_score(call.out, current->second);
      } else {
        append_integer(call.out, rank);
      }
      return;
    }
  }
  if (with_score) {
    append_null_array(call.out);
  } else {
    append_null_bulk(call.out);
  }
}

}  // namespace kv
