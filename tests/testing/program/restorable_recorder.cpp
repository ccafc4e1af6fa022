// `restorable_recorder DIR`: records a Tally (restorable_tally.h) that is sent 1, 2 and 3, under a
// real runtime, and prints its recording's directory, DIR/reactor-<ref>. The one program of the
// REHEAP_RESTORABLE tests that constructs a Tally.
#include <cstdio>
#include <filesystem>
#include <string>

#include "reheap/runtime.h"
#include "restorable_tally.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: restorable_recorder DIR\n");
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  reheap::ActorRef tally;
  {
    reheap::Runtime runtime;
    reheap::SpawnOptions options;
    options.recording.mode = reheap::RecordingMode::kFile;
    options.recording.directory = dir;
    tally = runtime.spawn<restorable_test::Tally>(options);
    for (int i = 1; i <= 3; ++i) runtime.send(tally, restorable_test::Add{i});
    if (!runtime.wait_idle()) {
      std::fprintf(stderr, "restorable_recorder: the runtime did not become idle\n");
      return 1;
    }
  }
  std::printf("%s\n", (dir / ("reactor-" + std::to_string(tally.value()))).c_str());
  return 0;
}
