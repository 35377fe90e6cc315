#include "client/proxy/proxy_wire.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include "common/tls_context.hpp"

namespace asio = boost::asio;

namespace vigil::client {

ProxyReply reply_for_error(const proto::Error& e) {
  const std::string why = "vigild: " + e.message();
  switch (e.code()) {
    case proto::ERROR_CODE_UNAUTHENTICATED: return json_error(401, why);
    case proto::ERROR_CODE_PERMISSION_DENIED: return json_error(403, why);
    case proto::ERROR_CODE_UNAVAILABLE:
    case proto::ERROR_CODE_ADMISSION_REFUSED: return json_error(503, why);
    case proto::ERROR_CODE_NOT_FOUND: return json_error(404, why);
    case proto::ERROR_CODE_INVALID_ARGUMENT: return json_error(400, why);
    default: return json_error(502, why);
  }
}

asio::awaitable<std::optional<ProxyReply>> WireConnection::open(const UpstreamNode& node, const std::string& token,
                                                                std::chrono::milliseconds timeout) {
  node_name_ = node.name();
  // A watchdog closes the socket when the whole exchange takes too long: every pending operation
  // then ends with an error and we answer 504 instead of waiting.
  asio::steady_timer watchdog(socket_.get_executor());
  bool timed_out = false;
  watchdog.expires_after(timeout);
  watchdog.async_wait([this, &timed_out](const boost::system::error_code& ec) {
    if (ec) return;
    timed_out = true;
    boost::system::error_code ignored;
    socket_.close(ignored);
  });
  boost::system::error_code ec;
  auto fail = [&](const std::string& what) -> std::optional<ProxyReply> {
    watchdog.cancel();
    if (timed_out) return json_error(504, "upstream " + node_name_ + " did not answer in time (wire protocol)");
    return json_error(502, "upstream " + node_name_ + " is unreachable (wire protocol): " + what);
  };
  asio::ip::tcp::resolver resolver(socket_.get_executor());
  auto endpoints = co_await resolver.async_resolve(node.host, node.port, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) co_return fail(ec.message());
  co_await asio::async_connect(socket_, endpoints, asio::redirect_error(asio::use_awaitable, ec));
  if (ec || timed_out) co_return fail(ec ? ec.message() : "connect");
  socket_.set_option(asio::ip::tcp::no_delay(true), ec);
  if (node.tls) {
    if (!node.tls_context) co_return fail("no TLS context");
    tls_ = std::make_unique<asio::ssl::stream<asio::ip::tcp::socket&>>(socket_, *node.tls_context);
    verify_server_name(tls_->native_handle(), node.host);
    co_await tls_->async_handshake(asio::ssl::stream_base::client, asio::redirect_error(asio::use_awaitable, ec));
    // Its certificate is not one --upstream-ca vouches for, or the node does not speak TLS.
    if (ec || timed_out) co_return fail("TLS handshake failed: " + (ec ? ec.message() : std::string("time-out")));
  }

  proto::Envelope hello;
  auto* h = hello.mutable_hello();
  h->set_client_name("vigil-proxy");
  h->set_client_version(VIGIL_VERSION);
  h->set_protocol_version(proto::kProtocolVersion);
  h->set_auth_token(token);
  const std::string frame = proto::encode_frame(hello);
  if (tls_) co_await asio::async_write(*tls_, asio::buffer(frame), asio::redirect_error(asio::use_awaitable, ec));
  else co_await asio::async_write(socket_, asio::buffer(frame), asio::redirect_error(asio::use_awaitable, ec));
  if (ec) co_return fail(ec.message());
  auto reply = co_await receive();
  if (!reply) co_return fail("no answer to hello");
  watchdog.cancel();
  if (timed_out) co_return fail("hello");
  if (reply->msg.has_error()) co_return reply_for_error(reply->msg.error());
  if (!reply->msg.has_hello_reply())
    co_return json_error(502, "upstream " + node_name_ + " answered hello with an unexpected message");
  co_return std::nullopt;
}

void WireConnection::send(const proto::Envelope& msg) {
  out_.push_back(proto::encode_frame(msg));
  if (!writing_) {
    writing_ = true;
    asio::co_spawn(socket_.get_executor(), write_queue(shared_from_this()), asio::detached);
  }
}

asio::awaitable<void> WireConnection::write_queue(std::shared_ptr<WireConnection> self) {
  auto& out_ = self->out_;
  auto& socket_ = self->socket_;
  while (!out_.empty()) {
    boost::system::error_code ec;
    if (self->tls_) {
      co_await asio::async_write(*self->tls_, asio::buffer(out_.front()),
                                 asio::redirect_error(asio::use_awaitable, ec));
    } else {
      co_await asio::async_write(socket_, asio::buffer(out_.front()), asio::redirect_error(asio::use_awaitable, ec));
    }
    if (ec) {
      out_.clear();  // the reader sees the broken connection and reports it
      break;
    }
    out_.pop_front();
  }
  self->writing_ = false;
}

asio::awaitable<std::optional<proto::Frame>> WireConnection::receive() {
  for (;;) {
    auto next = decoder_.next();
    if (!next) {
      failure_ = json_error(502, "upstream " + node_name_ + " sent a bad frame: " + next.error().message());
      co_return std::nullopt;
    }
    if (*next) co_return std::move(**next);
    auto room = decoder_.prepare(64 * 1024);
    boost::system::error_code ec;
    const auto into = asio::buffer(room.data(), room.size());
    const std::size_t n = tls_ ? co_await tls_->async_read_some(into, asio::redirect_error(asio::use_awaitable, ec))
                               : co_await socket_.async_read_some(into, asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
      failure_ = json_error(502, "upstream " + node_name_ + " closed the playback connection: " + ec.message());
      co_return std::nullopt;
    }
    decoder_.commit(n);
  }
}

void WireConnection::close() {
  boost::system::error_code ignored;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
}

}  // namespace vigil::client
