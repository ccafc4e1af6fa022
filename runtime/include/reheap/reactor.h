// Reactor: a single-threaded object that lives inside its own heap and reacts to events.
//
// Data model: a reactor is a user class derived from Reactor. Runtime::spawn creates a heap for
// it, constructs it there with that heap current, and makes it the heap's root. Everything the
// reactor allocates with plain `new` or the std containers while handling its events lands in
// the same heap, because the runtime makes that heap current (HeapScope) for every call into the
// reactor. A snapshot of the heap is therefore a snapshot of the reactor, and a restored heap
// hands the reactor back through its root.
//
// Threading: a reactor runs on one worker thread at a time, one event at a time; its handlers
// never run concurrently with each other. Between two events the runtime may snapshot it or move
// it to another worker.
//
// Events arrive through the virtual hooks below, all called with the reactor's heap current:
//   on_start        first, before any message
//   on_message      a message (the default dispatches to the typed handlers registered with
//                   handle<&R::fn>(); unmatched messages go to on_unhandled)
//   on_timer        a timer started with start_timer fired
//   on_accept / on_connect / on_data / on_closed    TCP (see below)
//   on_restored     after a restore, before any other event
//   on_stop         the reactor is stopping (stop(), Runtime::stop or shutdown)
// Each is an Event delivered through one door (event.h); the operations below go to the
// event's host (internal to the runtime): the runtime's, a recorder's, or a replay's.
// The operations (send, start_timer, listen, now, random, ...) are valid only inside one of this
// reactor's hooks, on the thread delivering it: elsewhere they throw std::logic_error. In
// particular, a constructor must not send; do that in on_start.
//
// Determinism: given its heap and its inputs (the events and the host's answers), a reactor does
// the same thing. Read time with now(), randomness with random(), spawn with spawn(): all are
// recorded. Clocks, /dev/urandom or another thread read directly are not (DETERMINISM.md).
//
// TCP: sockets belong to the reactor that opened or accepted them and are named by SocketId.
// Reading starts at once; on_data gets a span into the worker's read buffer, valid during the
// call (no copy is made between the kernel and the handler). write() tries to write at once and
// copies only what the kernel did not take; it reports a queue above the socket's high-water
// mark, on_drained says when it is empty again, and reading can be paused (backpressure). The
// peer's end of input is on_end (the socket still writes); a reset or a failed write is
// on_closed with the error, exactly once. Sockets are process resources: a snapshot does not
// hold them; after a restore the reactor gets on_closed(id, connection_aborted) for each socket it
// had. A reactor moves to another worker with its sockets (Runtime::move): the same ids, and no
// byte lost or reordered.
//
// Persistent state rule: the reactor's heap must not hold pointers to anything outside it other
// than the program's own code and static data (vtables, functions, string literals), or the
// snapshot would hold addresses that mean nothing after a restore.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "reheap/actor_ref.h"
#include "reheap/message.h"
#include "reheap/reactor_io.h"
#include "reheap/request.h"
#include "reheap/snapshot_request.h"
#include "reheap/spawn_options.h"

namespace reheap {

class Runtime;

namespace detail {
struct ReactorAccess;
}  // namespace detail

class Reactor {
 public:
  Reactor();
  virtual ~Reactor();
  Reactor(const Reactor&) = delete;
  Reactor& operator=(const Reactor&) = delete;

  // ---- hooks ----
  virtual void on_start() {}
  virtual void on_message(const Message& message);
  virtual void on_unhandled(const Message& message);  // default: counts it in ReactorStats
  virtual void on_message_error(const MessageError& error);  // default: counts it
  virtual void on_timer(TimerId) {}
  virtual void on_accept(SocketId /*listener*/, SocketId /*connection*/) {}
  virtual void on_connect(SocketId, std::error_code) {}
  virtual void on_data(SocketId, std::span<const char>) {}
  virtual void on_closed(SocketId, std::error_code) {}
  // The peer will send nothing more (it half-closed its side, or closed). The socket still
  // takes writes, so the replies to what it sent can go out. Default: close(socket), which
  // flushes what is queued and then calls on_closed.
  virtual void on_end(SocketId socket);
  // A write reported above_high_water, and since then the socket's queue has drained to empty.
  virtual void on_drained(SocketId) {}
  // Accepting a connection on `listener` failed (EMFILE, ENFILE, ENOMEM, ...); the listener
  // stays open and keeps accepting. Default: nothing (RuntimeStats::accept_errors counts it).
  virtual void on_accept_error(SocketId /*listener*/, std::error_code) {}
  virtual void on_restored() {}
  virtual void on_stop() {}

