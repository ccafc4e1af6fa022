#include "snapshot_mutator.h"

#include <cstring>
#include <vector>

#include "fuzz_rng.h"
#include "header_edits.h"
#include "header_fields.h"
#include "snapshot_image.h"
#include "state_edits.h"

namespace reheap_fuzz {

namespace {

// The header of `file`, decoded, or false if there is none to decode.
bool decode_header(const std::uint8_t* data, std::size_t size, HeaderTree& tree, std::size_t* length) {
  const SnapshotImage image(data, size, 4096);
  if (!image.has_preamble()) return false;
  *length = image.header_length();
  return tree.decode(data + image.header_offset(), image.header_length());
}
bool decode_header(const std::vector<std::uint8_t>& file, HeaderTree& tree, std::size_t* length) {
  return decode_header(file.data(), file.size(), tree, length);
}

// One header edit; false if the file has no header to edit.
bool header_edit(std::vector<std::uint8_t>& file, FuzzRng& rng, std::string& description) {
  HeaderTree tree;
  std::size_t length = 0;
  if (!decode_header(file, tree, &length)) return false;
  const Geometry g = tree.geometry();
  const std::string done = edit_header(tree, g, rng);
  if (done.empty()) return false;
  file = with_header(file.data(), file.size(), length, tree.encode());
  description += (description.empty() ? "" : "; ") + done;
  return true;
}

// One to three edits of the allocator state in the pages; false if none was possible.
bool state_edit(std::vector<std::uint8_t>& file, FuzzRng& rng, std::string& description) {
  HeaderTree tree;
  std::size_t length = 0;
  if (!decode_header(file, tree, &length)) return false;
  const Geometry g = tree.geometry();
  bool any = false;
  for (std::size_t n = 1 + (rng.chance(30) ? 1 + rng.below(2) : 0); n > 0; --n) {
    const std::string done = edit_state(file, g, rng);
    if (done.empty()) continue;
    description += (description.empty() ? "" : "; ") + done;
    any = true;
  }
  return any;
}

// Whether the editors can work on `file`: its header decodes and its runs can be found.
bool editable(const std::vector<std::uint8_t>& file) {
  HeaderTree tree;
  std::size_t length = 0;
  if (!decode_header(file, tree, &length)) return false;
  const SnapshotImage image(file.data(), file.size(), tree.geometry().page_size);
  for (const ImageRun& run : image.runs()) {
    if (!run.zero()) return true;
  }
  return false;
}

std::vector<std::vector<std::uint8_t>>& restart_points() {
  static std::vector<std::vector<std::uint8_t>> seeds;
  return seeds;
}

}  // namespace

void set_restart_points(std::vector<std::vector<std::uint8_t>> seeds) { restart_points() = std::move(seeds); }

void reseal_snapshot(std::uint8_t* data, std::size_t size) {
  HeaderTree tree;
  std::size_t length = 0;
  reseal(data, size, decode_header(data, size, tree, &length) ? tree.geometry().page_size : 4096);
}

std::size_t mutate_snapshot(std::uint8_t* data, std::size_t size, std::size_t max_size, unsigned seed,
                            ByteMutator byte_mutator, std::string& description) {
  FuzzRng rng(seed * 0x9E3779B97F4A7C15ull + size);
  description.clear();
  std::size_t mix = rng.below(100);
  // Kept in a vector so that an edit may change the file's length (a re-encoded header, a run
  // made present); copied back only if it still fits libFuzzer's buffer.
  thread_local std::vector<std::uint8_t> file;
  file.assign(data, data + size);
  if (!restart_points().empty() && !editable(file) && rng.chance(60)) {
    // Byte mutations that broke the header or the run structure reach new error paths of the
    // reader, so the corpus fills with them (most of it after a few runs), and no semantic edit
    // applies to them. Most of the time such an input is replaced by a seed, so that the lies
    // keep coming.
    const std::size_t which = rng.below(restart_points().size());
    file = restart_points()[which];
    description = "restarted from seed " + std::to_string(which);
    mix = 30 + rng.below(70);
  }
  if (mix >= 30) {
    bool done = false;
    if (mix < 50) {
      done = header_edit(file, rng, description);
      if (done && rng.chance(30)) state_edit(file, rng, description);  // a lie in both places
    } else {
      done = state_edit(file, rng, description);
      if (done && rng.chance(10)) header_edit(file, rng, description);
    }
    if (done && file.size() <= max_size) {
      std::memcpy(data, file.data(), file.size());
      reseal_snapshot(data, file.size());
      description = "semantic, resealed: " + description;
      return file.size();
    }
    // Not a snapshot the editors understand (or too long for the buffer): mutate its bytes.
    description.clear();
  }
  size = byte_mutator(data, size, max_size);
  if (mix < 10) {
    description = "bytes, not resealed";
  } else {
    reseal_snapshot(data, size);
    description = "bytes, resealed";
  }
  return size;
}

}  // namespace reheap_fuzz
