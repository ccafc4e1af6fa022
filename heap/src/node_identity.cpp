// The process's node identity (see node_identity.h): its configuration, and the incarnation
// counter kept in a state directory.
#include "reheap/node_identity.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <string>
#include <system_error>

#include "node_state.h"
#include "reheap/heap_scope.h"

namespace reheap {
namespace {

struct IdentityState {
  std::mutex mutex;
  NodeIdentityConfig wanted;  // what configure() asked for so far
  bool settled = false;
  NodeIdentity identity;
  std::filesystem::path state_dir;  // the one the settled identity's counter lives in, if any
};

IdentityState& state() {
  // Never destroyed: heaps (and so the zone, which asks for the identity) may be created during
  // static destruction.
  static IdentityState* const s = new IdentityState();
  return *s;
}

std::uint32_t parse_node(const char* text, const char* what) {
  char* end = nullptr;
  errno = 0;
  const unsigned long value = std::strtoul(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || value >= NodeIdentity::kMaxNodes) {
    throw std::invalid_argument(std::string("reheap: ") + what + "=" + text + " is not a node id (0.." +
                                std::to_string(NodeIdentity::kMaxNodes - 1) + ")");
  }
  return static_cast<std::uint32_t>(value);
}

std::uint32_t random_incarnation() noexcept {
  std::uint32_t value = 0;
  if (::getrandom(&value, sizeof value, 0) != static_cast<ssize_t>(sizeof value)) {
    // No entropy source (a very old kernel, a seccomp filter): the clock still differs between
    // two starts of a node far more often than not.
    value = static_cast<std::uint32_t>(
        static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) *
        0x9E3779B97F4A7C15ull >> 32);
  }
  return value % NodeIdentity::kIncarnations;
}

[[noreturn]] void state_failed(int err, const std::filesystem::path& dir, const std::string& purpose,
                               const std::string& step) {
  throw std::system_error(err, std::generic_category(),
                          "reheap: the state directory " + dir.string() + " cannot keep " + purpose + " (" + step +
                              "; fix its permissions or set another REHEAP_STATE_DIR / "
                              "RuntimeConfig::state_dir)");
}

[[noreturn]] void counter_failed(int err, const std::filesystem::path& dir, const std::string& step) {
  state_failed(err, dir, "the node's incarnation counter", step);
}

// Closes a descriptor on every path out.
class Fd {
 public:
  explicit Fd(int fd) noexcept : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const noexcept { return fd_; }

 private:
  int fd_;
};

void settle_locked(IdentityState& s) {
  NodeIdentity id;
  if (s.wanted.node >= 0) {
    id.node = static_cast<std::uint32_t>(s.wanted.node);
  } else if (const char* text = std::getenv("REHEAP_NODE"); text != nullptr && *text != '\0') {
    id.node = parse_node(text, "REHEAP_NODE");
  }
  std::filesystem::path dir = s.wanted.state_dir;
  if (dir.empty()) {
    if (const char* text = std::getenv("REHEAP_STATE_DIR"); text != nullptr && *text != '\0') dir = text;
  }
  if (dir.empty()) {
    id.incarnation = random_incarnation();
  } else {
    id.incarnation = NodeIdentity::next_incarnation(dir, id.node);
    id.counted = true;
  }
  s.identity = id;
  s.state_dir = dir;
  s.settled = true;
}

}  // namespace

NodeIdentity NodeIdentity::current() {
  IdentityState& s = state();
  std::lock_guard lock(s.mutex);
  if (!s.settled) {
    HeapScope system(nullptr);  // the counter's paths and messages are process memory
    settle_locked(s);
  }
  return s.identity;
}

bool NodeIdentity::settled() noexcept {
  IdentityState& s = state();
  std::lock_guard lock(s.mutex);
  return s.settled;
}

