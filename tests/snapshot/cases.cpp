// The heap contents the snapshot tests save and restore (cases.h): the registry, the word
// pattern, and the container cases "map", "unordered", "poly" and "function".
#include "cases.h"

#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <typeinfo>
#include <unordered_map>

#include "cases_detail.h"
#include "reheap/heap_scope.h"

namespace reheap::snaptest {

std::uint64_t mix(std::uint64_t a, std::uint64_t b) {
  std::uint64_t x = (a + 0x9E3779B97F4A7C15ull) * 0xD6E8FEB86659FD93ull ^ (b + 0x632BE59BD9B4E019ull);
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 31;
  return x;
}

void fill_words(void* p, std::size_t bytes, std::uint64_t seed) {
  auto* out = static_cast<unsigned char*>(p);
  for (std::size_t i = 0; i < bytes; i += 8) {
    const std::uint64_t w = mix(seed, i);
    std::memcpy(out + i, &w, bytes - i < 8 ? bytes - i : 8);
  }
}

namespace {

using detail::kPage;

bool word_at(const unsigned char* in, std::size_t bytes, std::size_t i, std::uint64_t seed) {
  const std::uint64_t w = mix(seed, i);
  return std::memcmp(in + i, &w, bytes - i < 8 ? bytes - i : 8) == 0;
}

}  // namespace

bool words_intact(const void* p, std::size_t bytes, std::uint64_t seed) {
  const auto* in = static_cast<const unsigned char*>(p);
  for (std::size_t i = 0; i < bytes;) {
    if (!word_at(in, bytes, i, seed)) return false;
    const bool edge = i < kPage || i + kPage >= bytes;
    i += edge ? 8 : 512;
  }
  return true;
}

namespace {

using detail::Digest;
using detail::hash_string;

// ---- map: std::map<std::string, std::vector<int>> ----

struct MapRoot {
  std::map<std::string, std::vector<int>> m;
};

std::string map_key(std::uint64_t r) {
  std::string k = "key-" + std::to_string(r % 100000);
  if (r % 3 == 0) k.append(40, 'x');  // past the small-string buffer: a block of its own
  return k;
}

void* build_map(std::uint64_t seed) {
  auto* r = new MapRoot;
  for (std::uint64_t i = 0; i < 1500; ++i) {
    const std::uint64_t x = mix(seed, i);
    auto& v = r->m[map_key(x)];
    v.resize(x % 40);
    for (std::size_t j = 0; j < v.size(); ++j) v[j] = static_cast<int>(mix(x, j) & 0x7fffffff);
  }
  return r;
}

void mutate_map(void* root, std::uint64_t step) {
  auto& m = static_cast<MapRoot*>(root)->m;
  for (std::uint64_t i = 0; i < 50; ++i) {
    auto it = m.lower_bound(map_key(mix(step, i)));
    if (it != m.end()) m.erase(it);
  }
  for (std::uint64_t i = 0; i < 80; ++i) {
    m[map_key(mix(step, 1000 + i))].push_back(static_cast<int>(i));
  }
  for (std::uint64_t i = 0; i < 30; ++i) {
    auto it = m.lower_bound(map_key(mix(step, 2000 + i)));
    if (it != m.end()) it->second.resize((it->second.size() + 7) % 60, static_cast<int>(step));
  }
}

std::uint64_t digest_map(const void* root) {
  Digest d;
  const auto& m = static_cast<const MapRoot*>(root)->m;
  d.add(m.size());
  for (const auto& [k, v] : m) {
    d.add(k);
    d.add(v.size());
    for (int e : v) d.add(static_cast<std::uint64_t>(e));
  }
  return d.value();
}

// ---- unordered: std::unordered_map<std::string, std::string> ----

struct UnorderedRoot {
  std::unordered_map<std::string, std::string> m;
};

std::string unordered_value(std::uint64_t x) {
  return std::string(x % 100, static_cast<char>('a' + x % 26)) + std::to_string(x);
}

void* build_unordered(std::uint64_t seed) {
  auto* r = new UnorderedRoot;
  for (std::uint64_t i = 0; i < 12000; ++i) {
    const std::uint64_t x = mix(seed, i);
    r->m[std::string("u").append(std::to_string(x))] = unordered_value(x >> 7);
  }
  return r;
}

void mutate_unordered(void* root, std::uint64_t step) {
  auto& m = static_cast<UnorderedRoot*>(root)->m;
  std::uint64_t erased = 0;
  for (auto it = m.begin(); it != m.end() && erased < 500;) {
    if (mix(step, hash_string(it->first)) % 16 == 0) {
      it = m.erase(it);
      ++erased;
    } else {
      ++it;
    }
  }
  for (std::uint64_t i = 0; i < 700; ++i) {
    const std::uint64_t x = mix(step, 10000 + i);
    m[std::string("n").append(std::to_string(x))] = unordered_value(x);
  }
  for (auto& [k, v] : m) {
    if (mix(step + 1, hash_string(k)) % 40 == 0) v.append("+").append(std::to_string(step));
  }
}

std::uint64_t digest_unordered(const void* root) {
  // Iteration order depends on bucket history, so entries are combined order-independently.
  const auto& m = static_cast<const UnorderedRoot*>(root)->m;
  std::uint64_t sum = 0;
  for (const auto& [k, v] : m) sum += mix(hash_string(k), hash_string(v));
  return mix(sum, m.size());
}

// ---- poly: virtual functions, several derived types ----

struct Shape {
  virtual ~Shape() = default;
  virtual std::uint64_t area() const = 0;
  virtual std::string name() const = 0;
  virtual void scale(std::uint64_t k) = 0;
};

struct Circle final : Shape {
  explicit Circle(std::uint64_t radius) : r(radius) {}
  std::uint64_t area() const override { return 3 * r * r; }
  std::string name() const override { return "circle"; }
  void scale(std::uint64_t k) override { r *= k; }
  std::uint64_t r;
};

struct Rect : Shape {
  Rect(std::uint64_t width, std::uint64_t height) : w(width), h(height) {}
  std::uint64_t area() const override { return w * h; }
  std::string name() const override { return "rect"; }
  void scale(std::uint64_t k) override {
    w *= k;
    h += k;
  }
  std::uint64_t w, h;
};

struct Square final : Rect {
  explicit Square(std::uint64_t side) : Rect(side, side) {}
  std::uint64_t area() const override { return Rect::area() + 1; }
  std::string name() const override { return "square"; }
};

struct Label final : Shape {
  explicit Label(std::string t) : text(std::move(t)) {}
  std::uint64_t area() const override { return text.size(); }
  std::string name() const override { return "label:" + text; }
  void scale(std::uint64_t k) override { text.append(k % 5, '!'); }
  std::string text;
};

struct PolyRoot {
  std::vector<std::unique_ptr<Shape>> shapes;
};

std::unique_ptr<Shape> make_shape(std::uint64_t x) {
  switch (x % 4) {
    case 0: return std::make_unique<Circle>(x % 1000);
    case 1: return std::make_unique<Rect>(x % 77, (x >> 8) % 91);
    case 2: return std::make_unique<Square>(x % 300);
    default: return std::make_unique<Label>("shape number " + std::to_string(x));
  }
}

void* build_poly(std::uint64_t seed) {
  auto* r = new PolyRoot;
  for (std::uint64_t i = 0; i < 3000; ++i) r->shapes.push_back(make_shape(mix(seed, i)));
  return r;
}

void mutate_poly(void* root, std::uint64_t step) {
  auto& shapes = static_cast<PolyRoot*>(root)->shapes;
  for (std::uint64_t i = 0; i < 100; ++i) shapes[mix(step, i) % shapes.size()]->scale(2 + i % 3);
  for (std::uint64_t i = 0; i < 50; ++i) {
    shapes[mix(step, 100 + i) % shapes.size()] = make_shape(mix(step, 200 + i));
  }
  for (std::uint64_t i = 0; i < 50; ++i) shapes.push_back(make_shape(mix(step, 300 + i)));
  shapes.erase(shapes.begin() + static_cast<std::ptrdiff_t>(mix(step, 400) % 1000),
               shapes.begin() + static_cast<std::ptrdiff_t>(mix(step, 400) % 1000 + 20));
}

std::uint64_t digest_poly(const void* root) {
  Digest d;
  const auto& shapes = static_cast<const PolyRoot*>(root)->shapes;
  d.add(shapes.size());
  for (const auto& s : shapes) {
    d.add(s->name());
    d.add(s->area());
    d.add(typeid(*s).name());
    d.add(dynamic_cast<const Rect*>(s.get()) != nullptr ? 1 : 0);
  }
  return d.value();
}

// ---- function: std::function holding lambdas with captures ----

using Fn = std::function<std::uint64_t(std::uint64_t)>;

struct FunctionRoot {
  std::vector<Fn> fns;
};

std::uint64_t plain_function(std::uint64_t v) { return v * 31 + 7; }

Fn make_fn(std::uint64_t x) {
  switch (x % 6) {
    case 0: {
      const std::uint64_t a = x >> 8;  // fits in std::function's own buffer
      return [a](std::uint64_t v) { return v * a + 1; };
    }
    case 1: {
      const std::uint64_t a = x >> 3, b = x >> 9, c = x >> 17, e = x >> 29;  // a block of its own
      return [a, b, c, e](std::uint64_t v) { return ((v + a) ^ b) * c + e; };
    }
    case 2: {
      std::string s = "a string captured by value, number " + std::to_string(x);
      return [s](std::uint64_t v) {
        return v + s.size() * 131 + static_cast<unsigned char>(s[v % s.size()]);
      };
    }
    case 3: {
      auto shared = std::make_shared<std::vector<std::uint64_t>>();
      for (std::uint64_t i = 0; i < 1 + x % 50; ++i) shared->push_back(mix(x, i));
      return [shared](std::uint64_t v) { return (*shared)[v % shared->size()] ^ v; };
    }
    case 4:
      return &plain_function;
    default: {
      Fn inner = make_fn(mix(x, 1) / 6 * 6 + 1);  // a lambda holding another std::function
      return [inner, x](std::uint64_t v) { return inner(v + x) * 3; };
    }
  }
}

void* build_function(std::uint64_t seed) {
  auto* r = new FunctionRoot;
  for (std::uint64_t i = 0; i < 2000; ++i) r->fns.push_back(make_fn(mix(seed, i)));
  return r;
}

void mutate_function(void* root, std::uint64_t step) {
  auto& fns = static_cast<FunctionRoot*>(root)->fns;
  for (std::uint64_t i = 0; i < 100; ++i) fns[mix(step, i) % fns.size()] = make_fn(mix(step, 500 + i));
  for (std::uint64_t i = 0; i < 50; ++i) fns.push_back(make_fn(mix(step, 900 + i)));
  for (int i = 0; i < 10; ++i) fns.pop_back();
}

std::uint64_t digest_function(const void* root) {
  Digest d;
  const auto& fns = static_cast<const FunctionRoot*>(root)->fns;
  d.add(fns.size());
  for (const auto& f : fns) {
    d.add(static_cast<bool>(f) ? 1 : 0);
    for (std::uint64_t v : {0ull, 1ull, 12345ull}) d.add(f(v));
  }
  return d.value();
}

}  // namespace

const std::vector<Case>& all_cases() {
  static const std::vector<Case> cases = {
      {"map", build_map, mutate_map, digest_map},
      {"unordered", build_unordered, mutate_unordered, digest_unordered},
      {"poly", build_poly, mutate_poly, digest_poly},
      {"function", build_function, mutate_function, digest_function},
      detail::graph_case(),
      detail::huge_case(),
      detail::gens_case(),
  };
  return cases;
}

const Case& find_case(std::string_view name) {
  for (const Case& c : all_cases()) {
    if (c.name == name) return c;
  }
  throw std::invalid_argument("no snapshot test case named " + std::string(name));
}

void* build_in(Heap& heap, const Case& c, std::uint64_t seed) {
  HeapScope scope(heap);
  void* root = c.build(seed);
  heap.set_root(root);
  return root;
}

void mutate_in(Heap& heap, const Case& c, std::uint64_t step) {
  HeapScope scope(heap);
  c.mutate(heap.root(), step);
}

std::uint64_t digest_of(const Heap& heap, const Case& c) { return c.digest(heap.root()); }

}  // namespace reheap::snaptest