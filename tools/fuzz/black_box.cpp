#include "black_box.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace reheap_fuzz {

namespace {

constexpr char kMagic[8] = {'R', 'H', 'B', 'L', 'K', 'B', 'O', 'X'};
constexpr std::uint32_t kRunning = 1;
// Inputs are at most libFuzzer's -max_len (256 KiB in tools/fuzz.sh) plus what an edit adds; the
// file is sparse, so the unused capacity costs nothing.
constexpr std::size_t kCapacity = std::size_t{16} << 20;

struct Record {
  char magic[8];
  std::uint32_t state;
  std::uint32_t truncated;
  std::uint64_t size;
  char made_by[3968];  // the mutation history; a longer one is cut
  char stage[64];
};
constexpr std::size_t kDataOffset = 4096;
static_assert(sizeof(Record) <= kDataOffset);

struct Box {
  Record* record = nullptr;
  std::uint8_t* data = nullptr;
  char path[4096] = {};
};

Box* g_box = nullptr;
bool g_tried = false;

void remove_box() {
  if (g_box != nullptr) ::unlink(g_box->path);
}

Box* box() {
  if (g_tried) return g_box;
  g_tried = true;
  const char* dir = std::getenv("REHEAP_FUZZ_BLACKBOX_DIR");
  if (dir == nullptr || *dir == '\0') return nullptr;
  auto* b = new Box;
  std::snprintf(b->path, sizeof b->path, "%s/blackbox-%d.bin", dir, static_cast<int>(::getpid()));
  const int fd = ::open(b->path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0 || ::ftruncate(fd, static_cast<off_t>(kDataOffset + kCapacity)) != 0) {
    std::fprintf(stderr, "snapshot_fuzz: cannot create the black box %s: %s\n", b->path, std::strerror(errno));
    if (fd >= 0) ::close(fd);
    return nullptr;
  }
  void* map = ::mmap(nullptr, kDataOffset + kCapacity, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) return nullptr;
  b->record = static_cast<Record*>(map);
  b->data = static_cast<std::uint8_t*>(map) + kDataOffset;
  std::memcpy(b->record->magic, kMagic, sizeof kMagic);
  g_box = b;
  // A normal end (libFuzzer's exit after -max_total_time or -runs) removes the file; crash
  // paths end with _Exit or a signal and leave it.
  std::atexit(remove_box);
  return b;
}

void copy_text(char* to, std::size_t capacity, const char* text) {
  std::strncpy(to, text, capacity - 1);
  to[capacity - 1] = '\0';
}

}  // namespace

void black_box_begin(const std::uint8_t* data, std::size_t size, const char* made_by) {
  Box* b = box();
  if (b == nullptr) return;
  b->record->state = 0;
  std::atomic_signal_fence(std::memory_order_seq_cst);  // never "running" with a half-copied input
  const std::size_t kept = size < kCapacity ? size : kCapacity;
  std::memcpy(b->data, data, kept);
  b->record->size = kept;
  b->record->truncated = kept != size;
  copy_text(b->record->made_by, sizeof b->record->made_by, made_by);
  copy_text(b->record->stage, sizeof b->record->stage, "start");
  std::atomic_signal_fence(std::memory_order_seq_cst);
  b->record->state = kRunning;
}

void black_box_stage(const char* stage) {
  if (Box* b = box()) copy_text(b->record->stage, sizeof b->record->stage, stage);
}

void black_box_end() {
  if (Box* b = box()) b->record->state = 0;
}

bool read_black_box(const std::string& path, RecordedInput& out) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return false;
  Record r;
  bool ok = std::fread(&r, sizeof r, 1, f) == 1 && std::memcmp(r.magic, kMagic, sizeof kMagic) == 0 &&
            r.state == kRunning && r.size <= kCapacity;
  if (ok) {
    out.bytes.resize(r.size);
    ok = std::fseek(f, static_cast<long>(kDataOffset), SEEK_SET) == 0 &&
         std::fread(out.bytes.data(), 1, r.size, f) == r.size;
    r.made_by[sizeof r.made_by - 1] = '\0';
    r.stage[sizeof r.stage - 1] = '\0';
    out.made_by = r.made_by;
    out.stage = r.stage;
    out.truncated = r.truncated != 0;
  }
  std::fclose(f);
  return ok;
}

}  // namespace reheap_fuzz
