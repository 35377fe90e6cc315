#include "server/core/auth.hpp"

#include <pqxx/pqxx>

#include "catalog/token_rows.hpp"
#include "server/core/catalog_pool.hpp"

namespace vigil::server {

std::optional<Role> role_from_name(std::string_view name) noexcept {
  if (name == "recorder") return Role::recorder;
  if (name == "viewer") return Role::viewer;
  if (name == "events") return Role::events;
  if (name == "admin") return Role::admin;
  return std::nullopt;
}

const char* access_name(Access a) noexcept {
  switch (a) {
    case Access::open: return "open";
    case Access::view: return "viewer";
    case Access::record: return "recorder";
    case Access::post_events: return "events";
    case Access::admin: return "admin";
  }
  return "?";
}

const char* roles_for(Access a) noexcept {
  switch (a) {
    case Access::open: return "any";
    case Access::view: return "viewer or admin";
    case Access::record: return "recorder or admin";
    case Access::post_events: return "events, recorder or admin";
    case Access::admin: return "admin";
  }
  return "?";
}

bool allows(Role role, Access need) noexcept {
  switch (need) {
    case Access::open: return true;
    case Access::view: return role == Role::viewer || role == Role::admin;
    case Access::record: return role == Role::recorder || role == Role::admin;
    // Recorders keep posting events (docs/openapi.yaml promised it); the events role exists so
    // that a detector need not hold a token that can write video.
    case Access::post_events: return role == Role::events || role == Role::recorder || role == Role::admin;
    case Access::admin: return role == Role::admin;
  }
  return false;
}

bool Grant::sees(std::string_view camera) const noexcept {
  if (!cameras) return true;
  for (const auto& c : *cameras) {
    if (c == camera) return true;
  }
  return false;
}

std::string Grant::who() const {
  if (!token_id) return "no-auth";
  return label.empty() ? "token " + std::to_string(*token_id) : label;
}

std::optional<std::int64_t> Authenticator::earliest_dated_us(const Grant& grant, std::int64_t now_us) const noexcept {
  if (grant.role == Role::admin) return std::nullopt;
  return now_us - std::chrono::duration_cast<std::chrono::microseconds>(max_backdate_).count();
}

boost::asio::awaitable<std::optional<Grant>> Authenticator::grant_of(const std::string& token) {
  if (!required_) co_return Grant{};
  // Tokens are short; anything long is not one of ours (and is not worth hashing).
  if (token.empty() || token.size() > 256) co_return std::nullopt;
  const std::string sha = catalog::token_sha256_hex(token);
  const auto now = std::chrono::steady_clock::now();
  std::optional<Entry> last;
  {
    std::lock_guard lock(mu_);
    if (auto it = cache_.find(sha); it != cache_.end()) {
      if (it->second.expires > now) co_return it->second.grant;
      last = it->second;
    }
  }
  const std::int64_t now_us =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  std::optional<catalog::TokenGrantRow> row;
  bool answered = false;
  try {
    // By reference: see CatalogPool::run.
    row = co_await catalog_.run([&sha, &now_us](pqxx::connection& c) {
      pqxx::read_transaction tx(c);
      return catalog::grant_of_token(tx, sha, now_us);
    });
    answered = true;
  } catch (const std::exception&) {
    if (!last) throw;  // never seen: only the catalog can say
  }
  // The catalog did not answer: the last answer stands (asked again at the next request).
  if (!answered) co_return last->grant;
  std::optional<Grant> grant;
  if (row) {
    if (const auto role = role_from_name(row->role)) {
      grant = Grant{*role, row->id, row->label, std::move(row->cameras)};
    }
  }
  std::lock_guard lock(mu_);
  if (cache_.size() > 10'000) {
    // A flood of made-up tokens must not grow memory; the tokens that exist are kept (an outage
    // must not forget them).
    std::erase_if(cache_, [](const auto& e) { return !e.second.grant; });
    if (cache_.size() > 10'000) cache_.clear();
  }
  cache_[sha] = {grant, now + kTokenCacheTtl};
  co_return grant;
}

}  // namespace vigil::server
