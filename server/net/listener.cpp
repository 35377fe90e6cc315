#include "server/net/listener.hpp"

#include <fcntl.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <array>
#include <mutex>
#include <unordered_map>

#include "common/log.hpp"
#include "server/net/network_threads.hpp"

namespace asio = boost::asio;
namespace beast = boost::beast;

namespace vigil::server {

struct Listener::Counts {
  std::mutex mu;
  std::size_t open = 0;
  std::size_t refusing = 0;  // refused connections still being told why
  std::unordered_map<std::string, std::size_t> per_address;
};

namespace {

// Refused connections being told why at once; more are closed without a word, so a flood of
// refusals costs no more than this many small buffers.
constexpr std::size_t kMaxRefusing = 64;
// How long a refused connection may take to read its refusal.
constexpr std::chrono::seconds kRefusalTimeout{2};
// A flood of refusals is logged once per this interval, with the count since the last line.
constexpr std::chrono::seconds kRefusalLogInterval{10};

void set_cloexec(int fd) {
  const int flags = ::fcntl(fd, F_GETFD);
  if (flags >= 0) ::fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
}

// One admitted connection's place in the counts, given back when its session ends (however).
struct Slot {
  std::shared_ptr<Listener::Counts> counts;
  std::string address;
  Slot(std::shared_ptr<Listener::Counts> c, std::string a) : counts(std::move(c)), address(std::move(a)) {}
  Slot(const Slot&) = delete;
  Slot& operator=(const Slot&) = delete;
  ~Slot() {
    std::lock_guard lock(counts->mu);
    --counts->open;
    if (auto it = counts->per_address.find(address); it != counts->per_address.end() && --it->second == 0)
      counts->per_address.erase(it);
  }
};

asio::awaitable<void> run_counted(Listener::SessionFn session, asio::ip::tcp::socket socket,
                                  std::shared_ptr<Listener::Counts> counts, std::string address) {
  Slot slot(std::move(counts), std::move(address));
  co_await session(std::move(socket));
}

// Writes WORDS, ends our side, and reads until the peer closes or the deadline: closing with the
// peer's request unread would reset the connection and could discard the refusal before it is read.
asio::awaitable<void> tell_and_close(asio::ip::tcp::socket socket, std::string words,
                                     std::shared_ptr<Listener::Counts> counts) {
  beast::tcp_stream stream(std::move(socket));
  stream.expires_after(kRefusalTimeout);
  auto [ec, n] = co_await asio::async_write(stream, asio::buffer(words), asio::as_tuple(asio::use_awaitable));
  (void)n;
  if (!ec) {
    boost::system::error_code ignored;
    stream.socket().shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
    std::array<char, 1024> sink;
    for (;;) {
      auto [rec, rn] = co_await stream.async_read_some(asio::buffer(sink), asio::as_tuple(asio::use_awaitable));
      (void)rn;
      if (rec) break;
    }
  }
  std::lock_guard lock(counts->mu);
  --counts->refusing;
}

}  // namespace

Listener::Listener(asio::io_context& io, const asio::ip::tcp::endpoint& endpoint, std::string name, SessionFn session,
                   NetworkThreads* sessions, ConnectionLimits limits, RefusalFn refusal)
    : io_(io),
      acceptor_(io, endpoint),
      name_(std::move(name)),
      session_(std::move(session)),
      sessions_(sessions),
      limits_(limits),
      refusal_(std::move(refusal)),
      counts_(std::make_shared<Counts>()) {
  set_cloexec(acceptor_.native_handle());
}

void Listener::start() { asio::co_spawn(io_, accept_loop(), asio::detached); }

void Listener::stop() {
  boost::system::error_code ec;
  acceptor_.close(ec);
}

void Listener::refuse(asio::ip::tcp::socket socket, asio::io_context& ctx, const std::string& why) {
  const auto now = std::chrono::steady_clock::now();
  ++refused_unlogged_;
  if (now - last_refusal_log_ >= kRefusalLogInterval) {
    log::warn("connection refused: over the connection limit",
              {{"listener", name_}, {"why", why}, {"refused", refused_unlogged_}});
    last_refusal_log_ = now;
    refused_unlogged_ = 0;
  }
  std::string words = refusal_ ? refusal_(why) : std::string();
  bool tell = false;
  if (!words.empty()) {
    std::lock_guard lock(counts_->mu);
    tell = counts_->refusing < kMaxRefusing;
    if (tell) ++counts_->refusing;
  }
  if (!tell) {
    boost::system::error_code ignored;
    socket.close(ignored);
    return;
  }
  asio::co_spawn(ctx, tell_and_close(std::move(socket), std::move(words), counts_), asio::detached);
}

asio::awaitable<void> Listener::accept_loop() {
  asio::steady_timer backoff(io_);
  while (acceptor_.is_open()) {
    // The new connection's socket belongs to the context its session will run on.
    auto& ctx = sessions_ ? sessions_->next() : io_;
    auto [ec, socket] = co_await acceptor_.async_accept(ctx, asio::as_tuple(asio::use_awaitable));
    if (ec) {
      if (ec == asio::error::operation_aborted || !acceptor_.is_open()) co_return;
      // E.g. out of file descriptors: pause briefly instead of spinning on the error.
      log::warn("accept failed", {{"listener", name_}, {"error", ec.message()}});
      backoff.expires_after(std::chrono::milliseconds(100));
      co_await backoff.async_wait(asio::as_tuple(asio::use_awaitable));
      continue;
    }
    set_cloexec(socket.native_handle());
    boost::system::error_code peer_ec;
    std::string address = socket.remote_endpoint(peer_ec).address().to_string();
    if (peer_ec) continue;  // already gone: the socket closes here
    std::string over;
    {
      std::lock_guard lock(counts_->mu);
      auto& from = counts_->per_address[address];
      if (counts_->open >= limits_.max_connections) {
        over = "this server has " + std::to_string(counts_->open) + " connections open (--max-connections " +
               std::to_string(limits_.max_connections) + ")";
      } else if (from >= limits_.max_per_address) {
        over = "this address has " + std::to_string(from) + " connections open (--max-connections-per-address " +
               std::to_string(limits_.max_per_address) + ")";
      } else {
        ++counts_->open;
        ++from;
      }
      if (from == 0) counts_->per_address.erase(address);
    }
    if (!over.empty()) {
      refuse(std::move(socket), ctx, over);
      continue;
    }
    auto counted = run_counted(session_, std::move(socket), counts_, std::move(address));
    // A session thread's context runs on one thread; the shared main context needs a strand
    // so a session's coroutine and the wake-ups posted to it never run on two threads at once.
    if (sessions_) asio::co_spawn(ctx, std::move(counted), asio::detached);
    else asio::co_spawn(asio::make_strand(io_), std::move(counted), asio::detached);
  }
}

}  // namespace vigil::server
