#include "snapshot_image.h"

#include <xxhash.h>

#include <cstring>

namespace reheap_fuzz {

std::uint64_t load_le(const std::uint8_t* p, std::size_t width) noexcept {
  std::uint64_t v = 0;
  std::memcpy(&v, p, width);  // x86-64 only, like the format itself
  return v;
}

void store_le(std::uint8_t* p, std::size_t width, std::uint64_t value) noexcept {
  std::memcpy(p, &value, width);
}

SnapshotImage::SnapshotImage(const std::uint8_t* data, std::size_t size, std::uint64_t page_size)
    : page_size_(page_size == 0 ? 4096 : page_size) {
  if (size < kPreambleSize + kChecksumSize || std::memcmp(data, "REHEAPSN", 8) != 0) return;
  const std::size_t length = load_le(data + 12, 4);
  if (length > kMaxHeaderLength || kPreambleSize + length + kChecksumSize > size) return;
  header_length_ = length;
  std::size_t pos = kPreambleSize + length + kChecksumSize;
  while (pos + kRunRecordSize + kChecksumSize <= size) {
    ImageRun run;
    run.record = pos;
    run.address = load_le(data + pos, 8);
    run.pages = static_cast<std::uint32_t>(load_le(data + pos + 8, 4));
    run.flags = static_cast<std::uint32_t>(load_le(data + pos + 12, 4));
    if (run.pages == 0) {
      end_record_ = pos;
      return;
    }
    run.data = pos + kRunRecordSize;
    const std::uint64_t bytes = run.zero() ? 0 : std::uint64_t{run.pages} * page_size_;
    if (bytes > size - run.data || run.data + bytes + kChecksumSize > size) return;
    runs_.push_back(run);
    pos = run.data + bytes + kChecksumSize;
  }
}

std::size_t SnapshotImage::offset_of(std::uint64_t address, std::size_t width) const noexcept {
  const ImageRun* run = run_at(address);
  if (run == nullptr || run->zero()) return ~std::size_t{0};
  const std::uint64_t end = run->address + std::uint64_t{run->pages} * page_size_;
  if (address + width > end || address + width < address) return ~std::size_t{0};
  return run->data + static_cast<std::size_t>(address - run->address);
}

const ImageRun* SnapshotImage::run_at(std::uint64_t address) const noexcept {
  // Mutants need not keep the runs in order, so this is a scan; files have a few dozen runs.
  for (const ImageRun& run : runs_) {
    const std::uint64_t bytes = std::uint64_t{run.pages} * page_size_;
    if (address >= run.address && address - run.address < bytes) return &run;
  }
  return nullptr;
}

void reseal(std::uint8_t* data, std::size_t size, std::uint64_t page_size) {
  const SnapshotImage image(data, size, page_size);
  if (!image.has_preamble()) return;
  const std::size_t header_end = kPreambleSize + image.header_length();
  store_le(data + header_end, 8, XXH3_64bits(data, header_end));
  XXH3_state_t* digest = XXH3_createState();
  if (digest == nullptr) return;
  XXH3_64bits_reset(digest);
  XXH3_64bits_update(digest, data + header_end, kChecksumSize);
  std::uint64_t pages = 0;
  for (const ImageRun& run : image.runs()) {
    const std::size_t bytes = run.zero() ? 0 : std::size_t{run.pages} * image.page_size();
    // A zero run's checksum is 0 by definition; a data run's covers its data.
    store_le(data + run.data + bytes, 8, run.zero() ? 0 : XXH3_64bits(data + run.data, bytes));
    XXH3_64bits_update(digest, data + run.record, kRunRecordSize);
    XXH3_64bits_update(digest, data + run.data + bytes, kChecksumSize);
    if (!run.zero()) pages += run.pages;
  }
  const std::size_t end = image.end_record();
  if (end != 0 && end + kEndRecordSize <= size) {
    XXH3_64bits_update(digest, data + end, kEndRecordSize);
    if (end + kEndRecordSize + kTrailerSize <= size) {
      std::uint8_t* trailer = data + end + kEndRecordSize;
      store_le(trailer, 8, image.runs().size());
      store_le(trailer + 8, 8, pages);
      store_le(trailer + 16, 8, XXH3_64bits_digest(digest));
    }
  }
  XXH3_freeState(digest);
}

bool insert_zero_data_run(std::vector<std::uint8_t>& file, std::uint64_t page_size,
                          std::uint64_t address, std::uint32_t pages) {
  const SnapshotImage image(file.data(), file.size(), page_size);
  if (!image.has_preamble() || image.end_record() == 0 || pages == 0) return false;
  const std::uint64_t end = address + std::uint64_t{pages} * page_size;
  std::size_t insert_at = image.end_record();
  for (const ImageRun& run : image.runs()) {
    const std::uint64_t run_end = run.address + std::uint64_t{run.pages} * page_size;
    if (run.address < end && address < run_end) return false;  // overlaps: nothing to insert
    if (run.address >= end && run.record < insert_at) insert_at = run.record;
  }
  std::vector<std::uint8_t> piece(kRunRecordSize + pages * page_size + kChecksumSize, 0);
  store_le(piece.data(), 8, address);
  store_le(piece.data() + 8, 4, pages);
  file.insert(file.begin() + static_cast<std::ptrdiff_t>(insert_at), piece.begin(), piece.end());
  return true;
}

}  // namespace reheap_fuzz
