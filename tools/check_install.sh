#!/usr/bin/env bash
# Installs the release build into a temporary prefix and builds a tiny consumer against it, once
# with find_package(reheap) and once with pkg-config, then runs both; then the same for a tiny
# GoogleTest program on the test kit (reheap::testing, reheap-testing.pc), and a test-kit program
# without GoogleTest (the kit must not force it on anyone); then the README's programs as they are
# in examples/ (hello.cpp, readme/*.cpp), each built both ways and run, and checks that README.md
# shows them as they are (tools/check_readme_examples.sh). Last, what the package says of
# REHEAP_CHECKS: reheap_CHECKS and reheap.pc's `checks` agree with the build, and a consumer that
# asks for the other kind is refused at configure time (CMake) and at compile time (the header).
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --preset release >/dev/null
cmake --build --preset release --target reheap_heap reheap_new_delete reheap_runtime reheap_testing \
  reheap-snap >/dev/null
cmake --install build/release --prefix "$prefix/usr" >/dev/null
mkdir -p "$prefix/consumer"
cat > "$prefix/consumer/main.cpp" <<'CPP'
#include <reheap/heap.h>
#include <reheap/heap_scope.h>
#include <string>
#ifdef WITH_RUNTIME
#include <reheap/message_allocator.h>
#include <reheap/runtime.h>
#include <atomic>
std::atomic<int> got{0};
struct Echo : reheap::Reactor {
  void on_message(const reheap::Message& m) override { got = static_cast<int>(m.get<std::string>().size()); }
};
#endif
int main() {
#ifdef WITH_RUNTIME
  {
    reheap::Runtime rt(reheap::RuntimeConfig{.workers = 1});
    const reheap::ActorRef r = rt.spawn<Echo>();
    if (rt.send(r, std::string(5, 'x')) != reheap::SendResult::kOk) return 3;
    if (!rt.wait_idle() || got != 5) return 4;
  }
  void* m = reheap::MessageAllocator::allocate(64);
  if (m == nullptr || reheap::Heap::owner_of(m) != nullptr) return 2;
  reheap::MessageAllocator::deallocate(m);
#endif
  auto heap = reheap::Heap::create();
  reheap::HeapScope scope(*heap);
  auto* s = new std::string(100, 'x');
  return reheap::Heap::owner_of(s) == heap.get() ? 0 : 1;
}
CPP
cat > "$prefix/consumer/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.25)
project(consumer CXX)
find_package(reheap REQUIRED)
file(WRITE ${CMAKE_BINARY_DIR}/reheap_checks.txt "${reheap_CHECKS}")
add_executable(consumer main.cpp)
target_link_libraries(consumer PRIVATE reheap::global_new reheap::runtime)
target_compile_definitions(consumer PRIVATE WITH_RUNTIME=1)
# The test kit: reheap::testing brings global_new, and no test framework: this program has none,
# the next one brings its own.
add_executable(kit_plain kit_plain.cpp)
target_link_libraries(kit_plain PRIVATE reheap::testing)
find_package(GTest REQUIRED)
add_executable(kit_consumer kit_test.cpp)
target_link_libraries(kit_consumer PRIVATE reheap::testing GTest::gtest_main)
CMAKE
cat > "$prefix/consumer/kit_plain.cpp" <<'CPP'
#include <reheap/testing/test_runtime.h>
struct Ping { int n; };
struct Echo : reheap::Reactor {
  Echo() { handle<&Echo::on_ping>(); }
  void on_ping(const Ping& p) { send(sender(), Ping{p.n + 1}); }
};
int main() {
  reheap::testing::TestRuntime rt;
  const auto reply = rt.ask<Ping>(rt.spawn<Echo>(), Ping{41});
  return reply.has_value() && reply->n == 42 ? 0 : 1;
}
CPP
cat > "$prefix/consumer/kit_test.cpp" <<'CPP'
#include <gtest/gtest.h>
#include <reheap/testing/test_runtime.h>
struct Ping { int n; };
struct Echo : reheap::Reactor {
  Echo() { handle<&Echo::on_ping>(); }
  void on_ping(const Ping& p) { send(sender(), Ping{p.n + 1}); }
};
TEST(Kit, AskGetsTheAnswer) {
  reheap::testing::TestRuntime rt;
  const auto reply = rt.ask<Ping>(rt.spawn<Echo>(), Ping{41});
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->n, 42);
}
CPP
# The README's programs, unchanged, against the install.
cp examples/hello.cpp examples/readme/service.cpp examples/readme/snapshot.cpp \
  examples/readme/replay_test.cpp "$prefix/consumer/"
cat >> "$prefix/consumer/CMakeLists.txt" <<'CMAKE'
foreach(example IN ITEMS hello service snapshot)
  add_executable(${example} ${example}.cpp)
  target_link_libraries(${example} PRIVATE reheap::runtime reheap::global_new)
endforeach()
add_executable(replay_test replay_test.cpp)
target_link_libraries(replay_test PRIVATE reheap::runtime reheap::testing GTest::gtest_main)
CMAKE
cmake -S "$prefix/consumer" -B "$prefix/consumer/build" -G Ninja \
  -DCMAKE_PREFIX_PATH="$prefix/usr" >/dev/null
