#pragma once
// The end of an HTTP connection, for every HTTP listener (vigild's API, the proxy's viewers): a
// plain one is shut down; an HTTPS one says close_notify first, bounded, so a peer that does
// not answer it is not waited for. Header-only (part of vigil_tls's set: Beast over OpenSSL).
// Thread: the connection's own. Errors: none (a failed shutdown is a connection already gone).
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <chrono>

namespace vigil {

inline boost::asio::awaitable<void> close_stream(boost::beast::tcp_stream& stream) {
  boost::beast::error_code ignored;
  stream.socket().shutdown(boost::asio::ip::tcp::socket::shutdown_both, ignored);
  co_return;
}

inline boost::asio::awaitable<void> close_stream(boost::beast::ssl_stream<boost::beast::tcp_stream>& stream) {
  auto& tcp = boost::beast::get_lowest_layer(stream);
  tcp.expires_after(std::chrono::seconds(2));
  co_await stream.async_shutdown(boost::asio::as_tuple(boost::asio::use_awaitable));
  boost::beast::error_code ignored;
  tcp.socket().shutdown(boost::asio::ip::tcp::socket::shutdown_both, ignored);
}

}  // namespace vigil
