#include "client/proxy/proxy_flights.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace asio = boost::asio;

namespace vigil::client {

asio::awaitable<std::shared_ptr<const ProxyReply>> Flights::run(const std::string& key, Fetch fetch, bool& joined) {
  if (auto it = flights_.find(key); it != flights_.end()) {
    joined = true;
    auto flight = it->second;  // keeps the flight alive after the leader dropped it
    while (!flight->reply) {
      co_await flight->done.async_wait(asio::as_tuple(asio::use_awaitable));
    }
    co_return flight->reply;
  }
  joined = false;
  auto flight = std::make_shared<Flight>(co_await asio::this_coro::executor);
  flight->done.expires_at(asio::steady_timer::time_point::max());
  flights_.emplace(key, flight);
  std::shared_ptr<const ProxyReply> reply;
  try {
    reply = co_await fetch();
  } catch (const std::exception& e) {
    reply = std::make_shared<const ProxyReply>(json_error(502, std::string("proxy fetch failed: ") + e.what()));
  }
  flight->reply = reply;
  flights_.erase(key);
  flight->done.cancel();
  co_return reply;
}

}  // namespace vigil::client
