// The cases of block-heavy and pointer-heavy state (cases.h): "graph", "huge" and "gens".
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "cases_detail.h"
#include "reheap/heap_scope.h"

namespace reheap::snaptest::detail {
namespace {

// ---- graph: nodes with pointers forming cycles ----

struct Node {
  std::uint64_t id = 0;
  std::uint64_t payload = 0;
  Node* next = nullptr;  // a ring through every node
  std::vector<Node*> edges;
};

struct GraphRoot {
  std::vector<Node*> nodes;
  Node* entry = nullptr;
  std::uint64_t next_id = 0;
};

void* build_graph(std::uint64_t seed) {
  auto* g = new GraphRoot;
  constexpr std::size_t kNodes = 4000;
  for (std::size_t i = 0; i < kNodes; ++i) {
    g->nodes.push_back(new Node);
    g->nodes.back()->id = g->next_id++;
    g->nodes.back()->payload = mix(seed, i);
  }
  for (std::size_t i = 0; i < kNodes; ++i) {
    Node* n = g->nodes[i];
    n->next = g->nodes[(i + 1) % kNodes];
    for (std::uint64_t e = 0; e < n->payload % 4; ++e) {
      n->edges.push_back(g->nodes[mix(n->payload, e) % kNodes]);  // self loops included
    }
  }
  g->entry = g->nodes[0];
  return g;
}

void mutate_graph(void* root, std::uint64_t step) {
  auto* g = static_cast<GraphRoot*>(root);
  for (std::uint64_t i = 0; i < 200; ++i) g->nodes[mix(step, i) % g->nodes.size()]->payload ^= step;
  for (std::uint64_t i = 0; i < 20; ++i) {  // insert into the ring, with edges both ways
    Node* after = g->nodes[mix(step, 300 + i) % g->nodes.size()];
    auto* n = new Node;
    n->id = g->next_id++;
    n->payload = mix(step, 400 + i);
    n->next = after->next;
    after->next = n;
    n->edges.push_back(after);
    n->edges.push_back(n);
    g->nodes[mix(step, 500 + i) % g->nodes.size()]->edges.push_back(n);
    g->nodes.push_back(n);
  }
  for (std::uint64_t i = 0; i < 10; ++i) {  // remove nodes, and every pointer to them
    const std::size_t index = mix(step, 600 + i) % g->nodes.size();
    Node* victim = g->nodes[index];
    if (victim == g->entry) continue;
    Node* prev = victim;
    while (prev->next != victim) prev = prev->next;
    prev->next = victim->next;
    for (Node* n : g->nodes) std::erase(n->edges, victim);
    g->nodes.erase(g->nodes.begin() + static_cast<std::ptrdiff_t>(index));
    delete victim;
  }
}

std::uint64_t digest_graph(const void* root) {
  const auto* g = static_cast<const GraphRoot*>(root);
  Digest d;
  d.add(g->nodes.size());
  std::unordered_set<const Node*> seen{g->entry};
  std::vector<const Node*> queue{g->entry};
  for (std::size_t head = 0; head < queue.size(); ++head) {
    const Node* n = queue[head];
    d.add(n->id);
    d.add(n->payload);
    d.add(n->edges.size());
    auto visit = [&](const Node* m) {
      if (seen.insert(m).second) queue.push_back(m);
    };
    visit(n->next);
    for (const Node* m : n->edges) visit(m);
  }
  d.add(queue.size());
  std::size_t ring = 1;  // the ring closes after exactly nodes.size() steps
  for (const Node* n = g->entry->next; n != g->entry && ring <= g->nodes.size(); n = n->next) ++ring;
  d.add(ring);
  return d.value();
}

// ---- huge: a 4 MiB vector, large and huge blocks, a sparse block across two chunks ----

struct HugeRoot {
  std::vector<unsigned char> big;
  std::uint64_t big_seed = 0;
  std::vector<Blob> blobs;
  Blob sparse;  // zeroed by the program, then a pattern page here and there
  std::vector<std::pair<std::size_t, std::uint64_t>> marks;  // (offset, seed) of pattern pages
};

constexpr std::size_t kSparseBytes = 72 * MiB;

void* build_huge(std::uint64_t seed) {
  auto* r = new HugeRoot;
  r->big.resize(4 * MiB);
  r->big_seed = seed;
  fill_words(r->big.data(), r->big.size(), r->big_seed);
  std::uint64_t i = 0;
  for (std::size_t n : {100 * KiB, 700 * KiB, 1 * MiB, 2 * MiB + 5, 9 * MiB}) {
    r->blobs.push_back(new_blob(n, mix(seed, ++i)));
  }
  r->sparse = Blob{new unsigned char[kSparseBytes](), kSparseBytes, 0};
  for (std::size_t mib = 0; mib < kSparseBytes / MiB; ++mib) {
    r->marks.emplace_back(mib * MiB, mix(seed, 100 + mib));
    fill_words(r->sparse.p + mib * MiB, kPage, r->marks.back().second);
  }
  return r;
}

void mutate_huge(void* root, std::uint64_t step) {
  auto* r = static_cast<HugeRoot*>(root);
  r->big.resize(r->big.size() + 3 * kPage + 1);
  r->big_seed = mix(step, 1);
  fill_words(r->big.data(), r->big.size(), r->big_seed);
  Blob& b = r->blobs[step % r->blobs.size()];
  delete[] b.p;
  b = new_blob(50 * KiB + mix(step, 2) % (3 * MiB), mix(step, 3));
  const std::size_t offset = (step % 72) * MiB + 256 * KiB + (step / 72) * kPage;
  r->marks.emplace_back(offset, mix(step, 4));
  fill_words(r->sparse.p + offset, kPage, r->marks.back().second);
}

std::uint64_t digest_huge(const void* root) {
  const auto* r = static_cast<const HugeRoot*>(root);
  Digest d;
  d.add(r->big.size());
  d.add(words_intact(r->big.data(), r->big.size(), r->big_seed) ? 1 : 0);
  for (const Blob& b : r->blobs) add_blob(d, b);
  for (const auto& [offset, seed] : r->marks) {
    d.add(offset);
    d.add(words_intact(r->sparse.p + offset, kPage, seed) ? 1 : 0);
  }
  std::size_t zero_pages = 0;  // the middle page of every MiB was never written but as zeros
  for (std::size_t mib = 0; mib < kSparseBytes / MiB; ++mib) {
    const unsigned char* page = r->sparse.p + mib * MiB + 512 * KiB;
    bool zero = true;
    for (std::size_t i = 0; i < kPage; i += 8) {
      std::uint64_t w;
      std::memcpy(&w, page + i, 8);
      zero = zero && w == 0;
    }
    zero_pages += zero ? 1 : 0;
  }
  d.add(zero_pages);
  return d.value();
}

// ---- gens: every class of block allocated and freed each step ----

struct GensRoot {
  std::map<std::uint64_t, std::string> entries;
  std::vector<Blob> blobs;
  std::uint64_t generation = 0;
  Blob grown;  // resized with Heap::reallocate each step: in place when it can
};

void* build_gens(std::uint64_t seed) {
  auto* r = new GensRoot;
  for (std::uint64_t i = 0; i < 3000; ++i) {
    const std::uint64_t x = mix(seed, i);
    r->entries[x % 1000000] = std::string(x % 80, static_cast<char>('A' + x % 26));
  }
  for (std::uint64_t i = 0; i < 4; ++i) r->blobs.push_back(new_blob(30 * KiB + mix(seed, 50 + i) % (900 * KiB), mix(seed, 60 + i)));
  for (std::uint64_t i = 0; i < 2; ++i) r->blobs.push_back(new_blob(MiB + 200 * KiB + mix(seed, 70 + i) % (2 * MiB), mix(seed, 80 + i)));
  return r;
}

void erase_blob(GensRoot* r, std::size_t index) {
  delete[] r->blobs[index].p;
  r->blobs.erase(r->blobs.begin() + static_cast<std::ptrdiff_t>(index));
}

void mutate_gens(void* root, std::uint64_t step) {
  auto* r = static_cast<GensRoot*>(root);
  r->generation = step;
  {
    static constexpr std::size_t kSizes[] = {100 * KiB, 180 * KiB, 700 * KiB, 2 * MiB, 3 * MiB, 400 * KiB};
    const std::size_t n = kSizes[step % 6];
    void* p = current_heap()->reallocate(r->grown.p, n);
    if (p != nullptr) {
      r->grown = Blob{static_cast<unsigned char*>(p), n, mix(step, 77)};
      fill_words(r->grown.p, n, r->grown.seed);
    }
  }
  for (std::uint64_t i = 0; i < 200; ++i) {
    const std::uint64_t x = mix(step, i);
    r->entries[x % 1000000] = std::string(x % 80, static_cast<char>('a' + x % 26));
  }
  for (std::uint64_t i = 0; i < 100; ++i) {
    auto it = r->entries.lower_bound(mix(step, 1000 + i) % 1000000);
    if (it != r->entries.end()) r->entries.erase(it);
  }
  for (std::uint64_t i = 0; i < 100; ++i) {
    auto it = r->entries.lower_bound(mix(step, 2000 + i) % 1000000);
    if (it != r->entries.end()) it->second += std::to_string(step);
  }
  if (!r->blobs.empty()) erase_blob(r, mix(step, 1) % r->blobs.size());
  r->blobs.push_back(new_blob(16 * KiB + mix(step, 2) % (900 * KiB), mix(step, 3)));
  if (step % 3 == 0) r->blobs.push_back(new_blob(MiB + 100 * KiB + mix(step, 4) % (2 * MiB), mix(step, 5)));
  if (step % 10 == 0) {  // free every huge block: their pages go back to the OS
    for (std::size_t i = r->blobs.size(); i-- > 0;) {
      if (r->blobs[i].n > MiB) erase_blob(r, i);
    }
  }
  while (r->blobs.size() > 12) erase_blob(r, 0);
  if (step % 7 == 0) {  // a burst of small blocks, all freed again
    std::vector<std::unique_ptr<std::uint64_t[]>> burst;
    for (std::uint64_t i = 0; i < 3000; ++i) burst.emplace_back(new std::uint64_t[1 + i % 64]());
  }
}

std::uint64_t digest_gens(const void* root) {
  const auto* r = static_cast<const GensRoot*>(root);
  Digest d;
  d.add(r->generation);
  d.add(r->entries.size());
  for (const auto& [k, v] : r->entries) {
    d.add(k);
    d.add(v);
  }
  d.add(r->blobs.size());
  for (const Blob& b : r->blobs) add_blob(d, b);
  if (r->grown.p != nullptr) add_blob(d, r->grown);
  return d.value();
}


}  // namespace

Case graph_case() { return {"graph", build_graph, mutate_graph, digest_graph}; }
Case huge_case() { return {"huge", build_huge, mutate_huge, digest_huge}; }
Case gens_case() { return {"gens", build_gens, mutate_gens, digest_gens}; }

}  // namespace reheap::snaptest::detail
