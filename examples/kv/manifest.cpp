// Manifest (see manifest.h).
#include "manifest.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

namespace kv {

namespace {

constexpr std::string_view kHeader = "reheap-kv manifest 1";

std::uint64_t fnv1a(std::string_view bytes) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (const char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

[[noreturn]] void fail(const std::filesystem::path& file, const std::string& what) {
  throw ManifestError(file.string() + ": " + what);
}

// A file name the manifest may hold: a plain name in the directory, nothing that walks out of it.
bool plain_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos;
}

bool is_shard_file(const std::filesystem::directory_entry& entry) {
  return entry.path().filename().string().rfind("shard-", 0) == 0 && entry.path().extension() == ".snap";
}

// Makes the directory's entries (a rename into or out of it) durable.
void sync_directory(const std::filesystem::path& dir) {
  const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
}

void write_all(int fd, const std::string& text, const std::filesystem::path& file) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = errno;
      ::close(fd);
      fail(file, std::string("cannot write: ") + std::strerror(error));
    }
    done += static_cast<std::size_t>(n);
  }
}

}  // namespace

std::string shard_file_name(std::uint32_t index, std::uint64_t generation) {
  return "shard-" + std::to_string(index) + "." + std::to_string(generation) + ".snap";
}

std::optional<Manifest> read_manifest(const std::filesystem::path& dir) {
  const std::filesystem::path file = dir / kManifestName;
  std::error_code ec;
  const auto status = std::filesystem::symlink_status(file, ec);
  if (ec || status.type() == std::filesystem::file_type::not_found) return std::nullopt;
  if (status.type() != std::filesystem::file_type::regular) fail(file, "not a regular file");
  std::ifstream in(file, std::ios::binary);
  if (!in) fail(file, "cannot open");
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  if (text.size() > (16u << 20)) fail(file, "too large to be a manifest");
  const std::size_t mark = text.rfind("checksum ");
  if (mark == std::string::npos) fail(file, "truncated: no checksum line");
  std::uint64_t stored = 0;
  if (std::sscanf(text.c_str() + mark, "checksum %16" SCNx64, &stored) != 1) fail(file, "bad checksum line");
  if (fnv1a(std::string_view(text).substr(0, mark)) != stored) fail(file, "checksum mismatch (corrupt)");

  Manifest m;
  std::istringstream lines(text.substr(0, mark));
  std::string line;
  if (!std::getline(lines, line) || line != kHeader) fail(file, "not a reheap-kv manifest (foreign file)");
  bool have_generation = false;
  bool have_shards = false;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string key;
    fields >> key;
    if (key == "generation") {
      have_generation = static_cast<bool>(fields >> m.generation);
    } else if (key == "shards") {
      have_shards = static_cast<bool>(fields >> m.shards) && m.shards > 0 && m.shards <= 4096;
      if (have_shards) m.chains.assign(m.shards, {});
    } else if (key == "saved_ms") {
      fields >> m.saved_ms;
    } else if (key == "shard") {
      std::uint32_t index = 0;
      if (!have_shards || !(fields >> index) || index >= m.shards) fail(file, "bad shard line: " + line);
      for (std::string name; fields >> name;) {
        if (!plain_name(name)) fail(file, "bad file name in shard line: " + name);
        m.chains[index].push_back(name);
      }
    } else if (!key.empty()) {
      fail(file, "unknown field: " + key);
    }
  }
  if (!have_generation || !have_shards) fail(file, "missing generation or shards");
  for (std::uint32_t i = 0; i < m.shards; ++i) {
    if (m.chains[i].empty()) fail(file, "shard " + std::to_string(i) + " has no file");
  }
  return m;
}

void write_manifest(const std::filesystem::path& dir, const Manifest& m) {
  std::string text(kHeader);
  text += "\ngeneration " + std::to_string(m.generation) + "\nshards " + std::to_string(m.shards) +
          "\nsaved_ms " + std::to_string(m.saved_ms) + "\n";
  for (std::uint32_t i = 0; i < m.chains.size(); ++i) {
    text += "shard " + std::to_string(i);
    for (const std::string& name : m.chains[i]) text += " " + name;
    text += "\n";
  }
  char sum[40];
  std::snprintf(sum, sizeof sum, "checksum %016" PRIx64 "\n", fnv1a(text));
  text += sum;

  const std::filesystem::path tmp = dir / "manifest.tmp";
  const std::filesystem::path file = dir / kManifestName;
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) fail(tmp, std::string("cannot create: ") + std::strerror(errno));
  write_all(fd, text, tmp);
  if (::fsync(fd) != 0) {
    const int error = errno;
    ::close(fd);
    fail(tmp, std::string("fsync: ") + std::strerror(error));
  }
  ::close(fd);
  if (::rename(tmp.c_str(), file.c_str()) != 0) fail(file, std::string("rename: ") + std::strerror(errno));
  sync_directory(dir);
}

std::uint64_t newest_file_generation(const std::filesystem::path& dir) {
  std::uint64_t newest = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    // shard-<index>.<generation>.snap
    if (!is_shard_file(entry)) continue;
    const std::string stem = entry.path().stem().string();  // shard-<index>.<generation>
    const std::size_t dot = stem.rfind('.');
    if (dot == std::string::npos) continue;
    std::uint64_t generation = 0;
    const char* first = stem.data() + dot + 1;
    const char* last = stem.data() + stem.size();
    const auto [end, parse_error] = std::from_chars(first, last, generation);
    if (parse_error == std::errc() && end == last) newest = std::max(newest, generation);
  }
  return newest;
}

std::size_t delete_unnamed_files(const std::filesystem::path& dir, const Manifest& manifest) {
  std::set<std::string> named;
  for (const auto& chain : manifest.chains) named.insert(chain.begin(), chain.end());
  std::size_t deleted = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (!is_shard_file(entry) || named.count(entry.path().filename().string()) != 0) continue;
    if (std::filesystem::remove(entry.path(), ec)) ++deleted;
  }
  return deleted;
}

std::filesystem::path set_aside_saved_set(const std::filesystem::path& dir) {
  std::filesystem::path kept;
  for (unsigned n = 1;; ++n) {
    kept = dir / ("unrestorable-" + std::to_string(n));
    if (::mkdir(kept.c_str(), 0755) == 0) break;
    if (errno != EEXIST) fail(kept, std::string("cannot create: ") + std::strerror(errno));
  }
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (is_shard_file(entry)) files.push_back(entry.path());
  }
  if (ec) fail(dir, "cannot list: " + ec.message());
  // The manifest last: until it moves, a start without --ignore-bad-snapshot still refuses,
  // naming whichever file it misses, rather than starting empty.
  if (std::filesystem::exists(dir / kManifestName, ec)) files.push_back(dir / kManifestName);
  for (const std::filesystem::path& file : files) {
    const std::filesystem::path to = kept / file.filename();
    if (::rename(file.c_str(), to.c_str()) != 0) {
      fail(file, "cannot move into " + kept.string() + ": " + std::strerror(errno));
    }
  }
  sync_directory(kept);
  sync_directory(dir);
  return kept;
}

}  // namespace kv