void NodeIdentity::configure(const NodeIdentityConfig& config) {
  HeapScope system(nullptr);
  if (config.node >= static_cast<int>(kMaxNodes) || config.node < -1) {
    throw std::invalid_argument("reheap: node id " + std::to_string(config.node) + " is out of range (0.." +
                                std::to_string(kMaxNodes - 1) + ")");
  }
  IdentityState& s = state();
  std::lock_guard lock(s.mutex);
  if (!s.settled) {
    if (config.node >= 0) s.wanted.node = config.node;
    if (!config.state_dir.empty()) s.wanted.state_dir = config.state_dir;
    return;
  }
  const bool other_node = config.node >= 0 && static_cast<std::uint32_t>(config.node) != s.identity.node;
  const bool other_dir = !config.state_dir.empty() && config.state_dir != s.state_dir;
  if (other_node || other_dir) {
    throw std::logic_error(
        "reheap: the process's node identity is already settled (node " + std::to_string(s.identity.node) +
        ", incarnation " + std::to_string(s.identity.incarnation) +
        (s.state_dir.empty() ? std::string(", random") : ", counted in " + s.state_dir.string()) +
        ") and cannot become node " + std::to_string(config.node) +
        (config.state_dir.empty() ? std::string() : " counted in " + config.state_dir.string()) +
        ": set REHEAP_NODE / REHEAP_STATE_DIR, or configure the node before the first heap or runtime");
  }
}

std::uint32_t NodeIdentity::next_incarnation(const std::filesystem::path& dir, std::uint32_t node) {
  HeapScope system(nullptr);
  const std::string base = detail::node_file_prefix(node);
  const std::filesystem::path counter_path = dir / (base + ".incarnation");
  const std::filesystem::path temporary = dir / (base + ".incarnation.tmp");
  const detail::NodeLock lock(dir, node, "the node's incarnation counter");

  std::uint64_t value = 0;
  {
    const Fd in(::open(counter_path.c_str(), O_RDONLY | O_CLOEXEC));
    if (in.get() < 0 && errno != ENOENT) counter_failed(errno, dir, "cannot read " + counter_path.string());
    if (in.get() >= 0) {
      char text[32] = {};
      const ssize_t n = ::read(in.get(), text, sizeof text - 1);
      if (n < 0) counter_failed(errno, dir, "cannot read " + counter_path.string());
      char* end = nullptr;
      errno = 0;
      value = std::strtoull(text, &end, 10);
      if (n == 0 || errno != 0 || end == text || (*end != '\n' && *end != '\0')) {
        counter_failed(EINVAL, dir, counter_path.string() + " does not hold a number");
      }
    }
  }
  const std::string next = std::to_string(value + 1) + "\n";
  {
    const Fd out(::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (out.get() < 0) counter_failed(errno, dir, "cannot create " + temporary.string());
    if (::write(out.get(), next.data(), next.size()) != static_cast<ssize_t>(next.size())) {
      counter_failed(errno != 0 ? errno : EIO, dir, "cannot write " + temporary.string());
    }
    if (::fsync(out.get()) != 0) counter_failed(errno, dir, "cannot fsync " + temporary.string());
  }
  if (::rename(temporary.c_str(), counter_path.c_str()) != 0) {
    counter_failed(errno, dir, "cannot rename " + temporary.string());
  }
  const Fd directory(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (directory.get() < 0 || ::fsync(directory.get()) != 0) counter_failed(errno, dir, "cannot fsync it");
  return static_cast<std::uint32_t>(value % kIncarnations);
}

namespace detail {

std::filesystem::path state_directory() {
  IdentityState& s = state();
  std::lock_guard lock(s.mutex);
  return s.settled ? s.state_dir : std::filesystem::path();
}

std::string node_file_prefix(std::uint32_t node) { return "node-" + std::to_string(node); }

NodeLock::NodeLock(const std::filesystem::path& dir, std::uint32_t node, const char* purpose) {
  HeapScope system(nullptr);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) state_failed(ec.value(), dir, purpose, "cannot create it");
  const std::filesystem::path path = dir / (node_file_prefix(node) + ".lock");
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) state_failed(errno, dir, purpose, "cannot open " + path.string());
  while (::flock(fd_, LOCK_EX) != 0) {
    if (errno != EINTR) {
      const int err = errno;
      ::close(fd_);
      state_failed(err, dir, purpose, "cannot lock " + path.string());
    }
  }
}

NodeLock::~NodeLock() {
  // Closing the descriptor lets the lock go.
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace detail
}  // namespace reheap