cmake --build "$prefix/consumer/build" | tail -20
"$prefix/consumer/build/consumer"
echo "install: find_package(reheap) consumer OK"
PKG_CONFIG_PATH="$prefix/usr/lib/pkgconfig:$prefix/usr/lib/x86_64-linux-gnu/pkgconfig" \
  c++ -DWITH_RUNTIME=1 "$prefix/consumer/main.cpp" -o "$prefix/consumer/pc" \
  $(PKG_CONFIG_PATH="$prefix/usr/lib/pkgconfig:$prefix/usr/lib/x86_64-linux-gnu/pkgconfig" pkg-config --cflags --libs reheap)
"$prefix/consumer/pc"
echo "install: pkg-config consumer OK"
"$prefix/consumer/build/kit_consumer" >/dev/null
"$prefix/consumer/build/kit_plain"
if ninja -C "$prefix/consumer/build" -t commands kit_plain | tail -1 | grep -q gtest; then
  echo "install: reheap::testing linked GoogleTest into a program that does not use it" >&2
  exit 1
fi
echo "install: find_package(reheap) reheap::testing consumers (with and without GoogleTest) OK"
PKG_CONFIG_PATH="$prefix/usr/lib/pkgconfig:$prefix/usr/lib/x86_64-linux-gnu/pkgconfig" \
  c++ "$prefix/consumer/kit_test.cpp" -o "$prefix/consumer/kit_pc" \
  $(PKG_CONFIG_PATH="$prefix/usr/lib/pkgconfig:$prefix/usr/lib/x86_64-linux-gnu/pkgconfig" \
    pkg-config --cflags --libs reheap-testing gtest_main)
"$prefix/consumer/kit_pc" >/dev/null
echo "install: pkg-config reheap-testing consumer OK"

# Runs the README's programs found in directory $1 (hello, service, snapshot and replay_test),
# the snapshot saved by one process and restored by another.
run_examples() {
  "$1/hello" >/dev/null
  "$1/service" >/dev/null
  "$1/snapshot" save "$prefix/example.snap" >/dev/null
  "$1/snapshot" restore "$prefix/example.snap" >/dev/null
  rm -f "$prefix/example.snap"
  "$1/replay_test" >/dev/null
}
run_examples "$prefix/consumer/build"
echo "install: find_package(reheap) README examples OK"
mkdir -p "$prefix/consumer/pc_examples"
reheap_pc_path="$prefix/usr/lib/pkgconfig:$prefix/usr/lib/x86_64-linux-gnu/pkgconfig"
for example in hello service snapshot; do
  c++ "$prefix/consumer/$example.cpp" -o "$prefix/consumer/pc_examples/$example" \
    $(PKG_CONFIG_PATH="$reheap_pc_path" pkg-config --cflags --libs reheap)
done
c++ "$prefix/consumer/replay_test.cpp" -o "$prefix/consumer/pc_examples/replay_test" \
  $(PKG_CONFIG_PATH="$reheap_pc_path" pkg-config --cflags --libs reheap-testing gtest_main)
run_examples "$prefix/consumer/pc_examples"
echo "install: pkg-config README examples OK"
bash tools/check_readme_examples.sh .

# REHEAP_CHECKS: what the release build says of itself, and a consumer asking for the other kind.
pc_env="PKG_CONFIG_PATH=$prefix/usr/lib/pkgconfig:$prefix/usr/lib/x86_64-linux-gnu/pkgconfig"
checks=$(env "$pc_env" pkg-config --variable=checks reheap)
built=$(grep -o '^REHEAP_CHECKS:BOOL=.*' build/release/CMakeCache.txt | cut -d= -f2)
case "$built" in ON | 1 | TRUE) want=1 other=0 other_cmake=OFF ;; *) want=0 other=1 other_cmake=ON ;; esac
if [[ $checks != "$want" || $(cat "$prefix/consumer/build/reheap_checks.txt") != "$want" ]]; then
  echo "install: the package says checks=$checks, reheap_CHECKS=$(cat "$prefix/consumer/build/reheap_checks.txt"); the build has REHEAP_CHECKS=$built" >&2
  exit 1
fi
if out=$(cmake -S "$prefix/consumer" -B "$prefix/consumer/build-other" -G Ninja \
      -DCMAKE_PREFIX_PATH="$prefix/usr" -DREHEAP_CHECKS=$other_cmake 2>&1); then
  echo "install: a consumer asking for REHEAP_CHECKS=$other_cmake was configured against a build without it" >&2
  exit 1
fi
grep -q "REHEAP_CHECKS" <<<"$out" || { echo "$out" >&2; exit 1; }
if out=$(c++ -DREHEAP_CHECKS=$other -fsyntax-only "$prefix/consumer/main.cpp" \
      $(env "$pc_env" pkg-config --cflags reheap) 2>&1); then
  echo "install: a program defining REHEAP_CHECKS=$other compiled against a build with checks=$want" >&2
  exit 1
fi
grep -q "#error.*REHEAP_CHECKS" <<<"$out" || { echo "$out" >&2; exit 1; }
echo "install: REHEAP_CHECKS recorded (checks=$want) and a mismatch refused (CMake and compiler) OK"
