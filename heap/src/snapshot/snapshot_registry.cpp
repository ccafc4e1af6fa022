// The registry of a node's saved snapshots (snapshot_registry.h).
//
// Lock order: the node's lock (a flock), then the registry's mutex. The zone is never called with
// the mutex held: the zone's reservation reads the registry while it holds the zone's lock, so a
// thread holding the mutex and waiting for the zone's lock could wait forever. For the same
// reason a publication calls the zone only once the zone is reserved (reserved() reads an atomic
// without the lock): until then no heap exists whose chunks it could hold.
#include "snapshot_registry.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <system_error>
#include <unordered_set>

#include "../layout.h"
#include "../node_state.h"
#include "../zone_impl.h"
#include "format.h"
#include "reheap/heap_scope.h"
#include "reheap/node_identity.h"
#include "reheap/snapshot.h"
#include "reheap/snapshot_error.h"

namespace reheap::detail::snapshot {
namespace {

constexpr std::string_view kFirstLine = "reheap snapshot registry 1";
// A process rewrites the registry once this many of its lines may name deleted files (and at
// least as many as it kept at the last rewrite, so the rewrites cost O(1) per save amortized).
constexpr std::size_t kMinStaleLines = 64;
constexpr const char* kPurpose = "the node's registry of saved snapshots";

struct Registry {
  std::mutex mutex;
  bool active = false;  // the zone is reserved with a state directory
  std::filesystem::path dir;
  std::uint32_t node = 0;
  std::filesystem::path file;
  std::uintptr_t zone_base = 0;
  std::size_t zone_size = 0;
  // The paths the registry file lists, as this process last read or wrote it; `dev` and `ino`
  // say which file that was (a rewrite by another process replaces it).
  std::unordered_set<std::string> listed;
  bool known = false;
  dev_t dev = 0;
  ino_t ino = 0;
  std::size_t kept = 0;   // lines the last read or rewrite kept
  std::size_t stale = 0;  // lines appended, or files forgotten, since
  // What this process holds for each file: the chunk runs of the version it knows.
  std::map<std::string, std::vector<HeldRun>> holds;
};

Registry& registry() {
  // Never destroyed: heaps, and so saves, may outlive static destruction.
  static Registry* const r = new Registry();
  return *r;
}

std::string key_of(const std::filesystem::path& file) {
  std::error_code ignored;
  return std::filesystem::absolute(file, ignored).lexically_normal().string();
}

std::string escape(const std::string& path) {
  std::string out;
  out.reserve(path.size());
  for (const char ch : path) {
    if (ch == '%') {
      out += "%25";
    } else if (ch == '\n') {
      out += "%0A";
    } else if (ch == '\r') {
      out += "%0D";
    } else {
      out += ch;
    }
  }
  return out;
}

bool unescape(std::string_view text, std::string* out) {
  out->clear();
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      *out += text[i];
      continue;
    }
    const std::string_view code = text.substr(i + 1, 2);
    if (code == "25") {
      *out += '%';
    } else if (code == "0A") {
      *out += '\n';
    } else if (code == "0D") {
      *out += '\r';
    } else {
      return false;
    }
    i += 2;
  }
  return true;
}

std::string line_for(const std::string& path) {
  const std::string text = escape(path);
  char sum[17];
  std::snprintf(sum, sizeof sum, "%016llx", static_cast<unsigned long long>(checksum(text.data(), text.size())));
  return std::string(sum) + " " + text + "\n";
}

struct Parsed {
  std::vector<std::string> paths;  // each once, in the order first listed
  bool torn = false;               // the last line was cut short (ignored)
  bool duplicates = false;
};

[[noreturn]] void corrupt(const std::filesystem::path& file, std::size_t line, const std::string& what) {
  throw std::runtime_error(
      "reheap: " + file.string() + ", " + kPurpose + ", is corrupt at line " + std::to_string(line) + " (" + what +
      "): without it this node's new heaps could take the chunks its saved snapshots need. Move the file "
      "aside to go on (the snapshots it listed are protected again once saved again) or put back a good copy");
}

