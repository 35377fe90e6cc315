#pragma once
// The proxy's cache of finished answers (media bodies, briefly playlists): key → reply until its
// expiry, least recently used evicted first within a byte budget. A reply larger than the whole
// budget is not kept. Thread: one (the proxy's io_context thread); no locking. Errors: none.
#include <chrono>
#include <cstddef>
#include <list>
#include <memory>
#include <string>
#include <unordered_map>

#include "client/proxy/proxy_reply.hpp"

namespace vigil::client {

class ProxyCache {
 public:
  using Clock = std::chrono::steady_clock;
  explicit ProxyCache(std::size_t budget_bytes) : budget_(budget_bytes) {}

  // The reply kept under KEY if it has not expired at NOW (an expired one is dropped); else null.
  std::shared_ptr<const ProxyReply> find(const std::string& key, Clock::time_point now);
  void put(const std::string& key, std::shared_ptr<const ProxyReply> reply, Clock::time_point expires);

  std::size_t bytes() const noexcept { return bytes_; }
  std::size_t entries() const noexcept { return index_.size(); }
  std::size_t budget() const noexcept { return budget_; }

 private:
  struct Entry {
    std::string key;
    std::shared_ptr<const ProxyReply> reply;
    Clock::time_point expires;
  };
  using Lru = std::list<Entry>;  // most recent first
  void erase(Lru::iterator it);

  std::size_t budget_, bytes_ = 0;
  Lru lru_;
  std::unordered_map<std::string, Lru::iterator> index_;
};

}  // namespace vigil::client