  // ---- operations ----
  ActorRef self() const noexcept { return self_; }
  // The sender of the message being handled (in on_message and typed handlers); null for a
  // message sent from outside any reactor, and outside message handlers.
  ActorRef sender() const;
  Runtime& runtime() const;
  int worker() const;  // the index of the worker running it

  // Sends `value` to `to` (see message.h for the encoding). Per-sender FIFO: messages from one
  // reactor to another arrive in the order they were sent.
  template <class T>
  SendResult send(ActorRef to, const T& value) {
    SendResult result = SendResult::kOk;
    detail::Envelope* e = detail::encode(value, &result);
    if (e == nullptr) return result;
    return send_encoded(to, e);
  }

  // Spawns a child reactor R(args...) in a new heap, as Runtime::spawn does (the constructor runs
  // here, on this thread; its exceptions propagate). Through the host, so that a replay answers
  // with the recorded reference instead of spawning; prefer it to runtime().spawn in a reactor.
  template <class R, class... Args>
  ActorRef spawn(const SpawnOptions& options, Args&&... args) {
    static_assert(std::is_base_of_v<Reactor, R>, "R must derive from reheap::Reactor");
    std::tuple<Args&&...> arguments(std::forward<Args>(args)...);
    return spawn_packed(options, &detail::construct_packed<R, Args...>, &arguments);
  }
  template <class R, class... Args>
    requires(!detail::kFirstIsSpawnOptions<Args...>)
  ActorRef spawn(Args&&... args) {
    return spawn<R>(SpawnOptions{}, std::forward<Args>(args)...);
  }

  // The time of the event being handled, the same for every call during it (read once, from the
  // runtime's TimeSource; recorded and replayed). The only clocks a reactor should read.
  std::chrono::system_clock::time_point now();
  std::chrono::steady_clock::time_point steady_now();
  // 64 random bits from an engine kept in this reactor's heap (xoroshiro128++), seeded once by
  // the runtime's EntropySource: a restored reactor continues its sequence, a replay repeats it.
  // Not for cryptography.
  std::uint64_t random();
  // Events delivered to this reactor since it was spawned (kept in its heap): the position a
  // snapshot was taken at in the reactor's recording.
  std::uint64_t events_delivered() const noexcept;

  // Stops this reactor after the current hook returns (on_stop is called first).
  void stop();

  // Asks for a snapshot of `target` (self() included) to `file`, full or an increment on the
  // target's chain, and returns at once; the answer arrives later in this reactor's mailbox as a
  // SnapshotDone message carrying the returned id (see snapshot_request.h for the ordering, the
  // cost, and every outcome). Never throws for a bad target or file: those are answers too.
  SnapshotRequestId request_snapshot(ActorRef target, const std::filesystem::path& file,
                                     SnapshotKind kind = SnapshotKind::kFull);

  // Fires on_timer(id) after `delay`, then every `period` if it is not zero.
  TimerId start_timer(std::chrono::nanoseconds delay, std::chrono::nanoseconds period = {});
  void cancel_timer(TimerId id);  // no-op for a timer that already fired or was cancelled

