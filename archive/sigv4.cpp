#include "archive/sigv4.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include <algorithm>
#include <cctype>
#include <ctime>

namespace vigil::archive {
namespace {

std::string lowercase(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

// SigV4's Trim(): leading and trailing spaces gone, inner runs of spaces made one.
std::string trimmed(std::string_view value) {
  std::string out;
  bool space = false;
  for (const char c : value) {
    if (c == ' ' || c == '\t') {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

}  // namespace

std::string uri_encode(std::string_view text, bool keep_slash) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || (keep_slash && c == '/')) {
      out += ch;
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
    }
  }
  return out;
}

std::string to_hex(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const char ch : bytes) {
    const auto c = static_cast<unsigned char>(ch);
    out += kHex[c >> 4];
    out += kHex[c & 0xF];
  }
  return out;
}

std::string sha256_hex(std::string_view bytes) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), digest);
  return to_hex(std::string_view(reinterpret_cast<const char*>(digest), sizeof digest));
}

std::string hmac_sha256(std::string_view key, std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(data.data()),
       data.size(), digest, &length);
  return std::string(reinterpret_cast<const char*>(digest), length);
}

std::string signing_key(std::string_view secret_key, std::string_view date_yyyymmdd, std::string_view region,
                        std::string_view service) {
  const std::string k_date = hmac_sha256("AWS4" + std::string(secret_key), date_yyyymmdd);
  const std::string k_region = hmac_sha256(k_date, region);
  const std::string k_service = hmac_sha256(k_region, service);
  return hmac_sha256(k_service, "aws4_request");
}

std::string amz_date(std::chrono::system_clock::time_point time) {
  const std::time_t t = std::chrono::system_clock::to_time_t(time);
  std::tm utc{};
  gmtime_r(&t, &utc);
  char out[17];
  std::strftime(out, sizeof out, "%Y%m%dT%H%M%SZ", &utc);
  return out;
}

namespace {

struct CanonicalHeaders {
  std::string block;    // "name:value\n" per header, sorted by name
  std::string signed_;  // "name;name"
};

CanonicalHeaders canonical_headers(const RequestToSign& request) {
  std::vector<std::pair<std::string, std::string>> headers;
  headers.reserve(request.headers.size());
  for (const auto& [name, value] : request.headers) headers.emplace_back(lowercase(name), trimmed(value));
  std::sort(headers.begin(), headers.end());
  CanonicalHeaders out;
  for (const auto& [name, value] : headers) {
    out.block += name + ":" + value + "\n";
    if (!out.signed_.empty()) out.signed_ += ';';
    out.signed_ += name;
  }
  return out;
}

std::string canonical_query(const RequestToSign& request) {
  std::vector<std::pair<std::string, std::string>> query;
  query.reserve(request.query.size());
  for (const auto& [name, value] : request.query) query.emplace_back(uri_encode(name, false), uri_encode(value, false));
  // Sorted by encoded name (then value), byte order, as SigV4 asks.
  std::sort(query.begin(), query.end());
  std::string out;
  for (const auto& [name, value] : query) {
    if (!out.empty()) out += '&';
    out += name + "=" + value;
  }
  return out;
}

}  // namespace

std::string canonical_request(const RequestToSign& request) {
  const CanonicalHeaders headers = canonical_headers(request);
  return request.method + "\n" + uri_encode(request.path.empty() ? "/" : request.path, true) + "\n" +
         canonical_query(request) + "\n" + headers.block + "\n" + headers.signed_ + "\n" + request.payload_sha256;
}

Signature sign(const RequestToSign& request, const Credentials& credentials, std::string_view amz_date) {
  Signature out;
  out.canonical_request = canonical_request(request);
  out.signed_headers = canonical_headers(request).signed_;
  const std::string_view date = amz_date.substr(0, 8);
  const std::string scope = std::string(date) + "/" + credentials.region + "/" + credentials.service + "/aws4_request";
  out.string_to_sign =
      "AWS4-HMAC-SHA256\n" + std::string(amz_date) + "\n" + scope + "\n" + sha256_hex(out.canonical_request);
  out.signature = to_hex(hmac_sha256(signing_key(credentials.secret_key, date, credentials.region, credentials.service),
                                     out.string_to_sign));
  out.authorization = "AWS4-HMAC-SHA256 Credential=" + credentials.access_key + "/" + scope +
                      ",SignedHeaders=" + out.signed_headers + ",Signature=" + out.signature;
  return out;
}

}  // namespace vigil::archive
