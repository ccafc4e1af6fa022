#include "writer.h"

#include <algorithm>

#include "../layout.h"
#include "reheap/snapshot_error.h"

namespace reheap::detail::snapshot {

namespace {

constexpr std::size_t kPiece = 1 << 20;

bool page_is_zero(const void* page) noexcept {
  const auto* words = static_cast<const std::uint64_t*>(page);
  // The first word decides for almost every page holding data.
  if (words[0] != 0) return false;
  std::uint64_t any = 0;
  for (std::size_t i = 0; i < kPageSize / 8; i += 8) {
    any |= words[i] | words[i + 1] | words[i + 2] | words[i + 3] | words[i + 4] | words[i + 5] |
           words[i + 6] | words[i + 7];
    if (any != 0) return false;
  }
  return true;
}

}  // namespace

void count_page(PageCounts& counts, ChunkUse use, std::uintptr_t run_base, std::uintptr_t page) noexcept {
  switch (use) {
    case ChunkUse::kClass: {
      const unsigned cls = class_of_address(page);
      if (cls < kNumClasses) {
        ++counts.by_class[cls];
      } else {
        ++counts.metadata;
      }
      return;
    }
    case ChunkUse::kLarge:
      if (((page - run_base) >> kPageShift) < kFirstRunPage) {
        ++counts.metadata;
      } else {
        ++counts.large;
      }
      return;
    case ChunkUse::kHuge:
      if (page - run_base < kPageSize) {
        ++counts.metadata;
      } else {
        ++counts.huge;
      }
      return;
  }
}

Plan plan_runs(std::vector<Segment> segments) {
  std::sort(segments.begin(), segments.end(),
            [](const Segment& a, const Segment& b) { return a.range.begin < b.range.begin; });
  std::vector<Segment> merged;
  for (const Segment& s : segments) {
    if (s.range.end <= s.range.begin) continue;
    if (!merged.empty() && merged.back().range.end > s.range.begin) {
      Segment& last = merged.back();
      if (last.zero_is_change == s.zero_is_change || s.range.end <= last.range.end) {
        last.range.end = std::max(last.range.end, s.range.end);
        last.zero_is_change = last.zero_is_change || s.zero_is_change;
        continue;
      }
      // Overlapping with a different meaning: the overlap counts as changed.
      last.zero_is_change = true;
      Segment rest = s;
      rest.range.begin = last.range.end;
      merged.push_back(rest);
      continue;
    }
    merged.push_back(s);
  }

  Plan plan;
  for (const Segment& s : merged) {
    for (std::uintptr_t page = s.range.begin; page < s.range.end; page += kPageSize) {
      const bool zero = page_is_zero(reinterpret_cast<const void*>(page));
      if (zero && !s.zero_is_change) {
        ++plan.holes;
        continue;
      }
      if (zero) {
        ++plan.counts.zero;
      } else {
        ++plan.data_pages;
        count_page(plan.counts, s.use, s.run_base, page);
      }
      if (!plan.runs.empty()) {
        PlannedRun& last = plan.runs.back();
        const std::uintptr_t end = last.address + std::uintptr_t{last.pages} * kPageSize;
        if (end == page && last.zero == zero && (page & (kChunkSize - 1)) != 0) {
          ++last.pages;
          continue;
        }
      }
      plan.runs.push_back({page, 1, zero});
    }
  }
  return plan;
}

SnapshotWriter::SnapshotWriter(ByteSink& sink, const SnapshotHeader& header) : sink_(sink) {
  const std::vector<unsigned char> body = encode_header(header);
  if (body.size() > kMaxHeaderSize) {
    throw SnapshotError(SnapshotErrc::kMisuse, "snapshot header larger than 16 MiB");
  }
  std::vector<unsigned char> head(kPreambleSize + body.size() + kChecksumSize);
  std::memcpy(head.data(), kMagic, sizeof kMagic);
  put_u32(head.data() + 8, kFormatVersion);
  put_u32(head.data() + 12, static_cast<std::uint32_t>(body.size()));
  std::memcpy(head.data() + kPreambleSize, body.data(), body.size());
  const std::size_t covered = kPreambleSize + body.size();
  put_u64(head.data() + covered, checksum(head.data(), covered));
  digest_.update(head.data() + covered, kChecksumSize);
  sink_.write(head.data(), head.size());
  bytes_ += head.size();
}

void SnapshotWriter::begin_run(std::uintptr_t address, std::uint32_t pages) {
  encode_run(RunRecord{address, pages, 0}, record_);
  sink_.write(record_, kRunRecordSize);
  bytes_ += kRunRecordSize;
  run_hash_.reset();
  run_bytes_left_ = std::uint64_t{pages} * kPageSize;
  in_run_ = true;
  ++runs_;
  data_pages_ += pages;
}

void SnapshotWriter::append(const void* data, std::size_t size) {
  run_hash_.update(data, size);
  sink_.write(data, size);
  bytes_ += size;
  run_bytes_left_ -= size;
}

void SnapshotWriter::end_run() {
  unsigned char stored[kChecksumSize];
  put_u64(stored, run_hash_.value());
  sink_.write(stored, kChecksumSize);
  bytes_ += kChecksumSize;
  digest_.update(record_, kRunRecordSize);
  digest_.update(stored, kChecksumSize);
  in_run_ = false;
}

void SnapshotWriter::data_run(std::uintptr_t address, std::uint32_t pages, const void* data) {
  begin_run(address, pages);
  const auto* bytes = static_cast<const unsigned char*>(data);
  const std::size_t total = std::size_t{pages} * kPageSize;
  for (std::size_t done = 0; done < total; done += kPiece) {
    append(bytes + done, std::min(kPiece, total - done));
  }
  end_run();
}

void SnapshotWriter::zero_run(std::uintptr_t address, std::uint32_t pages) {
  unsigned char bytes[kRunRecordSize + kChecksumSize] = {};
  encode_run(RunRecord{address, pages, kZeroRunFlag}, bytes);
  sink_.write(bytes, sizeof bytes);
  bytes_ += sizeof bytes;
  digest_.update(bytes, sizeof bytes);
  ++runs_;
}

std::uint64_t SnapshotWriter::finish() {
  unsigned char end[kRunRecordSize + kChecksumSize] = {};
  digest_.update(end, sizeof end);
  unsigned char trailer[kTrailerSize];
  put_u64(trailer, runs_);
  put_u64(trailer + 8, data_pages_);
  put_u64(trailer + 16, digest_.value());
  std::memcpy(trailer + 24, kEndMagic, sizeof kEndMagic);
  sink_.write(end, sizeof end);
  sink_.write(trailer, sizeof trailer);
  bytes_ += sizeof end + sizeof trailer;
  return bytes_;
}

}  // namespace reheap::detail::snapshot