  // ---- request and reply (request.h) ----
  // Sends `value` to `to` as a request and returns its id at once; exactly one
  // Response<Reply> later reaches `Then`, a member `void (R::*)(const Response<Reply>&)` of this
  // reactor's class, as an event of this reactor: the reply, or a timeout after `timeout`, or
  // the send's refusal. Throws std::invalid_argument for a negative timeout; one above ten years
  // is ten years.
  template <auto Then, class Request>
  RequestId request(ActorRef to, const Request& value, std::chrono::nanoseconds timeout) {
    using Then_ = RequestThen<decltype(Then)>;
    detail::name_message_type<Request>();
    detail::name_message_type<typename Then_::Reply>();
    SendResult encoded = SendResult::kOk;
    detail::Envelope* e = detail::encode(value, &encoded);
    return request_erased(to, e, encoded, message_type_id<typename Then_::Reply>(), timeout,
                          &Then_::template invoke<Then>);
  }
  // Answers the message being handled (in on_message or a typed handler) with `value`. A message
  // that was not sent with request() gets `value` as a plain send to its sender. Throws
  // std::logic_error when no message is being handled.
  template <class T>
  SendResult reply(const T& value) {
    return reply(reply_address(), value);
  }
  // Answers later: keep reply_address() of the message being handled in the heap, and reply to it
  // from any hook.
  template <class T>
  SendResult reply(const ReplyAddress& to, const T& value) {
    SendResult encoded = SendResult::kOk;
    detail::Envelope* e = detail::encode(value, &encoded);
    return reply_erased(to, e, encoded);
  }
  ReplyAddress reply_address() const;
  // Requests sent and not yet answered, timed out or failed.
  std::size_t requests_pending() const noexcept;

  // TCP. Addresses are numeric IPv4 or IPv6 ("127.0.0.1", "::1"). Errors throw std::system_error.
  // reuse_port lets several listeners (on several workers) share one port: the kernel spreads
  // connections among them.
  SocketId listen(const std::string& host, std::uint16_t port, bool reuse_port = false,
                  int backlog = 511);
  std::uint16_t local_port(SocketId socket) const;
  SocketId connect(const std::string& host, std::uint16_t port);  // then on_connect
  // Not written (false) if the socket is closed or unknown. Data not written at once is copied
  // and queued; above_high_water says the queue passed the socket's high-water mark.
  // The span overload sends bytes as they are; the others send text, exactly its characters:
  // a std::string, std::string_view or const char* (up to its NUL), and a char array such as a
  // string literal up to its first NUL, never past its end, so write(s, "OK\n") sends 3 bytes,
  // not the literal's terminating NUL too. The text overloads are templates taking the argument
  // as it is, so that they are exact matches: a plain string_view overload would tie with the
  // span one for a literal or a std::string (both need a conversion) and make the call
  // ambiguous. Containers of char that are not text (std::vector<char>, std::array<char, N>)
  // convert to no string_view and go to the span overload; to send a char array's bytes
  // regardless of NULs, pass std::span(array).
  WriteResult write(SocketId socket, std::span<const char> data);
  template <std::size_t N>
  WriteResult write(SocketId socket, const char (&text)[N]) {
    std::size_t length = 0;
    while (length < N && text[length] != '\0') ++length;
    return write(socket, std::span<const char>(text, length));
  }
  template <class Text>
    requires(std::is_convertible_v<const Text&, std::string_view> && !std::is_array_v<Text>)
  WriteResult write(SocketId socket, const Text& text) {
    const std::string_view view = text;
    return write(socket, std::span<const char>(view.data(), view.size()));
  }
  void close(SocketId socket);  // then on_closed(socket, {}) ; pending writes are flushed first
  void set_no_delay(SocketId socket, bool on);
  // Backpressure. Reading starts at once on every connection; pause_reading stops on_data (the
  // kernel's buffer fills and the peer's sends block) until resume_reading. The high-water mark
  // (kDefaultWriteHighWater unless set) is what write() compares the queued bytes with; the
  // runtime never refuses a write for it: bounding memory is the reactor's choice (stop reading,
  // drop the client), made when write() reports it.
  static constexpr std::size_t kDefaultWriteHighWater = 1 << 20;
  void pause_reading(SocketId socket);
  void resume_reading(SocketId socket);
  void set_write_high_water(SocketId socket, std::size_t bytes);

 protected:
  // Registers `Fn`, a member function `void (R::*)(const T&)`, for messages of type T. Raw
  // messages are passed in place; msgpack ones are decoded into this reactor's heap first, and a
  // message that fails to decode goes to on_message_error instead.
  // Throws std::logic_error when another type of the program owns T's type id (message.h).
  template <auto Fn>
  void handle() {
    Traits<decltype(Fn)>::name();
    Traits<decltype(Fn)>::claim();
    add_handler(Traits<decltype(Fn)>::type_id(), &Traits<decltype(Fn)>::template invoke<Fn>);
  }

