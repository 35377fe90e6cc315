#pragma once
// AWS Signature Version 4 for S3 requests sent with the Authorization header, payload in a single
// chunk (docs/archive.md): the canonical request, the string to sign, the signing key (an
// HMAC-SHA256 chain on OpenSSL) and the Authorization header. S3's URI rules: the path is encoded
// once, segment by segment ('/' kept); query names and values are encoded and sorted.
// Tested against AWS's published examples (tests/archive/sigv4_test.cpp).
// Thread: pure code. Errors: none (OpenSSL's HMAC and SHA-256 do not fail on valid lengths).
#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vigil::archive {

// The payload hash S3 accepts in place of a body's SHA-256 (the body is then not signed).
inline constexpr std::string_view kUnsignedPayload = "UNSIGNED-PAYLOAD";

struct Credentials {
  std::string access_key;
  std::string secret_key;
  std::string region = "us-east-1";
  std::string service = "s3";
};

// What is signed. PATH is the raw path ("/bucket/key with spaces"), encoded here; QUERY holds raw
// names and values (a flag such as "uploads" has value ""); every header in HEADERS is signed (the
// caller puts host, x-amz-date and x-amz-content-sha256 there).
struct RequestToSign {
  std::string method;
  std::string path;
  std::vector<std::pair<std::string, std::string>> query;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string payload_sha256;  // lowercase hex, or kUnsignedPayload
};

struct Signature {
  std::string canonical_request;
  std::string string_to_sign;
  std::string signed_headers;  // "host;range;x-amz-content-sha256;x-amz-date"
  std::string signature;       // lowercase hex
  std::string authorization;   // the Authorization header's value
};

// SigV4's UriEncode(): every byte but A-Z a-z 0-9 - . _ ~ as %XX (uppercase hex); '/' kept when
// KEEP_SLASH (a path), encoded otherwise (a query name or value).
std::string uri_encode(std::string_view text, bool keep_slash);

std::string sha256_hex(std::string_view bytes);
std::string hmac_sha256(std::string_view key, std::string_view data);  // raw 32 bytes
std::string to_hex(std::string_view bytes);

// kSigning = HMAC(HMAC(HMAC(HMAC("AWS4" + secret, date), region), service), "aws4_request"), raw.
std::string signing_key(std::string_view secret_key, std::string_view date_yyyymmdd, std::string_view region,
                        std::string_view service);

// "20130524T000000Z" for TIME (UTC).
std::string amz_date(std::chrono::system_clock::time_point time);

std::string canonical_request(const RequestToSign& request);

// Signs REQUEST at AMZ_DATE ("20130524T000000Z"; its first 8 characters are the scope's date).
Signature sign(const RequestToSign& request, const Credentials& credentials, std::string_view amz_date);

}  // namespace vigil::archive
