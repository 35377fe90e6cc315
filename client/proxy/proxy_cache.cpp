#include "client/proxy/proxy_cache.hpp"

namespace vigil::client {
namespace {
// What an entry counts against the budget: its body and its key.
std::size_t cost(const std::string& key, const ProxyReply& r) { return r.size() + key.size(); }
}  // namespace

std::shared_ptr<const ProxyReply> ProxyCache::find(const std::string& key, Clock::time_point now) {
  auto it = index_.find(key);
  if (it == index_.end()) return nullptr;
  if (it->second->expires <= now) {
    erase(it->second);
    return nullptr;
  }
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->reply;
}

void ProxyCache::put(const std::string& key, std::shared_ptr<const ProxyReply> reply, Clock::time_point expires) {
  if (auto it = index_.find(key); it != index_.end()) erase(it->second);
  const std::size_t c = cost(key, *reply);
  if (c > budget_) return;
  while (bytes_ + c > budget_ && !lru_.empty()) erase(std::prev(lru_.end()));
  lru_.push_front({key, std::move(reply), expires});
  index_[key] = lru_.begin();
  bytes_ += c;
}

void ProxyCache::erase(Lru::iterator it) {
  bytes_ -= cost(it->key, *it->reply);
  index_.erase(it->key);
  lru_.erase(it);
}

}  // namespace vigil::client
