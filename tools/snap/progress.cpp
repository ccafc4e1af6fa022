// The progress line (see progress.h).
#include "progress.h"

#include <unistd.h>

#include <cstdio>
#include <utility>

namespace reheap::snap {

Progress::Progress(std::string label, std::uint64_t total, bool forced)
    : label_(std::move(label)),
      total_(total),
      active_(total >= kProgressThreshold && (forced || isatty(STDERR_FILENO) == 1)),
      start_(std::chrono::steady_clock::now()),
      last_(start_) {}

Progress::~Progress() { done(); }

void Progress::update(std::uint64_t position) {
  if (!active_) return;
  const auto now = std::chrono::steady_clock::now();
  if (drawn_ && now - last_ < std::chrono::milliseconds(100)) return;
  last_ = now;
  drawn_ = true;
  const double seconds = std::chrono::duration<double>(now - start_).count();
  const double mib = static_cast<double>(position) / (1024.0 * 1024.0);
  const double rate = seconds > 0 ? mib / seconds : 0.0;
  const double percent = 100.0 * static_cast<double>(position) / static_cast<double>(total_);
  std::fprintf(stderr, "\r%s: %5.1f%%  %.0f / %.0f MiB  %.0f MiB/s   ", label_.c_str(), percent,
               mib, static_cast<double>(total_) / (1024.0 * 1024.0), rate);
  std::fflush(stderr);
}

void Progress::done() {
  if (!drawn_) return;
  drawn_ = false;
  // Overwrite the line with spaces rather than relying on a terminal escape: --progress may
  // write to a file or a pipe, where escapes would be noise.
  std::fprintf(stderr, "\r%*s\r", static_cast<int>(label_.size()) + 60, "");
  std::fflush(stderr);
}

}  // namespace reheap::snap
