#pragma once
// Coalescing of identical upstream fetches: while one fetch for a key runs, every other request
// for that key waits for it and gets the same reply (the same shared bytes) — N viewers asking
// for one segment at once cost one upstream request.
// Thread: one (the proxy's io_context thread); no locking. Errors: a fetch that throws is
// answered as a 502 to its leader and every waiter.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>

#include "client/proxy/proxy_reply.hpp"

namespace vigil::client {

class Flights {
 public:
  using Fetch = std::function<boost::asio::awaitable<std::shared_ptr<const ProxyReply>>()>;

  // FETCH's reply for KEY, run once for all callers that arrive while it runs. JOINED tells
  // whether this caller waited on another's fetch.
  boost::asio::awaitable<std::shared_ptr<const ProxyReply>> run(const std::string& key, Fetch fetch, bool& joined);
  std::size_t in_flight() const noexcept { return flights_.size(); }
  // Forgets the running fetches (at shutdown, before the io_context goes: their timers belong to it).
  void clear() { flights_.clear(); }

 private:
  struct Flight {
    explicit Flight(const boost::asio::any_io_executor& ex) : done(ex) {}
    boost::asio::steady_timer done;  // never expires by itself: cancelled when the reply is in
    std::shared_ptr<const ProxyReply> reply;
  };
  std::unordered_map<std::string, std::shared_ptr<Flight>> flights_;
};

}  // namespace vigil::client
