// Formatting helpers shared by the commands (see command.h).
#include <cstdio>
#include <ctime>
#include <string>

#include "command.h"

namespace reheap::snap {

std::string hex(std::uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%016llx", static_cast<unsigned long long>(value));
  return text;
}

std::string human_bytes(std::uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double value = static_cast<double>(bytes);
  unsigned unit = 0;
  while (value >= 1024.0 && unit + 1 < std::size(kUnits)) {
    value /= 1024.0;
    ++unit;
  }
  char text[32];
  if (unit == 0) {
    std::snprintf(text, sizeof text, "%llu B", static_cast<unsigned long long>(bytes));
  } else {
    std::snprintf(text, sizeof text, "%.1f %s", value, kUnits[unit]);
  }
  return text;
}

std::string utc_time(std::uint64_t unix_ns) {
  const std::time_t seconds = static_cast<std::time_t>(unix_ns / 1'000'000'000u);
  std::tm parts{};
  if (gmtime_r(&seconds, &parts) == nullptr) return "?";
  char text[64];
  std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%03uZ", parts.tm_year + 1900,
                parts.tm_mon + 1, parts.tm_mday, parts.tm_hour, parts.tm_min, parts.tm_sec,
                static_cast<unsigned>(unix_ns % 1'000'000'000u / 1'000'000u));
  return text;
}

const char* kind_name(SnapshotKind kind) {
  return kind == SnapshotKind::kFull ? "full" : "incremental";
}

const char* use_name(ChunkUse use) {
  switch (use) {
    case ChunkUse::kClass: return "class";
    case ChunkUse::kLarge: return "large";
    case ChunkUse::kHuge: return "huge";
  }
  return "unknown";
}

void report_error(const std::string& what) {
  std::fprintf(stderr, "reheap-snap: %s\n", what.c_str());
}

std::string describe(const SnapshotError& error) {
  return std::string(to_string(error.code())) + ": " + error.what();
}

}  // namespace reheap::snap
