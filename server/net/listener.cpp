#include "server/net/listener.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "common/log.hpp"
#include "server/net/network_threads.hpp"

namespace asio = boost::asio;

namespace vigil::server {

Listener::Listener(asio::io_context& io, const asio::ip::tcp::endpoint& endpoint, std::string name, SessionFn session,
                   NetworkThreads* sessions)
    : io_(io), acceptor_(io, endpoint), name_(std::move(name)), session_(std::move(session)), sessions_(sessions) {}

void Listener::start() { asio::co_spawn(io_, accept_loop(), asio::detached); }

void Listener::stop() {
  boost::system::error_code ec;
  acceptor_.close(ec);
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
    // A session thread's context runs on one thread; the shared main context needs a strand
    // so a session's coroutine and the wake-ups posted to it never run on two threads at once.
    if (sessions_) asio::co_spawn(ctx, session_(std::move(socket)), asio::detached);
    else asio::co_spawn(asio::make_strand(io_), session_(std::move(socket)), asio::detached);
  }
}

}  // namespace vigil::server
