#include "hostile_inputs.h"

#include <algorithm>
#include <functional>
#include <stdexcept>

#include "header_fields.h"
#include "snapshot_image.h"
#include "snapshot_mutator.h"
#include "state_edits.h"
#include "word_values.h"

namespace reheap_fuzz {

namespace {

// One hostile input in the making: a copy of the seed and its geometry.
class Forgery {
 public:
  Forgery(const Seed& seed, std::string name) : name_(std::move(name)), bytes_(seed.bytes) {
    const SnapshotImage image(bytes_.data(), bytes_.size(), 4096);
    HeaderTree tree;
    if (!image.has_preamble() || !tree.decode(bytes_.data() + image.header_offset(), image.header_length())) {
      fail("the seed's header does not decode");
    }
    g_ = tree.geometry();
  }

  const Geometry& g() const { return g_; }
  const std::vector<std::uint8_t>& bytes() const { return bytes_; }
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("hostile input " + name_ + ": " + what + " (has the seed or the allocator changed?)");
  }

  // The heap's state: from 64 bytes into its first chunk's header page to the page's end.
  std::uint64_t state_begin() const { return g_.state_address(); }
  std::uint64_t state_end() const { return g_.state_address() - Geometry::kStateOffset + g_.page_size; }

  const ChunkEntry& first_chunk_of(std::uint64_t use) const {
    for (const ChunkEntry& c : g_.chunks) {
      if (c.use == use) return c;
    }
    fail("the seed lists no chunk of use " + std::to_string(use));
  }

  // Addresses of the saved words in [begin, end) that satisfy `match`; at least one.
  std::vector<std::uint64_t> words(std::uint64_t begin, std::uint64_t end, std::size_t width,
                                   const std::function<bool(std::uint64_t)>& match, const char* what) const {
    std::vector<std::uint64_t> found = find_words(bytes_, g_, begin, end, width, match);
    if (found.empty()) fail(std::string("no saved word holds ") + what);
    return found;
  }

  void set(std::uint64_t address, std::size_t width, std::uint64_t value) {
    if (!poke(bytes_, g_, address, width, value)) fail("the word at " + hex(address) + " is not saved");
  }

  HostileInput done(std::string lie) {
    reseal_snapshot(bytes_.data(), bytes_.size());
    return {name_, std::move(lie), std::move(bytes_)};
  }

 private:
  std::string name_;
  std::vector<std::uint8_t> bytes_;
  Geometry g_;
};

const Seed& seed_named(const std::vector<Seed>& seeds, const char* name) {
  for (const Seed& s : seeds) {
    if (s.name == name) return s;
  }
  throw std::runtime_error(std::string("hostile inputs: no seed named ") + name);
}

}  // namespace

