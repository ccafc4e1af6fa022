// SnapshotReader: one pass over a snapshot, checking everything it reads (SNAPSHOT_FORMAT.md,
// "Validation order"). It never trusts a length before checking it against the format's limits,
// so a hostile file costs at most a 16 MiB header buffer and a 1 MiB scratch buffer.
#include <xxhash.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>

#include "file_io.h"
#include "format.h"
#include "reheap/heap_scope.h"
#include "reheap/snapshot_file.h"

namespace reheap {

using namespace detail::snapshot;

namespace {
constexpr std::size_t kPiece = 1 << 20;  // data is read and hashed in pieces of this size
}

struct SnapshotReader::Impl {
  std::unique_ptr<FdSource> file;
  ByteSource* source = nullptr;
  std::string name;
  SnapshotHeader header;
  std::uint64_t position = 0;
  std::uint64_t size = 0;
  Digest digest;
  std::uint64_t runs = 0;
  std::uint64_t data_pages = 0;
  std::uintptr_t next_free = 0;  // runs must start at or after this address
  bool pending = false;          // a data run whose data has not been consumed
  bool done = false;
  unsigned char record[kRunRecordSize];
  std::uint64_t pending_bytes = 0;
  std::uintptr_t pending_address = 0;

  // Reads exactly `n` bytes, or fails with kTruncated naming what was being read (and `or_else`,
  // another cause the reader cannot tell from a truncation, if any).
  void read_exact(void* data, std::size_t n, const char* what, const char* or_else = nullptr) {
    const std::size_t got = source->read(data, n);
    position += got;
    if (got != n) {
      fail(SnapshotErrc::kTruncated, name,
           std::string("the file ends inside ") + what + " at byte " + std::to_string(position) +
               " (truncated, e.g. by a crash or an interrupted copy" +
               (or_else != nullptr ? std::string(", or ") + or_else : std::string()) + ")");
    }
  }

  void read_preamble_and_header() {
    unsigned char preamble[kPreambleSize];
    const std::size_t got = source->read(preamble, kPreambleSize);
    position += got;
    if (got == 0) fail(SnapshotErrc::kNotASnapshot, name, "not a reheap snapshot (the file is empty)");
    if (std::memcmp(preamble, kMagic, std::min(got, sizeof kMagic)) != 0) {
      fail(SnapshotErrc::kNotASnapshot, name, "not a reheap snapshot (wrong magic)");
    }
    if (got != kPreambleSize) {
      fail(SnapshotErrc::kTruncated, name, "the file ends inside the preamble (truncated)");
    }
    const std::uint32_t version = get_u32(preamble + 8);
    if (version == 1) {
      // Its pages are an allocator of another layout (format.h): no conversion moves the blocks,
      // since every pointer to them would have to move too.
      fail(SnapshotErrc::kUnsupportedVersion, name,
           "snapshot format version 1 is not supported: this build reads snapshot format version " +
               std::to_string(kFormatVersion) + " only. Version 1 lays out the size-class lanes "
               "differently, and no conversion can move a heap's blocks (every pointer to them would have "
               "to move too); restore the file with a build of reheap that reads format version 1, such as "
               "the program that saved it");
    }
    if (version != kFormatVersion) {
      fail(SnapshotErrc::kUnsupportedVersion, name,
           "snapshot format version " + std::to_string(version) + " is not supported (this reader knows version " +
               std::to_string(kFormatVersion) + "; the file comes from another build of reheap, or its " +
               "preamble is damaged)");
    }
    const std::uint32_t length = get_u32(preamble + 12);
    if (length == 0 || length > kMaxHeaderSize) {
      fail(SnapshotErrc::kCorrupt, name, "header length " + std::to_string(length) + " is out of range");
    }
    std::vector<unsigned char> bytes(kPreambleSize + length);
    std::memcpy(bytes.data(), preamble, kPreambleSize);
    // Nothing checks the length field before the header is read: a file cut short and a damaged
    // length field look the same here.
    const std::string header_text = "the header (" + std::to_string(length) + " bytes, says its length field)";
    read_exact(bytes.data() + kPreambleSize, length, header_text.c_str(), "the length field is damaged");
    unsigned char stored[kChecksumSize];
    read_exact(stored, kChecksumSize, "the header checksum");
    if (checksum(bytes.data(), bytes.size()) != get_u64(stored)) {
      fail(SnapshotErrc::kCorrupt, name, "header checksum mismatch (the file is damaged)");
    }
    header = decode_header(bytes.data() + kPreambleSize, length, version, name);
    digest.update(stored, kChecksumSize);
  }

