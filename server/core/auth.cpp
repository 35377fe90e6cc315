#include "server/core/auth.hpp"

#include <pqxx/pqxx>

#include "catalog/token_rows.hpp"
#include "server/core/catalog_pool.hpp"

namespace vigil::server {

std::optional<Role> role_from_name(std::string_view name) noexcept {
  if (name == "recorder") return Role::recorder;
  if (name == "viewer") return Role::viewer;
  if (name == "admin") return Role::admin;
  return std::nullopt;
}

const char* access_name(Access a) noexcept {
  switch (a) {
    case Access::open: return "open";
    case Access::view: return "viewer";
    case Access::record: return "recorder";
    case Access::admin: return "admin";
  }
  return "?";
}

bool allows(Role role, Access need) noexcept {
  switch (need) {
    case Access::open: return true;
    case Access::view: return role == Role::viewer || role == Role::admin;
    case Access::record: return role == Role::recorder || role == Role::admin;
    case Access::admin: return role == Role::admin;
  }
  return false;
}

boost::asio::awaitable<std::optional<Role>> Authenticator::role_of(const std::string& token) {
  if (!required_) co_return Role::admin;
  // Tokens are short; anything long is not one of ours (and is not worth hashing).
  if (token.empty() || token.size() > 256) co_return std::nullopt;
  const std::string sha = catalog::token_sha256_hex(token);
  const auto now = std::chrono::steady_clock::now();
  std::optional<Entry> last;
  {
    std::lock_guard lock(mu_);
    if (auto it = cache_.find(sha); it != cache_.end()) {
      if (it->second.expires > now) co_return it->second.role;
      last = it->second;
    }
  }
  const std::int64_t now_us =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  std::optional<std::string> name;
  bool answered = false;
  try {
    // By reference: see CatalogPool::run.
    name = co_await catalog_.run([&sha, &now_us](pqxx::connection& c) {
      pqxx::read_transaction tx(c);
      return catalog::role_of_token(tx, sha, now_us);
    });
    answered = true;
  } catch (const std::exception&) {
    if (!last) throw;  // never seen: only the catalog can say
  }
  // The catalog did not answer: the last answer stands (asked again at the next request).
  if (!answered) co_return last->role;
  std::optional<Role> role = name ? role_from_name(*name) : std::nullopt;
  std::lock_guard lock(mu_);
  if (cache_.size() > 10'000) {
    // A flood of made-up tokens must not grow memory; the tokens that exist are kept (an outage
    // must not forget them).
    std::erase_if(cache_, [](const auto& e) { return !e.second.role; });
    if (cache_.size() > 10'000) cache_.clear();
  }
  cache_[sha] = {role, now + kTokenCacheTtl};
  co_return role;
}

}  // namespace vigil::server
