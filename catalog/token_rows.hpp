#pragma once
// API tokens in the catalog (table `tokens`, docs/catalog.md): bearer tokens with a role —
// recorder (may write streams), viewer (may play and query), events (may post events only),
// admin (everything), each optionally limited to a set of cameras (NULL: all). Only the
// SHA-256 of a token is stored; the plain text exists once, when it is created.
// Thread: the catalog pool or a CLI. Errors: throws (pqxx; CatalogError for a bad
// role, label or expiry, before any SQL).
#include <cstdint>
#include <optional>
#include <pqxx/transaction>
#include <string>
#include <string_view>
#include <vector>

namespace vigil::catalog {

// Lower-case hex SHA-256 of TOKEN (what the table keys on).
std::string token_sha256_hex(std::string_view token);
// A fresh token: "vgl_" + 40 hex digits (160 bits from the OS's CSPRNG).
std::string new_token_text();
bool is_valid_role(std::string_view role);

struct CreatedToken {
  std::int64_t id = 0;
  std::string token;  // the plain text: shown once, never stored
};
// CAMERAS: the camera names the token is limited to (valid names, 1-1000 of them); nullopt: all.
CreatedToken create_token(pqxx::work& tx, const std::string& role, const std::string& label,
                          std::optional<std::int64_t> expires_at_us = {},
                          const std::optional<std::vector<std::string>>& cameras = {});

// The role of the token whose hash is SHA256_HEX, if it exists and is neither revoked nor
// expired at NOW_US.
std::optional<std::string> role_of_token(pqxx::transaction_base& tx, const std::string& sha256_hex,
                                         std::int64_t now_us);

// What a live token grants: its id and label (for audit rows), role and camera set.
struct TokenGrantRow {
  std::int64_t id = 0;
  std::string role, label;
  std::optional<std::vector<std::string>> cameras;  // nullopt: every camera
};
std::optional<TokenGrantRow> grant_of_token(pqxx::transaction_base& tx, const std::string& sha256_hex,
                                            std::int64_t now_us);

struct TokenRow {
  std::int64_t id = 0;
  std::string role, label;
  std::optional<std::vector<std::string>> cameras;  // nullopt: every camera
  std::int64_t created_at_us = 0;
  std::optional<std::int64_t> expires_at_us, revoked_at_us;
};
std::vector<TokenRow> list_tokens(pqxx::transaction_base& tx);
// Revokes token ID; false if there is none or it was already revoked.
bool revoke_token(pqxx::work& tx, std::int64_t id);
// Revokes every live token labelled LABEL (vigild's own recorder token of an earlier run).
int revoke_tokens_labelled(pqxx::work& tx, const std::string& label);

}  // namespace vigil::catalog