  const SnapshotChunk* chunk_of(std::uintptr_t address) const noexcept {
    if (address < header.zone_base || address - header.zone_base >= header.zone_size) return nullptr;
    const std::uint64_t wide = (address - header.zone_base) / header.chunk_size;
    if (wide > 0xffffffffu) return nullptr;  // the header's zone rule forbids it; never alias
    const auto index = static_cast<std::uint32_t>(wide);
    auto it = std::lower_bound(header.chunks.begin(), header.chunks.end(), index,
                               [](const SnapshotChunk& c, std::uint32_t i) { return c.index < i; });
    return it != header.chunks.end() && it->index == index ? &*it : nullptr;
  }

  [[noreturn]] void bad_run(const RunRecord& r, const std::string& why) {
    char where[64];
    std::snprintf(where, sizeof where, "run %llu at %#llx: ", static_cast<unsigned long long>(runs),
                  static_cast<unsigned long long>(r.address));
    fail(SnapshotErrc::kCorrupt, name, where + why);
  }

  bool next(PageRun& out) {
    if (done) return false;
    if (pending) fail(SnapshotErrc::kMisuse, name, "SnapshotReader::next called before the run's data was consumed");
    read_exact(record, kRunRecordSize, "a run record");
    const RunRecord r = decode_run(record);
    if (r.pages == 0) return finish(r);
    const std::uint64_t page = header.page_size;
    const std::uint64_t chunk_pages = header.chunk_size / page;
    if (r.address % page != 0) bad_run(r, "address not page-aligned");
    if ((r.flags & ~kZeroRunFlag) != 0) bad_run(r, "unknown flags");
    if (r.pages > chunk_pages) bad_run(r, "longer than a chunk");
    if (r.address < next_free) bad_run(r, "out of order or overlapping the previous run");
    const SnapshotChunk* c = chunk_of(r.address);
    if (c == nullptr) bad_run(r, "outside the heap's chunks");
    const std::uintptr_t chunk_end = header.zone_base + (std::uintptr_t{c->index} + 1) * header.chunk_size;
    if (r.pages * page > chunk_end - r.address) bad_run(r, "crosses the end of its chunk");
    next_free = r.address + r.pages * page;
    ++runs;
    out.address = r.address;
    out.pages = r.pages;
    out.zero = (r.flags & kZeroRunFlag) != 0;
    out.offset = position;
    if (out.zero) {
      if (header.kind == SnapshotKind::kFull) bad_run(r, "a zero run in a full snapshot");
      unsigned char stored[kChecksumSize];
      read_exact(stored, kChecksumSize, "a run checksum");
      if (get_u64(stored) != 0) bad_run(r, "a zero run with a checksum");
      digest.update(record, kRunRecordSize);
      digest.update(stored, kChecksumSize);
      return true;
    }
    data_pages += r.pages;
    pending = true;
    pending_bytes = r.pages * page;
    pending_address = r.address;
    return true;
  }

  bool finish(const RunRecord& r) {
    if (r.address != 0 || r.flags != 0) bad_run(r, "a run of 0 pages");
    unsigned char stored[kChecksumSize];
    read_exact(stored, kChecksumSize, "the end record");
    if (get_u64(stored) != 0) bad_run(r, "malformed end record");
    digest.update(record, kRunRecordSize);
    digest.update(stored, kChecksumSize);
    unsigned char trailer[kTrailerSize];
    read_exact(trailer, kTrailerSize, "the trailer");
    if (std::memcmp(trailer + 24, kEndMagic, sizeof kEndMagic) != 0) {
      fail(SnapshotErrc::kCorrupt, name, "malformed trailer (wrong end magic)");
    }
    if (get_u64(trailer) != runs || get_u64(trailer + 8) != data_pages) {
      fail(SnapshotErrc::kCorrupt, name, "the trailer's run or page count does not match the file");
    }
    if (get_u64(trailer + 16) != digest.value()) {
      fail(SnapshotErrc::kCorrupt, name, "whole-file checksum mismatch (the file is damaged)");
    }
    unsigned char extra;
    if (source->read(&extra, 1) != 0) fail(SnapshotErrc::kCorrupt, name, "bytes after the trailer");
    done = true;
    return false;
  }