Parsed parse(const std::string& text, const std::filesystem::path& file) {
  Parsed p;
  std::set<std::string> seen;
  std::size_t at = 0;
  std::size_t number = 0;
  std::string path;
  while (at < text.size()) {
    ++number;
    const std::size_t end = text.find('\n', at);
    if (end == std::string::npos) {
      // Only an append cut short by a crash leaves a line without its newline, and only as the
      // last one; its save never put a file in place (it waits for the append's fsync).
      p.torn = true;
      break;
    }
    const std::string_view line(text.data() + at, end - at);
    at = end + 1;
    if (number == 1) {
      if (line != kFirstLine) corrupt(file, number, "not \"" + std::string(kFirstLine) + "\"");
      continue;
    }
    bool good = false;
    if (line.size() > 17 && line[16] == ' ') {
      const std::string_view body = line.substr(17);
      char sum[17];
      std::snprintf(sum, sizeof sum, "%016llx", static_cast<unsigned long long>(checksum(body.data(), body.size())));
      good = line.substr(0, 16) == sum && unescape(body, &path) && !path.empty() && path[0] == '/';
    }
    if (!good) corrupt(file, number, "its checksum or path is malformed");
    if (seen.insert(path).second) {
      p.paths.push_back(path);
    } else {
      p.duplicates = true;
    }
  }
  return p;
}

// The registry's text ("" if there is none) and the file's identity.
std::string read_registry(const std::filesystem::path& file, struct stat* st) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return std::string();
    throw std::system_error(errno, std::generic_category(), "reheap: cannot open " + file.string());
  }
  std::string text;
  char buffer[8192];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      throw std::system_error(err, std::generic_category(), "reheap: cannot read " + file.string());
    }
    if (n == 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
  }
  const int rc = ::fstat(fd, st);
  const int err = errno;
  ::close(fd);
  if (rc != 0) throw std::system_error(err, std::generic_category(), "reheap: cannot stat " + file.string());
  return text;
}

void write_all(int fd, const std::string& text, const std::filesystem::path& file) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw std::system_error(errno, std::generic_category(), "reheap: cannot write " + file.string());
    done += static_cast<std::size_t>(n);
  }
}

void fsync_directory(const std::filesystem::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0 || ::fsync(fd) != 0) {
    const int err = errno;
    if (fd >= 0) ::close(fd);
    throw std::system_error(err, std::generic_category(), "reheap: cannot fsync the directory " + dir.string());
  }
  ::close(fd);
}

// Replaces the registry with `paths`, crash-safely, and records what it now lists. Under the
// node's lock and the mutex.
void rewrite_locked(Registry& r, const std::vector<std::string>& paths) {
  std::string text(kFirstLine);
  text += '\n';
  for (const std::string& p : paths) text += line_for(p);
  std::filesystem::path temporary = r.file;
  temporary += ".tmp";  // one writer at a time: the node's lock is held
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw std::system_error(errno, std::generic_category(), "reheap: cannot create " + temporary.string());
  struct stat st {};
  try {
    write_all(fd, text, temporary);
    if (::fsync(fd) != 0) throw std::system_error(errno, std::generic_category(), "reheap: cannot fsync " + temporary.string());
    if (::fstat(fd, &st) != 0) throw std::system_error(errno, std::generic_category(), "reheap: cannot stat " + temporary.string());
  } catch (...) {
    ::close(fd);
    ::unlink(temporary.c_str());
    throw;
  }
  ::close(fd);
  if (::rename(temporary.c_str(), r.file.c_str()) != 0) {
    const int err = errno;
    ::unlink(temporary.c_str());
    throw std::system_error(err, std::generic_category(), "reheap: cannot rename " + temporary.string());
  }
  fsync_directory(r.dir);
  r.listed = std::unordered_set<std::string>(paths.begin(), paths.end());
  r.known = true;
  r.dev = st.st_dev;
  r.ino = st.st_ino;
  r.kept = paths.size();
  r.stale = 0;
}

// Brings `listed` up to date with the registry file, if another process replaced it. A torn last
// line is rewritten away, so that the next append starts a line of its own.
void refresh_locked(Registry& r) {
  struct stat st {};
  if (::stat(r.file.c_str(), &st) != 0) {
    if (errno != ENOENT) throw std::system_error(errno, std::generic_category(), "reheap: cannot stat " + r.file.string());
    r.listed.clear();
    r.known = false;
    return;
  }
  if (r.known && st.st_dev == r.dev && st.st_ino == r.ino) return;
  const Parsed p = parse(read_registry(r.file, &st), r.file);
  if (p.torn) {
    rewrite_locked(r, p.paths);
    return;
  }
  r.listed = std::unordered_set<std::string>(p.paths.begin(), p.paths.end());
  r.known = true;
  r.dev = st.st_dev;
  r.ino = st.st_ino;
}

