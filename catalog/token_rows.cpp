#include "catalog/token_rows.hpp"

#include <openssl/evp.h>
#include <openssl/rand.h>

#include <pqxx/pqxx>
#include <stdexcept>

#include "catalog/camera_rows.hpp"
#include "catalog/catalog_error.hpp"

namespace vigil::catalog {
namespace {

std::string hex(const unsigned char* p, std::size_t n) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out(2 * n, '0');
  for (std::size_t i = 0; i < n; ++i) {
    out[2 * i] = digits[p[i] >> 4];
    out[2 * i + 1] = digits[p[i] & 15];
  }
  return out;
}

std::optional<std::int64_t> opt_int(const pqxx::field& f) {
  if (f.is_null()) return std::nullopt;
  return f.as<std::int64_t>();
}

// A text[] column as names; NULL: nullopt (every camera).
std::optional<std::vector<std::string>> opt_names(const pqxx::field& f) {
  if (f.is_null()) return std::nullopt;
  std::vector<std::string> out;
  auto parser = f.as_array();
  for (auto next = parser.get_next(); next.first != pqxx::array_parser::juncture::done; next = parser.get_next()) {
    if (next.first == pqxx::array_parser::juncture::string_value) out.push_back(next.second);
  }
  return out;
}

// A text[] parameter (pqxx 6.4 passes arrays as text). The names were checked as camera names
// ([A-Za-z0-9._-]), so quoting each is enough (and keeps a camera named "NULL" a name).
std::optional<std::string> names_array(const std::optional<std::vector<std::string>>& names) {
  if (!names) return std::nullopt;
  std::string out = "{";
  for (const auto& n : *names) {
    if (out.size() > 1) out += ',';
    out += '"' + n + '"';
  }
  return out + "}";
}

}  // namespace

std::string token_sha256_hex(std::string_view token) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (EVP_Digest(token.data(), token.size(), md, &n, EVP_sha256(), nullptr) != 1) {
    throw std::runtime_error("SHA-256 failed");
  }
  return hex(md, n);
}

std::string new_token_text() {
  unsigned char raw[20];
  if (RAND_bytes(raw, sizeof raw) != 1) throw std::runtime_error("no randomness for a token");
  return "vgl_" + hex(raw, sizeof raw);
}

bool is_valid_role(std::string_view role) {
  return role == "recorder" || role == "viewer" || role == "admin" || role == "events";
}

CreatedToken create_token(pqxx::work& tx, const std::string& role, const std::string& label,
                          std::optional<std::int64_t> expires_at_us,
                          const std::optional<std::vector<std::string>>& cameras) {
  if (!is_valid_role(role)) throw CatalogError::invalid("role must be recorder, viewer, events or admin");
  if (cameras) {
    if (cameras->empty() || cameras->size() > 1000) throw CatalogError::invalid("a token names 1 to 1000 cameras");
    for (const auto& c : *cameras) {
      if (!is_valid_camera_name(c)) throw CatalogError::invalid("'" + c.substr(0, 64) + "' is not a valid camera name");
    }
  }
  if (label.size() > 200 || label.find('\0') != std::string::npos) {
    throw CatalogError::invalid("the label must be at most 200 characters");
  }
  CreatedToken out;
  out.token = new_token_text();
  const auto row = tx.exec_params1(
      "INSERT INTO tokens (token_sha256, role, label, expires_at_us, cameras) VALUES ($1, $2, $3, $4, $5::text[]) RETURNING id",
      token_sha256_hex(out.token), role, label, expires_at_us, names_array(cameras));
  out.id = row[0].as<std::int64_t>();
  return out;
}

std::optional<std::string> role_of_token(pqxx::transaction_base& tx, const std::string& sha256_hex,
                                         std::int64_t now_us) {
  const auto rows = tx.exec_params(
      "SELECT role FROM tokens WHERE token_sha256 = $1 AND revoked_at_us IS NULL "
      "AND (expires_at_us IS NULL OR expires_at_us > $2)",
      sha256_hex, now_us);
  if (rows.empty()) return std::nullopt;
  return rows[0][0].as<std::string>();
}

std::optional<TokenGrantRow> grant_of_token(pqxx::transaction_base& tx, const std::string& sha256_hex,
                                            std::int64_t now_us) {
  const auto rows = tx.exec_params(
      "SELECT id, role, label, cameras FROM tokens WHERE token_sha256 = $1 AND revoked_at_us IS NULL "
      "AND (expires_at_us IS NULL OR expires_at_us > $2)",
      sha256_hex, now_us);
  if (rows.empty()) return std::nullopt;
  const auto& r = rows[0];
  return TokenGrantRow{r[0].as<std::int64_t>(), r[1].as<std::string>(), r[2].as<std::string>(), opt_names(r[3])};
}

std::vector<TokenRow> list_tokens(pqxx::transaction_base& tx) {
  std::vector<TokenRow> out;
  for (const auto& r : tx.exec(
           "SELECT id, role, label, created_at_us, expires_at_us, revoked_at_us, cameras FROM tokens ORDER BY id")) {
    out.push_back({r[0].as<std::int64_t>(), r[1].as<std::string>(), r[2].as<std::string>(), opt_names(r[6]),
                   r[3].as<std::int64_t>(), opt_int(r[4]), opt_int(r[5])});
  }
  return out;
}

bool revoke_token(pqxx::work& tx, std::int64_t id) {
  return tx.exec_params(
               "UPDATE tokens SET revoked_at_us = GREATEST(vigil_now_us(), created_at_us) "
               "WHERE id = $1 AND revoked_at_us IS NULL",
               id)
             .affected_rows() == 1;
}

int revoke_tokens_labelled(pqxx::work& tx, const std::string& label) {
  return static_cast<int>(tx.exec_params("UPDATE tokens SET revoked_at_us = GREATEST(vigil_now_us(), created_at_us) "
                                         "WHERE label = $1 AND revoked_at_us IS NULL",
                                         label)
                              .affected_rows());
}

}  // namespace vigil::catalog