  // Moves past the pending run's data without reading it (a file: one lseek), then reads the
  // run's checksum, which the whole-file digest covers. Other sources read it through consume().
  void pass_over() {
    if (!pending) fail(SnapshotErrc::kMisuse, name, "no run data to pass over");
    if (file == nullptr || pending_bytes > static_cast<std::uint64_t>(std::numeric_limits<off_t>::max())) {
      consume(nullptr);
      return;
    }
    pending = false;
    if (position + pending_bytes + kChecksumSize > size) {
      fail(SnapshotErrc::kTruncated, name,
           "the file ends inside a run's data at byte " + std::to_string(size) +
               " (truncated, e.g. by a crash or an interrupted copy)");
    }
    if (::lseek(file->fd(), static_cast<off_t>(pending_bytes), SEEK_CUR) < 0) {
      fail(SnapshotErrc::kIo, name, std::string("lseek: ") + std::strerror(errno));
    }
    position += pending_bytes;
    unsigned char stored[kChecksumSize];
    read_exact(stored, kChecksumSize, "a run checksum");
    digest.update(record, kRunRecordSize);
    digest.update(stored, kChecksumSize);
  }

  // Reads the pending run's data into `destination` (or a scratch buffer when null), hashing it
  // piece by piece while the piece is in the cache, then checks the run's checksum.
  void consume(void* destination) {
    if (!pending) fail(SnapshotErrc::kMisuse, name, "no run data to read");
    pending = false;
    XXH3_state_t* state = XXH3_createState();
    if (state == nullptr) throw std::bad_alloc();
    std::unique_ptr<XXH3_state_t, XXH_errorcode (*)(XXH3_state_t*)> guard(state, XXH3_freeState);
    XXH3_64bits_reset(state);
    std::unique_ptr<unsigned char[]> scratch;
    if (destination == nullptr) scratch.reset(new unsigned char[kPiece]);
    auto* out = static_cast<unsigned char*>(destination);
    for (std::uint64_t done_bytes = 0; done_bytes < pending_bytes;) {
      const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(kPiece, pending_bytes - done_bytes));
      unsigned char* piece = out != nullptr ? out + done_bytes : scratch.get();
      read_exact(piece, n, "a run's data");
      XXH3_64bits_update(state, piece, n);
      done_bytes += n;
    }
    unsigned char stored[kChecksumSize];
    read_exact(stored, kChecksumSize, "a run checksum");
    if (XXH3_64bits_digest(state) != get_u64(stored)) {
      char what[96];
      std::snprintf(what, sizeof what, "checksum mismatch in the %llu pages at %#llx (the file is damaged)",
                    static_cast<unsigned long long>(pending_bytes / header.page_size),
                    static_cast<unsigned long long>(pending_address));
      fail(SnapshotErrc::kCorrupt, name, what);
    }
    digest.update(record, kRunRecordSize);
    digest.update(stored, kChecksumSize);
  }
};

SnapshotReader::SnapshotReader(const std::filesystem::path& file) : impl_(std::make_unique<Impl>()) {
  HeapScope system(nullptr);
  impl_->name = file.string();
  impl_->file = std::make_unique<FdSource>(file);
  impl_->source = impl_->file.get();
  impl_->size = impl_->file->size();
  impl_->read_preamble_and_header();
}

SnapshotReader::SnapshotReader(ByteSource& source, std::string name) : impl_(std::make_unique<Impl>()) {
  HeapScope system(nullptr);
  impl_->name = std::move(name);
  impl_->source = &source;
  impl_->read_preamble_and_header();
}

SnapshotReader::~SnapshotReader() = default;

const SnapshotHeader& SnapshotReader::header() const noexcept { return impl_->header; }
const std::string& SnapshotReader::name() const noexcept { return impl_->name; }

bool SnapshotReader::next(PageRun& run) {
  HeapScope system(nullptr);
  return impl_->next(run);
}

void SnapshotReader::read_data(void* destination) {
  HeapScope system(nullptr);
  if (destination == nullptr) fail(SnapshotErrc::kMisuse, impl_->name, "read_data into null");
  impl_->consume(destination);
}

void SnapshotReader::skip_data() {
  HeapScope system(nullptr);
  impl_->consume(nullptr);
}

void SnapshotReader::skip_data_unchecked() {
  HeapScope system(nullptr);
  impl_->pass_over();
}

std::uint64_t SnapshotReader::position() const noexcept { return impl_->position; }
std::uint64_t SnapshotReader::size() const noexcept { return impl_->size; }

}  // namespace reheap
