// ShardLabel: what a shard's snapshot file says it holds - which data set, which shard of how
// many, saved by which save - read from the file without restoring it.
//
// Why the label lives in the shard's heap. A snapshot file is the shard's heap, so whatever the
// shard keeps in its own memory is in every file saved of it, under the snapshot's checksums, with
// no change to the snapshot format and no second file that could be lost or swapped on its own.
// Each Shard holds one ShardLabel as a member. The set id, the index and the shard count are set
// when the shard is created and never change; the generation is set by the save: the saver sends
// the shard ShardSaving{generation} just before it asks for the snapshot, and one sender's
// messages arrive in order, the snapshot request being a mailbox message too
// (reheap/snapshot_request.h), so the file holds the generation of the save that wrote it.
// The node that saved the file is not repeated here: the snapshot header already says it
// (SnapshotHeader::saved_by_node, written by the runtime).
//
// Reading one: the header gives the address of the heap's root, the reactor (the Shard: Reactor
// is its only base, so the two share an address); the label lies at a fixed offset in the Shard,
// and read_snapshot_bytes reads those 32 bytes as the file - through its parents, for an
// increment - holds them. The magic tells a label from whatever another program's root holds
// there. Cost: the run records of the file and its parents, and the data of the run holding the
// label (a check of all 16 files of a 1M-key set took about 1.5 ms of CPU).
#pragma once

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <type_traits>

namespace kv {

struct ShardLabel {
  static constexpr std::uint64_t kMagic = 0x314c424c44524853ull;  // "SHRDLBL1"

  std::uint64_t magic = kMagic;
  std::uint64_t set_id = 0;      // the data set's, minted with the directory's first manifest
  std::uint64_t generation = 0;  // of the save that wrote the file (0: never saved)
  std::uint32_t index = 0;       // the shard's
  std::uint32_t count = 0;       // shards in the set
};
static_assert(std::is_trivially_copyable_v<ShardLabel> && sizeof(ShardLabel) == 32);

// What a snapshot file says about itself: its label and the node that saved it.
struct SavedShard {
  ShardLabel label;
  std::int64_t saved_by_node = -1;  // -1: the file does not say
};

// A shard file that cannot say what it holds: unreadable, not a reactor's snapshot, or a root
// without a label (a file of another program, or of a reheap-kv that kept no label). what()
// names the file.
class ShardLabelError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Reads the label of `file` (see above). Throws ShardLabelError.
SavedShard read_saved_shard(const std::filesystem::path& file);

}  // namespace kv
