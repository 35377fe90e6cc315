#pragma once
// Who may do what (docs/openapi.yaml "Authentication", docs/protocol.md "Hello"): every HTTP
// request but /healthz and /metrics, and every wire-protocol session, carries a bearer token
// from the catalog's `tokens` table. Its role decides: viewer — play, export, query;
// recorder — record streams and post events; events — post events only (no video);
// admin — everything, including changes to cameras, locks and tokens. A token may also be
// limited to a set of cameras: the Grant answers for both (Grant::may), and each layer asks it in
// one place (the HTTP routes' check_access, the wire session's dispatch); lists filter by
// Grant::sees.
//
// Lookups go to the catalog (on the pool) and are cached for kTokenCacheTtl, so a busy UI does
// not cost a query per request; a revoked token stops working within that time.
// During a database outage (docs/catalog.md, "When the catalog is down") a token seen before
// keeps the role the catalog last gave it: when the lookup fails, the last answer stands (a
// revocation or expiry seen before the outage stands too). Only a token never seen needs the
// catalog.
// Thread: grant_of() is awaited from any network thread; the cache has its own mutex.
// Errors: grant_of() lets catalog errors propagate for a token it has no answer for (the caller
// answers 503/500).
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vigil::server {

class CatalogPool;

enum class Role { recorder, viewer, events, admin };
// open: no token; view: read video, timelines, events; record: write video; post_events: add
// events; admin: everything else.
enum class Access { open, view, record, post_events, admin };

std::optional<Role> role_from_name(std::string_view name) noexcept;
const char* access_name(Access a) noexcept;
// The roles that may do what ACCESS names, for an error message ("viewer or admin").
const char* roles_for(Access a) noexcept;
// ROLE may do what ACCESS names (admin may do everything).
bool allows(Role role, Access need) noexcept;

// What a token lets its bearer do: a role, limited to a camera set (nullopt: every camera).
struct Grant {
  Role role = Role::admin;
  std::optional<std::int64_t> token_id;  // for audit rows; nullopt: no tokens (--no-auth)
  std::string label;                     // the token's label, for audit rows
  std::optional<std::vector<std::string>> cameras;

  bool scoped() const noexcept { return cameras.has_value(); }
  // CAMERA is in the token's set.
  bool sees(std::string_view camera) const noexcept;
  // The role allows ACCESS, on every camera (an unscoped token) or on CAMERA.
  bool may(Access access) const noexcept { return allows(role, access); }
  bool may(Access access, std::string_view camera) const noexcept { return may(access) && sees(camera); }
  // Whoever did it, for an audit row: the label, or "token N".
  std::string who() const;
};

inline constexpr std::chrono::seconds kTokenCacheTtl{5};
// How far before now a token other than admin may date what it writes, by default (vigild
// --max-backdate).
inline constexpr std::chrono::seconds kDefaultMaxBackdate{5};

class Authenticator {
 public:
  // REQUIRED false: every request is let through as admin (vigild --no-auth, for a lab).
  // METRICS_PROTECTED: /metrics needs a viewer token too (vigild --metrics-auth).
  // MAX_BACKDATE: how far before now a token other than admin may date a recording's first
  // packet or an event's end (vigild --max-backdate).
  Authenticator(CatalogPool& catalog, bool required, bool metrics_protected = false,
                std::chrono::seconds max_backdate = kDefaultMaxBackdate)
      : catalog_(catalog), required_(required), metrics_protected_(metrics_protected), max_backdate_(max_backdate) {}
  bool required() const noexcept { return required_; }
  bool metrics_protected() const noexcept { return metrics_protected_; }
  std::chrono::seconds max_backdate() const noexcept { return max_backdate_; }
  // The earliest time (unix microseconds) GRANT may date what it writes at NOW_US: now minus
  // max_backdate; nullopt for admin (recordings keep the wire protocol's one-hour skew bound,
  // events have none).
  std::optional<std::int64_t> earliest_dated_us(const Grant& grant, std::int64_t now_us) const noexcept;
  // What TOKEN grants, or nullopt (empty, unknown, revoked, expired, or a role this build does
  // not know).
  boost::asio::awaitable<std::optional<Grant>> grant_of(const std::string& token);

 private:
  struct Entry {
    std::optional<Grant> grant;
    std::chrono::steady_clock::time_point expires;  // then asked again; kept as the last answer
  };
  CatalogPool& catalog_;
  const bool required_;
  const bool metrics_protected_;
  const std::chrono::seconds max_backdate_;
  std::mutex mu_;
  std::map<std::string, Entry> cache_;  // by SHA-256 of the token
};

}  // namespace vigil::server