std::vector<HostileInput> build_hostile_inputs(const std::vector<Seed>& seeds) {
  const Seed& rich = seed_named(seeds, "rich");
  std::vector<HostileInput> out;

  {  // (a) The state's large-chunk list (and carving chunk) starts at a chunk the file does not
     // list and this process never made accessible.
    Forgery f(rich, "a-large-list-head-unlisted");
    std::vector<std::uint64_t> bases;
    for (const ChunkEntry& c : f.g().chunks) {
      if (c.use != kUseClass) bases.push_back(f.g().chunk_address(c.index));
    }
    const std::uint64_t unlisted = f.g().chunk_address(f.g().unlisted_chunk(1));
    auto is_large_base = [&](std::uint64_t v) { return std::find(bases.begin(), bases.end(), v) != bases.end(); };
    for (std::uint64_t w : f.words(f.state_begin(), f.state_end(), 8, is_large_base, "a large chunk's address")) {
      f.set(w, 8, unlisted);
    }
    out.push_back(f.done("the heap state's large-chunk list starts at " + hex(unlisted) + ", an unlisted chunk"));
  }
  {  // (b) A large chunk's frontier (first page never carved) far beyond the chunk's end. The
     // frontier is the header's one 32-bit field that counts pages past the metadata pages;
     // the halves of the header's links are left out, since a link's high half can look alike.
    Forgery f(rich, "b-large-frontier-beyond-chunk");
    const std::uint64_t base = f.g().chunk_address(f.first_chunk_of(kUseLarge).index);
    const std::uint64_t pages = f.g().chunk_size / f.g().page_size;
    const std::vector<std::uint64_t> links =
        find_words(f.bytes(), f.g(), base, base + 64, 8, [&](std::uint64_t v) { return f.g().chunk_holding(v) != nullptr; });
    auto in_link = [&](std::uint64_t a) {
      for (std::uint64_t l : links) {
        if (a - l < 8) return true;
      }
      return false;
    };
    std::vector<std::uint64_t> frontier;
    for (std::uint64_t w : f.words(base, base + 64, 4, [&](std::uint64_t v) {
           return v > f.g().large_metadata_pages() && v <= pages;
         }, "a page count")) {
      if (!in_link(w)) frontier.push_back(w);
    }
    if (frontier.size() != 1) f.fail("the large chunk header has " + std::to_string(frontier.size()) + " page counts, not 1");
    f.set(frontier[0], 4, 0xffffffff);
    out.push_back(f.done("the large chunk at " + hex(base) + " was carved up to page 0xffffffff"));
  }
  {  // (c1) A huge block's size reaching 64 TiB past its run.
    Forgery f(rich, "c1-huge-size-beyond-run");
    const std::uint64_t huge_base = f.g().chunk_address(f.first_chunk_of(kUseHuge).index);
    const std::uint64_t size = std::uint64_t{1} << 46;
    for (std::uint64_t w : f.words(huge_base, huge_base + 64, 8, [&](std::uint64_t v) { return v == rich.huge_size; },
                                   "the huge block's size")) {
      f.set(w, 8, size);
    }
    out.push_back(f.done("the huge block at " + hex(huge_base) + " is " + hex(size) + " bytes long"));
  }
  {  // (c2) A huge block that starts after its run ends (in the next chunk, the bystander's).
    Forgery f(rich, "c2-huge-block-beyond-run");
    const std::uint64_t huge_base = f.g().chunk_address(f.first_chunk_of(kUseHuge).index);
    const std::uint64_t block = huge_base + f.g().chunk_size + f.g().page_size;
    for (std::uint64_t w : f.words(huge_base, huge_base + 64, 8, [&](std::uint64_t v) {
           return v > huge_base && v < huge_base + f.g().chunk_size;
         }, "the huge block's address")) {
      f.set(w, 8, block);
    }
    out.push_back(f.done("the huge run at " + hex(huge_base) + " has its block at " + hex(block) + ", past its end"));
  }
  {  // (d) The state's committed bytes far above the restore limit, while the header's (which
     // restore checks against the limit) are the true ones.
    Forgery f(rich, "d-committed-over-limit");
    const std::uint64_t committed = std::uint64_t{1} << 40;
    for (std::uint64_t w : f.words(f.state_begin(), f.state_end(), 8, [&](std::uint64_t v) { return v == f.g().committed; },
                                   "the committed bytes")) {
      f.set(w, 8, committed);
    }
    out.push_back(f.done("the heap state has " + hex(committed) + " committed bytes; the header says " + hex(f.g().committed)));
  }
  {  // (e) A free list whose head is another listed chunk's header page.
    Forgery f(rich, "e-free-list-into-header-page");
    std::uint64_t target = 0;
    for (const ChunkEntry& c : f.g().chunks) {
      if (c.index != f.g().first_chunk() && c.use == kUseClass) target = f.g().header_page(c);
    }
    if (target == 0) target = f.g().chunk_address(f.first_chunk_of(kUseLarge).index);
    for (std::uint64_t w : f.words(f.state_begin(), f.state_end(), 8, [&](std::uint64_t v) { return v == rich.free_head; },
                                   "the free list's head")) {
      f.set(w, 8, target);
    }
    out.push_back(f.done("a class free list starts at " + hex(target) + ", a chunk header"));
  }
  {  // (f) A free list that loops: its second block links back to its head.
    Forgery f(rich, "f-free-list-cycle");
    f.set(rich.free_next, 8, rich.free_head);
    out.push_back(f.done("the free block at " + hex(rich.free_next) + " links back to " + hex(rich.free_head)));
  }
  {  // (g) A free-run bin whose first run is in an unlisted, never accessible chunk.
    Forgery f(rich, "g-free-run-bin-unlisted");
    const std::uint64_t first_run_page = f.g().large_metadata_pages() * f.g().page_size;
    auto is_free_run = [&](std::uint64_t v) {
      const ChunkEntry* c = f.g().chunk_holding(v);
      return c != nullptr && c->use == kUseLarge && v % f.g().page_size == 0 &&
             v - f.g().chunk_address(c->index) >= first_run_page;
    };
    const std::uint64_t target = f.g().chunk_address(f.g().unlisted_chunk(2)) + first_run_page;
    for (std::uint64_t w : f.words(f.state_begin(), f.state_end(), 8, is_free_run, "a free run's address")) {
      f.set(w, 8, target);
    }
    out.push_back(f.done("the free-run bins start at " + hex(target) + ", in an unlisted chunk"));
  }
  return out;
}

}  // namespace reheap_fuzz