 private:
  friend struct detail::ReactorAccess;
  using Thunk = void (*)(Reactor&, const Message&);
  template <class F>
  struct Traits;
  template <class R, class T>
  struct Traits<void (R::*)(const T&)> {
    static constexpr std::uint64_t type_id() noexcept { return message_type_id<T>(); }
    static void name() noexcept { detail::name_message_type<T>(); }
    static void claim() {
      if (!detail::message_type_owns_id<T>()) [[unlikely]] {
        detail::throw_message_type_clash(type_id(), message_type_name<T>());
      }
    }
    template <auto Fn>
    static void invoke(Reactor& self, const Message& m) {
      R& r = static_cast<R&>(self);
      if constexpr (kRawMessage<T>) {
        const T* value = nullptr;
        try {
          value = &m.view<T>();
        } catch (const MessageError& e) {
          self.on_message_error(e);
          return;
        }
        (r.*Fn)(*value);
      } else {
        std::optional<T> value;
        try {
          value.emplace(m.get<T>());
        } catch (const MessageError& e) {
          self.on_message_error(e);
          return;
        }
        (r.*Fn)(*value);
      }
    }
  };

  // A request's continuation: decodes the reply into this reactor's heap and calls Fn.
  template <class F>
  struct RequestThen;
  template <class R, class T>
  struct RequestThen<void (R::*)(const Response<T>&)> {
    using Reply = T;
    template <auto Fn>
    static void invoke(Reactor& self, const detail::RequestOutcome& o) {
      R& r = static_cast<R&>(self);
      if (o.reply == nullptr) {
        (r.*Fn)(Response<T>(o.id, nullptr, o.error, o.refusal));
        return;
      }
      const Response<T> bad(o.id, nullptr, RequestError::kBadReply, SendResult::kOk);
      if constexpr (kRawMessage<T>) {
        const T* value = nullptr;
        try {
          value = &o.reply->view<T>();
        } catch (const MessageError&) {
          (r.*Fn)(bad);
          return;
        }
        (r.*Fn)(Response<T>(o.id, value, RequestError::kNone, SendResult::kOk));
      } else {
        std::optional<T> value;
        try {
          value.emplace(o.reply->get<T>());
        } catch (const MessageError&) {
          (r.*Fn)(bad);
          return;
        }
        (r.*Fn)(Response<T>(o.id, &*value, RequestError::kNone, SendResult::kOk));
      }
    }
  };
  // request and reply without their types: each takes `e` (null: encoding failed with `encoded`).
  RequestId request_erased(ActorRef to, detail::Envelope* e, SendResult encoded,
                           std::uint64_t reply_type, std::chrono::nanoseconds timeout,
                           detail::Continuation then);
  SendResult reply_erased(const ReplyAddress& to, detail::Envelope* e, SendResult encoded);

  void add_handler(std::uint64_t type_id, Thunk thunk);
  // The templates' doors to the host of the event being handled (they throw std::logic_error
  // outside this reactor's hooks): one call each, as the inline host lookup they replace was.
  // send_encoded takes the envelope (sent or freed, also when it throws).
  SendResult send_encoded(ActorRef to, detail::Envelope* envelope);
  ActorRef spawn_packed(const SpawnOptions& options, detail::ConstructReactor construct, void* arguments);

  // The runtime's bookkeeping for this reactor (a check word, the handlers, its id counters, the
  // random engine's state, its recording, the timers and sockets written down at a snapshot):
  // saved with the heap, as the reactor lives in it, so everything there keeps meaning across
  // processes. Its type is the runtime's own (runtime/src/reactor_state.h); it lies here, in the
  // reactor, rather than behind a pointer, so that reaching it costs no load on the hot path. Its
  // size is checked against that type where the type is defined.
  static constexpr std::size_t kStateBytes = 168;
  alignas(std::uint64_t) std::byte state_[kStateBytes];
  ActorRef self_;
};

}  // namespace reheap