// Appends `path`'s line and fsyncs it. Under the node's lock and the mutex.
void append_locked(Registry& r, const std::string& path) {
  refresh_locked(r);
  const int fd = ::open(r.file.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw std::system_error(errno, std::generic_category(), "reheap: cannot open " + r.file.string());
  bool created = false;
  try {
    struct stat st {};
    if (::fstat(fd, &st) != 0) throw std::system_error(errno, std::generic_category(), "reheap: cannot stat " + r.file.string());
    char last = '\n';
    if (st.st_size > 0 && ::pread(fd, &last, 1, st.st_size - 1) != 1) {
      throw std::system_error(errno, std::generic_category(), "reheap: cannot read " + r.file.string());
    }
    if (last != '\n') {
      // A line cut short by a crash since this process last read the file: rewritten away first.
      ::close(fd);
      r.known = false;
      refresh_locked(r);
      append_locked(r, path);
      return;
    }
    created = st.st_size == 0;
    std::string text = created ? std::string(kFirstLine) + "\n" : std::string();
    text += line_for(path);
    write_all(fd, text, r.file);
    if (::fsync(fd) != 0) throw std::system_error(errno, std::generic_category(), "reheap: cannot fsync " + r.file.string());
    if (created) {
      r.dev = st.st_dev;
      r.ino = st.st_ino;
      r.known = true;
    }
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  if (created) fsync_directory(r.dir);
  r.listed.insert(path);
  ++r.stale;
}

// Drops the lines whose file is gone and returns those files. Under the node's lock and the mutex.
std::vector<std::string> prune_locked(Registry& r) {
  struct stat st {};
  const Parsed p = parse(read_registry(r.file, &st), r.file);
  std::vector<std::string> kept;
  std::vector<std::string> gone;
  for (const std::string& path : p.paths) {
    struct stat file {};
    if (::stat(path.c_str(), &file) != 0 && (errno == ENOENT || errno == ENOTDIR)) {
      gone.push_back(path);
    } else {
      kept.push_back(path);
    }
  }
  rewrite_locked(r, kept);
  return gone;
}

// Holds `add` and lets `drop` go, in the zone of this process.
void change_holds(const std::vector<HeldRun>& add, const std::vector<HeldRun>& drop) noexcept {
  ZoneImpl& z = zone();
  if (!z.reserved()) return;
  for (const HeldRun& run : add) z.hold(run.first, run.count);
  for (const HeldRun& run : drop) z.unhold(run.first, run.count);
}

void warn(const std::filesystem::path& registry_path, const std::string& file, const std::string& why) {
  std::fprintf(stderr,
               "reheap: %s lists %s, which cannot be read (%s): its chunks are not held for its restore "
               "in this process\n",
               registry_path.c_str(), file.c_str(), why.c_str());
}

}  // namespace

std::vector<HeldRun> runs_of(const std::vector<SnapshotChunk>& chunks) {
  std::vector<HeldRun> runs;
  for (const SnapshotChunk& c : chunks) {
    if (!runs.empty() && runs.back().first + runs.back().count == c.index) {
      ++runs.back().count;
    } else {
      runs.push_back(HeldRun{c.index, 1});
    }
  }
  return runs;
}

std::vector<HeldRun> load_registry(std::uintptr_t zone_base, std::size_t zone_size) {
  HeapScope system(nullptr);
  const std::filesystem::path dir = state_directory();
  Registry& r = registry();
  if (dir.empty()) {
    std::lock_guard guard(r.mutex);
    r.active = false;
    return {};
  }
  const std::uint32_t node = NodeIdentity::current().node;
  const NodeLock lock(dir, node, kPurpose);
  std::lock_guard guard(r.mutex);
  r.dir = dir;
  r.node = node;
  r.file = dir / (node_file_prefix(node) + ".snapshots");
  r.zone_base = zone_base;
  r.zone_size = zone_size;
  r.holds.clear();
  struct stat st {};
  const Parsed p = parse(read_registry(r.file, &st), r.file);
  std::vector<std::string> kept;
  std::vector<HeldRun> held;
  bool dropped = p.torn || p.duplicates;
  for (const std::string& path : p.paths) {
    struct stat file {};
    if (::stat(path.c_str(), &file) != 0) {
      if (errno == ENOENT || errno == ENOTDIR) {
        dropped = true;  // deleted
      } else {
        kept.push_back(path);
        warn(r.file, path, std::generic_category().message(errno));
      }
      continue;
    }
    SnapshotHeader header;
    try {
      header = read_snapshot_header(path);
    } catch (const SnapshotError& e) {
      const SnapshotErrc code = e.code();
      if (code == SnapshotErrc::kNotASnapshot || code == SnapshotErrc::kTruncated || code == SnapshotErrc::kCorrupt) {
        dropped = true;  // replaced by something that is not a snapshot
      } else {
        kept.push_back(path);  // unreadable here (permissions, a newer format): not ours to drop
        warn(r.file, path, e.what());
      }
      continue;
    }
    kept.push_back(path);
    // A snapshot of another zone holds nothing here: it cannot be restored in this zone.
    if (header.zone_base != zone_base || header.zone_size != zone_size || header.chunk_size != kChunkSize) continue;
    std::vector<HeldRun> runs = runs_of(header.chunks);
    held.insert(held.end(), runs.begin(), runs.end());
    r.holds[path] = std::move(runs);
  }
  if (dropped) {
    rewrite_locked(r, kept);
  } else {
    r.listed = std::unordered_set<std::string>(kept.begin(), kept.end());
    r.known = st.st_ino != 0;  // read_registry left `st` zero if there is no file
    r.dev = st.st_dev;
    r.ino = st.st_ino;
    r.kept = kept.size();
    r.stale = 0;
  }
  r.active = true;
  return held;
}

Publication::Publication(const std::filesystem::path& target, std::vector<HeldRun> runs)
    : target_(target), runs_(std::move(runs)) {}

Publication::~Publication() = default;

void Publication::before_rename() {
  HeapScope system(nullptr);
  Registry& r = registry();
  std::filesystem::path dir;
  std::uint32_t node = 0;
  {
    std::lock_guard guard(r.mutex);
    if (!r.active) return;
    dir = r.dir;
    node = r.node;
  }
  const std::string key = key_of(target_);
  try {
    lock_ = std::make_unique<NodeLock>(dir, node, kPurpose);
    std::lock_guard guard(r.mutex);
    refresh_locked(r);
    if (r.listed.count(key) == 0) append_locked(r, key);
  } catch (const std::system_error& e) {
    lock_.reset();
    const int err = e.code().value();
    throw SnapshotError(err == ENOSPC || err == EDQUOT ? SnapshotErrc::kNoSpace : SnapshotErrc::kIo,
                        target_.string() + ": not saved: it cannot be listed in " + kPurpose + " (" + e.what() + ")");
  } catch (const std::runtime_error& e) {
    lock_.reset();
    throw SnapshotError(SnapshotErrc::kCorrupt, target_.string() + ": not saved: " + e.what());
  }
}

void Publication::after_rename() noexcept {
  if (lock_ == nullptr) return;
  HeapScope system(nullptr);
  Registry& r = registry();
  std::vector<HeldRun> drop;
  try {
    const std::string key = key_of(target_);
    std::lock_guard guard(r.mutex);
    std::vector<HeldRun>& holds = r.holds[key];
    drop = std::move(holds);
    holds = runs_;
    if (r.stale >= std::max(kMinStaleLines, r.kept)) {
      for (const std::string& gone : prune_locked(r)) {
        auto it = r.holds.find(gone);
        if (it == r.holds.end()) continue;
        drop.insert(drop.end(), it->second.begin(), it->second.end());
        r.holds.erase(it);
      }
    }
  } catch (const std::exception& e) {
    // The file is in place and listed; a rewrite that failed is tried again at the next save.
    std::fprintf(stderr, "reheap: %s could not be rewritten: %s\n", r.file.c_str(), e.what());
  }
  // Still under the node's lock, which orders the publications of the process: the holds of one
  // file change in the order its versions were put in place.
  change_holds(runs_, drop);
  lock_.reset();
}

void forget(const std::filesystem::path& file) noexcept {
  HeapScope system(nullptr);
  Registry& r = registry();
  std::vector<HeldRun> drop;
  try {
    const std::string key = key_of(file);
    std::lock_guard guard(r.mutex);
    if (!r.active) return;
    auto it = r.holds.find(key);
    if (it != r.holds.end()) {
      drop = std::move(it->second);
      r.holds.erase(it);
    }
    ++r.stale;
  } catch (const std::exception&) {
    return;  // no memory for the key: the holds stay until the next rewrite or start
  }
  change_holds({}, drop);
}

std::filesystem::path registry_file() {
  Registry& r = registry();
  std::lock_guard guard(r.mutex);
  return r.active ? r.file : std::filesystem::path();
}

}  // namespace reheap::detail::snapshot

namespace reheap {

bool remove_snapshot(const std::filesystem::path& file, std::error_code& error) noexcept {
  HeapScope system(nullptr);
  const bool removed = std::filesystem::remove(file, error);
  if (!error) detail::snapshot::forget(file);
  return removed;
}

bool remove_snapshot(const std::filesystem::path& file) {
  std::error_code error;
  const bool removed = remove_snapshot(file, error);
  if (error) throw std::filesystem::filesystem_error("reheap::remove_snapshot", file, error);
  return removed;
}

}  // namespace reheap
