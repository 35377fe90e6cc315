#pragma once
// Who may do what (docs/openapi.yaml "Authentication", docs/protocol.md "Hello"): every HTTP
// request but /healthz and /metrics, and every wire-protocol session, carries a bearer token
// from the catalog's `tokens` table. Its role decides: viewer — play, export, query;
// recorder — record streams and post events; admin — everything, including changes to
// cameras, locks and tokens.
//
// Lookups go to the catalog (on the pool) and are cached for kTokenCacheTtl, so a busy UI does
// not cost a query per request; a revoked token stops working within that time.
// During a database outage (docs/catalog.md, "When the catalog is down") a token seen before
// keeps the role the catalog last gave it: when the lookup fails, the last answer stands (a
// revocation or expiry seen before the outage stands too). Only a token never seen needs the
// catalog.
// Thread: role_of() is awaited from any network thread; the cache has its own mutex.
// Errors: role_of() lets catalog errors propagate for a token it has no answer for (the caller
// answers 503/500).
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace vigil::server {

class CatalogPool;

enum class Role { recorder, viewer, admin };
enum class Access { open, view, record, admin };

std::optional<Role> role_from_name(std::string_view name) noexcept;
const char* access_name(Access a) noexcept;
// ROLE may do what ACCESS names (admin may do everything).
bool allows(Role role, Access need) noexcept;

inline constexpr std::chrono::seconds kTokenCacheTtl{5};

class Authenticator {
 public:
  // REQUIRED false: every request is let through as admin (vigild --no-auth, for a lab).
  // METRICS_PROTECTED: /metrics needs a viewer token too (vigild --metrics-auth).
  Authenticator(CatalogPool& catalog, bool required, bool metrics_protected = false)
      : catalog_(catalog), required_(required), metrics_protected_(metrics_protected) {}
  bool required() const noexcept { return required_; }
  bool metrics_protected() const noexcept { return metrics_protected_; }
  // The role TOKEN carries, or nullopt (empty, unknown, revoked, expired).
  boost::asio::awaitable<std::optional<Role>> role_of(const std::string& token);

 private:
  struct Entry {
    std::optional<Role> role;
    std::chrono::steady_clock::time_point expires;  // then asked again; kept as the last answer
  };
  CatalogPool& catalog_;
  const bool required_;
  const bool metrics_protected_;
  std::mutex mu_;
  std::map<std::string, Entry> cache_;  // by SHA-256 of the token
};

}  // namespace vigil::server
