#include "archive/s3_request.hpp"

#include <openssl/evp.h>

#include <array>

namespace vigil::archive {
namespace {

std::string object_path(const std::string& bucket, const std::string& key) { return "/" + bucket + "/" + key; }

std::string md5_base64(std::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(bytes.data(), bytes.size(), digest, &length, EVP_md5(), nullptr);
  return base64_encode(std::string_view(reinterpret_cast<const char*>(digest), length));
}

}  // namespace

std::string base64_encode(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

std::string crc32c_header_value(std::uint32_t crc) {
  const std::array<char, 4> big_endian{static_cast<char>(crc >> 24), static_cast<char>(crc >> 16),
                                       static_cast<char>(crc >> 8), static_cast<char>(crc)};
  return base64_encode(std::string_view(big_endian.data(), big_endian.size()));
}

S3Request create_bucket(const std::string& bucket, bool object_lock) {
  S3Request r{"PUT", "/" + bucket, {}, {}, {}};
  if (object_lock) r.headers.emplace_back("x-amz-bucket-object-lock-enabled", "true");
  return r;
}

S3Request put_object(const std::string& bucket, const std::string& key, std::string body,
                     std::optional<std::uint32_t> crc32c) {
  S3Request r{"PUT", object_path(bucket, key), {}, {}, std::move(body)};
  if (crc32c) r.headers.emplace_back("x-amz-checksum-crc32c", crc32c_header_value(*crc32c));
  return r;
}

S3Request get_object(const std::string& bucket, const std::string& key, std::optional<ByteRange> range) {
  S3Request r{"GET", object_path(bucket, key), {}, {}, {}};
  if (range)
    r.headers.emplace_back("range",
                           "bytes=" + std::to_string(range->first_byte) + "-" + std::to_string(range->last_byte));
  return r;
}

S3Request head_object(const std::string& bucket, const std::string& key) {
  return {"HEAD", object_path(bucket, key), {}, {}, {}};
}

S3Request delete_object(const std::string& bucket, const std::string& key, const std::string& version_id) {
  S3Request r{"DELETE", object_path(bucket, key), {}, {}, {}};
  if (!version_id.empty()) r.query.emplace_back("versionId", version_id);
  return r;
}

S3Request create_multipart_upload(const std::string& bucket, const std::string& key, bool checksum_crc32c) {
  S3Request r{"POST", object_path(bucket, key), {{"uploads", ""}}, {}, {}};
  if (checksum_crc32c) r.headers.emplace_back("x-amz-checksum-algorithm", "CRC32C");
  return r;
}

S3Request upload_part(const std::string& bucket, const std::string& key, const std::string& upload_id, int part_number,
                      std::string body, std::optional<std::uint32_t> crc32c) {
  S3Request r{"PUT",
              object_path(bucket, key),
              {{"partNumber", std::to_string(part_number)}, {"uploadId", upload_id}},
              {},
              std::move(body)};
  if (crc32c) r.headers.emplace_back("x-amz-checksum-crc32c", crc32c_header_value(*crc32c));
  return r;
}

S3Request complete_multipart_upload(const std::string& bucket, const std::string& key, const std::string& upload_id,
                                    const std::vector<CompletedPart>& parts) {
  // ETags come back quoted ("\"abc\""): XML-escaped, quotes and all, as the S3 API reference shows.
  auto escape = [](std::string_view text) {
    std::string out;
    for (const char c : text) {
      switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&quot;"; break;
        default: out += c;
      }
    }
    return out;
  };
  std::string body = "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">";
  for (const CompletedPart& p : parts) {
    body += "<Part><PartNumber>" + std::to_string(p.part_number) + "</PartNumber><ETag>" + escape(p.etag) + "</ETag>";
    if (p.crc32c) body += "<ChecksumCRC32C>" + crc32c_header_value(*p.crc32c) + "</ChecksumCRC32C>";
    body += "</Part>";
  }
  body += "</CompleteMultipartUpload>";
  S3Request r{"POST", object_path(bucket, key), {{"uploadId", upload_id}}, {}, std::move(body)};
  r.headers.emplace_back("content-type", "application/xml");
  return r;
}

S3Request abort_multipart_upload(const std::string& bucket, const std::string& key, const std::string& upload_id) {
  return {"DELETE", object_path(bucket, key), {{"uploadId", upload_id}}, {}, {}};
}

S3Request put_object_legal_hold(const std::string& bucket, const std::string& key, bool on) {
  std::string body = std::string("<LegalHold xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Status>") +
                     (on ? "ON" : "OFF") + "</Status></LegalHold>";
  S3Request r{"PUT", object_path(bucket, key), {{"legal-hold", ""}}, {}, {}};
  // S3 refuses PutObjectLegalHold without an integrity header: Content-MD5 is the one every
  // S3-compatible server knows.
  r.headers.emplace_back("content-md5", md5_base64(body));
  r.headers.emplace_back("content-type", "application/xml");
  r.body = std::move(body);
  return r;
}

void sign_request(S3Request& request, const std::string& host, const Credentials& credentials,
                  std::chrono::system_clock::time_point now) {
  const std::string date = amz_date(now);
  const std::string payload_sha256 = sha256_hex(request.body);
  request.headers.emplace_back("host", host);
  request.headers.emplace_back("x-amz-date", date);
  request.headers.emplace_back("x-amz-content-sha256", payload_sha256);
  const Signature signature =
      sign(RequestToSign{request.method, request.path, request.query, request.headers, payload_sha256}, credentials,
           date);
  request.headers.emplace_back("authorization", signature.authorization);
}

}  // namespace vigil::archive
