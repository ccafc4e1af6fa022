// The progress line `reheap-snap` draws on stderr while it reads a large snapshot.
//
// It is shown only for files of at least kProgressThreshold bytes, and only when stderr is a
// terminal or --progress was given, so that scripts and tests see clean output. The line is
// redrawn at most ten times a second (a carriage return, no newline) and erased when done.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace reheap::snap {

inline constexpr std::uint64_t kProgressThreshold = 100'000'000;

class Progress {
 public:
  // `forced`: --progress was given. `total`: the file's size (0: unknown; then nothing shows).
  Progress(std::string label, std::uint64_t total, bool forced);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // Bytes of the file consumed so far. Cheap when nothing is drawn.
  void update(std::uint64_t position);

  // Erases the line (also done by the destructor, so an exception leaves no half line behind).
  void done();

 private:
  std::string label_;
  std::uint64_t total_;
  bool active_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_;
};

}  // namespace reheap::snap
