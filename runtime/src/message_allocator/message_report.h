// Fatal reports of the message allocator: misuse (a free of something that is not a live
// message block) and broken invariants. Never allocates: it runs inside deallocate.
#pragma once

namespace reheap::detail::msg {

// Prints "reheap: <message>" to stderr and aborts.
[[noreturn]] void fatal(const char* format, ...) noexcept __attribute__((format(printf, 1, 2)));

}  // namespace reheap::detail::msg
